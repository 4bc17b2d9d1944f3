/* pc_kmeans: checks, the initialisation (always on the CPU, from the seed), n_init runs of Lloyd on the
 * chosen backend, the best run kept. */
#define _DEFAULT_SOURCE 1 /* madvise(MADV_HUGEPAGE), beside _POSIX_C_SOURCE */
#include "internal_km.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

void pc__km_huge_pages(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    uintptr_t a = ((uintptr_t)p + 0x1fffff) & ~(uintptr_t)0x1fffff, e = ((uintptr_t)p + bytes) & ~(uintptr_t)0x1fffff;
    if (p && e > a)
        madvise((void *)a, e - a, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

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

static const char *const algorithm_names[] = {"auto", "lloyd", "hamerly"};

const char *pc_kmeans_algorithm_name(pc_kmeans_algorithm algorithm)
{
    return (unsigned)algorithm < 3 ? algorithm_names[algorithm] : "unknown";
}

pc_status pc_kmeans_algorithm_parse(const char *name, pc_kmeans_algorithm *out)
{
    for (int i = 0; name && i < 3; i++)
        if (strcmp(name, algorithm_names[i]) == 0) {
            *out = (pc_kmeans_algorithm)i;
            return PC_OK;
        }
    return pc__fail(PC_INVALID_ARGUMENT, "unknown k-means algorithm '%s' (expected auto, lloyd or hamerly)",
                    name ? name : "(null)");
}

double pc_result_distance_evaluations(const pc_result *result) { return result ? result->distance_evaluations : 0; }

pc_kmeans_algorithm pc_result_kmeans_algorithm(const pc_result *result)
{
    return result ? (pc_kmeans_algorithm)result->kmeans_algorithm : PC_KMEANS_AUTO;
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
    if ((unsigned)p->algorithm > PC_KMEANS_HAMERLY)
        return pc__fail(PC_INVALID_ARGUMENT, "unknown k-means algorithm %d", (int)p->algorithm);
    return PC_OK;
}

/* scikit-learn's tolerance, on the fixed-point values the sums add (the stream's numbers). */
static pc_status absolute_tolerance(const float *x, size_t n, size_t dim, int shift, int threads, double tol,
                                    double *tol_abs)
{
    *tol_abs = 0;
    if (tol == 0)
        return PC_OK;
    int64_t *t1 = pc__calloc(dim, sizeof *t1, "k-means variance");
    pc__i128 *t2 = pc__calloc(dim, sizeof *t2, "k-means variance");
    float scale = ldexpf(1.0f, shift);
    long chunks = (long)((n + 4095) / 4096);
    int failed = !t1 || !t2;
    (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1 && !failed) reduction(| : failed)
    {
        int64_t *a = calloc(dim, sizeof *a);
        pc__i128 *b = calloc(dim, sizeof *b);
        failed |= !a || !b;
#pragma omp for schedule(static)
        for (long ch = 0; ch < chunks; ch++)
            for (size_t i = (size_t)ch * 4096; a && b && i < n && i < ((size_t)ch + 1) * 4096; i++)
                for (size_t d = 0; d < dim; d++) {
                    int64_t q = pc__km_fixed(x[i * dim + d], scale);
                    a[d] += q;
                    b[d] += (pc__i128)q * q;
                }
#pragma omp critical(pc__km_tolerance)
        for (size_t d = 0; a && b && t1 && t2 && d < dim; d++) { /* integers: any order, the same totals */
            t1[d] += a[d];
            t2[d] += b[d];
        }
        free(a);
        free(b);
    }
    if (!failed)
        *tol_abs = pc__km_tolerance(tol, n, dim, t1, t2, shift);
    free(t1);
    free(t2);
    return failed ? pc__fail(PC_OUT_OF_MEMORY, "k-means: cannot allocate the variance sums") : PC_OK;
}

/* A centre 2^40 times the data's spread away from it would overflow |c|^2 in float32: refused rather
 * than mis-assigned. */
pc_status pc__km_given_centres(const float *given, size_t k, size_t dim, const double *mean, int e, float *centres)
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

/* The frame of the points (internal_km.h): the scan's exact sums, by threads in any order. */
static pc_status frame_of(const pc_points *points, int threads, pc__km_frame *f)
{
    size_t n = points->n, dim = points->dim;
    float lo[PC__KM_DIM_MAX], hi[PC__KM_DIM_MAX];
    pc__i128 *sums = pc__calloc(dim * PC__KM_EXACT_BUCKETS, sizeof *sums, "k-means mean");
    if (!sums)
        return PC_OUT_OF_MEMORY;
    for (size_t d = 0; d < dim; d++) {
        lo[d] = INFINITY;
        hi[d] = -INFINITY;
    }
    long chunks = (long)((n + 4095) / 4096);
    int failed = 0;
    (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1) reduction(| : failed)
    {
        float row[PC__KM_DIM_MAX], tlo[PC__KM_DIM_MAX], thi[PC__KM_DIM_MAX];
        pc__i128 *ts = calloc(dim * PC__KM_EXACT_BUCKETS, sizeof *ts);
        failed |= !ts;
        for (size_t d = 0; d < dim; d++) {
            tlo[d] = INFINITY;
            thi[d] = -INFINITY;
        }
#pragma omp for schedule(static)
        for (long ch = 0; ch < chunks; ch++) {
            size_t b = (size_t)ch * 4096, e = b + 4096 < n ? b + 4096 : n, bad_dim;
            if (ts) /* the values were checked (pc__begin) */
                pc__km_scan_rows(points, b, e, row, tlo, thi, ts, &bad_dim);
        }
#pragma omp critical(pc__km_frame)
        if (ts)
            for (size_t d = 0; d < dim; d++) {
                lo[d] = tlo[d] < lo[d] ? tlo[d] : lo[d];
                hi[d] = thi[d] > hi[d] ? thi[d] : hi[d];
                for (int q = 0; q < PC__KM_EXACT_BUCKETS; q++)
                    sums[d * PC__KM_EXACT_BUCKETS + q] += ts[d * PC__KM_EXACT_BUCKETS + q];
            }
        free(ts);
    }
    pc_status st = failed ? pc__fail(PC_OUT_OF_MEMORY, "k-means: cannot allocate per-thread sums")
                          : pc__km_frame_make(f, dim, n, lo, hi, sums);
    free(sums);
    return st;
}

/* Hamerly's bounds where asked, and by AUTO from 8 centres (below, a scan costs little more than
 * checking the bounds); on CUDA with the FAST variant only: the others name Lloyd's kernels to run. */
static int wants_bounds(const pc_kmeans_params *params, size_t k, pc_backend backend)
{
    return params->algorithm == PC_KMEANS_HAMERLY ||
           (params->algorithm == PC_KMEANS_AUTO && k >= 8 &&
            (backend != PC_BACKEND_CUDA || params->cuda_variant == PC_KMEANS_CUDA_FAST));
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
    pc__km_frame frame = {0};
    pc_result *r = pc__result_new(n, dim);
    float *centres = pc__alloc(k, dim * sizeof *centres, "centres");
    int32_t *labels = pc__alloc(n, sizeof *labels, "labels");
    if (!r || !centres || !labels) {
        st = PC_OUT_OF_MEMORY;
        goto fail;
    }
    r->backend = backend;
    /* Like scikit-learn, cluster a centred copy, scaled by 2^e: the frame the stream runs in too
     * (internal_km.h, ARCHITECTURE.md "Numbers in any units"); exact, the labels are those of the data in
     * ordinary units. */
    if (dim > PC__KM_DIM_MAX) {
        st = pc__fail(PC_INVALID_ARGUMENT, "k-means handles up to %d dimensions, got %zu", PC__KM_DIM_MAX, dim);
        goto fail;
    }
    if ((st = frame_of(points, threads, &frame)) != PC_OK)
        goto fail;
    const double *mean = frame.mean;
    int e = frame.e;
    owned = pc__alloc(n, dim * sizeof *owned, "centred copy of the points");
    pc__km_huge_pages(owned, n * dim * sizeof *owned);
    if (!owned) {
        st = PC_OUT_OF_MEMORY;
        goto fail;
    }
    {
        long chunks = (long)((n + 4095) / 4096);
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
        for (long ch = 0; ch < chunks; ch++) {
            size_t b = (size_t)ch * 4096, end = b + 4096 < n ? b + 4096 : n;
            pc__km_centred_rows(points, b, end, mean, frame.unit, owned + b * dim);
        }
    }
    x = owned;
    pc__km_options o = {params->max_iter, 0, threads, params->progress, params->progress_user, frame.shift, 0};
    if ((st = absolute_tolerance(x, n, dim, frame.shift, threads, params->tol, &o.tol_abs)) != PC_OK)
        goto fail;
    int runs = params->init == PC_INIT_GIVEN ? 1 : params->n_init;
    double t_init = 0, t_lloyd = 0, t_gpu = 0;
    r->inertia = INFINITY;
    for (int run = 0; run < runs; run++) {
        double t0 = pc__now();
        if (params->init == PC_INIT_GIVEN) {
            if ((st = pc__km_given_centres(params->initial_centers, k, dim, mean, e, centres)) != PC_OK)
                goto fail;
        } else if ((st = pc__km_init(x, n, dim, k, params->init, params->seed + 0x9E3779B97F4A7C15ull * (uint64_t)run,
                                   threads, centres)) != PC_OK)
            goto fail;
        double t1 = pc__now();
        int iterations;
        double inertia;
        int bounded = wants_bounds(params, k, backend);
        if (backend == PC_BACKEND_CUDA) {
            st = pc__km_lloyd_cuda(x, n, dim, k, &o, params->cuda_variant, &bounded, centres, labels, &iterations,
                                   &inertia, &t_gpu);
            if (st == PC_UNSUPPORTED && params->backend == PC_BACKEND_AUTO) { /* beyond the GPU kernel */
                backend = r->backend = threads > 1 ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
                bounded = wants_bounds(params, k, backend);
                if (params->init == PC_INIT_GIVEN)
                    pc__km_given_centres(params->initial_centers, k, dim, mean, e, centres); /* checked above */
                st = bounded ? pc__km_hamerly_cpu(x, n, dim, k, &o, centres, labels, &iterations, &inertia)
                             : pc__km_lloyd_cpu(x, n, dim, k, &o, centres, labels, &iterations, &inertia);
            }
        } else
            st = bounded ? pc__km_hamerly_cpu(x, n, dim, k, &o, centres, labels, &iterations, &inertia)
                         : pc__km_lloyd_cpu(x, n, dim, k, &o, centres, labels, &iterations, &inertia);
        r->kmeans_algorithm = bounded ? PC_KMEANS_HAMERLY : PC_KMEANS_LLOYD;
        if (st != PC_OK)
            goto fail;
        if (backend == PC_BACKEND_CUDA && !bounded) /* Lloyd's: every point against every centre, each iteration */
            o.distances += (double)n * (double)k * iterations;
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
    r->distance_evaluations = o.distances;
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
    pc__km_frame_free(&frame);
    *result = r;
    return PC_OK;
fail:
    free(centres);
    free(labels);
    free(owned);
    pc__km_frame_free(&frame);
    pc_result_free(r);
    return st;
}
