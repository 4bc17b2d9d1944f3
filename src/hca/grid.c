/* The HCA grid: bounding box, the cell of every point, densities, and neighbour visits. Points are read
 * in place whatever their type; uint8 and uint16 bands go through a per-band table of cell offsets, so
 * a 100-megapixel image is never converted to floats. The cell of each point is kept in the caller's
 * labels array, which the final labelling overwrites. */
#include "internal_hca.h"

#include "../core/cpu_path.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if PC__HAVE_CPU_PATHS
#include "pixels_u8.h"
#endif

size_t pc__hca_row_bytes(const pc_points *p)
{
    return p->stride ? p->stride
                     : p->dim * (p->dtype == PC_F64 ? 8 : p->dtype == PC_F32 ? 4 : p->dtype == PC_U16 ? 2 : 1);
}

/* ALGORITHMS.md section 3 step 1, computed the same way for every type, by the GPU's tables too. */
int pc__hca_cell_coordinate(double x, double lo, double hi, int m)
{
    if (hi <= lo)
        return 0;
    double c = floor((x - lo) / (hi - lo) * m);
    return c >= m - 1 ? m - 1 : c < 0 ? 0 : (int)c;
}

void pc__hca_coordinate_table(double lo, double hi, int m, size_t values, uint16_t *coordinate)
{
    /* Each step of the rule (a subtraction, a division and a product, each rounded; floor; the clamp)
     * never decreases with x, so neither does the coordinate: each run of one coordinate is ended by a
     * galloping search (probes 1, 2, 4, ... values on, then bisection), about 2 log2 L evaluations for
     * a run of L values and one for a run of one (the value past a run starts the next). A 65,536-value
     * table of 32 cells takes some 900 evaluations instead of 65,536 (a third of a millisecond of
     * divisions a band, at every stream's start). */
    if (values == 0)
        return;
    size_t v = 0;
    int c = pc__hca_cell_coordinate(0.0, lo, hi, m);
    while (v < values) {
        size_t last = v, past = values, step = 1; /* coordinate(last) == c < coordinate(past), or past the end */
        int next = c;
        while (last + step < values) {
            int probe = pc__hca_cell_coordinate((double)(last + step), lo, hi, m);
            if (probe > c) {
                past = last + step;
                next = probe;
                break;
            }
            last += step;
            step *= 2;
        }
        while (past - last > 1) {
            size_t mid = last + (past - last) / 2;
            int probe = pc__hca_cell_coordinate((double)mid, lo, hi, m);
            if (probe > c) {
                past = mid;
                next = probe;
            } else
                last = mid;
        }
        for (; v <= last; v++)
            coordinate[v] = (uint16_t)c;
        c = next; /* coordinate(past), when past < values */
    }
}

/* uint8 rows, packed: minima and maxima over a period of 32 rows, so that position k of the period
 * is always band k % dim and the inner loops vectorise; the period's lanes are folded at the end. */
static void bounding_box_u8(pc__hca_grid *g, const uint8_t *data)
{
    size_t dim = g->dim, period = 32 * dim, chunks = g->n / 32;
    uint8_t lo[32 * PC__HCA_MAX_DIM], hi[32 * PC__HCA_MAX_DIM];
    memset(lo, 255, sizeof lo);
    memset(hi, 0, sizeof hi);
    int threads = g->threads;
    (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        uint8_t tlo[32 * PC__HCA_MAX_DIM], thi[32 * PC__HCA_MAX_DIM];
        memset(tlo, 255, sizeof tlo);
        memset(thi, 0, sizeof thi);
#pragma omp for schedule(static)
        for (long c = 0; c < (long)chunks; c++) {
            const uint8_t *q = data + (size_t)c * period;
            for (size_t k = 0; k < period; k += 64)
                pc__prefetch_stream(q + k);
            for (size_t k = 0; k < period; k++) {
                tlo[k] = q[k] < tlo[k] ? q[k] : tlo[k];
                thi[k] = q[k] > thi[k] ? q[k] : thi[k];
            }
        }
#pragma omp critical(pc__hca_box)
        for (size_t k = 0; k < period; k++) {
            lo[k] = tlo[k] < lo[k] ? tlo[k] : lo[k];
            hi[k] = thi[k] > hi[k] ? thi[k] : hi[k];
        }
    }
    for (size_t j = 0; j < dim; j++) {
        g->lo[j] = 255;
        g->hi[j] = 0;
    }
    for (size_t k = 0; k < period; k++) {
        g->lo[k % dim] = fmin(g->lo[k % dim], lo[k]);
        g->hi[k % dim] = fmax(g->hi[k % dim], hi[k]);
    }
    for (size_t i = chunks * 32; i < g->n; i++)
        for (size_t j = 0; j < dim; j++) {
            g->lo[j] = fmin(g->lo[j], data[i * dim + j]);
            g->hi[j] = fmax(g->hi[j], data[i * dim + j]);
        }
}

