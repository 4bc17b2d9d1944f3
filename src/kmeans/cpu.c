/* Lloyd's iterations on the CPU, sequential or OpenMP, following scikit-learn's loop: assign every
 * point to its nearest centre, move each centre to the mean of its points (an empty cluster takes the
 * point farthest from its centre), stop when no label changed or the centres moved less than tol. */
#include "internal_km.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 1024 /* points assigned, then summed, while they are in cache */

/* Assignment of every point and the per-cluster sums of the new centres: each thread sums its chunks
 * (coordinates, then the count, per cluster) in double, and the threads' sums are added in order. */
static pc_status assign_and_sum(const float *x, size_t n, size_t dim, size_t k, const pc__km_centres *c, int threads,
                                int32_t *labels, double *sums, int64_t *counts)
{
    int failed = 0;
    size_t row = dim + 1;
    double *total = pc__calloc(k * row, sizeof *total, "cluster sums");
    if (!total)
        return PC_OUT_OF_MEMORY;
    long chunks = (long)((n + CHUNK - 1) / CHUNK);
    (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1) reduction(| : failed)
    {
        double *s = calloc(k * row, sizeof *s);
        failed |= !s;
#pragma omp for schedule(static)
        for (long ch = 0; ch < chunks; ch++) {
            size_t b = (size_t)ch * CHUNK, e = b + CHUNK < n ? b + CHUNK : n;
            pc__km_assign(x, b, e, c, labels);
            if (!s)
                continue;
            for (size_t i = b; i < e; i++) {
                double *t = s + (size_t)labels[i] * row;
                for (size_t d = 0; d < dim; d++)
                    t[d] += x[i * dim + d];
                t[dim] += 1;
            }
        }
        pc__team_add_ordered(total, s, k * row);
        free(s);
    }
    for (size_t q = 0; q < k; q++) {
        for (size_t d = 0; d < dim; d++)
            sums[q * dim + d] = total[q * row + d];
        counts[q] = (int64_t)total[q * row + dim];
    }
    free(total);
    return failed ? pc__fail(PC_OUT_OF_MEMORY, "k-means: cannot allocate per-thread sums") : PC_OK;
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
pc_status pc__km_relocate_empty(const float *x, size_t n, size_t dim, size_t k, const float *old,
                                const int32_t *labels, double *sums, int64_t *counts)
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

typedef struct {
    const float *x;
    size_t n, dim, k;
    int threads;
    int32_t *labels, *previous;
    pc__km_centres c;
} cpu_engine;

static pc_status cpu_step(void *ctx, const float *centres, double *sums, int64_t *counts, size_t *changed)
{
    cpu_engine *e = ctx;
    pc__km_centres_set(&e->c, centres);
    memcpy(e->previous, e->labels, e->n * sizeof *e->labels);
    pc_status st = assign_and_sum(e->x, e->n, e->dim, e->k, &e->c, e->threads, e->labels, sums, counts);
    if (st != PC_OK)
        return st;
    size_t diff = 0;
    for (size_t i = 0; i < e->n; i++)
        diff += e->labels[i] != e->previous[i];
    *changed = diff;
    return PC_OK;
}

static pc_status cpu_labels(void *ctx, int32_t *labels)
{
    cpu_engine *e = ctx;
    if (labels != e->labels)
        memcpy(labels, e->labels, e->n * sizeof *labels);
    return PC_OK;
}

static pc_status cpu_finish(void *ctx, const float *centres, int relabel, double *inertia)
{
    cpu_engine *e = ctx;
    const float *x = e->x;
    size_t n = e->n, dim = e->dim;
    int threads = e->threads;
    (void)threads;
    long chunks = (long)((n + CHUNK - 1) / CHUNK);
    if (relabel) {
        pc__km_centres_set(&e->c, centres);
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
        for (long ch = 0; ch < chunks; ch++) {
            size_t b = (size_t)ch * CHUNK, end = b + CHUNK < n ? b + CHUNK : n;
            pc__km_assign(x, b, end, &e->c, e->labels);
        }
    }
    /* Block sums added in order, so that n_init compares the same numbers at any thread count. */
    double part[PC__KM_SUM_BLOCKS] = {0}, total = 0;
    const int32_t *labels = e->labels;
    size_t per = (n + PC__KM_SUM_BLOCKS - 1) / PC__KM_SUM_BLOCKS;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
    for (long b = 0; b < PC__KM_SUM_BLOCKS; b++)
        for (size_t i = (size_t)b * per; i < n && i < ((size_t)b + 1) * per; i++)
            part[b] += pc__km_dist2(x + i * dim, centres + (size_t)labels[i] * dim, dim);
    for (int b = 0; b < PC__KM_SUM_BLOCKS; b++)
        total += part[b];
    *inertia = total;
    return PC_OK;
}

pc_status pc__km_lloyd_cpu(const float *x, size_t n, size_t dim, size_t k, const pc__km_options *o, float *centres,
                           int32_t *labels, int *iterations, double *inertia)
{
    cpu_engine e = {x, n, dim, k, o->threads, labels, pc__alloc(n, sizeof(int32_t), "labels"), {0, 0, 0, NULL, NULL}};
    pc_status st = PC_OUT_OF_MEMORY;
    if (e.previous && pc__km_centres_init(&e.c, k, dim) == PC_OK) {
        for (size_t i = 0; i < n; i++)
            labels[i] = -1;
        pc__km_engine engine = {&e, cpu_step, cpu_labels, cpu_finish};
        st = pc__km_lloyd(&engine, x, n, dim, k, o, centres, iterations, inertia);
    }
    pc__km_centres_free(&e.c);
    free(e.previous);
    return st;
}
