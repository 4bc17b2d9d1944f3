/* Views over caller memory in four element types, read without copying where the algorithm allows. */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t element_size(pc_dtype t)
{
    switch (t) {
    case PC_F32: return 4;
    case PC_F64: return 8;
    case PC_U8: return 1;
    case PC_U16: return 2;
    }
    return 0;
}

static pc_points make_view(const void *data, size_t n, size_t dim, pc_dtype t)
{
    pc_points p = {data, n, dim, 0, t};
    return p;
}

pc_points pc_points_f32(const float *d, size_t n, size_t dim) { return make_view(d, n, dim, PC_F32); }
pc_points pc_points_f64(const double *d, size_t n, size_t dim) { return make_view(d, n, dim, PC_F64); }
pc_points pc_points_u8(const uint8_t *d, size_t n, size_t dim) { return make_view(d, n, dim, PC_U8); }
pc_points pc_points_u16(const uint16_t *d, size_t n, size_t dim) { return make_view(d, n, dim, PC_U16); }

static size_t row_stride(const pc_points *p)
{
    return p->stride ? p->stride : p->dim * element_size(p->dtype);
}

void pc__points_row_f32(const pc_points *p, size_t i, float *out)
{
    const unsigned char *row = (const unsigned char *)p->data + i * row_stride(p);
    for (size_t j = 0; j < p->dim; j++) {
        switch (p->dtype) {
        case PC_F32: { float v; memcpy(&v, row + 4 * j, 4); out[j] = v; break; }
        case PC_F64: { double v; memcpy(&v, row + 8 * j, 8); out[j] = (float)v; break; }
        case PC_U8: out[j] = (float)row[j]; break;
        case PC_U16: { uint16_t v; memcpy(&v, row + 2 * j, 2); out[j] = (float)v; break; }
        }
    }
}

pc_status pc__points_check_shape(const pc_points *p)
{
    if (!p)
        return pc__fail(PC_INVALID_ARGUMENT, "points view is NULL");
    size_t es = element_size(p->dtype);
    if (es == 0)
        return pc__fail(PC_INVALID_ARGUMENT, "unknown element type %d", (int)p->dtype);
    if (p->n == 0)
        return pc__fail(PC_INVALID_ARGUMENT, "no points (n = 0)");
    if (p->dim == 0)
        return pc__fail(PC_INVALID_ARGUMENT, "points have no dimensions (dim = 0)");
    if (!p->data)
        return pc__fail(PC_INVALID_ARGUMENT, "points data is NULL");
    if (p->stride && p->stride < p->dim * es)
        return pc__fail(PC_INVALID_ARGUMENT, "row stride %zu bytes is shorter than a row (%zu bytes)",
                        p->stride, p->dim * es);
    return PC_OK;
}

pc_status pc_points_check(const pc_points *p)
{
    pc_status st = pc__points_check_shape(p);
    if (st != PC_OK)
        return st;
    if (p->dtype == PC_U8 || p->dtype == PC_U16)
        return PC_OK; /* integers are always finite */
    const unsigned char *base = p->data;
    size_t stride = row_stride(p);
    for (size_t i = 0; i < p->n; i++) {
        for (size_t j = 0; j < p->dim; j++) {
            double v;
            if (p->dtype == PC_F32) {
                float f;
                memcpy(&f, base + i * stride + 4 * j, 4);
                v = f;
            } else {
                memcpy(&v, base + i * stride + 8 * j, 8);
                if (isfinite(v) && fabs(v) > 3.4e38)
                    return pc__fail(PC_INVALID_ARGUMENT, "point %zu, dimension %zu: %g is out of float range", i, j, v);
            }
            if (!isfinite(v))
                return pc__fail(PC_INVALID_ARGUMENT, "point %zu, dimension %zu is not finite (%g)", i, j, v);
        }
    }
    return PC_OK;
}

int pc__scale_exponent(double max_abs)
{
    if (max_abs == 0 || (max_abs >= 0x1p-24 && max_abs <= 0x1p24))
        return 0;
    return -ilogb(max_abs);
}

double pc__points_max_abs(const pc_points *p)
{
    if (p->dtype == PC_U8 || p->dtype == PC_U16)
        return p->dtype == PC_U8 ? 255 : 65535; /* a bound is enough: both lie in the safe range */
    const unsigned char *base = p->data;
    size_t stride = row_stride(p);
    double m = 0;
    for (size_t i = 0; i < p->n; i++) {
        const unsigned char *row = base + i * stride;
        for (size_t j = 0; j < p->dim; j++) {
            double v;
            if (p->dtype == PC_F32) {
                float f;
                memcpy(&f, row + 4 * j, 4);
                v = f;
            } else
                memcpy(&v, row + 8 * j, 8);
            v = fabs(v);
            m = v > m ? v : m;
        }
    }
    return m;
}

pc_status pc__points_scaled_f32(const pc_points *p, int e, const float **data, float **owned)
{
    *owned = NULL;
    if (e == 0 && p->dtype == PC_F32 && (p->stride == 0 || p->stride == 4 * p->dim)) {
        *data = p->data;
        return PC_OK;
    }
    float *copy = pc__alloc(p->n, p->dim * sizeof(float), "float32 copy of the points");
    if (!copy)
        return PC_OUT_OF_MEMORY;
    if (p->dtype == PC_F64 && e != 0) { /* scaled in double, then rounded once */
        const unsigned char *base = p->data;
        size_t stride = row_stride(p);
        for (size_t i = 0; i < p->n; i++)
            for (size_t j = 0; j < p->dim; j++) {
                double v;
                memcpy(&v, base + i * stride + 8 * j, 8);
                copy[i * p->dim + j] = (float)ldexp(v, e);
            }
    } else {
        for (size_t i = 0; i < p->n; i++)
            pc__points_row_f32(p, i, copy + i * p->dim);
        pc__scale_f32(copy, p->n * p->dim, e);
    }
    *data = copy;
    *owned = copy;
    return PC_OK;
}

void pc__scale_f32(float *values, size_t count, int e)
{
    if (e == 0)
        return;
    for (size_t i = 0; i < count; i++)
        values[i] = ldexpf(values[i], e);
}