static void bounding_box(pc__hca_grid *g, const pc_points *p, size_t stride)
{
    const unsigned char *base = p->data;
    if (p->dtype == PC_U8 && stride == p->dim) {
        bounding_box_u8(g, base);
        return;
    }
    for (size_t j = 0; j < g->dim; j++) {
        g->lo[j] = INFINITY;
        g->hi[j] = -INFINITY;
    }
    int threads = g->threads;
    (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        double lo[PC__HCA_MAX_DIM], hi[PC__HCA_MAX_DIM];
        for (size_t j = 0; j < g->dim; j++) {
            lo[j] = INFINITY;
            hi[j] = -INFINITY;
        }
#pragma omp for schedule(static)
        for (long i = 0; i < (long)g->n; i++) {
            const unsigned char *row = base + (size_t)i * stride;
            for (size_t j = 0; j < g->dim; j++) {
                double v = pc__hca_value(row, p->dtype, j);
                lo[j] = v < lo[j] ? v : lo[j];
                hi[j] = v > hi[j] ? v : hi[j];
            }
        }
#pragma omp critical
        for (size_t j = 0; j < g->dim; j++) {
            g->lo[j] = fmin(g->lo[j], lo[j]);
            g->hi[j] = fmax(g->hi[j], hi[j]);
        }
    }
}

#if PC__HAVE_CPU_PATHS
/* One count for each of the first lanes indices: into the thread's own counts, or atomically. */
static inline void count_lanes(const uint32_t *ids, int lanes, int32_t *mine, int32_t *count)
{
    if (mine) {
        for (int l = 0; l < lanes; l++)
            mine[ids[l]]++;
        return;
    }
    for (int l = 0; l < lanes; l++) {
#pragma omp atomic
        count[ids[l]]++;
    }
}

/* Each of the first lanes pixels (4 bytes each, as pc__hca_load_u8_pixels gives them) added into its
 * cell's 4 lanes of 32 bits (the 3-band pixels' padding byte adds 0). */
static inline __attribute__((target("arch=x86-64-v4"), always_inline)) void
sum_lanes(const uint32_t *pixel, const uint32_t *linear, int lanes, uint32_t *sums)
{
    for (int l = 0; l < lanes; l++) {
        __m128i *at = (__m128i *)(sums + (size_t)linear[l] * 4);
        _mm_storeu_si128(at, _mm_add_epi32(_mm_loadu_si128(at), _mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)pixel[l]))));
    }
}

/* The AVX-512 path of the cell index for packed 4-band and 3-band uint8 pixels (the common image
 * cases), 16 pixels a step, by pc__hca_u8_coords (pixels_u8.h). The indices go out with streaming
 * stores when the array is aligned: it is the size of the image times four and is next read by the
 * labelling, long after any cache would have kept it, so reading its lines in first would only add
 * traffic. cell_of NULL: the counts alone (HECA's members but the reference, and pc_hca_plan_run_u8,
 * whose label stage finds the cells again). mine: the thread's own counts, by the cells' linear index,
 * or by pc__hca_u8_block_index where blocked; NULL: count's, atomically, by the linear index.
 * Counting: 16 pixels of the same cell as the current run (flat areas) add 16 to it in a register;
 * otherwise each pixel adds to its cell's count, one step later (below). Pixels b0 * 16 .. min(b1 *
 * 16, n) - 1. Progress and cancellation (pc__hca_tick_at) are checked once a step, as the common loop
 * does once a pixel. sums (with cell_of; else NULL): each pixel's bands added into its linear index's 4
 * lanes (sum_lanes), a step later as the counts are (pending_pixel), at most 2^24 pixels a call. */
__attribute__((target("arch=x86-64-v4,avx512vbmi"))) static void
index_u8_avx512(const uint8_t *data, size_t dim, size_t n, size_t b0, size_t b1, const pc__hca_u8_grid *u,
                uint32_t *cell_of, int32_t *mine, int blocked, int32_t *count, struct pc__hca_tick *tick,
                uint32_t *sums)
{
    pc__hca_u8_cells cells;
    pc__hca_u8_cells_init(&cells, u, dim);
    int aligned = ((uintptr_t)cell_of & 63) == 0;
    uint32_t run_idx = 0;
    int32_t run = 0;
    /* The indices of a step that did not continue a run are counted one at a time at the next such
     * step (or at the end): read back from memory at once, they would wait for the vector's store to
     * reach the cache (a 64-byte store does not forward to 4-byte loads), which cost more than the
     * counting itself. */
    uint32_t pending[16], pending_pixel[16], pending_linear[16];
    int pending_lanes = 0, pending_sums = 0;
    for (size_t b = b0; b < b1; b++) {
        size_t i = b * 16;
        if (pc__hca_tick_at(tick, i, n))
            break; /* cancelled (hca.c: progress): the counts are not used */
        __mmask16 live = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        pc__prefetch_stream(data + dim * i);
        __m512i pixels = pc__hca_load_u8_pixels(data, dim, i, live);
        __m512i coords = pc__hca_u8_coords(pixels, &cells);
        if (cell_of) {
            __m512i linear = pc__hca_u8_coords_index(coords, &cells);
            if (sums) {
                sum_lanes(pending_pixel, pending_linear, pending_sums, sums);
                _mm512_storeu_si512(pending_pixel, pixels);
                _mm512_storeu_si512(pending_linear, linear);
                pending_sums = live == 0xffff ? 16 : (int)(n - i);
            }
            if (live != 0xffff)
                _mm512_mask_storeu_epi32(cell_of + i, live, linear);
            else if (aligned)
                _mm512_stream_si512((void *)(cell_of + i), linear);
            else
                _mm512_storeu_si512(cell_of + i, linear);
        }
        /* the index counted */
        __m512i idx = blocked ? pc__hca_u8_block_index(coords, &cells) : pc__hca_u8_coords_index(coords, &cells);
        if (mine && live == 0xffff && _mm512_cmpeq_epi32_mask(idx, _mm512_set1_epi32((int)run_idx)) == 0xffff) {
            run += 16;
            continue;
        }
        count_lanes(pending, pending_lanes, mine, count);
        _mm512_storeu_si512(pending, idx);
        pending_lanes = live == 0xffff ? 16 : (int)(n - i);
        if (mine) {
            mine[run_idx] += run; /* the run so far ends here */
            run = 0;
            /* a run of flat pixels may start at the last lane */
            __m512i last = _mm512_maskz_compress_epi32((__mmask16)(1u << (pending_lanes - 1)), idx);
            run_idx = (uint32_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(last));
        }
    }
    count_lanes(pending, pending_lanes, mine, count);
    if (sums)
        sum_lanes(pending_pixel, pending_linear, pending_sums, sums);
    if (mine)
        mine[run_idx] += run;
    _mm_sfence(); /* the streamed indices are visible before the threads' barrier */
}

