/* HCA-MS's climbs on the CPU: a step's sums (refine_climb.h) in 16 lanes of floats (built with
 * -ffp-contract=off: the only fused multiply-adds are the ones refine_climb.h spells, as on the GPU).
 * On the AVX-512 path the lanes are the 16 floats of a vector: 16 references at once, each lane doing
 * the other paths' operations on its own references in their order (the same exp polynomial, the same
 * multiply-adds), so that the sums are the same numbers bit for bit. A reference beyond the cut-off
 * leaves its lane as it was (a masked add), as the lanes one after another skip it. The climbs were 60%
 * of HCA-MS on an RGB image's 27,000 distinct border values on 2 cores, one reference at a time. */
#include "internal_hca.h"

#include "../core/cpu_path.h"
#include "../core/simd.h"

#include <stdlib.h>

#if PC__HAVE_CPU_PATHS
#include <immintrin.h>

/* pc__climb_exp on 16 lanes: the same operations in the same order. */
static inline __attribute__((target("arch=x86-64-v4"), always_inline)) __m512 exp_lanes(__m512 a)
{
    /* rounded in the current mode, as rintf is */
    __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(a, _mm512_set1_ps(PC__CLIMB_LOG2E)),
                                    _MM_FROUND_CUR_DIRECTION | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fmadd_ps(k, _mm512_set1_ps(-PC__CLIMB_LN2_HI), a);
    r = _mm512_fmadd_ps(k, _mm512_set1_ps(-PC__CLIMB_LN2_LO), r);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.0f / 5040), r, _mm512_set1_ps(1.0f / 720));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(k), _mm512_set1_epi32(127));
    return _mm512_mul_ps(p, _mm512_castsi512_ps(_mm512_slli_epi32(e, 23)));
}

/* The 16 lanes' totals in refine_climb.h's order. */
static inline __attribute__((target("arch=x86-64-v4"), always_inline)) float lanes_total(__m512 v)
{
    float lanes[PC__CLIMB_LANES];
    _mm512_storeu_ps(lanes, v);
    return pc__climb_lanes_total(lanes);
}

/* The mask of the references [q, end) in a vector of 16. */
static inline __attribute__((target("arch=x86-64-v4"), always_inline)) __mmask16 live_lanes(size_t q, size_t end)
{
    return end - q >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (end - q)) - 1);
}

/* A vector's weights: each reference's count times the Gaussian of its squared distance d2 (in h^2),
 * for the lanes within the cut-off (*in; none: 0 and no weights). */
static inline __attribute__((target("arch=x86-64-v4"), always_inline)) __m512
weights(const pc__hca_climb *c, size_t q, __mmask16 live, __m512 d2, __mmask16 *in)
{
    *in = live & _mm512_cmp_ps_mask(d2, _mm512_set1_ps(9.0f), _CMP_LE_OQ);
    if (!*in)
        return _mm512_setzero_ps();
    return _mm512_mul_ps(_mm512_maskz_loadu_ps(*in, c->weight + q), exp_lanes(_mm512_mul_ps(d2, _mm512_set1_ps(-0.5f))));
}

/* Offset of the references [q, q + 16) from x in dimension j (x in their block's frame: xs). */
#define PC__CLIMB_OFFSETS(j, xs) _mm512_sub_ps(_mm512_maskz_loadu_ps(live, c->ref_dim + (size_t)(j) * c->refs + q), (xs))

/* 3 and 4 dimensions (dim a constant), each dimension's sums and offsets in variables of their own: gcc
 * keeps an array of vectors in memory even once a loop over it unrolls, and the sums' stores and
 * reloads then chained each vector to the one before (a third of the step's time). */
static inline __attribute__((target("arch=x86-64-v4"), always_inline)) void
sums_avx512_3or4(const pc__hca_climb *c, int dim, const double *x, float *num, float *den)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, accw = a0;
    float xr[4] = {0};
    pc__climb_walk walk;
    pc__climb_walk_begin(c, dim, x, &walk);
    size_t lo, end;
    while (pc__climb_walk_next(c, dim, &walk, &lo, &end, xr)) {
        __m512 x0 = _mm512_set1_ps(xr[0]), x1 = _mm512_set1_ps(xr[1]), x2 = _mm512_set1_ps(xr[2]),
               x3 = _mm512_set1_ps(xr[3]);
        for (size_t q = lo; q < end; q += PC__CLIMB_LANES) {
            __mmask16 live = live_lanes(q, end), in;
            __m512 e0 = PC__CLIMB_OFFSETS(0, x0), e1 = PC__CLIMB_OFFSETS(1, x1), e2 = PC__CLIMB_OFFSETS(2, x2), e3 = e2;
            __m512 d2 = _mm512_fmadd_ps(e2, e2, _mm512_fmadd_ps(e1, e1, _mm512_mul_ps(e0, e0)));
            if (dim == 4) {
                e3 = PC__CLIMB_OFFSETS(3, x3);
                d2 = _mm512_fmadd_ps(e3, e3, d2);
            }
            __m512 w = weights(c, q, live, d2, &in);
            if (!in)
                continue;
            a0 = _mm512_mask3_fmadd_ps(w, e0, a0, in);
            a1 = _mm512_mask3_fmadd_ps(w, e1, a1, in);
            a2 = _mm512_mask3_fmadd_ps(w, e2, a2, in);
            if (dim == 4)
                a3 = _mm512_mask3_fmadd_ps(w, e3, a3, in);
            accw = _mm512_mask_add_ps(accw, in, accw, w);
        }
    }
    num[0] = lanes_total(a0);
    num[1] = lanes_total(a1);
    num[2] = lanes_total(a2);
    if (dim == 4)
        num[3] = lanes_total(a3);
    *den = lanes_total(accw);
}

