/* Lloyd's iterations on the CPU, sequential or OpenMP, following scikit-learn's loop: assign every
 * point to its nearest centre, move each centre to the mean of its points (an empty cluster takes the
 * point farthest from its centre), stop when no label changed or the centres moved less than tol.
 * The sums are the stream's fixed-point ones (internal_km.h), so that both compute the same centres. */
#include "internal_km.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 1024 /* points assigned, then summed, while they are in cache */

/* Assignment of every point and the per-cluster sums of the new centres, in fixed point
 * (internal_km.h): each thread sums its chunks in 64-bit integers, and the threads' sums are added
 * in any order to the same total, the stream's and the CUDA backend's. */
static pc_status assign_and_sum(const float *x, size_t n, size_t dim, size_t k, const pc__km_centres *c, int threads,
                                float scale, int32_t *labels, int64_t *sums, int64_t *counts)
{
    int failed = 0;
    memset(sums, 0, k * dim * sizeof *sums);
    memset(counts, 0, k * sizeof *counts);
    long chunks = (long)((n + CHUNK - 1) / CHUNK);
    (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1) reduction(| : failed)
    {
        int64_t *s = calloc(k * (dim + 1), sizeof *s), *cnt = s ? s + k * dim : NULL;
        failed |= !s;
#pragma omp for schedule(static)
        for (long ch = 0; ch < chunks; ch++) {
            size_t b = (size_t)ch * CHUNK, e = b + CHUNK < n ? b + CHUNK : n;
            pc__km_assign(x, b, e, c, labels);
            if (!s)
                continue;
            for (size_t i = b; i < e; i++) {
                int64_t *t = s + (size_t)labels[i] * dim;
                for (size_t d = 0; d < dim; d++)
                    t[d] += pc__km_fixed(x[i * dim + d], scale);
                cnt[labels[i]]++;
            }
        }
        if (s) {
#pragma omp critical(pc__km_sums)
            for (size_t q = 0; q < k * (dim + 1); q++) {
                if (q < k * dim)
                    sums[q] += s[q];
                else
                    counts[q - k * dim] += s[q];
            }
        }
        free(s);
    }
    return failed ? pc__fail(PC_OUT_OF_MEMORY, "k-means: cannot allocate per-thread sums") : PC_OK;
}

/* The `empty` points farthest from their (old) centres, farthest first (the order of internal_km.h). */
static pc_status farthest(const float *x, size_t n, size_t dim, size_t empty, const float *old, const int32_t *labels,
                          pc__km_far *far)
{
    if (pc__km_far_init(far, empty, dim) != PC_OK)
        return PC_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++)
        pc__km_far_offer(far, pc__km_dist2(x + i * dim, old + (size_t)labels[i] * dim, dim), labels[i], x + i * dim);
    pc__km_far_sort(far);
    return PC_OK;
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
    pc__km_far far;
    if (farthest(x, n, dim, empty, old, labels, &far) != PC_OK)
        return PC_OUT_OF_MEMORY;
    /* The clusters empty before any point moves (marked -1), as scikit-learn and
     * pc__km_relocate_fixed list them. */
    for (size_t c = 0; c < k; c++)
        counts[c] = counts[c] == 0 ? -1 : counts[c];
    size_t next = 0;
    for (size_t c = 0; c < k; c++) {
        if (counts[c] != -1)
            continue;
        if (next == far.count) {
            counts[c] = 0;
            continue;
        }
        size_t s = far.heap[next++];
        const float *p = far.x + s * dim;
        int32_t from = far.label[s];
        for (size_t d = 0; d < dim; d++) {
            sums[(size_t)from * dim + d] -= p[d];
            sums[c * dim + d] = p[d];
        }
        counts[from]--;
        counts[c] = 1;
    }
    pc__km_far_free(&far);
    return PC_OK;
}

/* The empty-cluster rule on the fixed-point sums and counts of labels[] (a no-op without an empty
 * cluster): the empty clusters take the points farthest from their centres. */