/* Where a pass needs the cells that no counting pass kept (internal_hca.h). */
__attribute__((target("arch=x86-64-v4,avx512vbmi"))) void
pc__hca_u8_cells_of(const uint8_t *data, size_t dim, const pc__hca_u8_grid *u, const int32_t *slot, size_t begin,
                    size_t end, int32_t *cell)
{
    pc__hca_u8_cells cells;
    pc__hca_u8_cells_init(&cells, u, dim);
    for (size_t i = begin; i < end; i += 16) {
        __mmask16 live = end - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (end - i)) - 1);
        pc__prefetch_stream(data + dim * i);
        __m512i idx = pc__hca_u8_cell_index(pc__hca_load_u8_pixels(data, dim, i, live), &cells);
        if (slot)
            idx = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, idx, slot, 4);
        _mm512_mask_storeu_epi32(cell + (i - begin), live, idx);
    }
}
#endif

int pc__hca_grid_vector_path(const pc_points *p, int m)
{
#if PC__HAVE_CPU_PATHS
    return p->dtype == PC_U8 && (p->dim == 3 || p->dim == 4) && pc__hca_row_bytes(p) == p->dim &&
           m <= 127 &&
           pc__cpu_path() == PC__CPU_AVX512 && pc__cpu_has_vbmi();
#else
    (void)p;
    (void)m;
    return 0;
#endif
}

int pc__hca_cells_found_again(const pc_points *p, int m, size_t memory_budget)
{
    if (!pc__hca_grid_vector_path(p, m))
        return 0;
    uint64_t total = 1;
    for (size_t j = 0; j < p->dim; j++)
        total *= (uint64_t)m; /* m <= 127, 4 bands at most */
    return pc__hca_grid_fits_dense(total, memory_budget);
}

/* Called by every thread of a counting pass's team after its barrier: the other threads' copies of
 * the counts (NULL: none, they counted atomically) added into count, the cells shared out. */
static void add_copies(int32_t *count, const int32_t *copies, uint64_t total, int threads)
{
    if (!copies)
        return;
#pragma omp for schedule(static)
    for (long c = 0; c < (long)total; c++)
        for (int u = 0; u < threads - 1; u++)
            count[c] += copies[(size_t)u * total + (size_t)c];
}

#if PC__HAVE_CPU_PATHS
/* The entries of counts kept by pc__hca_u8_block_index: ceil(m / 2)^dim blocks of 2^dim cells. */
static uint64_t block_count_size(int m, size_t dim)
{
    uint64_t blocks = 1;
    for (size_t j = 0; j < dim; j++)
        blocks *= (uint64_t)(m + 1) / 2;
    return blocks << dim;
}

/* Called by every thread of the team after its barrier: the threads' counts by block (copies of size
 * entries each) summed into count by the linear index, the rows of the last band shared out. */
static void add_block_copies(int32_t *count, uint64_t total, const int32_t *copies, uint64_t size, int threads,
                             int m, size_t dim)
{
    long half = (m + 1) / 2;
#pragma omp for schedule(static)
    for (long row = 0; row < (long)(total / (uint64_t)m); row++) {
        /* the row's block and place within it from the first dim - 1 coordinates */
        uint64_t block = 0, within = 0, rest = (uint64_t)row, scale = total / (uint64_t)m;
        for (size_t j = 0; j + 1 < dim; j++) {
            scale /= (uint64_t)m;
            uint64_t c = rest / scale;
            rest %= scale;
            block = block * (uint64_t)half + c / 2;
            within = within * 2 + c % 2;
        }
        for (int c = 0; c < m; c++) {
            uint64_t at = ((block * (uint64_t)half + (uint64_t)c / 2) << dim) + within * 2 + (uint64_t)c % 2;
            int32_t sum = 0;
            for (int t = 0; t < threads; t++)
                sum += copies[(uint64_t)t * size + at];
            count[(uint64_t)row * (uint64_t)m + (uint64_t)c] += sum;
        }
    }
}