/* Any number of dimensions. */
__attribute__((target("arch=x86-64-v4"))) static void sums_avx512_any(const pc__hca_climb *c, const double *x,
                                                                     float *num, float *den)
{
    int dim = c->dim;
    __m512 acc[PC__CLIMB_MAX_DIM], e[PC__CLIMB_MAX_DIM], accw = _mm512_setzero_ps();
    for (int j = 0; j < dim; j++)
        acc[j] = _mm512_setzero_ps();
    float xr[PC__CLIMB_MAX_DIM] = {0};
    pc__climb_walk walk;
    pc__climb_walk_begin(c, dim, x, &walk);
    size_t lo, end;
    while (pc__climb_walk_next(c, dim, &walk, &lo, &end, xr))
        for (size_t q = lo; q < end; q += PC__CLIMB_LANES) {
            __mmask16 live = live_lanes(q, end), in;
            __m512 d2 = _mm512_setzero_ps();
            for (int j = 0; j < dim; j++) {
                e[j] = PC__CLIMB_OFFSETS(j, _mm512_set1_ps(xr[j]));
                d2 = j ? _mm512_fmadd_ps(e[j], e[j], d2) : _mm512_mul_ps(e[j], e[j]);
            }
            __m512 w = weights(c, q, live, d2, &in);
            if (!in)
                continue;
            for (int j = 0; j < dim; j++)
                acc[j] = _mm512_mask3_fmadd_ps(w, e[j], acc[j], in);
            accw = _mm512_mask_add_ps(accw, in, accw, w);
        }
    for (int j = 0; j < dim; j++)
        num[j] = lanes_total(acc[j]);
    *den = lanes_total(accw);
}

__attribute__((target("arch=x86-64-v4"))) static void sums_avx512(const pc__hca_climb *c, const double *x,
                                                                 float *num, float *den)
{
    if (c->dim == 3)
        sums_avx512_3or4(c, 3, x, num, den);
    else if (c->dim == 4)
        sums_avx512_3or4(c, 4, x, num, den);
    else
        sums_avx512_any(c, x, num, den);
}
#endif

/* The lanes one after another, the blocks walked once (the AVX-512 step's walk): reference q of a block [lo, end) goes to lane
 * (q - lo) % 16, each lane adding its references in order (refine_climb.h's PC__CLIMB_LANES). */
static inline __attribute__((always_inline)) void sums_lanes(const pc__hca_climb *c, const double *x, float *num,
                                                             float *den)
{
    int dim = c->dim;
    float lane_num[PC__CLIMB_LANES][PC__CLIMB_MAX_DIM] = {{0}}, lane_den[PC__CLIMB_LANES] = {0};
    pc__climb_walk walk;
    pc__climb_walk_begin(c, dim, x, &walk);
    size_t lo, end;
    float xr[PC__CLIMB_MAX_DIM] = {0};
    while (pc__climb_walk_next(c, dim, &walk, &lo, &end, xr))
        for (size_t q = lo; q < end; q++)
            pc__climb_add(c, dim, xr, q, lane_num[(q - lo) % PC__CLIMB_LANES], &lane_den[(q - lo) % PC__CLIMB_LANES]);
    for (int j = 0; j < dim; j++) {
        float lanes[PC__CLIMB_LANES];
        for (int s = 0; s < PC__CLIMB_LANES; s++)
            lanes[s] = lane_num[s][j];
        num[j] = pc__climb_lanes_total(lanes);
    }
    *den = pc__climb_lanes_total(lane_den);
}

#if PC__HAVE_CPU_PATHS
/* With FMA in the instruction set (AVX2's path), fmaf is one instruction rather than a call. */
PC__TARGET_AVX2 static void sums_lanes_fma(const pc__hca_climb *c, const double *x, float *num, float *den)
{
    sums_lanes(c, x, num, den);
}
#endif

void pc__climb_sums_cpu(const pc__hca_climb *c, const double *x, float *num, float *den)
{
#if PC__HAVE_CPU_PATHS
    if (c->ref_dim && pc__cpu_path() == PC__CPU_AVX512) {
        sums_avx512(c, x, num, den);
        return;
    }
    if (pc__cpu_path() >= PC__CPU_AVX2) {
        sums_lanes_fma(c, x, num, den);
        return;
    }
#endif
    sums_lanes(c, x, num, den);
}

void pc__climb_dimensions(pc__hca_climb *c)
{
#if PC__HAVE_CPU_PATHS
    if (pc__cpu_path() != PC__CPU_AVX512)
        return;
    size_t refs = c->refs, dim = (size_t)c->dim;
    float *by_dim = malloc((refs ? refs : 1) * dim * sizeof *by_dim);
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
