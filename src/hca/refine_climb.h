/* HCA-MS's climb (ALGORITHMS.md section 3b), one text for the CPU (refine.c, climb_cpu.c) and the GPU
 * (cuda_refine.cu): both backends run these very operations in this very order, each rounded once (no
 * fused multiply-add: the C files are ISO C, where gcc does not contract, climb_cpu.c's AVX-512 lanes
 * spell every operation, and the device spells every operation with its _rn intrinsic), and exp is this
 * file's own polynomial rather than the two libraries' exp, which may differ in the last bit. A climb
 * from the same start therefore ends at the same position on both, and the labels are identical, not
 * merely close. */
#ifndef PC_HCA_REFINE_CLIMB_H
#define PC_HCA_REFINE_CLIMB_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PC__CLIMB_MAX_DIM 8

#if defined(__CUDACC__)
#define PC__CLIMB_FN __host__ __device__ static __forceinline__
#else
#define PC__CLIMB_FN static inline
#endif

#if defined(__CUDA_ARCH__)
#define PC__CL_ADD(a, b) __dadd_rn((a), (b))
#define PC__CL_SUB(a, b) __dsub_rn((a), (b))
#define PC__CL_MUL(a, b) __dmul_rn((a), (b))
#define PC__CL_DIV(a, b) __ddiv_rn((a), (b))
#define PC__CL_SQRT(a) __dsqrt_rn(a)
#else
#define PC__CL_ADD(a, b) ((a) + (b))
#define PC__CL_SUB(a, b) ((a) - (b))
#define PC__CL_MUL(a, b) ((a) * (b))
#define PC__CL_DIV(a, b) ((a) / (b))
#define PC__CL_SQRT(a) sqrt(a)
#endif

/* What a climb reads: the references (the non-empty cells' means and point counts) stored by block of
 * span[j] cells a side (each block at least 3 h wide, so the references within 3 h of x lie in the 3^d
 * blocks around x's own), blocks in increasing key, cells by increasing index within a block. */
typedef struct {
    int dim, m;
    double lo[PC__CLIMB_MAX_DIM], hi[PC__CLIMB_MAX_DIM];
    uint64_t stride[PC__CLIMB_MAX_DIM];       /* the grid's: m^(dim-1-j) */
    int span[PC__CLIMB_MAX_DIM], blocks[PC__CLIMB_MAX_DIM];
    uint64_t block_stride[PC__CLIMB_MAX_DIM];
    double h, eps, cutoff2, inv; /* inv = -1 / (2 h^2) */
    int max_iter;
    size_t refs;
    const uint64_t *block_key; /* refs: the block of each reference, non-decreasing */
    /* Where the blocks are few (at most 2^24), block b's references are [block_start[b], block_start[b +
     * 1]) (no search); NULL: a binary search over block_key. */
    const uint32_t *block_start;
    uint64_t block_count;      /* blocks in all (block_start has one more entry) */
    double width[PC__CLIMB_MAX_DIM]; /* a cell's sides */
    const double *ref;         /* refs x dim: the cells' means */
    const double *weight;      /* refs: the cells' point counts */
    const double *ref_dim;     /* the CPU's AVX-512 step (climb_cpu.c), else NULL: the means dimension
                                * by dimension (dim x refs) */
} pc__hca_climb;

/* A step's sums (ALGORITHMS.md section 3b's mean shift over the references within the cut-off) come in
 * PC__CLIMB_LANES lanes: the references of each block are taken in groups of 8, position s of a group
 * adding into lane s, and the lanes are summed at the end of the step as ((0 + 1) + (2 + 3)) + ((4 +
 * 5) + (6 + 7)). That order is the definition, the same on every path: the CPU's AVX-512 step (a lane a
 * vector lane), the CPU's other processors (the lanes one after another) and the GPU (a lane a thread,
 * summed by shuffles); a climb from the same start ends at the same position on all of them. */
#define PC__CLIMB_LANES 8

/* ALGORITHMS.md section 3 step 1 (grid.c's pc__hca_cell_coordinate, the GPU's pc__hca_coordinate). */
PC__CLIMB_FN int pc__climb_coordinate(double x, double lo, double hi, int m)
{
    if (hi <= lo)
        return 0;
    double c = floor(PC__CL_MUL(PC__CL_DIV(PC__CL_SUB(x, lo), PC__CL_SUB(hi, lo)), (double)m));
    return c >= m - 1 ? m - 1 : c < 0 ? 0 : (int)c;
}

/* The grid key of position x (dim: c->dim, pc__climb_blocks' note). */
PC__CLIMB_FN uint64_t pc__climb_key(const pc__hca_climb *c, int dim, const double *x)
{
    uint64_t key = 0;
    for (int j = 0; j < dim; j++)
        key += (uint64_t)pc__climb_coordinate(x[j], c->lo[j], c->hi[j], c->m) * c->stride[j];
    return key;
}

