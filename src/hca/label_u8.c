/* HCA's label stage for packed 3- and 4-band uint8 pixels (RGB and multispectral images) on the
 * AVX-512 path, where the clusters fit a byte a cell (k < 255): 16 pixels a step instead of
 * one. The per-pixel loop of hca.c takes ~8 cycles a pixel on an Intel Xeon (a cell map load, a
 * branch on the cluster, an add a band), twice the time this stage's memory traffic needs on 2 cores
 * (bench/RESULTS.md, 2026-11-27). */
#include "internal_hca.h"

#include "../core/cpu_path.h"

#if PC__HAVE_CPU_PATHS
#include "pixels_u8.h"

#include <string.h>

/* Within each 16 bytes (4 pixels of 4 bands), band j's 4 bytes moved to bytes 4j .. 4j + 3, so that
 * summing each group of 4 bytes sums one band over 4 pixels. */
#define BY_BAND 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15

/* A cluster's sums in one call: 32-bit lane 4b + j sums byte j (band j - (4 - dim)) of pixels 4b ..
 * 4b + 3 of every step (b = 0..3, the 128-bit lanes). A step adds at most 4 x 255 to a lane, so 2^22
 * steps (2^26 pixels) cannot overflow it. */
typedef struct {
    __m512i acc[255];
    uint32_t count[255];
    uint64_t touched[4];
    int current; /* the cluster of the last pixels summed: images come in regions */
} cluster_sums;

/* Adds the pixels v of the lanes in rest to their clusters' sums (cluster: one per lane, < 255). */
static inline __attribute__((target("arch=x86-64-v4"), always_inline)) void
add_by_cluster(cluster_sums *s, __m512i cluster, __mmask16 rest, __m512i v)
{
    const __m512i by_band = _mm512_broadcast_i32x4(_mm_setr_epi8(BY_BAND));
    const __m512i ones8 = _mm512_set1_epi8(1), ones16 = _mm512_set1_epi16(1);
    while (rest) {
        int current = s->current;
        __mmask16 mask = current >= 0 ? _mm512_cmpeq_epi32_mask(cluster, _mm512_set1_epi32(current)) & rest : 0;
        if (!mask) { /* the first remaining lane's cluster */
            __m512i first = _mm512_permutexvar_epi32(_mm512_set1_epi32(__builtin_ctz(rest)), cluster);
            current = s->current = _mm_cvtsi128_si32(_mm512_castsi512_si128(first));
            mask = _mm512_cmpeq_epi32_mask(cluster, _mm512_set1_epi32(current)) & rest;
            if (!(s->touched[current >> 6] >> (current & 63) & 1)) {
                s->touched[current >> 6] |= 1ull << (current & 63);
                s->acc[current] = _mm512_setzero_si512();
                s->count[current] = 0;
            }
        }
        rest &= (__mmask16)~mask;
        __m512i x = _mm512_shuffle_epi8(_mm512_maskz_mov_epi32(mask, v), by_band);
        s->acc[current] = _mm512_add_epi32(s->acc[current], _mm512_madd_epi16(_mm512_maddubs_epi16(x, ones8), ones16));
        s->count[current] += (uint32_t)__builtin_popcount(mask);
    }
}

/* The sums into isum (dim + 1 a cluster: the bands, then the count). */
static __attribute__((target("arch=x86-64-v4"))) void flush_sums(const cluster_sums *s, size_t dim, uint64_t *isum)
{
    for (int c = 0; c < 255; c++) {
        if (!(s->touched[c >> 6] >> (c & 63) & 1))
            continue;
        uint32_t lane[16];
        _mm512_storeu_si512(lane, s->acc[c]);
        for (size_t j = 0, at = 4 - dim; j < dim; j++, at++) /* band j: byte 4 - dim + j of a pixel */
            isum[(size_t)c * (dim + 1) + j] += (uint64_t)lane[at] + lane[4 + at] + lane[8 + at] + lane[12 + at];
        isum[(size_t)c * (dim + 1) + dim] += s->count[c];
    }
}

/* Lists pixels i + l of the lanes l in marked (v: the 16 pixels as pc__hca_load_u8_pixels gives them),
 * 16 entries at a time: their indices and, with value_bytes, their bands as refine.c's keys (the row's
 * bytes in a little-endian integer; 3 bands: the padding byte shifted out). */
static inline __attribute__((target("arch=x86-64-v4"), always_inline)) void
list_marked(pc__hca_point_list *list, __mmask16 marked, size_t i, __m512i v, size_t dim, size_t value_bytes)
{
    while (!list->failed && list->cap - list->count < 16)
        pc__hca_point_list_grow(list, value_bytes);
    if (list->failed)
        return;
    __m512i at = _mm512_add_epi32(_mm512_set1_epi32((int)i),
                                  _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    _mm512_storeu_si512(list->index + list->count, _mm512_maskz_compress_epi32(marked, at));
    if (value_bytes) {
        __m512i key = _mm512_maskz_compress_epi32(marked, dim == 3 ? _mm512_srli_epi32(v, 8) : v);
        _mm512_storeu_si512(list->key + list->count, _mm512_cvtepu32_epi64(_mm512_castsi512_si256(key)));
        _mm512_storeu_si512(list->key + list->count + 8, _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(key, 1)));
    }
    list->count += (size_t)__builtin_popcount(marked);
}

/* small[cell] for 16 cells, read as 4 bytes from there (the map has 3 bytes of padding), the first kept. */
static inline __attribute__((target("arch=x86-64-v4"), always_inline)) __m512i
clusters_of(const uint8_t *small, __m512i cell, __mmask16 live)
{
    return _mm512_and_si512(_mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, cell, small, 1),
                            _mm512_set1_epi32(255));
}

