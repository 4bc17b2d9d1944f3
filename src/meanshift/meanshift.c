/* pc_meanshift: checks the parameters, resolves defaults and the backend, runs the iterations and
 * merges the modes into clusters. */
#include "internal_ms.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void pc_meanshift_params_init(pc_meanshift_params *p)
{
    memset(p, 0, sizeof *p);
    p->kernel = PC_KERNEL_GAUSSIAN;
    p->bandwidth = 1.0;
    p->radius = 0.0;
    p->eps = -1.0;
    p->max_iter = 300;
    p->merge_radius = -1.0;
    p->use_grid = 1;
    p->backend = PC_BACKEND_AUTO;
    p->schedule = PC_SCHEDULE_DYNAMIC;
}

const char *pc_kernel_name(pc_kernel k)
{
    switch (k) {
    case PC_KERNEL_GAUSSIAN: return "gaussian";
    case PC_KERNEL_FLAT: return "flat";
    case PC_KERNEL_EPANECHNIKOV: return "epanechnikov";
    }
    return "unknown";
}

pc_status pc_kernel_parse(const char *name, pc_kernel *out)
{
    for (int k = PC_KERNEL_GAUSSIAN; k <= PC_KERNEL_EPANECHNIKOV; k++) {
        if (name && strcmp(name, pc_kernel_name((pc_kernel)k)) == 0) {
            *out = (pc_kernel)k;
            return PC_OK;
        }
    }
    return pc__fail(PC_INVALID_ARGUMENT, "unknown kernel '%s' (expected gaussian, flat or epanechnikov)",
                    name ? name : "(null)");
}

const char *pc_cuda_kernel_name(pc_cuda_kernel k)
{
    switch (k) {
    case PC_CUDA_KERNEL_FAST: return "fast";
    case PC_CUDA_KERNEL_NAIVE: return "naive";
    case PC_CUDA_KERNEL_TILED: return "tiled";
    }
    return "unknown";
}

pc_status pc_cuda_kernel_parse(const char *name, pc_cuda_kernel *out)
{
    for (int k = PC_CUDA_KERNEL_FAST; k <= PC_CUDA_KERNEL_TILED; k++) {
        if (name && strcmp(name, pc_cuda_kernel_name((pc_cuda_kernel)k)) == 0) {
            *out = (pc_cuda_kernel)k;
            return PC_OK;
        }
    }
    return pc__fail(PC_INVALID_ARGUMENT, "unknown CUDA kernel '%s' (expected fast, naive or tiled)",
                    name ? name : "(null)");
}

/* Resolves the defaults the header documents and rejects what cannot run. */
static pc_status resolve(const pc_meanshift_params *p, pc__ms_setup *s, double *merge_radius)
{
    double h = p->bandwidth;
    if (!(h > 0) || !isfinite(h))
        return pc__fail(PC_INVALID_ARGUMENT, "bandwidth must be a finite number > 0, got %g", h);
    if (p->kernel < PC_KERNEL_GAUSSIAN || p->kernel > PC_KERNEL_EPANECHNIKOV)
        return pc__fail(PC_INVALID_ARGUMENT, "unknown kernel %d", (int)p->kernel);
    if (isnan(p->radius) || p->radius < 0)
        return pc__fail(PC_INVALID_ARGUMENT, "radius must be >= 0 (0 = the kernel's default), got %g",
                        p->radius);
    if (isnan(p->eps))
        return pc__fail(PC_INVALID_ARGUMENT, "eps must be a number");
    if (p->max_iter < 1)
        return pc__fail(PC_INVALID_ARGUMENT, "max_iter must be >= 1, got %d", p->max_iter);
    if (isnan(p->merge_radius) || isinf(p->merge_radius))
        return pc__fail(PC_INVALID_ARGUMENT, "merge radius must be finite, got %g", p->merge_radius);
    if (p->threads < 0)
        return pc__fail(PC_INVALID_ARGUMENT, "threads must be >= 0 (0 = OpenMP's default), got %d", p->threads);
    if (p->chunk < 0)
        return pc__fail(PC_INVALID_ARGUMENT, "chunk must be >= 0, got %d", p->chunk);
    if (p->schedule < PC_SCHEDULE_DYNAMIC || p->schedule > PC_SCHEDULE_GUIDED)
        return pc__fail(PC_INVALID_ARGUMENT, "unknown OpenMP schedule %d", (int)p->schedule);
    if (p->cuda_kernel < PC_CUDA_KERNEL_FAST || p->cuda_kernel > PC_CUDA_KERNEL_TILED)
        return pc__fail(PC_INVALID_ARGUMENT, "unknown CUDA kernel %d", (int)p->cuda_kernel);
    if (p->cuda_block < 0)
        return pc__fail(PC_INVALID_ARGUMENT, "CUDA block size must be >= 0 (0 = default), got %d", p->cuda_block);

    memset(s, 0, sizeof *s);
    double radius = p->radius;
    if (radius == 0)
        radius = p->kernel == PC_KERNEL_GAUSSIAN ? INFINITY : h;
    s->radius = radius;
    s->shift.kernel = p->kernel;
    s->shift.h2 = (float)(h * h);
    s->shift.r2 = isfinite(radius) ? (float)(radius * radius) : INFINITY;
    s->shift.scale = p->kernel == PC_KERNEL_GAUSSIAN ? (float)(1.4426950408889634 / (2.0 * h * h))
                                                     : (float)(1.0 / (h * h));
    double eps = p->eps < 0 ? 1e-3 * h : p->eps;
    s->eps2 = (float)(eps * eps);
    s->bandwidth = h;
    s->max_iter = p->max_iter;
    s->blurring = p->blurring != 0;
    s->use_grid = p->use_grid != 0;
    s->progress = p->progress;
    s->progress_user = p->progress_user;
    *merge_radius = p->merge_radius < 0 ? h / 2 : p->merge_radius;
    return PC_OK;
}