/* e^x for x in [-4.5, 0] (the Gaussian within the 3 h cut-off), to ~1e-15: x = k ln 2 + r with |r| <=
 * ln 2 / 2 (ln 2 in two parts, k ln2_hi exact), a degree-11 Taylor polynomial in r, times 2^k. */
PC__CLIMB_FN double pc__climb_exp(double x)
{
    double k = rint(PC__CL_MUL(x, 1.4426950408889634));
    double r = PC__CL_SUB(x, PC__CL_MUL(k, 6.93147180369123816490e-01));
    r = PC__CL_SUB(r, PC__CL_MUL(k, 1.90821492927058770002e-10));
    /* The degree-11 Taylor polynomial by Estrin's scheme (relative error < 1e-14 for |r| <= ln 2 / 2):
     * pairs, then pairs of pairs, so the multiplications overlap instead of waiting on each other as
     * Horner's do (the climbs spend most of their time here). */
    double r2 = PC__CL_MUL(r, r), r4 = PC__CL_MUL(r2, r2), r8 = PC__CL_MUL(r4, r4);
    double p01 = PC__CL_ADD(1.0, r);
    double p23 = PC__CL_ADD(1.0 / 2, PC__CL_MUL(1.0 / 6, r));
    double p45 = PC__CL_ADD(1.0 / 24, PC__CL_MUL(1.0 / 120, r));
    double p67 = PC__CL_ADD(1.0 / 720, PC__CL_MUL(1.0 / 5040, r));
    double p89 = PC__CL_ADD(1.0 / 40320, PC__CL_MUL(1.0 / 362880, r));
    double pab = PC__CL_ADD(1.0 / 3628800, PC__CL_MUL(1.0 / 39916800, r));
    double q0 = PC__CL_ADD(p01, PC__CL_MUL(p23, r2));
    double q1 = PC__CL_ADD(p45, PC__CL_MUL(p67, r2));
    double q2 = PC__CL_ADD(p89, PC__CL_MUL(pab, r2));
    double p = PC__CL_ADD(PC__CL_ADD(q0, PC__CL_MUL(q1, r4)), PC__CL_MUL(q2, r8));
    /* Times 2^k, exact (k in [-7, 0] here): the power of two from its bits, not ldexp (a libm call that
     * took a third of the CPU's climbs). */
    int e = (int)k < -1000 ? -1000 : (int)k;
    uint64_t bits = (uint64_t)(1023 + e) << 52;
#if defined(__CUDA_ARCH__)
    double two_k = __longlong_as_double((long long)bits);
#else
    double two_k;
    memcpy(&two_k, &bits, sizeof two_k);
#endif
    return PC__CL_MUL(p, two_k);
}

/* The blocks around x's own (pc__climb_blocks_begin), one after another (pc__climb_block_next, the
 * CPU's walk; the GPU's takes them by number, pc__climb_block_at): each block's references are [*lo,
 * *end) (a block beyond the cut-off comes back empty); 0 when there are no more. dim is c->dim, an
 * argument so that a caller can give it as a constant (the GPU's kernel, the CPU's AVX-512 step for 3
 * and 4 bands): the loops then unroll and x, the sums and the walk stay in registers. */
typedef struct {
    int from[PC__CLIMB_MAX_DIM], to[PC__CLIMB_MAX_DIM], at[PC__CLIMB_MAX_DIM];
    int done;
} pc__climb_blocks;

PC__CLIMB_FN void pc__climb_blocks_begin(const pc__hca_climb *c, int dim, const double *x, pc__climb_blocks *b)
{
    for (int j = 0; j < dim; j++) {
        int k = pc__climb_coordinate(x[j], c->lo[j], c->hi[j], c->m) / c->span[j];
        b->from[j] = k > 0 ? k - 1 : 0;
        b->to[j] = k + 1 < c->blocks[j] ? k + 1 : c->blocks[j] - 1;
        b->at[j] = b->from[j];
    }
    b->done = 0;
}

/* The first reference from `from` on whose block key is at least k (a binary search over block_key). */
PC__CLIMB_FN size_t pc__climb_first_at_least(const pc__hca_climb *c, size_t from, uint64_t k)
{
    size_t hi = c->refs;
    while (from < hi) {
        size_t mid = (from + hi) / 2;
        if (c->block_key[mid] < k)
            from = mid + 1;
        else
            hi = mid;
    }
    return from;
}

/* How many blocks pc__climb_block_next walks from b's start. */
PC__CLIMB_FN int pc__climb_block_count(const pc__climb_blocks *b, int dim)
{
    int count = 1;
    for (int j = 0; j < dim; j++)
        count *= b->to[j] - b->from[j] + 1;
    return count;
}