pc_status pc__km_empty_rule_cpu(const float *x, size_t n, size_t dim, size_t k, const float *centres,
                                const int32_t *labels, float scale, int64_t *sums, int64_t *counts)
{
    size_t empty = 0;
    for (size_t j = 0; j < k; j++)
        empty += counts[j] == 0;
    if (empty) { /* rare: the rule needs every point's distance to its centre */
        pc__km_far far;
        if (farthest(x, n, dim, empty, centres, labels, &far) != PC_OK)
            return PC_OUT_OF_MEMORY;
        pc__km_relocate_fixed(&far, k, dim, scale, sums, counts);
        pc__km_far_free(&far);
    }
    return PC_OK;
}

/* Block sums added in order, so that n_init compares the same numbers at any thread count. */
double pc__km_inertia_cpu(const float *x, size_t n, size_t dim, const float *centres, const int32_t *labels,
                          int threads)
{
    double part[PC__KM_SUM_BLOCKS] = {0}, total = 0;
    size_t per = (n + PC__KM_SUM_BLOCKS - 1) / PC__KM_SUM_BLOCKS;
    (void)threads;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
    for (long b = 0; b < PC__KM_SUM_BLOCKS; b++)
        for (size_t i = (size_t)b * per; i < n && i < ((size_t)b + 1) * per; i++)
            part[b] += pc__km_dist2(x + i * dim, centres + (size_t)labels[i] * dim, dim);
    for (int b = 0; b < PC__KM_SUM_BLOCKS; b++)
        total += part[b];
    return total;
}

typedef struct {
    const float *x;
    size_t n, dim, k;
    int threads;
    int shift;
    double *distances;
    int32_t *labels, *previous;
    int64_t *fixed; /* k x dim */
    pc__km_centres c;
} cpu_engine;

static pc_status cpu_step(void *ctx, const float *centres, double *sums, int64_t *counts, size_t *changed)
{
    cpu_engine *e = ctx;
    float scale = ldexpf(1.0f, e->shift);
    pc__km_centres_set(&e->c, centres);
    memcpy(e->previous, e->labels, e->n * sizeof *e->labels);
    pc_status st = assign_and_sum(e->x, e->n, e->dim, e->k, &e->c, e->threads, scale, e->labels, e->fixed, counts);
    if (st != PC_OK)
        return st;
    if ((st = pc__km_empty_rule_cpu(e->x, e->n, e->dim, e->k, centres, e->labels, scale, e->fixed, counts)) != PC_OK)
        return st;
    *e->distances += (double)e->n * (double)e->k;
    pc__km_fixed_to_double(e->fixed, e->k * e->dim, e->shift, sums);
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
        *e->distances += (double)n * (double)e->k;
        pc__km_centres_set(&e->c, centres);
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
        for (long ch = 0; ch < chunks; ch++) {
            size_t b = (size_t)ch * CHUNK, end = b + CHUNK < n ? b + CHUNK : n;
            pc__km_assign(x, b, end, &e->c, e->labels);
        }
    }
    *inertia = pc__km_inertia_cpu(x, n, dim, centres, e->labels, threads);
    return PC_OK;
}

pc_status pc__km_lloyd_cpu(const float *x, size_t n, size_t dim, size_t k, pc__km_options *o, float *centres,
                           int32_t *labels, int *iterations, double *inertia)
{
    cpu_engine e = {x, n, dim, k, o->threads, o->fixed_shift, &o->distances, labels, pc__alloc(n, sizeof(int32_t), "labels"),
                    pc__alloc(k, dim * sizeof(int64_t), "centre sums"), {0, 0, 0, NULL, NULL}};
    pc_status st = PC_OUT_OF_MEMORY;
    if (e.previous && e.fixed && pc__km_centres_init(&e.c, k, dim) == PC_OK) {
        for (size_t i = 0; i < n; i++)
            labels[i] = -1;
        pc__km_engine engine = {&e, cpu_step, cpu_labels, cpu_finish, 1};
        st = pc__km_lloyd(&engine, x, n, dim, k, o, centres, iterations, inertia);
    }
    pc__km_centres_free(&e.c);
    free(e.previous);
    free(e.fixed);
    return st;
}