/* The parameters that carry the data's units, times 2^e like the points (pc__scale_exponent). */
static pc_meanshift_params scaled_params(const pc_meanshift_params *p, int e)
{
    pc_meanshift_params s = *p;
    s.bandwidth = ldexp(p->bandwidth, e);
    s.radius = ldexp(p->radius, e);
    if (p->eps >= 0)
        s.eps = ldexp(p->eps, e);
    if (p->merge_radius >= 0)
        s.merge_radius = ldexp(p->merge_radius, e);
    return s;
}

/* After scaling, the bandwidth must still be usable in float32 next to the points: h^2 (and a
 * millionth of it, the default stop) a normal float, the weights' exponents finite. A larger one
 * only means that every point is near every other. */
static pc_status check_scaled_bandwidth(const pc_meanshift_params *user, double h, double max_abs)
{
    if (h >= 0x1p-40)
        return PC_OK;
    return pc__fail(PC_INVALID_ARGUMENT,
                    "bandwidth %g is too small for points of magnitude up to %g: float32 arithmetic cannot "
                    "weigh distances below 1e-12 times the data's range", user->bandwidth, max_abs);
}

/* What pc_meanshift and pc_meanshift_climb share up to the climbs: the checks, the scale of the
 * points (2^e, pc__scale_exponent) and the parameters in it, and the backend for `pairs` of work. */
static pc_status prepare(const pc_points *points, const pc_meanshift_params *params, double pairs,
                         pc__ms_setup *setup, double *merge_radius, int *e, pc_backend *backend)
{
    if (points->n > (size_t)INT32_MAX) /* labels are int32 (parclust info states the limit) */
        return pc__fail(PC_INVALID_ARGUMENT, "mean shift handles up to %d points, got %zu", INT32_MAX, points->n);
    pc_status st;
    if ((st = resolve(params, setup, merge_radius)) != PC_OK) /* checks in the user's units */
        return st;
    double max_abs = pc__points_max_abs(points);
    *e = pc__scale_exponent(max_abs);
    pc_meanshift_params scaled = scaled_params(params, *e);
    if ((st = check_scaled_bandwidth(params, scaled.bandwidth, max_abs)) != PC_OK ||
        (st = resolve(&scaled, setup, merge_radius)) != PC_OK)
        return st;
    return pc__choose_backend(params->backend, pairs, backend);
}

/* The climbs of setup's points on the backend: modes (setup->count x dim), in the scaled units. r: the
 * result whose stages receive the times, or NULL. */
static pc_status climb(const float *data, size_t n, size_t dim, const pc__ms_setup *setup,
                       const pc_meanshift_params *params, pc_backend backend, float *modes, int *iterations,
                       pc_result *r)
{
    pc_status st;
    double t1 = pc__now();
    if (backend == PC_BACKEND_CUDA) {
        pc__ms_cuda_options gpu = {params->cuda_kernel, params->cuda_block};
        double gpu_stages[3] = {0, 0, 0};
        if ((st = pc__meanshift_cuda(data, n, dim, setup, &gpu, modes, iterations, gpu_stages)) != PC_OK)
            return st;
        if (r) {
            pc__result_add_stage(r, "upload", gpu_stages[0]);
            pc__result_add_stage(r, "shift", gpu_stages[1]);
            pc__result_add_stage(r, "download", gpu_stages[2]);
        }
        return PC_OK;
    }
    pc__ms_cpu_options cpu = {backend == PC_BACKEND_OPENMP, params->threads, params->schedule, params->chunk};
    if ((st = pc__meanshift_cpu(data, n, dim, setup, &cpu, modes, iterations)) != PC_OK)
        return st;
    if (r)
        pc__result_add_stage(r, "shift", pc__now() - t1);
    return PC_OK;
}

