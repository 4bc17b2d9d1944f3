/* What the k-means files share: the nearest-centre kernel, initialisations and Lloyd's loop. */
#ifndef PC_KMEANS_INTERNAL_H
#define PC_KMEANS_INTERNAL_H

#include "../core/internal.h"

#define PC__KM_LANES 8

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

/* Lloyd's iterations from `centres` (updated in place), scikit-learn's loop and stopping rules;
 * labels, iterations and inertia out. */
pc_status pc__km_lloyd_cpu(const float *x, size_t n, size_t dim, size_t k, const pc__km_options *o, float *centres,
                           int32_t *labels, int *iterations, double *inertia);

#endif