/* Pixels a thread sums into its 32-bit lanes before they move into the int64 sums: 2^24 x 255 fits. */
#define LANE_PIXELS ((size_t)1 << 24)

/* A thread's lanes (total x 4) added into sums (total x dim, by linear index) and cleared. */
static void flush_lanes(uint32_t *lanes, uint64_t total, size_t dim, int64_t *sums)
{
    size_t skip = 4 - dim; /* 3 bands: lane 0 is the padding byte's */
#pragma omp critical(pc__hca_grid_sums)
    for (uint64_t c = 0; c < total; c++)
        for (size_t j = 0; j < dim; j++)
            sums[c * dim + j] += lanes[c * 4 + skip + j];
    memset(lanes, 0, total * 4 * sizeof *lanes);
}

/* The AVX-512 pass of pc__hca_count_u8_coords and of index_and_count. Each thread counts its blocks
 * of pixels into its own copy, by block (pc__hca_u8_block_index), where the copies and count fit the
 * budget together and are no larger than the image (else summing the copies costs more than their
 * cache lines save); else each thread but the first into a copy by the linear index, where those fit;
 * else atomically. The copies are summed after. sums (total x dim, zeroed; else NULL): each cell's
 * sums of its pixels too, by linear index, where cell_of is written. */
static pc_status count_u8_coords(const pc_points *p, const pc__hca_u8_grid *u, int threads,
                                 struct pc__hca_tick *tick, uint32_t *cell_of, int32_t *count, uint64_t total,
                                 size_t budget, int64_t *sums)
{
    int failed = 0;
    threads = threads > 1 ? threads : 1;
    /* Each blocked copy starts on a cache line, so that a block of 16 counts is one line. */
    uint64_t size = (block_count_size(u->m, p->dim) + 15) & ~(uint64_t)15;
    int32_t *copies = NULL;
    void *blocked_memory = NULL;
    if (size * (uint64_t)threads <= p->n && (size * (uint64_t)threads + total) * sizeof(int32_t) <= budget &&
        (blocked_memory = calloc(size * (size_t)threads + 16, sizeof *copies)) != NULL)
        copies = (int32_t *)(((uintptr_t)blocked_memory + 63) & ~(uintptr_t)63);
    int blocked = copies != NULL;
    if (!blocked && threads > 1 && total * sizeof(int32_t) * (size_t)threads <= budget)
        copies = calloc(total * (size_t)(threads - 1), sizeof *copies);
#pragma omp parallel num_threads(threads) if (threads > 1) reduction(| : failed)
    {
        int t = 0, team = 1;
#ifdef _OPENMP
        t = omp_get_thread_num();
        team = omp_get_num_threads();
#endif
        /* Without copies every thread counts with atomics, thread 0 too. */
        int32_t *mine = blocked          ? copies + (size_t)t * size
                        : threads == 1   ? count
                        : !copies        ? NULL
                        : t == 0         ? count
                                         : copies + (size_t)(t - 1) * total;
        size_t blocks = (p->n + 15) / 16, b0 = blocks * (size_t)t / (size_t)team,
               b1 = blocks * (size_t)(t + 1) / (size_t)team;
        uint32_t *lanes = sums && cell_of ? calloc(total * 4, sizeof *lanes) : NULL;
        failed |= sums && cell_of && !lanes;
        if (!lanes) {
            if (!failed)
                index_u8_avx512(p->data, p->dim, p->n, b0, b1, u, cell_of, mine, blocked, count, tick, NULL);
        } else if (!failed) {
            for (size_t from = b0; from < b1; from += LANE_PIXELS / 16) {
                size_t to = b1 - from > LANE_PIXELS / 16 ? from + LANE_PIXELS / 16 : b1;
                index_u8_avx512(p->data, p->dim, p->n, from, to, u, cell_of, mine, blocked, count, tick, lanes);
                flush_lanes(lanes, total, p->dim, sums);
            }
        }
        free(lanes);
        /* Every thread's counts are in before the copies are summed. */
#pragma omp barrier
        if (blocked)
            add_block_copies(count, total, copies, size, team, u->m, p->dim);
        else
            add_copies(count, copies, total, threads);
    }
    free(blocked ? blocked_memory : copies);
    return failed ? pc__fail(PC_OUT_OF_MEMORY, "HCA: cannot allocate per-thread cell sums") : PC_OK;
}
#endif

pc_status pc__hca_count_u8_coords(const pc_points *p, const uint8_t *coord, int m, int threads,
                                  struct pc__hca_tick *tick, int32_t *count, uint64_t total, size_t budget)
{
#if PC__HAVE_CPU_PATHS
    if (pc__hca_grid_vector_path(p, m)) {
        pc__hca_u8_grid u;
        pc__hca_u8_grid_from(coord, m, &u);
        return count_u8_coords(p, &u, threads, tick, NULL, count, total, budget, NULL);
    }
#endif
    (void)p, (void)coord, (void)m, (void)threads, (void)tick, (void)count, (void)total, (void)budget;
    return PC_UNSUPPORTED;
}