/* The coordinates of block i of that walk (0 <= i < pc__climb_block_count): its number in mixed radix,
 * the last dimension fastest, as pc__climb_block_next's carry counts. */
PC__CLIMB_FN void pc__climb_block_at(const pc__climb_blocks *b, int dim, int i, int *at)
{
    for (int j = dim - 1; j >= 0; j--) {
        int n = b->to[j] - b->from[j] + 1;
        at[j] = b->from[j] + i % n;
        i /= n;
    }
}

/* The references [*lo, *end) of the block at coordinates at (empty where it lies wholly beyond the
 * cut-off from x). */
PC__CLIMB_FN void pc__climb_block_range(const pc__hca_climb *c, int dim, const double *x, const int *at, size_t *lo,
                                        size_t *end)
{
    uint64_t k = 0;
    for (int j = 0; j < dim; j++)
        k += (uint64_t)at[j] * c->block_stride[j];
    /* A block wholly beyond the cut-off adds nothing: skipped (the gaps a hair narrower than the
     * block's, so that rounding never skips a reference the cut-off would keep; skipping changes no
     * sum, so the CPU and the GPU stay equal whatever each skips). */
    double gap2 = 0;
    for (int j = 0; j < dim; j++) {
        double w = c->width[j] * c->span[j], left = c->lo[j] + at[j] * w, right = left + w;
        double gap = x[j] < left ? left - x[j] : x[j] > right ? x[j] - right : 0;
        gap = gap - 1e-6 * c->width[j];
        gap2 += gap > 0 ? gap * gap : 0;
    }
    if (gap2 > c->cutoff2) {
        *lo = *end = 0;
    } else if (c->block_start) {
        *lo = c->block_start[k];
        *end = c->block_start[k + 1];
    } else {
        *lo = pc__climb_first_at_least(c, 0, k);
        *end = pc__climb_first_at_least(c, *lo, k + 1);
    }
}

PC__CLIMB_FN int pc__climb_block_next(const pc__hca_climb *c, int dim, const double *x, pc__climb_blocks *b,
                                      size_t *lo, size_t *end)
{
    if (b->done)
        return 0;
    pc__climb_block_range(c, dim, x, b->at, lo, end);
    /* The next block, the last dimension fastest (no early exit, so that a constant dim unrolls it;
     * pc__climb_block_at numbers the blocks in this order). */
    int carry = 1;
    for (int j = dim - 1; j >= 0; j--)
        if (carry) {
            carry = b->at[j] >= b->to[j];
            b->at[j] = carry ? b->from[j] : b->at[j] + 1;
        }
    b->done = carry;
    return 1;
}

/* Reference q's part of a step from x, added into a lane's sums (num, dim of them, and den) where it is
 * within the cut-off. */
PC__CLIMB_FN void pc__climb_add(const pc__hca_climb *c, int dim, const double *x, size_t q, double *num,
                                double *den)
{
    const double *mu = c->ref + q * (size_t)dim;
    double d2 = 0;
    for (int j = 0; j < dim; j++) {
        double e = PC__CL_SUB(mu[j], x[j]);
        d2 = PC__CL_ADD(d2, PC__CL_MUL(e, e));
    }
    if (d2 <= c->cutoff2) {
        double w = PC__CL_MUL(c->weight[q], pc__climb_exp(PC__CL_MUL(d2, c->inv)));
        for (int j = 0; j < dim; j++)
            num[j] = PC__CL_ADD(num[j], PC__CL_MUL(w, mu[j]));
        *den = PC__CL_ADD(*den, w);
    }
}

#if defined(__CUDA_ARCH__)
/* Lane s of a step from x on the GPU (thread s of the climb's group of 8): the sums over the references
 * at positions s, s + 8, ... of each block, the blocks in pc__climb_block_next's order. The group shares
 * the walk: thread s finds the ranges of blocks s, s + 8, ... (the last dimension fastest), and every
 * thread takes each block's range from its finder by a shuffle, so that a block's gap and start are
 * worked out once, not by each of the 8. */
