/* The hot loop of mean shift on the CPU. Written over 8 independent lanes (a vector type) so that no
 * sum is ever reordered (results are the same at every thread count), and compiled for three
 * instruction sets (the x86-64 baseline, AVX2 + FMA, and AVX-512 with 16-lane kernels below
 * PC__SHIFT_LANE_DIM dimensions), chosen at run time (cpu_path.h) instead of -march=native. */
#include "shift.h"

#include <math.h>
#include <string.h>
#include "../core/cpu_path.h"
#include "../core/internal.h"
#include "../core/simd.h"
#if PC__HAVE_CPU_PATHS
#include <immintrin.h>
#endif

#define LANES PC__LANES
#define MAX_FAST_DIM PC__SHIFT_LANE_DIM


/* 2^x for x <= 0 without a libm call, so the loop vectorises: round x to an integer n with the
 * 1.5 * 2^23 trick, a degree-6 polynomial for 2^f on [-0.5, 0.5] (relative error about 1e-7), and n
 * put into the exponent bits. Below -125 the weight is 0, as a true exp would nearly be. */
/* The polynomial, written once for a float or for all lanes (Horner, the same steps either way). */
#define EXP2_POLY(f)                                                                                           \
    ((((((1.5403530393381608e-4f * (f) + 1.3333558146428443e-3f) * (f) + 9.6181291076284772e-3f) * (f) +      \
        5.5504108664821580e-2f) * (f) + 2.4022650695910071e-1f) * (f) + 6.9314718055994531e-1f) * (f) + 1.0f)

PC__INLINE float exp2_nonpositive(float x)
{
    const float shifter = 12582912.0f;
    float xc = x < -125.0f ? -125.0f : x;
    float t = xc + shifter;
    float n = t - shifter;
    float f = xc - n;
    float p = EXP2_POLY(f);
    int32_t bits;
    memcpy(&bits, &t, sizeof bits);
    int32_t scale_bits = (bits - 0x4B400000 + 127) << 23;
    float scale;
    memcpy(&scale, &scale_bits, sizeof scale);
    return x < -125.0f ? 0.0f : p * scale;
}

PC__INLINE float kernel_weight(pc_kernel kernel, float d2, float scale, float h2, float r2)
{
    float w;
    switch (kernel) {
    case PC_KERNEL_FLAT: w = d2 <= h2 ? 1.0f : 0.0f; break;
    case PC_KERNEL_EPANECHNIKOV: w = d2 <= h2 ? 1.0f - d2 * scale : 0.0f; break;
    default: w = exp2_nonpositive(-d2 * scale); break;
    }
    return d2 <= r2 ? w : 0.0f;
}

/* Eight lanes as a GCC/Clang vector type: one AVX register in the x86-64-v3 build, two SSE registers
 * in the baseline one, never a different summation order. */

