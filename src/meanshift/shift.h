/* One mean shift step for one query point: the weighted mean of the references in a list of
 * contiguous ranges. Shared by the sequential and OpenMP backends (which therefore compute bit for
 * bit the same numbers) and by the all-pairs and neighbour-grid paths. */
#ifndef PC_MEANSHIFT_SHIFT_H
#define PC_MEANSHIFT_SHIFT_H

#include "parclust.h"

#include <stddef.h>

typedef struct {
    pc_kernel kernel;
    size_t dim;
    float scale;   /* gaussian: log2(e) / (2 h^2), so K = exp2(-d^2 scale); epanechnikov: 1 / h^2 */
    float h2;      /* h^2: support of flat and epanechnikov */
    float r2;      /* cut-off radius squared; INFINITY when unbounded */
    const float *soa; /* references, dimension-major: soa[k * stride + i] */
    size_t stride;
} pc__shift_refs;

/* Shifts q (dim floats) to out. The references are soa[begin[r] .. end[r]) for r < ranges.
 * out must not overlap q. Returns 0 when no reference has weight (out is then a copy of q). */
int pc__shift_point(const pc__shift_refs *refs, const float *q, const size_t *begin, const size_t *end,
                    size_t ranges, float *out);

#endif
