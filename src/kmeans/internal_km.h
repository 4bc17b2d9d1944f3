/* What the k-means files share: the nearest-centre kernel, initialisations and Lloyd's loop. */
#ifndef PC_KMEANS_INTERNAL_H
#define PC_KMEANS_INTERNAL_H

#include "../core/internal.h"

#define PC__KM_LANES 8 /* = PC__LANES of src/core/simd.h */

/* Centres laid out for the nearest-centre kernel: transposed (dim x kpad, kpad a multiple of the
 * lanes) with |c|^2 beside them; padding centres have |c|^2 = +inf and are never nearest. */
typedef struct {
    size_t k, kpad, dim;
    float *ct; /* dim x kpad */
    float *cc; /* kpad */
} pc__km_centres;

pc_status pc__km_centres_init(pc__km_centres *c, size_t k, size_t dim);
void pc__km_centres_set(pc__km_centres *c, const float *centres);
void pc__km_centres_free(pc__km_centres *c);

/* labels[i] for points begin..end-1 of x (n x dim): the centre minimising |c|^2 - 2 x.c (the squared
 * distance less |x|^2), ties to the lower index. */
void pc__km_assign(const float *x, size_t begin, size_t end, const pc__km_centres *c, int32_t *labels);

/* Blocks for sums that must not depend on the thread count: each block's partial sum is added in
 * block order (an OpenMP reduction adds in whatever order threads finish). */
#define PC__KM_SUM_BLOCKS 256

/* Squared Euclidean distance in double. */
double pc__km_dist2(const float *a, const float *b, size_t dim);

/* Initial centres (k x dim) from `seed`. threads: OpenMP threads for the distance passes (1 = none). */
pc_status pc__km_init(const float *x, size_t n, size_t dim, size_t k, pc_kmeans_init init, uint64_t seed,
                      int threads, float *centres);

typedef struct {
    int max_iter;
    double tol_abs; /* tol x mean feature variance */
    int threads;
    pc_progress_fn progress;
    void *progress_user;
} pc__km_options;

/* Where Lloyd's iterations run: the loop (lloyd.c) is the same for every backend. */
typedef struct {
    void *ctx;
    /* Assigns every point to its nearest centre and sums each cluster's points; *changed: how many
     * labels differ from the previous step's (all of them at the first). */
    pc_status (*step)(void *ctx, const float *centres, double *sums, int64_t *counts, size_t *changed);
    /* The current labels, on the host. */
    pc_status (*labels)(void *ctx, int32_t *labels);
    /* With relabel, assigns the points to `centres` once more; then the inertia. */
    pc_status (*finish)(void *ctx, const float *centres, int relabel, double *inertia);
} pc__km_engine;

/* Lloyd's iterations from `centres` (updated in place), scikit-learn's loop and stopping rules. */
pc_status pc__km_lloyd(const pc__km_engine *e, const float *x, size_t n, size_t dim, size_t k, const pc__km_options *o,
                       float *centres, int *iterations, double *inertia);

/* The CPU engine over labels[] (n), sequential or OpenMP by o->threads. */
pc_status pc__km_lloyd_cpu(const float *x, size_t n, size_t dim, size_t k, const pc__km_options *o, float *centres,
                           int32_t *labels, int *iterations, double *inertia);

/* The CUDA backend of Lloyd's iterations (cuda.cu; cuda_off.c without CUDA): the same loop and
 * rules as pc__km_lloyd_cpu, iterations on the GPU. */
pc_status pc__km_lloyd_cuda(const float *x, size_t n, size_t dim, size_t k, const pc__km_options *o,
                            pc_kmeans_cuda_variant variant, float *centres, int32_t *labels, int *iterations,
                            double *inertia, double *gpu_seconds);

/* scikit-learn's empty-cluster rule on per-cluster sums (shared by the CPU and CUDA loops). */
pc_status pc__km_relocate_empty(const float *x, size_t n, size_t dim, size_t k, const float *old,
                                const int32_t *labels, double *sums, int64_t *counts);

#endif