static inline __attribute__((always_inline)) vfloat load_lanes(const float *p)
{
    vfloat v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline __attribute__((always_inline)) vfloat select_lanes(vint mask, vfloat a, vfloat b)
{
    return (vfloat)(((vint)a & mask) | ((vint)b & ~mask));
}

/* exp2_nonpositive on all lanes at once (same steps). */
static inline __attribute__((always_inline)) vfloat exp2_nonpositive_lanes(vfloat x)
{
    const vfloat shifter = (vfloat){0} + 12582912.0f, floor_ = (vfloat){0} - 125.0f;
    vint too_small = x < floor_;
    vfloat xc = select_lanes(too_small, floor_, x);
    vfloat t = xc + shifter;
    vfloat n = t - shifter;
    vfloat f = xc - n;
    vfloat p = EXP2_POLY(f);
    vint scale = ((vint)t - (0x4B400000 - 127)) << 23;
    return (vfloat)((vint)(p * (vfloat)scale) & ~too_small);
}

static inline __attribute__((always_inline)) vfloat kernel_weight_lanes(pc_kernel kernel, vfloat d2, float scale,
                                                                         float h2, float r2)
{
    const vfloat zero = {0};
    vfloat w;
    switch (kernel) {
    case PC_KERNEL_FLAT: w = select_lanes(d2 <= h2, zero + 1.0f, zero); break;
    case PC_KERNEL_EPANECHNIKOV: w = select_lanes(d2 <= h2, 1.0f - d2 * scale, zero); break;
    default: w = exp2_nonpositive_lanes(zero - d2 * scale); break;
    }
    return select_lanes(d2 <= r2, w, zero);
}

/* Adds the weighted references soa[., begin .. end) into per-lane sums. */
PC__INLINE void accumulate(const pc__shift_refs *r, pc_kernel kernel, size_t dim, const float *q,
                           size_t begin, size_t end, vfloat *restrict acc, vfloat *restrict wacc)
{
    const float *soa = r->soa;
    size_t stride = r->stride;
    float scale = r->scale, h2 = r->h2, r2 = r->r2;
    float qk[MAX_FAST_DIM];
    for (size_t k = 0; k < dim; k++)
        qk[k] = q[k];
    size_t i = begin;
    for (; i + LANES <= end; i += LANES) {
        vfloat x[MAX_FAST_DIM], d2 = {0};
        for (size_t k = 0; k < dim; k++) {
            x[k] = load_lanes(soa + k * stride + i);
            vfloat t = x[k] - qk[k];
            d2 += t * t;
        }
        vfloat w = kernel_weight_lanes(kernel, d2, scale, h2, r2);
        *wacc += w;
        for (size_t k = 0; k < dim; k++)
            acc[k] += w * x[k];
    }
    for (; i < end; i++) {
        int l = (int)(i % LANES);
        float d2 = 0;
        for (size_t k = 0; k < dim; k++) {
            float t = soa[k * stride + i] - qk[k];
            d2 += t * t;
        }
        float w = kernel_weight(kernel, d2, scale, h2, r2);
        (*wacc)[l] += w;
        for (size_t k = 0; k < dim; k++)
            acc[k][l] += w * soa[k * stride + i];
    }
}

/* Float lanes carry at most FLUSH_EVERY references before their sums move into double totals: long
 * float sums lose about n * 2^-26 of their value, which at N = 10^5 would reach 1e-3. The totals are
 * added in a fixed order, so every backend computes the same numbers. */
#define FLUSH_EVERY 1024

PC__INLINE int shift_fixed(const pc__shift_refs *r, pc_kernel kernel, size_t dim, const float *q,
                           const size_t *begin, const size_t *end, size_t ranges, float *out)
{
    double tot[MAX_FAST_DIM] = {0}, wsum = 0;
    vfloat acc[MAX_FAST_DIM] = {{0}}, wacc = {0};
    size_t pending = 0;
    for (size_t g = 0; g < ranges; g++) {
        for (size_t b = begin[g]; b < end[g];) {
            size_t e = end[g] - b > FLUSH_EVERY - pending ? b + (FLUSH_EVERY - pending) : end[g];
            accumulate(r, kernel, dim, q, b, e, acc, &wacc);
            pending += e - b;
            b = e;
            if (pending == FLUSH_EVERY || (g + 1 == ranges && b == end[g])) {
                for (int l = 0; l < LANES; l++) {
                    wsum += wacc[l];
                    for (size_t k = 0; k < dim; k++)
                        tot[k] += acc[k][l];
                }
                memset(acc, 0, sizeof acc);
                memset(&wacc, 0, sizeof wacc);
                pending = 0;
            }
        }
    }
    if (!(wsum > 0)) {
        memcpy(out, q, dim * sizeof *out);
        return 0;
    }
    for (size_t k = 0; k < dim; k++)
        out[k] = (float)(tot[k] / wsum);
    return 1;
}

/* Above PC__SHIFT_LANE_DIM dimensions: the references are rows, each weighed once. */

static inline __attribute__((always_inline)) void store_lanes(float *p, vfloat v) { memcpy(p, &v, sizeof v); }

PC__INLINE float reduce_lanes(vfloat a0, vfloat a1, vfloat a2, vfloat a3)
{
    vfloat s = (a0 + a1) + (a2 + a3);
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/* Squared distance from q to the row x, in four 8-lane partial sums over the coordinates. Once a
 * partial total exceeds `stop` the rest is skipped and that partial total returned: every term is >= 0
 * and float addition is monotone, so the full distance would exceed `stop` as well. The checks come
 * after 64, 192, 448, ... coordinates, so they cost O(log dim) per reference. */
PC__INLINE float row_distance2(const float *restrict q, const float *restrict x, size_t dim, float stop)
{
    vfloat a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    size_t k = 0, blocks_end = dim - dim % (4 * LANES), check = 64;
    while (k < blocks_end) {
        size_t stop_at = blocks_end - k > check ? k + check : blocks_end;
        for (; k < stop_at; k += 4 * LANES) {
            vfloat t0 = load_lanes(x + k) - load_lanes(q + k);
            vfloat t1 = load_lanes(x + k + LANES) - load_lanes(q + k + LANES);
            vfloat t2 = load_lanes(x + k + 2 * LANES) - load_lanes(q + k + 2 * LANES);
            vfloat t3 = load_lanes(x + k + 3 * LANES) - load_lanes(q + k + 3 * LANES);
            a0 += t0 * t0;
            a1 += t1 * t1;
            a2 += t2 * t2;
            a3 += t3 * t3;
        }
        if (k < blocks_end) {
            float partial = reduce_lanes(a0, a1, a2, a3);
            if (partial > stop)
                return partial;
        }
        check *= 2;
    }
    for (; k + LANES <= dim; k += LANES) {
        vfloat t = load_lanes(x + k) - load_lanes(q + k);
        a0 += t * t;
    }
    float d2 = reduce_lanes(a0, a1, a2, a3);
    for (; k < dim; k++) {
        float t = x[k] - q[k];
        d2 += t * t;
    }
    return d2;
}

/* acc += w x over dim values. */
PC__INLINE void add_row(float *restrict acc, float w, const float *restrict x, size_t dim)
{
    size_t k = 0;
    for (; k + LANES <= dim; k += LANES)
        store_lanes(acc + k, load_lanes(acc + k) + w * load_lanes(x + k));
    for (; k < dim; k++)
        acc[k] += w * x[k];
}

/* Each coordinate's float sum takes at most FLUSH_ROWS references before it moves into its double
 * total: the same bound on float rounding as the lanes' FLUSH_EVERY / LANES. */
#define FLUSH_ROWS (FLUSH_EVERY / LANES)

/* Queries q[0 .. count) against the rows of the ranges; see pc__shift_points. The loop over queries
 * is inside the loop over rows, so a row is read from memory once per block. */
PC__INLINE void shift_rows(const pc__shift_refs *r, const float *const *q, size_t count, const size_t *begin,
                           const size_t *end, size_t ranges, pc__shift_work *work, float *out, int *moved)
{
    size_t dim = r->dim;
    float *restrict acc = work->acc;
    double *restrict tot = work->tot;
    memset(acc, 0, count * dim * sizeof *acc);
    /* tot is written at a query's first flush, not cleared here: few references (one point of a
     * million values) never touch it. */
    /* Beyond `stop` a reference weighs exactly 0 (for the gaussian, d^2 scale > 125 is the exp2
     * floor), so it adds nothing to any sum and is skipped, its row read only in part. */
    float stop = r->kernel == PC_KERNEL_GAUSSIAN ? 128.0f / r->scale : r->h2;
    if (r->r2 < stop)
        stop = r->r2;
    double wsum[PC__SHIFT_MAX_BLOCK] = {0};
    size_t pending[PC__SHIFT_MAX_BLOCK] = {0};
    int flushed[PC__SHIFT_MAX_BLOCK] = {0};
    for (size_t g = 0; g < ranges; g++) {
        for (size_t i = begin[g]; i < end[g]; i++) {
            const float *x = r->soa + i * dim;
            for (size_t j = 0; j < count; j++) {
                float d2 = row_distance2(q[j], x, dim, stop);
                if (d2 > stop)
                    continue;
                float w = kernel_weight(r->kernel, d2, r->scale, r->h2, r->r2);
                if (w == 0.0f)
                    continue;
                float *a = acc + j * dim;
                wsum[j] += w;
                add_row(a, w, x, dim);
                if (++pending[j] == FLUSH_ROWS) {
                    double *t = tot + j * dim;
                    for (size_t k = 0; k < dim; k++) {
                        t[k] = flushed[j] ? t[k] + a[k] : a[k];
                        a[k] = 0;
                    }
                    pending[j] = 0;
                    flushed[j] = 1;
                }
            }
        }
    }
    for (size_t j = 0; j < count; j++) {
        float *o = out + j * dim;
        moved[j] = wsum[j] > 0;
        if (!moved[j]) {
            memcpy(o, q[j], dim * sizeof *o);
            continue;
        }
        const float *a = acc + j * dim;
        const double *t = tot + j * dim;
        if (flushed[j])
            for (size_t k = 0; k < dim; k++)
                o[k] = (float)((t[k] + a[k]) / wsum[j]);
        else
            for (size_t k = 0; k < dim; k++)
                o[k] = (float)(a[k] / wsum[j]);
    }
}

#if PC__HAVE_CPU_PATHS
/* The AVX-512 path of the dimension-major loop: 16 references at once. In the direct form (every
 * kernel; the gaussian where the expanded form below does not apply) with the same arithmetic per
 * lane as the 8-lane loop (the same polynomial on the same reduced argument, the same fused
 * multiply-adds), so each weight is bit for bit the AVX2 path's; only which float lane sums which
 * reference (i mod 16 instead of i mod 8) differs, a rounding-level difference in the modes. Rounding
 * to the nearest integer (the 1.5 * 2^23 trick) and the scaling by 2^n (the exponent bits) are one
 * instruction each here (roundscale, scalef, both exact); every select is a mask register, which also
 * reads the tail of a range, so no reference is weighed by scalar code. */
#define LANES16 16
#define PC__V16 static inline __attribute__((always_inline, target("arch=x86-64-v4")))

/* Weighs the `live` lanes of x[0 .. dim) (zeros elsewhere) and adds them to the sums. */
PC__V16 void weigh16(pc_kernel kernel, size_t dim, const __m512 *x, const __m512 *qk, __mmask16 live, float scale,
                     float h2, float r2, __m512 *restrict acc, __m512 *restrict wacc)
{
    const __m512 zero = _mm512_setzero_ps();
    __m512 d2 = zero;
    for (size_t k = 0; k < dim; k++) {
        __m512 t = x[k] - qk[k];
        d2 += t * t;
    }
    __mmask16 keep = live & _mm512_cmp_ps_mask(d2, _mm512_set1_ps(r2), _CMP_LE_OQ);
    __m512 w;
    switch (kernel) {
    case PC_KERNEL_FLAT:
        keep &= _mm512_cmp_ps_mask(d2, _mm512_set1_ps(h2), _CMP_LE_OQ);
        w = _mm512_set1_ps(1.0f);
        break;
    case PC_KERNEL_EPANECHNIKOV:
        keep &= _mm512_cmp_ps_mask(d2, _mm512_set1_ps(h2), _CMP_LE_OQ);
        w = 1.0f - d2 * scale;
        break;
    default: {
        __m512 e = zero - d2 * scale;
        const __m512 floor_ = _mm512_set1_ps(-125.0f);
        keep &= _mm512_cmp_ps_mask(e, floor_, _CMP_GE_OQ); /* below -125 the weight is 0 */
        __m512 xc = _mm512_max_ps(e, floor_);
        __m512 n = _mm512_roundscale_ps(xc, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m512 f = xc - n;
        __m512 p = EXP2_POLY(f);
        w = _mm512_scalef_ps(p, n);
        break;
    }
    }
    w = _mm512_maskz_mov_ps(keep, w);
    *wacc += w;
    for (size_t k = 0; k < dim; k++)
        acc[k] += w * x[k];
}

PC__V16 void accumulate16(const pc__shift_refs *r, pc_kernel kernel, size_t dim, const __m512 *qk, size_t begin,
                          size_t end, __m512 *restrict acc, __m512 *restrict wacc)
{
    const float *soa = r->soa;
    size_t stride = r->stride;
    __m512 x[MAX_FAST_DIM];
    size_t i = begin;
    for (; i + LANES16 <= end; i += LANES16) {
        for (size_t k = 0; k < dim; k++)
            x[k] = _mm512_loadu_ps(soa + k * stride + i);
        weigh16(kernel, dim, x, qk, (__mmask16)0xffff, r->scale, r->h2, r->r2, acc, wacc);
    }
    if (i < end) {
        __mmask16 live = (__mmask16)((1u << (end - i)) - 1);
        for (size_t k = 0; k < dim; k++)
            x[k] = _mm512_maskz_loadu_ps(live, soa + k * stride + i);
        weigh16(kernel, dim, x, qk, live, r->scale, r->h2, r->r2, acc, wacc);
    }
}

/* shift_fixed on 16 lanes. Each float lane carries at most FLUSH_EVERY / LANES references, as in the
 * 8-lane loop (the same bound on its rounding), before it moves into per-lane double totals, which
 * are summed in a fixed order at the end (the same numbers at every thread count); lane by lane
 * scalar flushes, as in the 8-lane loop, would cost a seventh of this loop's time. */
#define FLUSH_EVERY16 (FLUSH_EVERY / LANES * LANES16)

PC__V16 double sum_lanes(__m512d a, __m512d b) { return _mm512_reduce_add_pd(a + b); }

/* The gaussian over all pairs, expanded (pc__shift_expand lays the references out). With q and y
 * taken from a centre c, -scale |q - y|^2 = e(y) - scale |q|^2, e(y) = -scale |y|^2 + 2 scale q.y, and
 * the common factor 2^(-scale |q|^2) cancels from the weighted mean: a pair costs dim fused
 * multiply-adds from the reference's stored -scale |y|^2 (where the direct form takes dim
 * subtractions, dim products and a scaling). 2^e = 2^f 2^floor(e) with f = e - floor(e) in [0, 1)
 * from one reduce, and scalef takes floor(e) itself: no rounding step. e can exceed 0 (by up to
 * scale |q|^2, which pc__shift_expand bounds) and its rounding error grows with scale |q|^2 and
 * scale |y|^2 instead of with the pair's own distance, which is why the references must lie near c. */
#define EXP2_POLY5_01(f)                                                                                \
    (((((0x1.ec31c6p-10f * (f) + 0x1.269016p-7f) * (f) + 0x1.c95446p-5f) * (f) + 0x1.ebd5a8p-3f) * (f) + \
      0x1.62e4f6p-1f) * (f) + 0x1.fffffep-1f)

/* How far from the centre the expanded form is used: scale |y - c|^2 <= this for every reference and
 * scale |q - c|^2 for the query (a query climbs within the references' hull, but is checked anyway).
 * It bounds e, hence the float lane sums of up to 2^7 weights of at most 2^64: far from overflow. The
 * rounding of e grows with it, but measured it does not show: one shift of 4,000 points in 1, 2, 3 and
 * 8 dimensions, against the definition in double, is as close as the direct form's up to 128
 * (within 1e-6 h around 0; data far from 0, centred first, 2-4x closer than the direct form). Beyond,
 * about radius 9.4 h around the centre, the direct form. */
#define EXPANDED_REACH 64.0

static int expanded_reaches(const pc__shift_refs *r, const float *q)
{
    double q2 = 0;
    for (size_t k = 0; k < r->dim; k++) {
        double d = (double)q[k] - r->centre[k];
        q2 += d * d;
    }
    return r->scale * q2 <= EXPANDED_REACH;
}

PC__V16 void weigh_expanded16(size_t dim, const float *cen, size_t stride, const __m512 *a, __mmask16 live,
                              __m512 *restrict acc, __m512 *restrict wacc)
{
    __m512 y[MAX_FAST_DIM];
    __m512 e = _mm512_maskz_loadu_ps(live, cen + dim * stride);
    for (size_t k = 0; k < dim; k++) {
        y[k] = _mm512_maskz_loadu_ps(live, cen + k * stride);
        e = _mm512_fmadd_ps(y[k], a[k], e);
    }
    /* Below 2^-125 the weight is 0, as in the direct form (which it is at least as often). */
    __mmask16 keep = _mm512_mask_cmp_ps_mask(live, e, _mm512_set1_ps(-125.0f), _CMP_GE_OQ);
    __m512 f = _mm512_reduce_ps(e, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512 w = _mm512_maskz_scalef_ps(keep, EXP2_POLY5_01(f), e);
    *wacc += w;
    for (size_t k = 0; k < dim; k++)
        acc[k] = _mm512_fmadd_ps(w, y[k], acc[k]);
}

PC__V16 void accumulate_expanded16(const pc__shift_refs *r, size_t dim, const __m512 *a, size_t begin,
                                   size_t end, __m512 *restrict acc, __m512 *restrict wacc)
{
    size_t i = begin;
    for (; i + LANES16 <= end; i += LANES16)
        weigh_expanded16(dim, r->expanded + i, r->stride, a, (__mmask16)0xffff, acc, wacc);
    if (i < end)
        weigh_expanded16(dim, r->expanded + i, r->stride, a, (__mmask16)((1u << (end - i)) - 1), acc, wacc);
}

PC__V16 int shift_fixed16(const pc__shift_refs *r, pc_kernel kernel, size_t dim, const float *q, const size_t *begin,
                          const size_t *end, size_t ranges, float *out)
{
    __m512d tot[MAX_FAST_DIM][2], wtot[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()};
    __m512 acc[MAX_FAST_DIM], wacc = _mm512_setzero_ps(), qk[MAX_FAST_DIM];
    /* The expanded form (gaussian only) weighs the references less the centre: qk = 2 scale (q - c). */
    int expanded = kernel == PC_KERNEL_GAUSSIAN && r->expanded && expanded_reaches(r, q);
    for (size_t k = 0; k < dim; k++) {
        acc[k] = _mm512_setzero_ps();
        qk[k] = _mm512_set1_ps(expanded ? (float)(2.0 * r->scale * ((double)q[k] - r->centre[k])) : q[k]);
        tot[k][0] = tot[k][1] = _mm512_setzero_pd();
    }
    size_t pending = 0;
    for (size_t g = 0; g < ranges; g++) {
        for (size_t b = begin[g]; b < end[g];) {
            size_t e = end[g] - b > FLUSH_EVERY16 - pending ? b + (FLUSH_EVERY16 - pending) : end[g];
            if (expanded)
                accumulate_expanded16(r, dim, qk, b, e, acc, &wacc);
            else
                accumulate16(r, kernel, dim, qk, b, e, acc, &wacc);
            pending += e - b;
            b = e;
            if (pending == FLUSH_EVERY16 || (g + 1 == ranges && b == end[g])) {
                wtot[0] += _mm512_cvtps_pd(_mm512_castps512_ps256(wacc));
                wtot[1] += _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(wacc), 1)));
                for (size_t k = 0; k < dim; k++) {
                    tot[k][0] += _mm512_cvtps_pd(_mm512_castps512_ps256(acc[k]));
                    tot[k][1] += _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[k]), 1)));
                    acc[k] = _mm512_setzero_ps();
                }
                wacc = _mm512_setzero_ps();
                pending = 0;
            }
        }
    }
    double wsum = sum_lanes(wtot[0], wtot[1]);
    if (!(wsum > 0)) {
        memcpy(out, q, dim * sizeof *out);
        return 0;
    }
    for (size_t k = 0; k < dim; k++) {
        double mean = sum_lanes(tot[k][0], tot[k][1]) / wsum;
        out[k] = (float)(expanded ? r->centre[k] + mean : mean);
    }
    return 1;
}
#endif

