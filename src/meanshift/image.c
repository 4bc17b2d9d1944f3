/* pc_meanshift_image: checks, the float planes the filter reads, then filtering (image_filter.c) and
 * regions (image_regions.c), with their timings. */
#include "image_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void pc_meanshift_image_params_init(pc_meanshift_image_params *p)
{
    memset(p, 0, sizeof *p);
    p->spatial_bandwidth = 8;
    p->range_bandwidth = 16;
    p->min_region_size = 20;
    p->eps = 0.01;
    p->max_iter = 20;
    p->backend = PC_BACKEND_AUTO;
}

/* The view's shape only: unlike pc_points_check, values are not checked here, because nodata
 * pixels may hold anything (NaN included); the valid ones are checked while they are copied. */
static pc_status check_view(const pc_points *px)
{
    if (!px)
        return pc__fail(PC_INVALID_ARGUMENT, "pixels view is NULL");
    size_t es = px->dtype == PC_F32 ? 4 : px->dtype == PC_F64 ? 8 : px->dtype == PC_U8 ? 1 : px->dtype == PC_U16 ? 2 : 0;
    if (es == 0)
        return pc__fail(PC_INVALID_ARGUMENT, "unknown element type %d", (int)px->dtype);
    if (px->n == 0)
        return pc__fail(PC_INVALID_ARGUMENT, "no pixels (n = 0)");
    if (px->dim == 0)
        return pc__fail(PC_INVALID_ARGUMENT, "pixels have no bands (dim = 0)");
    if (!px->data)
        return pc__fail(PC_INVALID_ARGUMENT, "pixels data is NULL");
    if (px->stride && px->stride < px->dim * es)
        return pc__fail(PC_INVALID_ARGUMENT, "row stride %zu bytes is shorter than a pixel (%zu bytes)", px->stride,
                        px->dim * es);
    return PC_OK;
}

pc_status pc__msi_check_params(const pc_meanshift_image_params *p)
{
    if (!(p->spatial_bandwidth > 0) || !isfinite(p->spatial_bandwidth))
        return pc__fail(PC_INVALID_ARGUMENT, "spatial bandwidth must be a finite number > 0 (pixels), got %g",
                        p->spatial_bandwidth);
    if (!(p->range_bandwidth > 0) || !isfinite(p->range_bandwidth))
        return pc__fail(PC_INVALID_ARGUMENT, "range bandwidth must be a finite number > 0 (band units), got %g",
                        p->range_bandwidth);
    if (p->min_region_size < 0)
        return pc__fail(PC_INVALID_ARGUMENT, "minimum region size must be >= 0 pixels (0 = off), got %lld",
                        (long long)p->min_region_size);
    if (!(p->eps >= 0) || !isfinite(p->eps))
        return pc__fail(PC_INVALID_ARGUMENT, "eps must be a finite number >= 0 (in bandwidths), got %g", p->eps);
    if (p->max_iter < 1)
        return pc__fail(PC_INVALID_ARGUMENT, "max_iter must be >= 1, got %d", p->max_iter);
    if (p->threads < 0)
        return pc__fail(PC_INVALID_ARGUMENT, "threads must be >= 0 (0 = OpenMP's default), got %d", p->threads);
    return PC_OK;
}

/* Copies the pixels into band planes (NaN where invalid) and the validity flags, checking that
 * valid values are finite floats. *valid_count receives the valid pixels. */
static pc_status make_planes(const pc_points *px, const uint8_t *valid, int e, float *planes, size_t plane_stride,
                             uint8_t *ok, size_t width, size_t *valid_count)
{
    size_t n = px->n, bands = px->dim, count = 0;
    float row[64];
    float *wide = bands > 64 ? pc__alloc(bands, sizeof *wide, "pixel row") : NULL;
    if (bands > 64 && !wide)
        return PC_OUT_OF_MEMORY;
    float *v = wide ? wide : row;
    pc_status st = PC_OK;
    for (size_t i = 0; i < n; i++) {
        ok[i] = !valid || valid[i];
        if (!ok[i]) {
            for (size_t b = 0; b < bands; b++)
                planes[b * plane_stride + i] = NAN;
            continue;
        }
        pc__points_row_f32(px, i, v);
        for (size_t b = 0; b < bands; b++) {
            if (!isfinite(v[b])) {
                st = pc__fail(PC_INVALID_ARGUMENT,
                              "pixel (row %zu, col %zu), band %zu: %g is not a finite float (mark it invalid)",
                              i / width, i % width, b, (double)v[b]);
                goto done;
            }
            planes[b * plane_stride + i] = ldexpf(v[b], e);
        }
        count++;
    }
    for (size_t b = 0; b < bands; b++)
        for (size_t j = 0; j < PC__MSI_PAD; j++)
            planes[b * plane_stride + n + j] = 0;
    *valid_count = count;
done:
    free(wide);
    return st;
}

