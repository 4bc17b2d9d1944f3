/* k-means' sums that do not depend on the order of the points: the scan's exact sums of float32
 * values, the frame they give (mean, 2^e, fixed-point scale), and the tolerance from fixed-point sums.
 * pc_kmeans and the stream both use them, so that both run on the same numbers. */
#include "internal_km.h"

#include <stdlib.h>

double pc__km_exact_value(const pc__i128 *buckets)
{
    pc__i128 b[PC__KM_EXACT_BUCKETS];
    memcpy(b, buckets, sizeof b);
    /* Signed buckets of overlapping ranges to limbs of 32 bits (bucket q weighs 2^(32 q - 150)):
     * carries upward, then every limb but the top one lies in [0, 2^32). On the magnitude, so that
     * adding the limbs from the lowest up loses nothing but the last rounding. */
    for (int q = 0; q + 1 < PC__KM_EXACT_BUCKETS; q++) {
        pc__i128 carry = b[q] >> 32; /* floor */
        b[q] -= carry * ((pc__i128)1 << 32);
        b[q + 1] += carry;
    }
    int negative = b[PC__KM_EXACT_BUCKETS - 1] < 0;
    if (negative) { /* -(value): negate every limb and normalise again */
        for (int q = 0; q < PC__KM_EXACT_BUCKETS; q++)
            b[q] = -b[q];
        for (int q = 0; q + 1 < PC__KM_EXACT_BUCKETS; q++) {
            pc__i128 carry = b[q] >> 32;
            b[q] -= carry * ((pc__i128)1 << 32);
            b[q + 1] += carry;
        }
    }
    double v = 0;
    for (int q = 0; q < PC__KM_EXACT_BUCKETS; q++)
        v += ldexp((double)b[q], 32 * q - 150);
    return negative ? -v : v;
}

int pc__km_fixed_shift(float amax, uint64_t n)
{
    int ex = 0, en = 0;
    frexpf(amax > 0 ? amax : 1.0f, &ex); /* amax < 2^ex */
    frexp((double)n, &en);               /* n < 2^en */
    int s = 62 - ex - en;
    return s < -126 ? -126 : s > 126 ? 126 : s;
}

void pc__km_frame_free(pc__km_frame *f)
{
    free(f->mean);
    free(f->xlo);
    free(f->xhi);
    f->mean = NULL;
    f->xlo = f->xhi = NULL;
}

pc_status pc__km_frame_make(pc__km_frame *f, size_t dim, uint64_t n, const float *lo, const float *hi,
                            const pc__i128 *sums)
{
    memset(f, 0, sizeof *f);
    f->dim = dim;
    f->n = n;
    f->mean = pc__alloc(dim, sizeof *f->mean, "k-means frame");
    f->xlo = pc__alloc(dim, sizeof *f->xlo, "k-means frame");
    f->xhi = pc__alloc(dim, sizeof *f->xhi, "k-means frame");
    if (!f->mean || !f->xlo || !f->xhi) {
        pc__km_frame_free(f);
        return PC_OUT_OF_MEMORY;
    }
    /* Like scikit-learn, cluster centred points: the nearest-centre test |c|^2 - 2 x.c in float loses
     * precision with the size of the coordinates, not of the distances. Then scaled by 2^e
     * (pc__scale_exponent) from the largest distance of a coordinate from its mean. */
    double spread = 0;
    for (size_t d = 0; d < dim; d++) {
        f->mean[d] = pc__km_exact_value(sums + d * PC__KM_EXACT_BUCKETS) / (double)n;
        double below = f->mean[d] - lo[d], above = hi[d] - f->mean[d];
        spread = below > spread ? below : spread;
        spread = above > spread ? above : spread;
    }
    f->e = pc__scale_exponent(spread);
    f->unit = ldexp(1.0, f->e);
    /* Rounding is monotonic: the extremes of the centred, scaled values are those of lo and hi. */
    float amax = 0;
    for (size_t d = 0; d < dim; d++) {
        f->xlo[d] = (float)(((double)lo[d] - f->mean[d]) * f->unit);
        f->xhi[d] = (float)(((double)hi[d] - f->mean[d]) * f->unit);
        amax = fabsf(f->xlo[d]) > amax ? fabsf(f->xlo[d]) : amax;
        amax = fabsf(f->xhi[d]) > amax ? fabsf(f->xhi[d]) : amax;
    }
    f->shift = pc__km_fixed_shift(amax, n);
    f->scale = ldexpf(1.0f, f->shift);
    return PC_OK;
}

