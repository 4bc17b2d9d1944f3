/* The means of every cell's uint8 values: HCA-MS's cell means and HECA's prototypes, over images of
 * 100 megapixels. The general loops read each value through pc__hca_value (a switch on the type,
 * then a double); here the rows are bytes and the sums integers (exact, so their order does not
 * matter). Up to 4 bands, a cell's sums are 4 lanes of 32 bits added as one vector, one update a pixel
 * where there were one a band (each waiting on the last update of the same cell, often the previous
 * pixel's); the lanes move into the int64 sums every 2^24 pixels, before 255 x 2^24 could overflow
 * them. More bands: one update a band. */
#include "internal_hca.h"

#include "../core/cpu_path.h"
#include "../core/simd.h"

#include <stdlib.h>
#if PC__HAVE_CPU_PATHS
#include <immintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

typedef uint32_t lanes4 __attribute__((vector_size(16)));

#define LANE_ROWS ((size_t)1 << 24)

PC__INLINE void add_rows(const pc__hca_grid *g, const uint8_t *base, size_t stride, size_t dim,
                         const int32_t *scratch, size_t begin, size_t end, int64_t *sums,
                         const pc__hca_listing *listing, pc__hca_point_list *list)
{
    for (size_t i = begin; i < end; i++) {
        int32_t c = pc__hca_cell_of(g, scratch, i);
        int64_t *s = sums + (size_t)c * dim;
        const uint8_t *row = base + i * stride;
        for (size_t j = 0; j < dim; j++)
            s[j] += row[j];
        pc__hca_list_if_marked(listing, list, c, i, row);
    }
}

/* The cells of rows found again a chunk at a time (scratch NULL): 4 KiB on the stack. */
#define FOUND_ROWS 1024

/* Lists the rows at .. at + count - 1 (cells cell[0 .. count)) of marked cells. A chunk's listing
 * comes after its sums, not among them: there every store to a cell's lanes made the compiler load
 * the listing's fields again (a byte table may alias anything), and a branch a pixel on whether its
 * cell is marked missed often. With AVX-512, 16 cells are tested at a time, by a gather from
 * listing->in (which has 3 bytes to spare past its last cell). */
#if PC__HAVE_CPU_PATHS
PC__TARGET_AVX512 static void list_marked_avx512(const int32_t *cell, size_t count, const pc__hca_listing *listing,
                                                 pc__hca_point_list *list, size_t at, const uint8_t *base,
                                                 size_t stride)
{
    for (size_t q = 0; q < count; q += 16) {
        __mmask16 live = count - q >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (count - q)) - 1);
        __m512i c = _mm512_maskz_loadu_epi32(live, cell + q);
        __m512i in = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, c, listing->in, 1);
        __mmask16 marked = _mm512_mask_test_epi32_mask(live, in, _mm512_set1_epi32(0xff));
        while (marked) {
            int k = __builtin_ctz(marked);
            marked &= (__mmask16)(marked - 1);
            pc__hca_list_point(list, at + q + (size_t)k, base + (at + q + (size_t)k) * stride, listing->value_bytes);
        }
    }
}
#endif

static void list_marked(const int32_t *cell, size_t count, const pc__hca_listing *listing, pc__hca_point_list *list,
                        size_t at, const uint8_t *base, size_t stride)
{
#if PC__HAVE_CPU_PATHS
    if (pc__cpu_path() == PC__CPU_AVX512) {
        list_marked_avx512(cell, count, listing, list, at, base, stride);
        return;
    }
#endif
    const uint8_t *in = listing->in;
    for (size_t q = 0; q < count; q++)
        if (in[cell[q]])
            pc__hca_list_point(list, at + q, base + (at + q) * stride, listing->value_bytes);
}

/* The packed pixels at .. at + count - 1 (3 or 4 bands: the cells found again) into their cells'
 * lanes: each pixel's bytes widened by one load (a masked one for 3 bands, which reads nothing past the
 * pixel) in place of a byte load and an insert a band. */
#if PC__HAVE_CPU_PATHS
PC__TARGET_AVX512 static void add_found_avx512(const uint8_t *base, size_t dim, const int32_t *found, size_t count,
                                               size_t at, lanes4 *lanes)
{
    const uint8_t *row = base + at * dim;
    for (size_t q = 0; q < count; q++, row += dim) {
        __m128i v;
        if (dim == 4) {
            uint32_t bytes;
            memcpy(&bytes, row, 4);
            v = _mm_cvtepu8_epi32(_mm_cvtsi32_si128((int)bytes));
        } else {
            v = _mm_cvtepu8_epi32(_mm_maskz_loadu_epi8(0x7, row));
        }
        __m128i *lane = (__m128i *)(lanes + found[q]);
        _mm_store_si128(lane, _mm_add_epi32(_mm_load_si128(lane), v));
    }
}
#endif

