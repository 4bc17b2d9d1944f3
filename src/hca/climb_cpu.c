/* HCA-MS's climbs on the CPU: a step's sums (refine_climb.h) in 8 lanes (built with -ffp-contract=off:
 * no multiply-add may be fused, as on the GPU). On the AVX-512 path the lanes are the 8 doubles of a
 * vector: 8 references at once, each lane doing the scalar path's operations on
 * its own references in its order (the same exp polynomial, no fused multiply-add), so that the sums
 * are the same numbers bit for bit. A reference beyond the cut-off leaves its lane as it was (a masked
 * add), as the scalar path skips it. The climbs were 60% of HCA-MS on an RGB image's 27,000 distinct
 * border values on 2 cores, one reference at a time. */
#include "internal_hca.h"

#include "../core/cpu_path.h"
#include "../core/simd.h"

#include <stdlib.h>

#if PC__HAVE_CPU_PATHS
#include <immintrin.h>

/* pc__climb_exp on 8 lanes: the same operations in the same order. */
static inline __attribute__((target("arch=x86-64-v4"), always_inline)) __m512d exp_lanes(__m512d x)
{
    const __m512d one = _mm512_set1_pd(1.0);
    __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(1.4426950408889634)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512d r = _mm512_sub_pd(x, _mm512_mul_pd(k, _mm512_set1_pd(6.93147180369123816490e-01)));
    r = _mm512_sub_pd(r, _mm512_mul_pd(k, _mm512_set1_pd(1.90821492927058770002e-10)));
    __m512d r2 = _mm512_mul_pd(r, r), r4 = _mm512_mul_pd(r2, r2), r8 = _mm512_mul_pd(r4, r4);
    __m512d p01 = _mm512_add_pd(one, r);
    __m512d p23 = _mm512_add_pd(_mm512_set1_pd(1.0 / 2), _mm512_mul_pd(_mm512_set1_pd(1.0 / 6), r));
    __m512d p45 = _mm512_add_pd(_mm512_set1_pd(1.0 / 24), _mm512_mul_pd(_mm512_set1_pd(1.0 / 120), r));
    __m512d p67 = _mm512_add_pd(_mm512_set1_pd(1.0 / 720), _mm512_mul_pd(_mm512_set1_pd(1.0 / 5040), r));
    __m512d p89 = _mm512_add_pd(_mm512_set1_pd(1.0 / 40320), _mm512_mul_pd(_mm512_set1_pd(1.0 / 362880), r));
    __m512d pab = _mm512_add_pd(_mm512_set1_pd(1.0 / 3628800), _mm512_mul_pd(_mm512_set1_pd(1.0 / 39916800), r));
    __m512d q0 = _mm512_add_pd(p01, _mm512_mul_pd(p23, r2));
    __m512d q1 = _mm512_add_pd(p45, _mm512_mul_pd(p67, r2));
    __m512d q2 = _mm512_add_pd(p89, _mm512_mul_pd(pab, r2));
    __m512d p = _mm512_add_pd(_mm512_add_pd(q0, _mm512_mul_pd(q1, r4)), _mm512_mul_pd(q2, r8));
    __m512i e = _mm512_max_epi64(_mm512_cvttpd_epi64(k), _mm512_set1_epi64(-1000));
    __m512d two_k = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_add_epi64(e, _mm512_set1_epi64(1023)), 52));
    return _mm512_mul_pd(p, two_k);
}

/* dim is c->dim; sums_avx512 gives it as a constant for 3 and 4 bands, so that the loops over the
 * dimensions unroll and the sums, the position and the means stay in registers. */