void pc__km_centred_rows(const pc_points *v, size_t begin, size_t end, const double *mean, double unit, float *out)
{
    size_t dim = v->dim;
    size_t es = v->dtype == PC_F64 ? 8 : v->dtype == PC_F32 ? 4 : v->dtype == PC_U16 ? 2 : 1;
    size_t stride = v->stride ? v->stride : dim * es;
    const unsigned char *base = (const unsigned char *)v->data;
    /* (double)(float32 value) - mean, times 2^e (exact), rounded once to float: pc_kmeans's copy. */
    for (size_t i = begin; i < end; i++) {
        const unsigned char *row = base + i * stride;
        float *o = out + (i - begin) * dim;
        switch (v->dtype) {
        case PC_F32:
            for (size_t d = 0; d < dim; d++) {
                float x;
                memcpy(&x, row + 4 * d, 4);
                o[d] = (float)(((double)x - mean[d]) * unit);
            }
            break;
        case PC_F64:
            for (size_t d = 0; d < dim; d++) {
                double x;
                memcpy(&x, row + 8 * d, 8);
                o[d] = (float)(((double)(float)x - mean[d]) * unit);
            }
            break;
        case PC_U8:
            for (size_t d = 0; d < dim; d++)
                o[d] = (float)(((double)row[d] - mean[d]) * unit);
            break;
        case PC_U16:
            for (size_t d = 0; d < dim; d++) {
                uint16_t x;
                memcpy(&x, row + 2 * d, 2);
                o[d] = (float)(((double)x - mean[d]) * unit);
            }
            break;
        }
    }
}

size_t pc__km_scan_rows(const pc_points *v, size_t begin, size_t end, float *row, float *lo, float *hi,
                        pc__i128 *sums, size_t *bad_dim)
{
    size_t dim = v->dim;
    for (size_t i = begin; i < end; i++) {
        pc__points_row_f32(v, i, row);
        for (size_t d = 0; d < dim; d++) {
            float x = row[d];
            if (!isfinite(x)) { /* float64 beyond float32's range included */
                *bad_dim = d;
                return i;
            }
            lo[d] = x < lo[d] ? x : lo[d];
            hi[d] = x > hi[d] ? x : hi[d];
            pc__km_exact_add(sums + d * PC__KM_EXACT_BUCKETS, x);
        }
    }
    return end;
}

double pc__km_tolerance(double tol, uint64_t n, size_t dim, const int64_t *t1, const pc__i128 *t2, int shift)
{
    if (tol == 0)
        return 0;
    /* n t2 <= n^2 max q^2 < 2^124 and t1^2 < 2^124 (pc__km_fixed_shift): exact in 128 bits, and the
     * difference is >= 0 (Cauchy-Schwarz). */
    double total = 0;
    for (size_t d = 0; d < dim; d++) {
        pc__i128 num = (pc__i128)n * t2[d] - (pc__i128)t1[d] * t1[d];
        total += (double)num / (double)n / (double)n;
    }
    return tol * ldexp(total, -2 * shift) / (double)dim;
}

void pc__km_fixed_to_double(const int64_t *fixed, size_t count, int shift, double *out)
{
    double unscale = 1.0 / (double)ldexpf(1.0f, shift); /* as cuda.cu's reduce_fixed: 1.0 / e.scale */
    for (size_t q = 0; q < count; q++)
        out[q] = (double)fixed[q] * unscale;
}