/* One band's table as min(floor(max(v - off, 0) 2^shift mul / 2^16), m - 1): off is tried from the
 * first value of coordinate 1 down (a grid over the pixels' box starts at its low end: about 256 / m
 * tries), shift 0 (cells wider than a value) then 8 (narrower: a band spanning fewer values than m);
 * for each, the mul that every value allows (an interval per value, intersected), then every value
 * checked. The coordinates come from doubles (pc__hca_cell_coordinate), whose rounding can put a
 * value that falls on a boundary in the cell below: where no mul reproduces that, the tables stay.
 * Once a pass: at most 2 x 256 x 512 steps a band. */
static int band_affine(const uint8_t *t, int m, uint8_t *off, uint8_t *shift, uint16_t *mul)
{
    int first = 0;
    while (first < 256 && t[first] == 0)
        first++;
    if (first == 256) { /* all 0: the 3-band pixels' padding byte, or m cells over one value */
        *off = *shift = 0;
        *mul = 0;
        return 1;
    }
    for (int o = first - 1; o >= 0; o--)
        for (int sh = 0; sh <= 8; sh += 8) {
            int64_t unit = (int64_t)65536 >> sh, lo = 0, hi = 65535; /* d mul / unit is the coordinate */
            for (int v = o + 1; v < 256 && lo <= hi; v++) {
                int64_t d = v - o, c = t[v];
                lo = (c * unit + d - 1) / d > lo ? (c * unit + d - 1) / d : lo; /* d mul >= c unit */
                if (c < m - 1 && ((c + 1) * unit - 1) / d < hi)                 /* d mul < (c + 1) unit */
                    hi = ((c + 1) * unit - 1) / d;
            }
            if (lo > hi)
                continue;
            int exact = 1;
            for (int v = 0; v < 256 && exact; v++) {
                int64_t c = v > o ? ((int64_t)(v - o) << sh) * lo >> 16 : 0;
                exact = (c < m - 1 ? c : m - 1) == t[v];
            }
            if (exact) {
                *off = (uint8_t)o;
                *shift = (uint8_t)sh;
                *mul = (uint16_t)lo;
                return 1;
            }
        }
    return 0;
}

int pc__hca_u8_affine(const uint8_t *coord, int m, uint8_t *off, uint8_t *shift, uint16_t *mul)
{
    for (int j = 0; j < 4; j++)
        if (!band_affine(coord + j * 256, m, off + j, shift + j, mul + j))
            return 0;
    return 1;
}

void pc__hca_u8_grid_from(const uint8_t *coord, int m, pc__hca_u8_grid *u)
{
    memcpy(u->coord, coord, sizeof u->coord);
    u->m = m;
    u->affine = pc__hca_u8_affine(coord, m, u->off, u->shift, u->mul);
}

void pc__hca_band_coordinates(const pc__hca_grid *g, size_t j, uint8_t *coordinate)
{
    for (size_t v = 0; v < 256; v++)
        coordinate[v] = (uint8_t)pc__hca_cell_coordinate((double)v, g->lo[j], g->hi[j], g->m);
}

void pc__hca_u8_grid_of(const pc__hca_grid *g, pc__hca_u8_grid *u)
{
    uint8_t coord[4 * 256] = {0};
    for (size_t j = 0; j < g->dim; j++)
        pc__hca_band_coordinates(g, j, coord + (4 - g->dim + j) * 256);
    pc__hca_u8_grid_from(coord, g->m, u);
}

/* Linear cell index of every point into cell_of[] and, in the same pass (the image is read once),
 * the count of every index: each thread counts into its own copy where the copies fit the budget,
 * since atomic increments on the cells all threads hit at once would serialise them. */