void pc__shift_expand(pc__shift_refs *r, float **storage)
{
    *storage = NULL;
    r->expanded = NULL;
#if PC__HAVE_CPU_PATHS
    size_t dim = r->dim, n = r->stride;
    if (pc__cpu_path() != PC__CPU_AVX512 || r->kernel != PC_KERNEL_GAUSSIAN || isfinite(r->r2) ||
        pc__shift_point_major(dim) || n == 0)
        return;
    /* The centre of the references' box. */
    for (size_t k = 0; k < dim; k++) {
        const float *x = r->soa + k * n;
        float lo = x[0], hi = x[0];
        for (size_t i = 1; i < n; i++) {
            lo = x[i] < lo ? x[i] : lo;
            hi = x[i] > hi ? x[i] : hi;
        }
        r->centre[k] = (float)(0.5 * ((double)lo + hi));
    }
    float *e = pc__alloc(n, (dim + 1) * sizeof *e, "mean shift expanded references");
    if (!e) {
        pc__clear_error(); /* the direct form needs none of it */
        return;
    }
    float *norm = e + dim * n;
    double reach = 0; /* the largest scale |y - c|^2 */
    for (size_t i = 0; i < n; i++) {
        double y2 = 0;
        for (size_t k = 0; k < dim; k++) {
            float y = (float)((double)r->soa[k * n + i] - r->centre[k]);
            e[k * n + i] = y;
            y2 += (double)y * y;
        }
        norm[i] = (float)(-r->scale * y2);
        reach = fmax(reach, r->scale * y2);
    }
    if (!(reach <= EXPANDED_REACH)) {
        free(e);
        return;
    }
    *storage = e;
    r->expanded = e;
#endif
}

