/* Lloyd's iterations on the CPU, sequential or OpenMP, following scikit-learn's loop: assign every
 * point to its nearest centre, move each centre to the mean of its points (an empty cluster takes the
 * point farthest from its centre), stop when no label changed or the centres moved less than tol. */
#include "internal_km.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define CHUNK 1024 /* points assigned, then summed, while they are in cache */

/* Assignment of every point and the per-cluster sums of the new centres (double, per thread, added
 * in thread order). */
static void assign_and_sum(const float *x, size_t n, size_t dim, size_t k, const pc__km_centres *c, int threads,
                           int32_t *labels, double *sums, int64_t *counts)
{
    memset(sums, 0, k * dim * sizeof *sums);
    memset(counts, 0, k * sizeof *counts);
    long chunks = (long)((n + CHUNK - 1) / CHUNK);
    (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        double *s = calloc(k * dim, sizeof *s);
        int64_t *cnt = calloc(k, sizeof *cnt);
#pragma omp for schedule(static)
        for (long ch = 0; ch < chunks; ch++) {
            size_t b = (size_t)ch * CHUNK, e = b + CHUNK < n ? b + CHUNK : n;
            pc__km_assign(x, b, e, c, labels);
            if (!s || !cnt)
                continue;
            for (size_t i = b; i < e; i++) {
                double *t = s + (size_t)labels[i] * dim;
                for (size_t d = 0; d < dim; d++)
                    t[d] += x[i * dim + d];
                cnt[labels[i]]++;
            }
        }
        int team = 1;
#ifdef _OPENMP
        team = omp_get_num_threads();
#endif
        /* Iteration t is thread t's (schedule static, 1): sums added in thread order. */
#pragma omp for ordered schedule(static, 1)
        for (int t = 0; t < team; t++) {
#pragma omp ordered
            if (s && cnt) {
                for (size_t q = 0; q < k * dim; q++)
                    sums[q] += s[q];
                for (size_t q = 0; q < k; q++)
                    counts[q] += cnt[q];
            }
        }
        free(s);
        free(cnt);
    }
}

typedef struct {
    double dist;
    size_t index;
} far_point;

static int farther_first(const void *a, const void *b)
{
    const far_point *x = a, *y = b;
    if (x->dist != y->dist)
        return x->dist > y->dist ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* scikit-learn's rule: the e empty clusters, in index order, take the e points farthest from their
 * (old) centres, which leave their clusters' sums. */
static pc_status relocate_empty(const float *x, size_t n, size_t dim, size_t k, const float *old, const int32_t *labels,
                                double *sums, int64_t *counts)
{
    size_t empty = 0;
    for (size_t c = 0; c < k; c++)
        empty += counts[c] == 0;
    if (empty == 0)
        return PC_OK;
    far_point *far = pc__alloc(n, sizeof *far, "empty-cluster search");
    if (!far)
        return PC_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++) {
        far[i].dist = pc__km_dist2(x + i * dim, old + (size_t)labels[i] * dim, dim);
        far[i].index = i;
    }
    qsort(far, n, sizeof *far, farther_first);
    size_t next = 0;
    for (size_t c = 0; c < k && next < n; c++) {
        if (counts[c] != 0)
            continue;
        size_t i = far[next++].index;
        int32_t from = labels[i];
        for (size_t d = 0; d < dim; d++) {
            sums[(size_t)from * dim + d] -= x[i * dim + d];
            sums[c * dim + d] = x[i * dim + d];
        }
        counts[from]--;
        counts[c] = 1;
    }
    free(far);
    return PC_OK;
}

pc_status pc__km_lloyd_cpu(const float *x, size_t n, size_t dim, size_t k, const pc__km_options *o, float *centres,
                           int32_t *labels, int *iterations, double *inertia)
{
    pc_status st = PC_OK;
    pc__km_centres c = {0, 0, 0, NULL, NULL};
    int32_t *old_labels = pc__alloc(n, sizeof *old_labels, "labels");
    double *sums = pc__alloc(k * dim, sizeof *sums, "centre sums");
    int64_t *counts = pc__alloc(k, sizeof *counts, "cluster counts");
    float *old = pc__alloc(k * dim, sizeof *old, "centres");
    if (!old_labels || !sums || !counts || !old || pc__km_centres_init(&c, k, dim) != PC_OK) {
        st = PC_OUT_OF_MEMORY;
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        old_labels[i] = -1;
    int strict = 0, it = 0;
    while (it < o->max_iter) {
        memcpy(old, centres, k * dim * sizeof *old);
        pc__km_centres_set(&c, old);
        assign_and_sum(x, n, dim, k, &c, o->threads, labels, sums, counts);
        if ((st = relocate_empty(x, n, dim, k, old, labels, sums, counts)) != PC_OK)
            goto done;
        double shift = 0;
        for (size_t j = 0; j < k; j++)
            for (size_t d = 0; d < dim; d++) {
                float v = counts[j] > 0 ? (float)(sums[j * dim + d] / (double)counts[j]) : old[j * dim + d];
                double t = (double)v - old[j * dim + d];
                shift += t * t;
                centres[j * dim + d] = v;
            }
        it++;
        if (memcmp(labels, old_labels, n * sizeof *labels) == 0) {
            strict = 1;
            break;
        }
        if (o->progress && o->progress(o->progress_user, (double)it / o->max_iter)) {
            st = pc__fail(PC_CANCELLED, "k-means cancelled after %d iterations", it);
            goto done;
        }
        if (shift <= o->tol_abs)
            break;
        memcpy(old_labels, labels, n * sizeof *labels);
    }
    if (!strict) { /* the labels of the final centres */
        pc__km_centres_set(&c, centres);
        int threads = o->threads;
        (void)threads;
        long chunks = (long)((n + CHUNK - 1) / CHUNK);
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
        for (long ch = 0; ch < chunks; ch++) {
            size_t b = (size_t)ch * CHUNK, e = b + CHUNK < n ? b + CHUNK : n;
            pc__km_assign(x, b, e, &c, labels);
        }
    }
    double total = 0;
    int threads = o->threads;
    (void)threads;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static) reduction(+ : total)
    for (long i = 0; i < (long)n; i++)
        total += pc__km_dist2(x + (size_t)i * dim, centres + (size_t)labels[i] * dim, dim);
    *inertia = total;
    *iterations = it;
done:
    pc__km_centres_free(&c);
    free(old_labels);
    free(sums);
    free(counts);
    free(old);
    return st;
}