static pc_status index_and_count(pc__hca_grid *g, const pc_points *p, size_t stride, uint32_t *cell_of,
                                 int32_t *count, uint64_t total, size_t budget, int64_t *sums)
{
    size_t dim = g->dim;
#if PC__HAVE_CPU_PATHS
    if (pc__hca_grid_vector_path(p, g->m)) {
        pc__hca_u8_grid u;
        pc__hca_u8_grid_of(g, &u);
        return count_u8_coords(p, &u, g->threads, g->tick, cell_of, count, total, budget, sums);
    }
#endif
    (void)sums; /* only the vector path sums */
    const unsigned char *base = p->data;
    uint32_t *table = NULL; /* integer bands: the offset of every value, per band */
    size_t values = pc__hca_integer_values(p);
    if (values) {
        table = pc__alloc(dim * values, sizeof *table, "HCA cell tables");
        if (!table)
            return PC_OUT_OF_MEMORY;
        pc__hca_value_offsets(g, values, table);
    }
    int threads = g->threads;
    int32_t *copies = NULL;
    if (threads > 1 && total * sizeof(int32_t) * (size_t)threads <= budget)
        copies = calloc(total * (size_t)(threads - 1), sizeof *copies);
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        /* Without copies every thread counts with atomics, thread 0 too. */
        int32_t *mine = threads == 1 ? count : !copies ? NULL : t == 0 ? count : copies + (size_t)(t - 1) * total;
        /* Neighbouring pixels often share a cell: counting runs in a register avoids an increment
         * that waits on the previous one through memory. */
        uint32_t run_idx = 0;
        int32_t run = 0;
#pragma omp for schedule(static)
        for (long i = 0; i < (long)g->n; i++) {
            if (pc__hca_tick_at(g->tick, (size_t)i, g->n)) continue; /* cancelled (hca.c: progress) */
            const unsigned char *row = base + (size_t)i * stride;
            uint32_t idx = 0;
            if (p->dtype == PC_U8)
                for (size_t j = 0; j < dim; j++)
                    idx += table[j * 256 + row[j]];
            else if (p->dtype == PC_U16)
                for (size_t j = 0; j < dim; j++) {
                    uint16_t v;
                    memcpy(&v, row + 2 * j, 2);
                    idx += table[j * 65536 + v];
                }
            else
                for (size_t j = 0; j < dim; j++)
                    idx += (uint32_t)((uint64_t)pc__hca_cell_coordinate(pc__hca_value(row, p->dtype, j), g->lo[j], g->hi[j], g->m) *
                                      g->stride[j]);
            if (cell_of)
                cell_of[i] = idx;
            if (!mine) {
#pragma omp atomic
                count[idx]++;
            } else if (idx == run_idx) {
                run++;
            } else {
                mine[run_idx] += run;
                run_idx = idx;
                run = 1;
            }
        }
        if (mine)
            mine[run_idx] += run;
        /* Every thread's last run is in before the copies are summed. */
#pragma omp barrier
        add_copies(count, copies, total, threads);
    }
    free(copies);
    free(table);
    return PC_OK;
}

/* The grids whose counting pass also sums the cells (pc__hca_grid_build_box's sums): each thread's 16
 * bytes a linear index stay within a core's L2 cache. Larger ones are summed by a pass of their own,
 * where a random add a pixel into a table beyond the cache would cost more than the pass. */
#define SUMMED_CELLS ((uint64_t)1 << 17)

/* Dense grid: counts per linear index, then the non-empty cells in index order; their sums too where
 * wanted and the counting pass can (cell_sums). */
static pc_status build_dense(pc__hca_grid *g, const pc_points *p, size_t stride, int32_t *scratch, uint64_t total,
                             size_t budget, int sums)
{
    /* The counts live in the slot array (int32 suffices: n < 2^31 is checked). */
    g->slot = pc__calloc(total, sizeof *g->slot, "HCA dense grid");
    if (!g->slot)
        return PC_OUT_OF_MEMORY;
    int64_t *by_index = NULL;
    if (sums && scratch && total <= SUMMED_CELLS && pc__hca_grid_vector_path(p, g->m) &&
        !(by_index = pc__calloc(total * g->dim, sizeof *by_index, "HCA cell sums")))
        return PC_OUT_OF_MEMORY;
    pc_status st = index_and_count(g, p, stride, (uint32_t *)scratch, g->slot, total, budget, by_index);
    if (st == PC_OK)
        st = pc__hca_grid_dense_cells(g, total);
    if (st == PC_OK && by_index) {
        if ((g->cell_sums = pc__alloc(g->cells * g->dim, sizeof *g->cell_sums, "HCA cell sums")) != NULL)
            for (size_t c = 0; c < g->cells; c++)
                memcpy(g->cell_sums + c * g->dim, by_index + g->key[c] * g->dim, g->dim * sizeof *by_index);
        else
            st = PC_OUT_OF_MEMORY;
    }
    free(by_index);
    return st;
}

pc_status pc__hca_grid_dense_cells(pc__hca_grid *g, uint64_t total)
{
    int32_t *count = g->slot;
    size_t cells = 0;
    for (uint64_t c = 0; c < total; c++)
        cells += count[c] > 0;
    g->key = pc__alloc(cells, sizeof *g->key, "HCA cells");
    g->density = pc__alloc(cells, sizeof *g->density, "HCA densities");
    if (!g->key || !g->density)
        return PC_OUT_OF_MEMORY;
    size_t k = 0;
    for (uint64_t c = 0; c < total; c++) {
        if (count[c] > 0) {
            g->key[k] = c;
            g->density[k] = count[c];
            count[c] = (int32_t)k++;
        } else {
            count[c] = -1;
        }
    }
    g->cells = cells;
    return PC_OK;
}

typedef struct {
    uint64_t *keys;
    int32_t *ids;
    size_t mask;
} key_table;

static size_t hash_key(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k;
}

typedef struct {
    uint64_t key;
    int32_t id;
} keyed_cell;

static int by_key(const void *a, const void *b)
{
    uint64_t x = ((const keyed_cell *)a)->key, y = ((const keyed_cell *)b)->key;
    return (x > y) - (x < y);
}

/* Sparse grid (m^dim too large for dense arrays): a hash of the non-empty cells, filled in point
 * order, then the cells sorted by linear index. */