#define PC__DIM_CASES(fixed, kernel)                                                            \
    switch (r->dim) {                                                                           \
    case 1: return fixed(r, kernel, 1, q, begin, end, ranges, out);                            \
    case 2: return fixed(r, kernel, 2, q, begin, end, ranges, out);                            \
    case 3: return fixed(r, kernel, 3, q, begin, end, ranges, out);                            \
    case 4: return fixed(r, kernel, 4, q, begin, end, ranges, out);                            \
    default: return fixed(r, kernel, r->dim, q, begin, end, ranges, out);                      \
    }

#define PC__KERNEL_CASES(fixed)                                                                 \
    switch (r->kernel) {                                                                        \
    case PC_KERNEL_FLAT: PC__DIM_CASES(fixed, PC_KERNEL_FLAT)                                   \
    case PC_KERNEL_EPANECHNIKOV: PC__DIM_CASES(fixed, PC_KERNEL_EPANECHNIKOV)                   \
    default: PC__DIM_CASES(fixed, PC_KERNEL_GAUSSIAN)                                           \
    }

PC__INLINE int shift_point_lanes8(const pc__shift_refs *r, const float *q, const size_t *begin, const size_t *end,
                                  size_t ranges, pc__shift_work *work, float *out)
{
    if (pc__shift_point_major(r->dim)) {
        int moved;
        shift_rows(r, &q, 1, begin, end, ranges, work, out, &moved);
        return moved;
    }
    PC__KERNEL_CASES(shift_fixed)
}

