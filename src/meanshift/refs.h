/* The references of mean shift laid out for the hot loop: dimension-major (structure of arrays) up
 * to PC__SHIFT_LANE_DIM dimensions, point-major above (shift.h), either in input order (all pairs)
 * or sorted by neighbour-grid cell (finite radius), and the ranges of references a query must visit. */
#ifndef PC_MEANSHIFT_REFS_H
#define PC_MEANSHIFT_REFS_H

#include "../core/grid.h"
#include "shift.h"

typedef struct {
    pc__shift_refs shift; /* the layout pc__shift_point reads */
    float *soa;           /* owned storage behind shift.soa, or NULL when it is the points */
    float *expanded;      /* owned storage behind shift.expanded, or NULL */
    int use_grid;
    pc__grid grid;        /* valid when use_grid */
} pc__ms_refs;

/* Lays out n points (packed rows) as references. With use_grid the references are bucketed in cells
 * of side `radius`; if the grid does not pay (too few points per cell) use_grid is cleared. Point-major
 * references in input order are the points themselves (not copied): they must stay unchanged, and
 * allocated, while the references are used. threads: the grid's build (pc__grid_build's). */
pc_status pc__ms_refs_build(pc__ms_refs *refs, const float *points, size_t n, size_t dim, int use_grid,
                            double radius, int threads);
void pc__ms_refs_free(pc__ms_refs *refs);

/* Per-thread scratch for range lists. */
typedef struct {
    size_t *cells, *begin, *end;
    float *shifted; /* pc__shift_block(dim) x dim: the new positions before they are stored */
    int32_t *coords, *odometer;
    pc__shift_work work; /* sums of the point-major path; NULL pointers at low dimension */
} pc__ms_scratch;

pc_status pc__ms_scratch_init(pc__ms_scratch *s, const pc__ms_refs *refs);
void pc__ms_scratch_free(pc__ms_scratch *s);

/* The ranges of references that can lie within the radius of q; returns how many. */
size_t pc__ms_ranges(const pc__ms_refs *refs, const float *q, pc__ms_scratch *s);

#endif