static inline __attribute__((target("arch=x86-64-v4"), always_inline)) void
sums_avx512_dim(const pc__hca_climb *c, int dim, const double *x, double *num, double *den)
{
    __m512d acc[PC__CLIMB_MAX_DIM], accw = _mm512_setzero_pd(), xs[PC__CLIMB_MAX_DIM];
    for (int j = 0; j < dim; j++) {
        acc[j] = _mm512_setzero_pd();
        xs[j] = _mm512_set1_pd(x[j]);
    }
    const __m512d cutoff2 = _mm512_set1_pd(c->cutoff2), inv = _mm512_set1_pd(c->inv);
    pc__climb_blocks b;
    pc__climb_blocks_begin(c, dim, x, &b);
    size_t lo, end;
    while (pc__climb_block_next(c, dim, x, &b, &lo, &end))
        for (size_t q = lo; q < end; q += PC__CLIMB_LANES) {
            __mmask8 live = end - q >= 8 ? (__mmask8)0xff : (__mmask8)((1u << (end - q)) - 1);
            __m512d mu[PC__CLIMB_MAX_DIM], d2 = _mm512_setzero_pd();
            for (int j = 0; j < dim; j++) {
                mu[j] = _mm512_maskz_loadu_pd(live, c->ref_dim + (size_t)j * c->refs + q);
                __m512d e = _mm512_sub_pd(mu[j], xs[j]);
                d2 = _mm512_add_pd(d2, _mm512_mul_pd(e, e));
            }
            __mmask8 in = live & _mm512_cmp_pd_mask(d2, cutoff2, _CMP_LE_OQ);
            if (!in)
                continue;
            __m512d w = _mm512_mul_pd(_mm512_maskz_loadu_pd(in, c->weight + q), exp_lanes(_mm512_mul_pd(d2, inv)));
            for (int j = 0; j < dim; j++)
                acc[j] = _mm512_mask_add_pd(acc[j], in, acc[j], _mm512_mul_pd(w, mu[j]));
            accw = _mm512_mask_add_pd(accw, in, accw, w);
        }
    double lanes[PC__CLIMB_LANES];
    for (int j = 0; j < dim; j++) {
        _mm512_storeu_pd(lanes, acc[j]);
        num[j] = pc__climb_lanes_total(lanes);
    }
    _mm512_storeu_pd(lanes, accw);
    *den = pc__climb_lanes_total(lanes);
}

__attribute__((target("arch=x86-64-v4"))) static void sums_avx512(const pc__hca_climb *c, const double *x,
                                                                 double *num, double *den)
{
    if (c->dim == 3)
        sums_avx512_dim(c, 3, x, num, den);
    else if (c->dim == 4)
        sums_avx512_dim(c, 4, x, num, den);
    else
        sums_avx512_dim(c, c->dim, x, num, den);
}
#endif

void pc__climb_sums_cpu(const pc__hca_climb *c, const double *x, double *num, double *den)
{
#if PC__HAVE_CPU_PATHS
    if (c->ref_dim && pc__cpu_path() == PC__CPU_AVX512) {
        sums_avx512(c, x, num, den);
        return;
    }
#endif
    /* The lanes one after another, the blocks walked once: reference q of a block [lo, end) goes to
     * lane (q - lo) % 8, each lane adding its references in order (refine_climb.h's PC__CLIMB_LANES). */
    int dim = c->dim;
    double lane_num[PC__CLIMB_LANES][PC__CLIMB_MAX_DIM] = {{0}}, lane_den[PC__CLIMB_LANES] = {0};
    pc__climb_blocks b;
    pc__climb_blocks_begin(c, dim, x, &b);
    size_t lo, end;
    while (pc__climb_block_next(c, dim, x, &b, &lo, &end))
        for (size_t q = lo; q < end; q++)
            pc__climb_add(c, dim, x, q, lane_num[(q - lo) % PC__CLIMB_LANES], &lane_den[(q - lo) % PC__CLIMB_LANES]);
    for (int j = 0; j < dim; j++) {
        double lanes[PC__CLIMB_LANES];
        for (int s = 0; s < PC__CLIMB_LANES; s++)
            lanes[s] = lane_num[s][j];
        num[j] = pc__climb_lanes_total(lanes);
    }
    *den = pc__climb_lanes_total(lane_den);
}

void pc__climb_dimensions(pc__hca_climb *c)
{
#if PC__HAVE_CPU_PATHS
    if (pc__cpu_path() != PC__CPU_AVX512)
        return;
    size_t refs = c->refs, dim = (size_t)c->dim;
    double *by_dim = malloc((refs ? refs : 1) * dim * sizeof *by_dim);
    if (!by_dim) /* the lanes one after another: the same sums */
        return;
    for (size_t q = 0; q < refs; q++)
        for (size_t j = 0; j < dim; j++)
            by_dim[j * refs + q] = c->ref[q * dim + j];
    c->ref_dim = by_dim;
#else
    (void)c;
#endif
}