/* One function per path (cpu_path.h), the same inline bodies inside. Above PC__SHIFT_LANE_DIM the
 * AVX-512 path runs the 8-lane row code compiled for AVX-512 (its loops are over 8-value slices of a
 * row, which 16 lanes would not fill at the dimensions where rows are short). */
static void shift_points_baseline(const pc__shift_refs *r, const float *const *q, size_t count, const size_t *begin,
                                  const size_t *end, size_t ranges, pc__shift_work *work, float *out, int *moved)
{
    shift_rows(r, q, count, begin, end, ranges, work, out, moved);
}

static int shift_point_baseline(const pc__shift_refs *r, const float *q, const size_t *begin, const size_t *end,
                                size_t ranges, pc__shift_work *work, float *out)
{
    return shift_point_lanes8(r, q, begin, end, ranges, work, out);
}

#if PC__HAVE_CPU_PATHS
PC__TARGET_AVX2 static void shift_points_avx2(const pc__shift_refs *r, const float *const *q, size_t count,
                                              const size_t *begin, const size_t *end, size_t ranges,
                                              pc__shift_work *work, float *out, int *moved)
{
    shift_rows(r, q, count, begin, end, ranges, work, out, moved);
}

PC__TARGET_AVX2 static int shift_point_avx2(const pc__shift_refs *r, const float *q, const size_t *begin,
                                            const size_t *end, size_t ranges, pc__shift_work *work, float *out)
{
    return shift_point_lanes8(r, q, begin, end, ranges, work, out);
}