static pc_status build_sparse(pc__hca_grid *g, const pc_points *p, size_t stride, int32_t *scratch)
{
    const unsigned char *base = p->data;
    size_t cap = 1024;
    while (cap < 2 * g->n && cap < ((size_t)1 << 40))
        cap *= 2;
    key_table t = {pc__alloc(cap, sizeof(uint64_t), "HCA cell hash"), pc__alloc(cap, sizeof(int32_t), "HCA cell hash"),
                   cap - 1};
    size_t used = 0, capacity = 1024;
    uint64_t *keys = pc__alloc(capacity, sizeof *keys, "HCA cells");
    int64_t *dens = pc__alloc(capacity, sizeof *dens, "HCA densities");
    keyed_cell *order = NULL;
    pc_status st = PC_OUT_OF_MEMORY;
    if (!t.keys || !t.ids || !keys || !dens)
        goto done;
    memset(t.ids, 0xff, cap * sizeof(int32_t));
    for (size_t i = 0; i < g->n; i++) {
        const unsigned char *row = base + i * stride;
        uint64_t key = 0;
        for (size_t j = 0; j < g->dim; j++)
            key += (uint64_t)pc__hca_cell_coordinate(pc__hca_value(row, p->dtype, j), g->lo[j], g->hi[j], g->m) * g->stride[j];
        size_t s = hash_key(key) & t.mask;
        while (t.ids[s] >= 0 && t.keys[s] != key)
            s = (s + 1) & t.mask;
        if (t.ids[s] < 0) {
            if (used == capacity) {
                capacity *= 2;
                uint64_t *k2 = realloc(keys, capacity * sizeof *keys);
                int64_t *d2 = k2 ? realloc(dens, capacity * sizeof *dens) : NULL;
                if (k2)
                    keys = k2;
                if (d2)
                    dens = d2;
                if (!k2 || !d2) {
                    st = pc__fail(PC_OUT_OF_MEMORY, "HCA cells: cannot grow to %zu cells", capacity);
                    goto done;
                }
            }
            t.keys[s] = key;
            t.ids[s] = (int32_t)used;
            keys[used] = key;
            dens[used] = 0;
            used++;
        }
        dens[t.ids[s]]++;
        if (scratch)
            scratch[i] = t.ids[s];
    }
    /* Cells in increasing linear index; points keep their first-seen ids, mapped at the end. */
    order = pc__alloc(used, sizeof *order, "HCA cell order");
    g->first_seen_to_cell = pc__alloc(used, sizeof(int32_t), "HCA cell order");
    g->key = pc__alloc(used, sizeof *g->key, "HCA cells");
    g->density = pc__alloc(used, sizeof *g->density, "HCA densities");
    if (!order || !g->first_seen_to_cell || !g->key || !g->density)
        goto done;
    for (size_t c = 0; c < used; c++) {
        order[c].key = keys[c];
        order[c].id = (int32_t)c;
    }
    qsort(order, used, sizeof *order, by_key);
    for (size_t c = 0; c < used; c++) {
        g->key[c] = order[c].key;
        g->density[c] = dens[order[c].id];
        g->first_seen_to_cell[order[c].id] = (int32_t)c;
    }
    g->cells = used;
    st = PC_OK;
done:
    free(t.keys);
    free(t.ids);
    free(keys);
    free(dens);
    free(order);
    return st;
}

pc_status pc__hca_grid_build(pc__hca_grid *g, const pc_points *p, int m, size_t memory_budget, int threads,
                             int32_t *scratch)
{
    return pc__hca_grid_build_box(g, p, m, NULL, NULL, memory_budget, threads, scratch, 0);
}

void pc__hca_bounding_box(const pc_points *p, int threads, double *lo, double *hi)
{
    pc__hca_grid g;
    memset(&g, 0, sizeof g);
    g.n = p->n;
    g.dim = p->dim;
    g.threads = threads;
    bounding_box(&g, p, pc__hca_row_bytes(p));
    memcpy(lo, g.lo, p->dim * sizeof *lo);
    memcpy(hi, g.hi, p->dim * sizeof *hi);
}

size_t pc__hca_integer_values(const pc_points *p)
{
    return p->dtype == PC_U8 ? 256 : p->dtype == PC_U16 ? 65536 : 0;
}

void pc__hca_value_offsets(const pc__hca_grid *g, size_t values, uint32_t *table)
{
    uint16_t *coordinate = malloc(values * sizeof *coordinate);
    for (size_t j = 0; j < g->dim; j++) {
        if (coordinate)
            pc__hca_coordinate_table(g->lo[j], g->hi[j], g->m, values, coordinate);
        for (size_t v = 0; v < values; v++) /* (without memory for the runs, the rule a value at a time) */
            table[j * values + v] = (uint32_t)((uint64_t)(coordinate ? coordinate[v]
                                                                      : pc__hca_cell_coordinate((double)v, g->lo[j],
                                                                                                g->hi[j], g->m)) *
                                               g->stride[j]);
    }
    free(coordinate);
}

pc_status pc__hca_grid_begin(pc__hca_grid *g, const pc_points *p, int m, const double *lo, const double *hi,
                             size_t memory_budget, int threads, uint64_t *total)
{
    memset(g, 0, sizeof *g);
    g->tick = pc__hca_grid_tick; /* the calling thread's HCA run, if it reports progress (hca.c) */
    g->n = p->n;
    g->dim = p->dim;
    g->m = m;
    g->threads = threads;
    pc_status st = pc__hca_grid_strides(g, total);
    if (st != PC_OK)
        return st;
    if (lo) {
        memcpy(g->lo, lo, p->dim * sizeof *lo);
        memcpy(g->hi, hi, p->dim * sizeof *hi);
    } else {
        bounding_box(g, p, pc__hca_row_bytes(p));
    }
    g->dense = pc__hca_grid_fits_dense(*total, memory_budget);
    return PC_OK;
}

