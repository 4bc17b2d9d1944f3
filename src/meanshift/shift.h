/* One mean shift step for one query point: the weighted mean of the references in a list of
 * contiguous ranges. Shared by the sequential and OpenMP backends (which therefore compute bit for
 * bit the same numbers) and by the all-pairs and neighbour-grid paths.
 *
 * Up to PC__SHIFT_LANE_DIM dimensions the references are dimension-major and 8 references are
 * weighed at once, all coordinates in registers. Above, they are point-major (one row per reference):
 * each reference is weighed once with its row read in 8-value slices, and its weighted row added to
 * the sums while it is still in cache, so a step costs O(references x dim) at any dimension. */
#ifndef PC_MEANSHIFT_SHIFT_H
#define PC_MEANSHIFT_SHIFT_H

#include "parclust.h"

#include <stddef.h>

#define PC__SHIFT_LANE_DIM 8

typedef struct {
    pc_kernel kernel;
    size_t dim;
    float scale;   /* gaussian: log2(e) / (2 h^2), so K = exp2(-d^2 scale); epanechnikov: 1 / h^2 */
    float h2;      /* h^2: support of flat and epanechnikov */
    float r2;      /* cut-off radius squared; INFINITY when unbounded */
    /* References i = 0 .. stride-1. dim <= PC__SHIFT_LANE_DIM: dimension-major, soa[k * stride + i];
     * above: point-major, soa[i * dim + k]. */
    const float *soa;
    size_t stride;
    /* The gaussian's expanded form for the AVX-512 path over all pairs (pc__shift_expand), or NULL:
     * dim + 1 rows of `stride` floats, the references less `centre` dimension-major, then
     * -scale |y - centre|^2 per reference. */
    const float *expanded;
    float centre[PC__SHIFT_LANE_DIM];
} pc__shift_refs;

/* Lays out r's expanded form in *storage (NULL when it does not apply or cannot be allocated; the
 * caller frees it) where the AVX-512 path will weigh a gaussian over all pairs, dimension-major, and
 * the references lie within reach of it (shift.c says how near). Needs r's kernel, scale, r2, dim, soa
 * and stride. */
void pc__shift_expand(pc__shift_refs *r, float **storage);

/* How many queries the point-major path shifts together, so that each reference row, read once from
 * memory, serves all of them while it is in cache: as many as keep their rows and sums within about
 * 256 KiB, at most PC__SHIFT_MAX_BLOCK; 1 at low dimension. */
#define PC__SHIFT_MAX_BLOCK 8

static inline int pc__shift_point_major(size_t dim) { return dim > PC__SHIFT_LANE_DIM; }

static inline size_t pc__shift_block(size_t dim)
{
    if (!pc__shift_point_major(dim))
        return 1;
    size_t b = (size_t)32768 / dim;
    return b < 1 ? 1 : b > PC__SHIFT_MAX_BLOCK ? PC__SHIFT_MAX_BLOCK : b;
}

/* Per-thread sums of the point-major path: pc__shift_block(dim) x dim floats and as many doubles. */
typedef struct {
    float *acc;
    double *tot;
} pc__shift_work;

/* Shifts q (dim floats) to out. The references are those of index begin[r] .. end[r]-1 for r < ranges.
 * out must not overlap q; work is used above PC__SHIFT_LANE_DIM dimensions (NULL below). Returns 0
 * when no reference has weight (out is then a copy of q). */
int pc__shift_point(const pc__shift_refs *refs, const float *q, const size_t *begin, const size_t *end,
                    size_t ranges, pc__shift_work *work, float *out);

/* Point-major references only: shifts count <= pc__shift_block(dim) queries q[j] against the same
 * ranges at once, to out + j * dim, with moved[j] what pc__shift_point would return. Each query's
 * numbers are bit for bit those pc__shift_point computes for it alone (its sums never mix with the
 * others'), so how queries are grouped, by thread or by block, changes no result. */
void pc__shift_points(const pc__shift_refs *refs, const float *const *q, size_t count, const size_t *begin,
                      const size_t *end, size_t ranges, pc__shift_work *work, float *out, int *moved);

#endif
