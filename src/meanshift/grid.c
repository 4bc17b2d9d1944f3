/* The neighbour-grid path of mean shift: with a finite radius, references are bucketed in cells of
 * that side, and a query visits only the 3^D cells around it, so the work grows with N times the
 * neighbours instead of N^2 (cell lists, as in MeanShift++). */
#include "refs.h"

#include "../core/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Below this many points per visited cell block, the grid's bookkeeping costs more than it saves. */
#define PC__GRID_MIN_GAIN 4.0

static void fill_soa(float *soa, size_t stride, const float *points, const size_t *order, size_t n,
                     size_t dim)
{
    if (pc__shift_point_major(dim)) {
        for (size_t i = 0; i < n; i++)
            memcpy(soa + i * dim, points + (order ? order[i] : i) * dim, dim * sizeof *soa);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const float *p = points + (order ? order[i] : i) * dim;
        for (size_t k = 0; k < dim; k++)
            soa[k * stride + i] = p[k];
    }
}

pc_status pc__ms_refs_build(pc__ms_refs *refs, const float *points, size_t n, size_t dim, int use_grid,
                            double radius, int threads)
{
    pc__shift_refs keep = refs->shift; /* kernel parameters set by the caller */
    memset(refs, 0, sizeof *refs);
    refs->shift = keep;
    refs->shift.dim = dim;
    refs->shift.stride = n;
    if (use_grid && isfinite(radius) && radius > 0) {
        pc_status st = pc__grid_build(&refs->grid, points, n, dim, radius, threads);
        if (st == PC_OUT_OF_MEMORY)
            return st;
        if (st == PC_OK) {
            /* The grid pays when the 3^D cells a query visits hold far fewer than N points. */
            double visited = fmin(pow(3.0, (double)dim), (double)refs->grid.cells);
            double per_cell = (double)n / (double)refs->grid.cells;
            if (visited * per_cell * PC__GRID_MIN_GAIN <= (double)n)
                refs->use_grid = 1;
            else
                pc__grid_free(&refs->grid);
        }
        pc__clear_error();
    }
    if (pc__shift_point_major(dim) && !refs->use_grid) {
        refs->shift.soa = points; /* point-major in input order: the points themselves, no copy */
        return PC_OK;
    }
    refs->soa = pc__alloc(n, dim * sizeof(float), "mean shift references");
    if (!refs->soa)
        return PC_OUT_OF_MEMORY;
    refs->shift.soa = refs->soa;
    fill_soa(refs->soa, n, points, refs->use_grid ? refs->grid.order : NULL, n, dim);
    pc__shift_expand(&refs->shift, &refs->expanded);
    return PC_OK;
}

void pc__ms_refs_free(pc__ms_refs *refs)
{
    free(refs->soa);
    free(refs->expanded);
    if (refs->use_grid)
        pc__grid_free(&refs->grid);
    memset(refs, 0, sizeof *refs);
}

pc_status pc__ms_scratch_init(pc__ms_scratch *s, const pc__ms_refs *refs)
{
    memset(s, 0, sizeof *s);
    size_t cap = refs->use_grid ? pc__grid_neighbour_capacity(&refs->grid, 1) : 1;
    size_t dim = refs->shift.dim;
    s->cells = pc__alloc(cap, sizeof *s->cells, "neighbour cells");
    s->begin = pc__alloc(cap, sizeof *s->begin, "neighbour ranges");
    s->end = pc__alloc(cap, sizeof *s->end, "neighbour ranges");
    s->coords = pc__alloc(dim, sizeof *s->coords, "cell coordinates");
    s->odometer = pc__alloc(dim, sizeof *s->odometer, "cell coordinates");
    size_t block = pc__shift_block(dim);
    s->shifted = pc__alloc(block, dim * sizeof *s->shifted, "shifted points");
    int sums = pc__shift_point_major(dim);
    if (sums) {
        s->work.acc = pc__alloc(block, dim * sizeof *s->work.acc, "mean shift sums");
        s->work.tot = pc__alloc(block, dim * sizeof *s->work.tot, "mean shift sums");
    }
    if (!s->shifted || !s->cells || !s->begin || !s->end || !s->coords || !s->odometer ||
        (sums && (!s->work.acc || !s->work.tot))) {
        pc__ms_scratch_free(s);
        return PC_OUT_OF_MEMORY;
    }
    return PC_OK;
}

void pc__ms_scratch_free(pc__ms_scratch *s)
{
    free(s->cells);
    free(s->begin);
    free(s->end);
    free(s->coords);
    free(s->odometer);
    free(s->shifted);
    free(s->work.acc);
    free(s->work.tot);
    memset(s, 0, sizeof *s);
}

size_t pc__ms_ranges(const pc__ms_refs *refs, const float *q, pc__ms_scratch *s)
{
    if (!refs->use_grid) {
        s->begin[0] = 0;
        s->end[0] = refs->shift.stride;
        return 1;
    }
    const pc__grid *g = &refs->grid;
    if (!pc__grid_locate(g, q, s->coords))
        return 0;
    size_t cells = pc__grid_neighbours(g, s->coords, 1, s->odometer, s->cells);
    /* Cells adjacent in sorted order are merged into one range: fewer, longer loops. */
    size_t ranges = 0;
    for (size_t i = 0; i < cells; i++) {
        size_t b = g->start[s->cells[i]], e = g->start[s->cells[i] + 1];
        if (ranges && s->end[ranges - 1] == b)
            s->end[ranges - 1] = e;
        else {
            s->begin[ranges] = b;
            s->end[ranges] = e;
            ranges++;
        }
    }
    return ranges;
}
