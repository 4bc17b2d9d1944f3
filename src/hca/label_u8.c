/* HCA's label stage for packed 3- and 4-band uint8 pixels (RGB and multispectral images) on the
 * AVX-512 path, where the clusters fit a byte a cell (k < 255): 16 pixels a step instead of
 * one. The per-pixel loop of hca.c takes ~8 cycles a pixel on an Intel Xeon (a cell map load, a
 * branch on the cluster, an add a band), twice the time this stage's memory traffic needs on 2 cores
 * (bench/RESULTS.md, 2026-11-27). */
#include "internal_hca.h"

#include "../core/cpu_path.h"

#if PC__HAVE_CPU_PATHS
#include "pixels_u8.h"

/* Within each 16 bytes (4 pixels of 4 bands), band j's 4 bytes moved to bytes 4j .. 4j + 3, so that
 * summing each group of 4 bytes sums one band over 4 pixels. */
#define BY_BAND 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15

__attribute__((target("arch=x86-64-v4"))) void pc__hca_label_u8_avx512(const uint8_t *u8, size_t dim,
                                                                      const uint8_t *small, int32_t *labels,
                                                                      size_t begin, size_t end, uint64_t *isum)
{
    /* A cluster's sums in this call: 32-bit lane 4b + j sums byte j (band j - (4 - dim)) of pixels
     * 4b .. 4b + 3 of every step (b = 0..3, the 128-bit lanes). A step adds at most 4 x 255 to a
     * lane, so 2^22 steps (2^26 pixels) cannot overflow it. */
    __m512i acc[255];
    uint32_t count[255];
    uint64_t touched[4] = {0, 0, 0, 0};
    const __m512i by_band = _mm512_broadcast_i32x4(_mm_setr_epi8(BY_BAND));
    const __m512i ones8 = _mm512_set1_epi8(1), ones16 = _mm512_set1_epi16(1), byte = _mm512_set1_epi32(255);
    int current = -1; /* the cluster of the last pixels summed: images come in regions */
    for (size_t i = begin; i < end; i += 16) {
        __mmask16 live = end - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (end - i)) - 1);
        __m512i cell = _mm512_maskz_loadu_epi32(live, labels + i);
        /* small[cell], read as 4 bytes from there (the map has 3 bytes of padding), the first kept */
        __m512i cluster = _mm512_and_si512(_mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, cell, small, 1),
                                           byte);
        __mmask16 none = _mm512_cmpeq_epi32_mask(cluster, byte);
        _mm512_mask_storeu_epi32(labels + i, live, _mm512_mask_mov_epi32(cluster, none, _mm512_set1_epi32(-1)));
        __mmask16 rest = live & (__mmask16)~none;
        if (!rest)
            continue;
        __m512i v = pc__hca_load_u8_pixels(u8, dim, i, live);
        while (rest) {
            __mmask16 mask = current >= 0 ? _mm512_cmpeq_epi32_mask(cluster, _mm512_set1_epi32(current)) & rest : 0;
            if (!mask) { /* the first remaining lane's cluster */
                __m512i first = _mm512_permutexvar_epi32(_mm512_set1_epi32(__builtin_ctz(rest)), cluster);
                current = _mm_cvtsi128_si32(_mm512_castsi512_si128(first));
                mask = _mm512_cmpeq_epi32_mask(cluster, _mm512_set1_epi32(current)) & rest;
                if (!(touched[current >> 6] >> (current & 63) & 1)) {
                    touched[current >> 6] |= 1ull << (current & 63);
                    acc[current] = _mm512_setzero_si512();
                    count[current] = 0;
                }
            }
            rest &= (__mmask16)~mask;
            __m512i x = _mm512_shuffle_epi8(_mm512_maskz_mov_epi32(mask, v), by_band);
            acc[current] = _mm512_add_epi32(acc[current], _mm512_madd_epi16(_mm512_maddubs_epi16(x, ones8), ones16));
            count[current] += (uint32_t)__builtin_popcount(mask);
        }
    }
    for (int c = 0; c < 255; c++) {
        if (!(touched[c >> 6] >> (c & 63) & 1))
            continue;
        uint32_t lane[16];
        _mm512_storeu_si512(lane, acc[c]);
        for (size_t j = 0, at = 4 - dim; j < dim; j++, at++) /* band j: byte 4 - dim + j of a pixel */
            isum[(size_t)c * (dim + 1) + j] += (uint64_t)lane[at] + lane[4 + at] + lane[8 + at] + lane[12 + at];
        isum[(size_t)c * (dim + 1) + dim] += count[c];
    }
}
#endif