/* The largest magnitude among the valid pixels' values (invalid ones may hold anything). */
static double valid_max_abs(const pc_points *px, const uint8_t *valid)
{
    if (px->dtype == PC_U8 || px->dtype == PC_U16)
        return pc__points_max_abs(px);
    double m = 0;
    float row[64];
    for (size_t i = 0; i < px->n; i++) {
        if (valid && !valid[i])
            continue;
        for (size_t b0 = 0; b0 < px->dim; b0 += 64) { /* rows of any width, 64 values at a time */
            pc_points part = *px;
            part.dim = px->dim - b0 < 64 ? px->dim - b0 : 64;
            part.data = (const char *)px->data + b0 * (px->dtype == PC_F64 ? 8 : 4);
            part.stride = px->stride ? px->stride : px->dim * (px->dtype == PC_F64 ? 8 : 4);
            pc__points_row_f32(&part, i, row);
            for (size_t b = 0; b < part.dim; b++)
                m = isfinite(row[b]) && fabs(row[b]) > m ? fabs(row[b]) : m;
        }
    }
    return m;
}

pc_status pc_meanshift_image(const pc_points *pixels, size_t width, size_t height, const uint8_t *valid,
                             const pc_meanshift_image_params *params, pc_result **result)
{
    if (!result)
        return pc__fail(PC_INVALID_ARGUMENT, "result pointer is NULL");
    *result = NULL;
    if (!params)
        return pc__fail(PC_INVALID_ARGUMENT, "parameters are NULL");
    pc__clear_error();
    pc_status st;
    if ((st = check_view(pixels)) != PC_OK || (st = pc__msi_check_params(params)) != PC_OK)
        return st;
    if (width == 0 || height == 0 || width > SIZE_MAX / height || width * height != pixels->n)
        return pc__fail(PC_INVALID_ARGUMENT, "a %zu x %zu image needs %zu x %zu pixels, got %zu", width, height,
                        width, height, pixels->n);
    if (pixels->n > (size_t)INT32_MAX)
        return pc__fail(PC_INVALID_ARGUMENT, "image mean shift handles up to %d pixels, got %zu", INT32_MAX,
                        pixels->n);
    if (params->backend == PC_BACKEND_CUDA)
        return pc__fail(PC_UNSUPPORTED,
                        "image mean shift has no CUDA backend; use auto, seq or openmp (auto runs OpenMP)");
    pc_backend backend;
    /* Work 0: AUTO never picks the GPU here, only OpenMP (or sequential without it). */
    if ((st = pc__choose_backend(params->backend, 0, &backend)) != PC_OK)
        return st;

    size_t n = pixels->n, bands = pixels->dim, stride = n + PC__MSI_PAD;
    float *planes = NULL;
    uint8_t *ok = NULL;
    pc_result *r = pc__result_new(n, bands);
    if (!r)
        return PC_OUT_OF_MEMORY;
    r->backend = backend;
    double t0 = pc__now();
    planes = pc__alloc_large(bands, stride * sizeof *planes, "image band planes");
    ok = pc__alloc(n, 1, "valid pixel flags");
    r->modes = pc__alloc_large(n, bands * sizeof *r->modes, "modes");
    if (!planes || !ok || !r->modes) {
        st = PC_OUT_OF_MEMORY;
        goto fail;
    }
    /* Band values in any units: planes and range bandwidth times 2^e (pc__scale_exponent); the
     * spatial bandwidth is in pixels and keeps its units. */
    double max_abs = valid_max_abs(pixels, valid);
    int e = pc__scale_exponent(max_abs);
    double hr = ldexp(params->range_bandwidth, e);
    if (!(hr >= 0x1p-40)) { /* a larger one only means every value is in range */
        st = pc__fail(PC_INVALID_ARGUMENT, "range bandwidth %g is too small for band values up to %g: float32 "
                      "arithmetic cannot weigh differences below 1e-12 times their range", params->range_bandwidth,
                      max_abs);
        goto fail;
    }
    size_t valid_count = 0;
    if ((st = make_planes(pixels, valid, e, planes, stride, ok, width, &valid_count)) != PC_OK)
        goto fail;
    if (valid_count == 0) {
        st = pc__fail(PC_INVALID_ARGUMENT, "every pixel of the %zu x %zu image is marked invalid (nodata)", width,
                      height);
        goto fail;
    }
    pc__msi_image im = {width, height, bands, planes, stride, ok, 0, 0};
    double t1 = pc__now();
    pc__result_add_stage(r, "prepare", t1 - t0);

    pc__msi_filter_params fp = {params->spatial_bandwidth,
                                hr,
                                params->eps,
                                params->max_iter,
                                backend == PC_BACKEND_OPENMP,
                                params->threads,
                                params->progress,
                                params->progress_user};
    if ((st = pc__msi_filter(&im, &fp, r->modes, NULL, &r->iterations)) != PC_OK)
        goto fail;
    pc__result_add_stage(r, "filter", pc__now() - t1);
    if ((st = pc__msi_regions(&im, r->modes, hr, params->min_region_size, r)) != PC_OK)
        goto fail;
    pc__scale_f32(r->modes, n * bands, -e); /* back to the band's units */
    pc__scale_f32(r->centers, r->k * bands, -e);
    free(planes);
    free(ok);
    *result = r;
    return PC_OK;
fail:
    free(planes);
    free(ok);
    pc_result_free(r);
    return st;
}
