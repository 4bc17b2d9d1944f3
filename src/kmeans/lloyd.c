/* Lloyd's loop, the same for every backend (the engine does the passes over the points): scikit-learn's
 * order of steps and stopping rules, so that from the same centres it takes the same iterations. */
#include "internal_km.h"

#include <stdlib.h>
#include <string.h>

double pc__km_update(const double *sums, const int64_t *counts, size_t k, size_t dim, const float *old,
                     float *centres)
{
    double shift = 0;
    for (size_t j = 0; j < k; j++)
        for (size_t d = 0; d < dim; d++) {
            float v = counts[j] > 0 ? (float)(sums[j * dim + d] / (double)counts[j]) : old[j * dim + d];
            double t = (double)v - old[j * dim + d];
            shift += t * t;
            centres[j * dim + d] = v;
        }
    return shift;
}

pc_status pc__km_lloyd(const pc__km_engine *e, const float *x, size_t n, size_t dim, size_t k, const pc__km_options *o,
                       float *centres, int *iterations, double *inertia)
{
    pc_status st = PC_OK;
    double *sums = pc__alloc(k * dim, sizeof *sums, "centre sums");
    int64_t *counts = pc__alloc(k, sizeof *counts, "cluster counts");
    float *old = pc__alloc(k * dim, sizeof *old, "centres");
    int32_t *labels = NULL;
    if (!sums || !counts || !old) {
        st = PC_OUT_OF_MEMORY;
        goto done;
    }
    int strict = 0, it = 0;
    while (it < o->max_iter) {
        memcpy(old, centres, k * dim * sizeof *old);
        size_t changed;
        if ((st = e->step(e->ctx, old, sums, counts, &changed)) != PC_OK)
            goto done;
        int empty = 0;
        for (size_t j = 0; j < k; j++)
            empty |= counts[j] == 0;
        if (empty && !e->relocates) { /* rare: the rule needs every point's distance to its centre */
            if (!labels && !(labels = pc__alloc(n, sizeof *labels, "labels"))) {
                st = PC_OUT_OF_MEMORY;
                goto done;
            }
            if ((st = e->labels(e->ctx, labels)) != PC_OK ||
                (st = pc__km_relocate_empty(x, n, dim, k, old, labels, sums, counts)) != PC_OK)
                goto done;
        }
        double shift = pc__km_update(sums, counts, k, dim, old, centres);
        it++;
        if (it > 1 && changed == 0) {
            strict = 1;
            break;
        }
        if (o->progress && o->progress(o->progress_user, (double)it / o->max_iter)) {
            st = pc__fail(PC_CANCELLED, "k-means cancelled after %d iterations", it);
            goto done;
        }
        if (shift <= o->tol_abs)
            break;
    }
    /* Unless no label changed, the labels are those of the centres before the last update. */
    st = e->finish(e->ctx, centres, !strict, inertia);
    *iterations = it;
done:
    free(sums);
    free(counts);
    free(old);
    free(labels);
    return st;
}