__attribute__((target("arch=x86-64-v4"))) void
pc__hca_label_u8_avx512(const uint8_t *u8, size_t dim, const uint8_t *small, int32_t *labels, size_t begin,
                        size_t end, uint64_t *isum, pc__hca_point_list *list, size_t value_bytes,
                        const pc__hca_values *values, int64_t *changed, struct pc__hca_tick *tick, size_t n)
{
    cluster_sums s;
    s.current = -1;
    memset(s.touched, 0, sizeof s.touched);
    /* With marks, small's top bit marks the cells whose points are listed or take their value's
     * cluster, and no cluster is 127. */
    int marks = list || values;
    int64_t moved = 0;
    const __m512i none_byte = _mm512_set1_epi32(marks ? PC__HCA_MARKED_NONE : 255);
    for (size_t i = begin; i < end; i += 16) {
        __mmask16 live = end - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (end - i)) - 1);
        pc__prefetch_stream(labels + i);
        pc__prefetch_stream(u8 + dim * i);
        __m512i cluster = clusters_of(small, _mm512_maskz_loadu_epi32(live, labels + i), live);
        if (marks) { /* HCA-MS: the points of marked cells listed, in order, or given their value's cluster */
            __mmask16 marked = _mm512_mask_test_epi32_mask(live, cluster, _mm512_set1_epi32(PC__HCA_MARK));
            cluster = _mm512_andnot_si512(_mm512_set1_epi32(PC__HCA_MARK), cluster);
            if (marked && values) { /* 3 bands: the value is the pixel's 4 bytes less the padding one */
                __m512i value = _mm512_srli_epi32(pc__hca_load_u8_pixels(u8, dim, i, live), 8);
                __m512i kept = _mm512_and_si512(
                    _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), marked, value, values->by_value, 1),
                    _mm512_set1_epi32(255));
                /* values not climbed yet, or under way on another thread */
                __mmask16 fresh = _mm512_mask_cmpeq_epi32_mask(marked, kept, _mm512_setzero_si512()) |
                                  _mm512_mask_cmpeq_epi32_mask(marked, kept, _mm512_set1_epi32(PC__HCA_CLIMBING));
                if (fresh) {
                    uint32_t v[16], k[16], c[16];
                    _mm512_storeu_si512(v, value);
                    _mm512_storeu_si512(k, kept);
                    _mm512_storeu_si512(c, cluster);
                    for (unsigned f = fresh; f; f &= f - 1) {
                        int l = __builtin_ctz(f);
                        if (!(k[l] = pc__hca_value_reach(values, v[l]))) {
                            k[l] = c[l] + 1; /* its cell's cluster until the climb is done */
                            pc__hca_list_point(list, i + (size_t)l, NULL, 0);
                        }
                    }
                    /* a block may hold thousands of climbs: progress and a stop between them */
                    if (pc__hca_tick_at(tick, (i + 16) & ~(size_t)63, n))
                        return; /* cancelled: nothing of the pass is used */
                    kept = _mm512_loadu_si512(k);
                }
                __m512i reached = _mm512_sub_epi32(kept, _mm512_set1_epi32(1));
                moved += __builtin_popcount(_mm512_mask_cmpneq_epi32_mask(marked, reached, cluster));
                cluster = _mm512_mask_mov_epi32(cluster, marked, reached);
            } else if (marked) {
                list_marked(list, marked, i, pc__hca_load_u8_pixels(u8, dim, i, live), dim, value_bytes);
            }
        }
        __mmask16 none = _mm512_cmpeq_epi32_mask(cluster, none_byte);
        _mm512_mask_storeu_epi32(labels + i, live, _mm512_mask_mov_epi32(cluster, none, _mm512_set1_epi32(-1)));
        __mmask16 rest = live & (__mmask16)~none;
        if (rest)
            add_by_cluster(&s, cluster, rest, pc__hca_load_u8_pixels(u8, dim, i, live));
    }
    flush_sums(&s, dim, isum);
    if (changed)
        *changed += moved;
}

__attribute__((target("arch=x86-64-v4,avx512vbmi"))) void
pc__hca_label_u8_cells_avx512(const uint8_t *u8, size_t dim, const pc__hca_u8_grid *u, const uint8_t *small,
                              uint8_t *bytes, int32_t *labels, size_t begin, size_t end, uint64_t *isum)
{
    cluster_sums s;
    s.current = -1;
    memset(s.touched, 0, sizeof s.touched);
    pc__hca_u8_cells cells;
    pc__hca_u8_cells_init(&cells, u, dim);
    const __m512i none_byte = _mm512_set1_epi32(255);
    for (size_t i = begin; i < end; i += 16) {
        __mmask16 live = end - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (end - i)) - 1);
        pc__prefetch_stream(u8 + dim * i);
        __m512i v = pc__hca_load_u8_pixels(u8, dim, i, live);
        __m512i cluster = clusters_of(small, pc__hca_u8_cell_index(v, &cells), live);
        __mmask16 none = _mm512_cmpeq_epi32_mask(cluster, none_byte);
        if (bytes)
            _mm_mask_storeu_epi8(bytes + i, live, _mm512_cvtepi32_epi8(cluster));
        else
            _mm512_mask_storeu_epi32(labels + i, live, _mm512_mask_mov_epi32(cluster, none, _mm512_set1_epi32(-1)));
        __mmask16 rest = live & (__mmask16)~none;
        if (rest)
            add_by_cluster(&s, cluster, rest, v);
    }
    flush_sums(&s, dim, isum);
}
#endif