/* Rows begin .. end of up to 4 bands into the cells' lanes, then into sums. The cells from scratch, or
 * where there is none (3 or 4 bands on the AVX-512 path), found again from the pixels in u. list (or
 * NULL): the rows of cells marked in listing->in listed there, in the same pass (HCA-MS: one read of
 * the points' cells instead of two). */
PC__INLINE void add_rows_lanes(const pc__hca_grid *g, const uint8_t *base, size_t stride, size_t dim,
                               const int32_t *scratch, const pc__hca_u8_grid *u, size_t begin, size_t end,
                               lanes4 *lanes, int64_t *sums, const pc__hca_listing *listing, pc__hca_point_list *list)
{
    int32_t found[FOUND_ROWS];
    (void)u;
    for (size_t from = begin; from < end; from += LANE_ROWS) {
        size_t to = end - from > LANE_ROWS ? from + LANE_ROWS : end;
        memset(lanes, 0, g->cells * sizeof *lanes);
        for (size_t at = from; at < to; at += FOUND_ROWS) {
            size_t stop = to - at > FOUND_ROWS ? at + FOUND_ROWS : to;
#if PC__HAVE_CPU_PATHS
            if (!scratch) {
                pc__hca_u8_cells_of(base, dim, u, g->slot, at, stop, found);
                add_found_avx512(base, dim, found, stop - at, at, lanes);
            } else
#endif
                for (size_t i = at; i < stop; i++) {
                    const uint8_t *row = base + i * stride;
                    lanes4 v = {row[0], dim > 1 ? row[1] : 0, dim > 2 ? row[2] : 0, dim > 3 ? row[3] : 0};
                    found[i - at] = pc__hca_cell_of(g, scratch, i);
                    lanes[found[i - at]] += v;
                }
            if (list)
                list_marked(found, stop - at, listing, list, at, base, stride);
        }
        for (size_t c = 0; c < g->cells; c++)
            for (size_t j = 0; j < dim; j++)
                sums[c * dim + j] += lanes[c][j];
    }
}

pc_status pc__hca_cell_sums_u8(const pc__hca_grid *g, const pc_points *points, const int32_t *scratch, int threads,
                               int64_t *sums, const pc__hca_listing *listing)
{
    size_t dim = g->dim, cells = g->cells, n = g->n, stride = pc__hca_row_bytes(points);
    const uint8_t *base = points->data;
    int failed = 0;
    pc__hca_u8_grid u; /* no scratch: the cells found again */
#if PC__HAVE_CPU_PATHS
    if (!scratch)
        pc__hca_u8_grid_of(g, &u);
#endif
    memset(sums, 0, cells * dim * sizeof *sums);
    (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1) reduction(| : failed)
    {
        size_t t = 0, team = 1;
#ifdef _OPENMP
        t = (size_t)omp_get_thread_num();
        team = (size_t)omp_get_num_threads();
#endif
        size_t begin = n * t / team, end = n * (t + 1) / team;
        pc__hca_point_list *list = listing ? listing->lists + t : NULL;
        int64_t *mine = t == 0 ? sums : calloc(cells * dim, sizeof *mine);
        lanes4 *lanes = dim <= 4 ? malloc((cells ? cells : 1) * sizeof *lanes) : NULL;
        failed |= !mine || (dim <= 4 && !lanes);
        if (mine && dim > 4)
            add_rows(g, base, stride, dim, scratch, begin, end, mine, listing, list);
        else if (mine && lanes) {
            /* The band count a constant of the loop for the common images. */
            if (dim == 3)
                add_rows_lanes(g, base, stride, 3, scratch, &u, begin, end, lanes, mine, listing, list);
            else if (dim == 4)
                add_rows_lanes(g, base, stride, 4, scratch, &u, begin, end, lanes, mine, listing, list);
            else
                add_rows_lanes(g, base, stride, dim, scratch, &u, begin, end, lanes, mine, listing, list);
        }
        free(lanes);
        /* Thread 0 summed into sums itself; the others add theirs once it is done. */
#pragma omp barrier
        if (mine && t > 0) {
#pragma omp critical(pc__hca_cell_sums)
            for (size_t q = 0; q < cells * dim; q++)
                sums[q] += mine[q];
            free(mine);
        }
    }
    return failed ? pc__fail(PC_OUT_OF_MEMORY, "cannot allocate per-thread cell sums") : PC_OK;
}

pc_status pc__hca_cell_means_u8(const pc__hca_grid *g, const pc_points *points, const int32_t *scratch, int threads,
                                double *mean, const pc__hca_listing *listing)
{
    int64_t *sums = pc__alloc(g->cells * g->dim, sizeof *sums, "cell sums");
    pc_status st = sums ? pc__hca_cell_sums_u8(g, points, scratch, threads, sums, listing) : PC_OUT_OF_MEMORY;
    if (st == PC_OK)
        pc__hca_means_from_sums(g, PC_U8, sums, mean);
    free(sums);
    return st;
}
