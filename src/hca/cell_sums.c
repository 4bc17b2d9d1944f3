/* The sums of every cell's uint8 values: HCA-MS's cell means and HECA's prototypes, over images of
 * 100 megapixels. The general loops read each value through pc__hca_value (a switch on the type,
 * then a double); here the rows are bytes, the band count is a constant of the loop for 3 and 4
 * bands, and the sums are integers (exact, so their order does not matter). */
#include "internal_hca.h"

#include "../core/simd.h"

#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

PC__INLINE void add_rows(const pc__hca_grid *g, const uint8_t *base, size_t stride, size_t dim,
                         const int32_t *scratch, size_t begin, size_t end, int64_t *sums)
{
    for (size_t i = begin; i < end; i++) {
        int64_t *s = sums + (size_t)pc__hca_cell_of(g, scratch, i) * dim;
        const uint8_t *row = base + i * stride;
        for (size_t j = 0; j < dim; j++)
            s[j] += row[j];
    }
}

pc_status pc__hca_cell_sums_u8(const pc__hca_grid *g, const pc_points *points, const int32_t *scratch, int threads,
                               int64_t *sums)
{
    size_t dim = g->dim, cells = g->cells, n = g->n, stride = pc__hca_row_bytes(points);
    const uint8_t *base = points->data;
    int failed = 0;
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
        int64_t *mine = t == 0 ? sums : calloc(cells * dim, sizeof *mine);
        failed |= !mine;
        if (mine) {
            if (dim == 3)
                add_rows(g, base, stride, 3, scratch, begin, end, mine);
            else if (dim == 4)
                add_rows(g, base, stride, 4, scratch, begin, end, mine);
            else
                add_rows(g, base, stride, dim, scratch, begin, end, mine);
        }
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
