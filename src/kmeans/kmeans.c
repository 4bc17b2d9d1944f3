/* pc_kmeans: checks, the initialisation (always on the CPU, from the seed), n_init runs of Lloyd on the
 * chosen backend, the best run kept. */
#include "internal_km.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static const char *const init_names[] = {"kmeans++", "random", "kmeans-par", "given"};

const char *pc_kmeans_init_name(pc_kmeans_init init)
{
    return (unsigned)init < 4 ? init_names[init] : "unknown";
}

pc_status pc_kmeans_init_parse(const char *name, pc_kmeans_init *out)
{
    for (int i = 0; name && i < 4; i++)
        if (strcmp(name, init_names[i]) == 0) {
            *out = (pc_kmeans_init)i;
            return PC_OK;
        }
    return pc__fail(PC_INVALID_ARGUMENT, "unknown k-means init '%s' (expected kmeans++, random, kmeans-par or given)",
                    name ? name : "(null)");
}

void pc_kmeans_params_init(pc_kmeans_params *p)
{
    memset(p, 0, sizeof *p);
    p->init = PC_INIT_KMEANSPP;
    p->n_init = 1;
    p->max_iter = 300;
    p->tol = 1e-4;
    p->backend = PC_BACKEND_AUTO;
}

static pc_status check(const pc_points *points, const pc_kmeans_params *p)
{
    if (p->k == 0)
        return pc__fail(PC_INVALID_ARGUMENT, "k must be >= 1, got 0");
    if (p->k > points->n)
        return pc__fail(PC_INVALID_ARGUMENT, "k (%zu) must not exceed the number of points (%zu)", p->k, points->n);
    if (p->k > (size_t)INT32_MAX)
        return pc__fail(PC_INVALID_ARGUMENT, "k must be below 2^31, got %zu", p->k);
    if ((unsigned)p->init > PC_INIT_GIVEN)
        return pc__fail(PC_INVALID_ARGUMENT, "unknown k-means init %d", (int)p->init);
    if (p->init == PC_INIT_GIVEN) {
        if (!p->initial_centers)
            return pc__fail(PC_INVALID_ARGUMENT, "init 'given' needs initial centres");
        for (size_t i = 0; i < p->k * points->dim; i++)
            if (!isfinite(p->initial_centers[i]))
                return pc__fail(PC_INVALID_ARGUMENT, "initial centre %zu is not finite", i / points->dim);
    }
    if (p->n_init < 1)
        return pc__fail(PC_INVALID_ARGUMENT, "n_init must be >= 1, got %d", p->n_init);
    if (p->max_iter < 1)
        return pc__fail(PC_INVALID_ARGUMENT, "max_iter must be >= 1, got %d", p->max_iter);
    if (!(p->tol >= 0) || !isfinite(p->tol))
        return pc__fail(PC_INVALID_ARGUMENT, "tol must be a finite number >= 0, got %g", p->tol);
    if (p->threads < 0)
        return pc__fail(PC_INVALID_ARGUMENT, "threads must be >= 0 (0 = OpenMP's default), got %d", p->threads);
    return PC_OK;
}

/* scikit-learn's tolerance: tol times the mean over features of their variance. */
static double absolute_tolerance(const float *x, size_t n, size_t dim, double tol)
{
    if (tol == 0)
        return 0;
    double total = 0;
    for (size_t d = 0; d < dim; d++) {
        double mean = 0, var = 0;
        for (size_t i = 0; i < n; i++)
            mean += x[i * dim + d];
        mean /= (double)n;
        for (size_t i = 0; i < n; i++)
            var += (x[i * dim + d] - mean) * (x[i * dim + d] - mean);
        total += var / (double)n;
    }
    return tol * total / (double)dim;
}

/* The user's initial centres in the centred, scaled frame of the points. A centre 2^40 times the
 * data's spread away from it would overflow |c|^2 in float32: refused rather than mis-assigned. */
static pc_status given_centres(const float *given, size_t k, size_t dim, const double *mean, int e, float *centres)
{
    for (size_t q = 0; q < k * dim; q++) {
        double c = ldexp(given[q] - mean[q % dim], e);
        if (!(fabs(c) <= 0x1p40))
            return pc__fail(PC_INVALID_ARGUMENT, "initial centre %zu, dimension %zu: %g is too far from the "
                            "points (over 1e12 times their spread) for float32 arithmetic", q / dim, q % dim, (double)given[q]);
        centres[q] = (float)c;
    }
    return PC_OK;
}