__device__ static __forceinline__ void pc__climb_lane(const pc__hca_climb *c, int dim, const double *x, int s,
                                                     double *num, double *den)
{
    for (int j = 0; j < dim; j++)
        num[j] = 0;
    *den = 0;
    pc__climb_blocks b;
    pc__climb_blocks_begin(c, dim, x, &b);
    int count = pc__climb_block_count(&b, dim);
    unsigned group = 0xffu << (threadIdx.x & 24);
    for (int first = 0; first < count; first += PC__CLIMB_LANES) {
        size_t lo = 0, end = 0;
        if (first + s < count) {
            int at[PC__CLIMB_MAX_DIM];
            pc__climb_block_at(&b, dim, first + s, at);
            pc__climb_block_range(c, dim, x, at, &lo, &end);
        }
        int blocks = count - first < PC__CLIMB_LANES ? count - first : PC__CLIMB_LANES;
        for (int k = 0; k < blocks; k++) {
            size_t from = __shfl_sync(group, (unsigned long long)lo, k, PC__CLIMB_LANES);
            size_t to = __shfl_sync(group, (unsigned long long)end, k, PC__CLIMB_LANES);
            for (size_t q = from + (size_t)s; q < to; q += PC__CLIMB_LANES)
                pc__climb_add(c, dim, x, q, num, den);
        }
    }
}
#endif

/* The lanes' values v[0 .. 7] summed in the step's order. */
PC__CLIMB_FN double pc__climb_lanes_total(const double *v)
{
    return PC__CL_ADD(PC__CL_ADD(PC__CL_ADD(v[0], v[1]), PC__CL_ADD(v[2], v[3])),
                      PC__CL_ADD(PC__CL_ADD(v[4], v[5]), PC__CL_ADD(v[6], v[7])));
}

#if !defined(__CUDA_ARCH__)
/* The CPU's step sums (climb_cpu.c): the AVX-512 lanes where c->ref_dim is set, else the lanes one
 * after another; num (dim) and den the lanes' totals. */
void pc__climb_sums_cpu(const pc__hca_climb *c, const double *x, double *num, double *den);
#endif

/* One mean shift step from x over the references within the cut-off; 0 when none is that close. On
 * the GPU every climb is a group of 8 threads of a warp (threadIdx.x % 8 its lane, cuda_refine.cu). */
PC__CLIMB_FN int pc__climb_shift(const pc__hca_climb *c, int dim, const double *x, double *next)
{
    double num[PC__CLIMB_MAX_DIM], den;
#if defined(__CUDA_ARCH__)
    unsigned group = 0xffu << (threadIdx.x & 24);
    pc__climb_lane(c, dim, x, (int)(threadIdx.x & 7), num, &den);
    /* lane s + its partner (s ^ 1), then pairs (s ^ 2), then quads (s ^ 4): the order of
     * pc__climb_lanes_total on every lane (an addition's operands commute exactly). */
    for (int step = 1; step < PC__CLIMB_LANES; step *= 2) {
        for (int j = 0; j < dim; j++)
            num[j] = __dadd_rn(num[j], __shfl_xor_sync(group, num[j], step));
        den = __dadd_rn(den, __shfl_xor_sync(group, den, step));
    }
#else
    pc__climb_sums_cpu(c, x, num, &den);
#endif
    if (!(den > 0))
        return 0;
    for (int j = 0; j < dim; j++)
        next[j] = PC__CL_DIV(num[j], den);
    return 1;
}

/* Climbs x (in place) until a shift is below eps, no reference is within the cut-off, or max_iter; dim
 * is c->dim (pc__climb_blocks' note). */
PC__CLIMB_FN void pc__climb_run(const pc__hca_climb *c, int dim, double *x)
{
    double next[PC__CLIMB_MAX_DIM];
    for (int it = 0; it < c->max_iter; it++) {
        if (!pc__climb_shift(c, dim, x, next))
            break;
        double d2 = 0;
        for (int j = 0; j < dim; j++) {
            double e = PC__CL_SUB(next[j], x[j]);
            d2 = PC__CL_ADD(d2, PC__CL_MUL(e, e));
            x[j] = next[j];
        }
        if (PC__CL_SQRT(d2) < c->eps)
            break;
    }
}

/* Cell sums in fixed point, so that any order of summing (threads, atomics) gives the same means: a
 * float value x adds rint((x - lo) * factor) with factor = 2^30 / (hi - lo) (0 where the box is flat or
 * the factor overflows), as the GPU sums the clusters; an integer value adds itself. */
PC__CLIMB_FN double pc__climb_factor(double lo, double hi)
{
    double f = hi > lo ? ldexp(1.0, 30) / (hi - lo) : 0;
    return isfinite(f) ? f : 0;
}
PC__CLIMB_FN int64_t pc__climb_fixed(double x, double lo, double factor)
{
    return (int64_t)rint(PC__CL_MUL(PC__CL_SUB(x, lo), factor));
}
/* The mean from a cell's fixed-point sum of `count` values (integer: the sum itself). */
PC__CLIMB_FN double pc__climb_mean(int64_t sum, double count, int integer, double lo, double factor)
{
    if (integer)
        return PC__CL_DIV((double)sum, count);
    return factor > 0 ? PC__CL_ADD(lo, PC__CL_DIV(PC__CL_DIV((double)sum, factor), count)) : lo;
}

#endif