pc_status pc_meanshift(const pc_points *points, const pc_meanshift_params *params, pc_result **result)
{
    pc_status st = pc__begin(points, params, result);
    if (st != PC_OK)
        return st;
    pc__ms_setup setup;
    double merge_radius = 0;
    int e = 0;
    pc_backend backend;
    size_t n = points->n, dim = points->dim;
    /* AUTO's measure of work: the pairs of one all-pairs iteration. */
    if ((st = prepare(points, params, (double)n * (double)n, &setup, &merge_radius, &e, &backend)) != PC_OK)
        return st;
    setup.first = 0;
    setup.count = n;

    const float *data;
    float *owned = NULL;
    pc_result *r = pc__result_new(n, dim);
    if (!r)
        return PC_OUT_OF_MEMORY;
    r->backend = backend;
    double t0 = pc__now();
    if ((st = pc__points_scaled_f32(points, e, &data, &owned)) != PC_OK)
        goto fail;
    r->modes = pc__alloc(n, dim * sizeof *r->modes, "modes");
    if (!r->modes) {
        st = PC_OUT_OF_MEMORY;
        goto fail;
    }
    pc__result_add_stage(r, "prepare", pc__now() - t0);
    if ((st = climb(data, n, dim, &setup, params, backend, r->modes, &r->iterations, r)) != PC_OK)
        goto fail;
    double t2 = pc__now();
    if ((st = pc__merge_modes(r->modes, n, dim, merge_radius, backend == PC_BACKEND_SEQUENTIAL ? 1 : params->threads,
                              r)) != PC_OK)
        goto fail;
    pc__scale_f32(r->modes, n * dim, -e); /* back to the user's units */
    pc__scale_f32(r->centers, r->k * dim, -e);
    pc__result_add_stage(r, "merge", pc__now() - t2);
    free(owned);
    *result = r;
    return PC_OK;
fail:
    free(owned);
    pc_result_free(r);
    return st;
}

pc_status pc_meanshift_climb(const pc_points *points, size_t first, size_t count, const pc_meanshift_params *params,
                             float *modes, int *iterations)
{
    pc_result *unused = NULL;
    pc_status st = pc__begin(points, params, &unused);
    if (st != PC_OK)
        return st;
    size_t n = points->n, dim = points->dim;
    if (first > n || count > n - first)
        return pc__fail(PC_INVALID_ARGUMENT, "the climbing points %zu .. %zu are not among the %zu points", first,
                        first + count, n);
    if (params->blurring)
        return pc__fail(PC_INVALID_ARGUMENT, "blurring mean shift moves every point's reference: it climbs all the "
                        "points at once (pc_meanshift)");
    if (!iterations || (count && !modes))
        return pc__fail(PC_INVALID_ARGUMENT, "modes (with points to climb) and iterations must not be NULL");
    pc__ms_setup setup;
    double merge_radius = 0;
    int e = 0;
    pc_backend backend;
    if ((st = prepare(points, params, (double)count * (double)n, &setup, &merge_radius, &e, &backend)) != PC_OK)
        return st;
    setup.first = first;
    setup.count = count;
    *iterations = 0;
    if (count == 0)
        return PC_OK;
    const float *data;
    float *owned = NULL;
    if ((st = pc__points_scaled_f32(points, e, &data, &owned)) != PC_OK)
        return st;
    st = climb(data, n, dim, &setup, params, backend, modes, iterations, NULL);
    if (st == PC_OK)
        pc__scale_f32(modes, count * dim, -e);
    free(owned);
    return st;
}

pc_status pc_meanshift_merge(const float *modes, size_t n, size_t dim, double merge_radius, pc_result **result)
{
    if (!result)
        return pc__fail(PC_INVALID_ARGUMENT, "result pointer is NULL");
    *result = NULL;
    pc__clear_error();
    if (!modes || n == 0 || dim == 0)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_meanshift_merge: modes must be a non-empty n x dim array, got %s "
                        "%zu x %zu", modes ? "" : "NULL,", n, dim);
    if (!(merge_radius >= 0) || isinf(merge_radius))
        return pc__fail(PC_INVALID_ARGUMENT, "merge radius must be a finite number >= 0, got %g", merge_radius);
    if (n > (size_t)INT32_MAX)
        return pc__fail(PC_INVALID_ARGUMENT, "mean shift handles up to %d points, got %zu", INT32_MAX, n);
    for (size_t i = 0; i < n * dim; i++)
        if (!isfinite(modes[i]))
            return pc__fail(PC_INVALID_ARGUMENT, "mode %zu, dimension %zu: %g is not a finite number", i / dim,
                            i % dim, (double)modes[i]);
    pc_result *r = pc__result_new(n, dim);
    if (!r)
        return PC_OUT_OF_MEMORY;
    double t0 = pc__now();
    pc_status st = pc__merge_modes(modes, n, dim, merge_radius, 0, r);
    if (st != PC_OK) {
        pc_result_free(r);
        return st;
    }
    pc__result_add_stage(r, "merge", pc__now() - t0);
    *result = r;
    return PC_OK;
}