pc_status pc_kmeans(const pc_points *points, const pc_kmeans_params *params, pc_result **result)
{
    pc_status st = pc__begin(points, params, result);
    if (st != PC_OK || (st = check(points, params)) != PC_OK)
        return st;
    size_t n = points->n, dim = points->dim, k = params->k;
    pc_backend backend;
    if ((st = pc__choose_backend(params->backend, (double)n * (double)k * (double)dim, &backend)) != PC_OK)
        return st;
    if ((unsigned)params->cuda_variant > PC_KMEANS_CUDA_TENSOR)
        return pc__fail(PC_INVALID_ARGUMENT, "unknown CUDA k-means variant %d", (int)params->cuda_variant);
    int threads = 1;
#ifdef _OPENMP
    if (backend != PC_BACKEND_SEQUENTIAL) /* the CPU passes of the init (and of a fallback) */
        threads = params->threads > 0 ? params->threads : omp_get_max_threads();
#endif
    const float *x;
    float *owned = NULL;
    pc_result *r = pc__result_new(n, dim);
    float *centres = pc__alloc(k, dim * sizeof *centres, "centres");
    int32_t *labels = pc__alloc(n, sizeof *labels, "labels");
    if (!r || !centres || !labels) {
        st = PC_OUT_OF_MEMORY;
        goto fail;
    }
    r->backend = backend;
    /* Like scikit-learn, cluster a centred copy: the nearest-centre test |c|^2 - 2 x.c in float loses
     * precision with the size of the coordinates, not of the distances. The copy is also scaled by
     * 2^e (pc__scale_exponent), so that squares of distances neither overflow nor underflow float32
     * whatever the data's units: exact, the labels are those of the data in ordinary units. */
    double mean[4096];
    if (dim > 4096) {
        st = pc__fail(PC_INVALID_ARGUMENT, "k-means handles up to 4096 dimensions, got %zu", dim);
        goto fail;
    }
    int e;
    {
        owned = pc__alloc(n, dim * sizeof *owned, "centred copy of the points");
        if (!owned) {
            st = PC_OUT_OF_MEMORY;
            goto fail;
        }
        float row[4096], lo[4096], hi[4096];
        for (size_t d = 0; d < dim; d++)
            mean[d] = 0;
        for (size_t i = 0; i < n; i++) {
            pc__points_row_f32(points, i, row);
            for (size_t d = 0; d < dim; d++) {
                mean[d] += row[d];
                lo[d] = i == 0 || row[d] < lo[d] ? row[d] : lo[d];
                hi[d] = i == 0 || row[d] > hi[d] ? row[d] : hi[d];
            }
        }
        double spread = 0; /* the largest distance of a coordinate from its mean */
        for (size_t d = 0; d < dim; d++) {
            mean[d] /= (double)n;
            double below = mean[d] - lo[d], above = hi[d] - mean[d];
            spread = below > spread ? below : spread;
            spread = above > spread ? above : spread;
        }
        e = pc__scale_exponent(spread);
        for (size_t i = 0; i < n; i++) {
            pc__points_row_f32(points, i, row);
            for (size_t d = 0; d < dim; d++)
                owned[i * dim + d] = (float)ldexp(row[d] - mean[d], e);
        }
        x = owned;
    }
    pc__km_options o = {params->max_iter, absolute_tolerance(x, n, dim, params->tol), threads, params->progress,
                        params->progress_user};
    int runs = params->init == PC_INIT_GIVEN ? 1 : params->n_init;
    double t_init = 0, t_lloyd = 0, t_gpu = 0;
    r->inertia = INFINITY;
    for (int run = 0; run < runs; run++) {
        double t0 = pc__now();
        if (params->init == PC_INIT_GIVEN) {
            if ((st = given_centres(params->initial_centers, k, dim, mean, e, centres)) != PC_OK)
                goto fail;
        } else if ((st = pc__km_init(x, n, dim, k, params->init, params->seed + 0x9E3779B97F4A7C15ull * (uint64_t)run,
                                   threads, centres)) != PC_OK)
            goto fail;
        double t1 = pc__now();
        int iterations;
        double inertia;
        if (backend == PC_BACKEND_CUDA) {
            st = pc__km_lloyd_cuda(x, n, dim, k, &o, params->cuda_variant, centres, labels, &iterations, &inertia,
                                   &t_gpu);
            if (st == PC_UNSUPPORTED && params->backend == PC_BACKEND_AUTO) { /* beyond the GPU kernel */
                backend = r->backend = threads > 1 ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
                if (params->init == PC_INIT_GIVEN)
                    given_centres(params->initial_centers, k, dim, mean, e, centres); /* checked above */
                st = pc__km_lloyd_cpu(x, n, dim, k, &o, centres, labels, &iterations, &inertia);
            }
        } else
            st = pc__km_lloyd_cpu(x, n, dim, k, &o, centres, labels, &iterations, &inertia);
        if (st != PC_OK)
            goto fail;
        t_init += t1 - t0;
        t_lloyd += pc__now() - t1;
        if (run == 0 || inertia < r->inertia) { /* keep the best run */
            float *tc = r->centers;
            int32_t *tl = r->labels;
            r->centers = centres;
            r->labels = labels;
            centres = tc ? tc : pc__alloc(k, dim * sizeof *centres, "centres");
            labels = tl ? tl : pc__alloc(n, sizeof *labels, "labels");
            r->inertia = inertia;
            r->iterations = iterations;
            if (!centres || !labels) {
                st = PC_OUT_OF_MEMORY;
                goto fail;
            }
        }
    }
    r->k = k;
    for (size_t q = 0; q < k * dim; q++) /* back from the centred, scaled copy */
        r->centers[q] = (float)(ldexp(r->centers[q], -e) + mean[q % dim]);
    r->inertia = ldexp(r->inertia, -2 * e);
    r->sizes = pc__calloc(k, sizeof *r->sizes, "cluster sizes");
    if (!r->sizes) {
        st = PC_OUT_OF_MEMORY;
        goto fail;
    }
    for (size_t i = 0; i < n; i++)
        r->sizes[r->labels[i]]++;
    pc__result_add_stage(r, "init", t_init);
    pc__result_add_stage(r, "lloyd", t_lloyd);
    if (backend == PC_BACKEND_CUDA) /* the iterations' kernels alone (CUDA events) */
        pc__result_add_stage(r, "lloyd-gpu", t_gpu);
    free(centres);
    free(labels);
    free(owned);
    *result = r;
    return PC_OK;
fail:
    free(centres);
    free(labels);
    free(owned);
    pc_result_free(r);
    return st;
}