PC__TARGET_AVX512 static void shift_points_avx512(const pc__shift_refs *r, const float *const *q, size_t count,
                                                  const size_t *begin, const size_t *end, size_t ranges,
                                                  pc__shift_work *work, float *out, int *moved)
{
    shift_rows(r, q, count, begin, end, ranges, work, out, moved);
}

PC__TARGET_AVX512 static int shift_point_avx512(const pc__shift_refs *r, const float *q, const size_t *begin,
                                                const size_t *end, size_t ranges, pc__shift_work *work, float *out)
{
    if (pc__shift_point_major(r->dim)) {
        int moved;
        shift_rows(r, &q, 1, begin, end, ranges, work, out, &moved);
        return moved;
    }
    PC__KERNEL_CASES(shift_fixed16)
}
#endif

void pc__shift_points(const pc__shift_refs *r, const float *const *q, size_t count, const size_t *begin,
                      const size_t *end, size_t ranges, pc__shift_work *work, float *out, int *moved)
{
#if PC__HAVE_CPU_PATHS
    switch (pc__cpu_path()) {
    case PC__CPU_AVX512: shift_points_avx512(r, q, count, begin, end, ranges, work, out, moved); return;
    case PC__CPU_AVX2: shift_points_avx2(r, q, count, begin, end, ranges, work, out, moved); return;
    default: break;
    }
#endif
    shift_points_baseline(r, q, count, begin, end, ranges, work, out, moved);
}

int pc__shift_point(const pc__shift_refs *r, const float *q, const size_t *begin, const size_t *end,
                    size_t ranges, pc__shift_work *work, float *out)
{
#if PC__HAVE_CPU_PATHS
    switch (pc__cpu_path()) {
    case PC__CPU_AVX512: return shift_point_avx512(r, q, begin, end, ranges, work, out);
    case PC__CPU_AVX2: return shift_point_avx2(r, q, begin, end, ranges, work, out);
    default: break;
    }
#endif
    return shift_point_baseline(r, q, begin, end, ranges, work, out);
}