pc_status pc__hca_grid_build_box(pc__hca_grid *g, const pc_points *p, int m, const double *lo, const double *hi,
                                 size_t memory_budget, int threads, int32_t *scratch, int sums)
{
    size_t stride = pc__hca_row_bytes(p);
    uint64_t total = 0;
    pc_status st = pc__hca_grid_begin(g, p, m, lo, hi, memory_budget, threads, &total);
    if (st != PC_OK)
        return st;
    st = g->dense ? build_dense(g, p, stride, scratch, total, memory_budget, sums)
                  : build_sparse(g, p, stride, scratch);
    if (st == PC_OK)
        pc__hca_grid_deltas(g);
    else
        pc__hca_grid_free(g);
    return st;
}

int pc__hca_grid_fits_dense(uint64_t total, size_t memory_budget)
{
    /* the slot array within the budget, and linear indices within the (signed) 32-bit scratch */
    return total <= (uint64_t)INT32_MAX && total * sizeof(int32_t) <= memory_budget;
}

pc_status pc__hca_grid_strides(pc__hca_grid *g, uint64_t *total)
{
    uint64_t t = 1;
    for (size_t j = g->dim; j-- > 0;) {
        g->stride[j] = t;
        if (t > UINT64_MAX / (uint64_t)g->m / 2)
            return pc__fail(PC_INVALID_ARGUMENT, "m^d = %d^%zu cells do not fit in 64-bit indices", g->m, g->dim);
        t *= (uint64_t)g->m;
    }
    *total = t;
    return PC_OK;
}

void pc__hca_grid_deltas(pc__hca_grid *g)
{
    /* Without the table (no memory) neighbours are still found, by the odometer. */
    size_t deltas = 1;
    for (size_t j = 0; j < g->dim; j++)
        deltas *= 3;
    g->delta = malloc((deltas - 1) * sizeof *g->delta);
    if (!g->delta)
        return;
    g->deltas = 0;
    for (size_t o = 0; o < deltas; o++) {
        int64_t delta = 0;
        size_t rest = o;
        for (size_t j = 0; j < g->dim; j++, rest /= 3)
            delta += ((int64_t)(rest % 3) - 1) * (int64_t)g->stride[j];
        if (delta != 0)
            g->delta[g->deltas++] = delta;
    }
}

void pc__hca_grid_free(pc__hca_grid *g)
{
    free(g->delta);
    g->delta = NULL;
    free(g->slot);
    free(g->first_seen_to_cell);
    free(g->key);
    free(g->density);
    free(g->cell_sums);
    g->slot = g->first_seen_to_cell = NULL;
    g->key = NULL;
    g->density = g->cell_sums = NULL;
}

long pc__hca_find(const pc__hca_grid *g, uint64_t key)
{
    if (g->dense)
        return g->slot[key];
    size_t lo = 0, hi = g->cells; /* cells are sorted by key */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (g->key[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->cells && g->key[lo] == key ? (long)lo : -1;
}

void pc__hca_neighbours(const pc__hca_grid *g, size_t cell, int upper_only, pc__hca_visit visit, void *ctx)
{
    size_t dim = g->dim;
    int c[PC__HCA_MAX_DIM], off[PC__HCA_MAX_DIM];
    uint64_t key = g->key[cell];
    int interior = 1;
    for (size_t j = 0; j < dim; j++) {
        c[j] = (int)((key / g->stride[j]) % (uint64_t)g->m);
        interior &= c[j] > 0 && c[j] < g->m - 1;
        off[j] = -1;
    }
    if (interior && g->delta) {
        /* No bound to check: the precomputed index offsets of the 3^d - 1 neighbours. */
        for (size_t o = 0; o < g->deltas; o++) {
            int64_t delta = g->delta[o];
            if (upper_only && delta < 0)
                continue;
            long b = pc__hca_find(g, (uint64_t)((int64_t)key + delta));
            if (b >= 0)
                visit(ctx, cell, (size_t)b);
        }
        return;
    }
    /* Odometer over {-1, 0, 1}^dim. */
    for (;;) {
        int inside = 1, zero = 1;
        int64_t delta = 0;
        for (size_t j = 0; j < dim; j++) {
            int cj = c[j] + off[j];
            inside &= cj >= 0 && cj < g->m;
            zero &= off[j] == 0;
            delta += (int64_t)off[j] * (int64_t)g->stride[j];
        }
        if (inside && !zero && (!upper_only || delta > 0)) {
            long b = pc__hca_find(g, (uint64_t)((int64_t)key + delta));
            if (b >= 0)
                visit(ctx, cell, (size_t)b);
        }
        size_t j = 0;
        while (j < dim && off[j] == 1)
            off[j++] = -1;
        if (j == dim)
            break;
        off[j]++;
    }
}
