/* HCA-MS's climb (ALGORITHMS.md section 3b), one text for the CPU (refine.c, climb_cpu.c) and the GPU
 * (cuda_refine.cu): both backends run these very operations in this very order, each rounded once (the
 * multiply-adds this file means are spelled as such, fmaf / PC__CLF_FMA, and nothing else is
 * contracted: the C files are ISO C, where gcc does not contract, clang is told so below, climb_cpu.c's
 * AVX-512 lanes spell every operation, and the device spells every operation with its _rn intrinsic),
 * and exp is this file's own polynomial rather than the two libraries' exp, which may differ in the
 * last bit. A climb from the same start therefore ends at the same position on both, and the labels
 * are identical, not merely close, as long as the host keeps IEEE round-to-nearest without flushing
 * subnormals (a program that changes the rounding mode, or links -ffast-math's start-up code, may see
 * the CPU's climbs end elsewhere than the GPU's; the CPU's paths still agree with each other). */
#ifndef PC_HCA_REFINE_CLIMB_H
#define PC_HCA_REFINE_CLIMB_H

#if defined(__clang__) && !defined(__CUDACC__)
#pragma STDC FP_CONTRACT OFF /* clang contracts a * b + c by default, even in ISO C */
#endif

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
 * blocks around x's own), blocks in increasing key, cells by increasing index within a block.
 *
 * A step's arithmetic is in floats: each mean is held as its offset from its block's corner in units of
 * h (pc__climb_offset), and x is taken to the same frame once a block, so that the numbers a step
 * handles are the offsets of the references from x (within 3 in the cut-off), whatever the data's
 * range and origin. A float's 24 bits then hold an offset to ~1e-7 h, four orders below the climb's
 * stopping shift (eps, 1e-3 h by default), while a vector or a GPU thread does twice the work it did
 * in doubles. The position itself stays a double, moved by h times each step's float shift. Where a
 * block is many bandwidths wide (a bandwidth below a hundredth of a cell), the offsets keep ~1e-7 of
 * the block's width instead (docs/heca.md). */
typedef struct {
    int dim, m;
    double lo[PC__CLIMB_MAX_DIM], hi[PC__CLIMB_MAX_DIM];
    uint64_t stride[PC__CLIMB_MAX_DIM];       /* the grid's: m^(dim-1-j) */
    int span[PC__CLIMB_MAX_DIM], blocks[PC__CLIMB_MAX_DIM];
    uint64_t block_stride[PC__CLIMB_MAX_DIM];
    double h, eps, cutoff2, inv_h;
    float eps2; /* (eps / h)^2: a step's squared shift in h below which the climb stops */
    int max_iter;
    size_t refs;
    const uint64_t *block_key; /* refs: the block of each reference, non-decreasing */
    /* Where the blocks are few (at most 2^24), block b's references are [block_start[b], block_start[b +
     * 1]) (no search); NULL: a binary search over block_key. */
    const uint32_t *block_start;
    uint64_t block_count;      /* blocks in all (block_start has one more entry) */
    double width[PC__CLIMB_MAX_DIM]; /* a cell's sides */
    const float *ref;          /* refs x dim: the cells' means, each from its block's corner in h */
    const float *weight;       /* refs: the cells' point counts */
    const float *ref_dim;      /* the CPU's AVX-512 step (climb_cpu.c), else NULL: ref dimension by
                                * dimension (dim x refs) */
} pc__hca_climb;

/* A step's sums (ALGORITHMS.md section 3b's mean shift over the references within the cut-off) come in
 * PC__CLIMB_LANES lanes: the references of each block are taken in groups of 16, position s of a group
 * adding into lane s, and the lanes are summed at the end of the step as T(0 .. 7) + T(8 .. 15), T the
 * tree ((0 + 1) + (2 + 3)) + ((4 + 5) + (6 + 7)) of pc__climb_lanes_total. That order is the
 * definition, the same on every path: the CPU's AVX-512 step (a lane a float of a vector), the CPU's
 * other processors (the lanes one after another) and the GPU (a lane a thread, summed by shuffles); a
 * climb from the same start ends at the same position on all of them. */
#define PC__CLIMB_LANES 16

#if defined(__CUDA_ARCH__)
#define PC__CLF_ADD(a, b) __fadd_rn((a), (b))
#define PC__CLF_SUB(a, b) __fsub_rn((a), (b))
#define PC__CLF_MUL(a, b) __fmul_rn((a), (b))
#define PC__CLF_DIV(a, b) __fdiv_rn((a), (b))
#define PC__CLF_FMA(a, b, c) __fmaf_rn((a), (b), (c))
#define PC__CL_FLOAT(a) __double2float_rn(a)
#else
#define PC__CLF_ADD(a, b) ((a) + (b))
#define PC__CLF_SUB(a, b) ((a) - (b))
#define PC__CLF_MUL(a, b) ((a) * (b))
#define PC__CLF_DIV(a, b) ((a) / (b))
#define PC__CLF_FMA(a, b, c) fmaf((a), (b), (c)) /* rounded once, as the GPU's and AVX-512's */
#define PC__CL_FLOAT(a) ((float)(a))
#endif

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

/* Value v's offset in dimension j from the corner of the block at coordinate `at`, in h (the frame of a
 * block's references; refine.c stores the means so, a step takes x so, by these very operations). */
PC__CLIMB_FN float pc__climb_offset(const pc__hca_climb *c, int j, int at, double v)
{
    double corner = PC__CL_ADD(c->lo[j], PC__CL_MUL((double)at * c->span[j], c->width[j]));
    return PC__CL_FLOAT(PC__CL_MUL(PC__CL_SUB(v, corner), c->inv_h));
}

/* e^a for a in [-4.5, 0] (the Gaussian within the 3 h cut-off) in floats, to within an ulp: a = k ln 2 +
 * r with |r| <= ln 2 / 2 (ln 2 in two parts), the degree-7 Taylor polynomial in r (its remainder below
 * 6e-9) by Horner's rule in multiply-adds, times 2^k from its bits (k in [-6, 0]). The constants are
 * climb_cpu.c's AVX-512 lanes' too. */
#define PC__CLIMB_LOG2E 1.44269504f
#define PC__CLIMB_LN2_HI 0.693145752f /* ln 2 = HI + LO */
#define PC__CLIMB_LN2_LO 1.42860677e-6f
PC__CLIMB_FN float pc__climb_exp(float a)
{
    float k = rintf(PC__CLF_MUL(a, PC__CLIMB_LOG2E));
    float r = PC__CLF_FMA(k, -PC__CLIMB_LN2_HI, a);
    r = PC__CLF_FMA(k, -PC__CLIMB_LN2_LO, r);
    float p = PC__CLF_FMA(1.0f / 5040, r, 1.0f / 720);
    p = PC__CLF_FMA(p, r, 1.0f / 120);
    p = PC__CLF_FMA(p, r, 1.0f / 24);
    p = PC__CLF_FMA(p, r, 1.0f / 6);
    p = PC__CLF_FMA(p, r, 0.5f);
    p = PC__CLF_FMA(p, r, 1.0f);
    p = PC__CLF_FMA(p, r, 1.0f);
    uint32_t bits = (uint32_t)(127 + (int)k) << 23;
#if defined(__CUDA_ARCH__)
    float two_k = __uint_as_float(bits);
#else
    float two_k;
    memcpy(&two_k, &bits, sizeof two_k);
#endif
    return PC__CLF_MUL(p, two_k);
}

/* The blocks around x's own (pc__climb_blocks_begin: from[j] .. to[j] in each dimension), numbered
 * with the last dimension fastest: the GPU takes them by number (pc__climb_block_at, pc__climb_block_
 * range), the CPU one after another (pc__climb_walk). A block's references are summed from x in the
 * block's frame (pc__climb_offset). dim is c->dim, an argument so that a caller can give it as a
 * constant (the GPU's kernel, the CPU's AVX-512 step for 3 and 4 bands): the loops then unroll and x,
 * the sums and the walk stay in registers. */
typedef struct {
    int from[PC__CLIMB_MAX_DIM], to[PC__CLIMB_MAX_DIM];
} pc__climb_blocks;

PC__CLIMB_FN void pc__climb_blocks_begin(const pc__hca_climb *c, int dim, const double *x, pc__climb_blocks *b)
{
    for (int j = 0; j < dim; j++) {
        int k = pc__climb_coordinate(x[j], c->lo[j], c->hi[j], c->m) / c->span[j];
        b->from[j] = k > 0 ? k - 1 : 0;
        b->to[j] = k + 1 < c->blocks[j] ? k + 1 : c->blocks[j] - 1;
    }
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

/* The references [*lo, *end) of the block of key k. */
PC__CLIMB_FN void pc__climb_block_refs(const pc__hca_climb *c, uint64_t k, size_t *lo, size_t *end)
{
    if (c->block_start) {
        *lo = c->block_start[k];
        *end = c->block_start[k + 1];
    } else {
        *lo = pc__climb_first_at_least(c, 0, k);
        *end = pc__climb_first_at_least(c, *lo, k + 1);
    }
}

/* How many blocks there are around x. */
PC__CLIMB_FN int pc__climb_block_count(const pc__climb_blocks *b, int dim)
{
    int count = 1;
    for (int j = 0; j < dim; j++)
        count *= b->to[j] - b->from[j] + 1;
    return count;
}

/* The coordinates of block i (0 <= i < pc__climb_block_count): its number in mixed radix, the last
 * dimension fastest. */
PC__CLIMB_FN void pc__climb_block_at(const pc__climb_blocks *b, int dim, int i, int *at)
{
    for (int j = dim - 1; j >= 0; j--) {
        /* n is 1, 2 or 3 (a block and its neighbours): constant divisors, which compile to a multiply
         * and a shift rather than the GPU's ~20-instruction division */
        int n = b->to[j] - b->from[j] + 1, q = n == 3 ? i / 3 : n == 2 ? i / 2 : i;
        at[j] = b->from[j] + (i - q * n);
        i = q;
    }
}

/* The square of v's distance in dimension j from the block at coordinate `at`, a hair short (pc__climb_
 * block_range's note), each operation rounded once on both backends (the device would fuse some), so
 * that both skip the same blocks. */
PC__CLIMB_FN double pc__climb_gap2(const pc__hca_climb *c, int j, int at, double v)
{
    double w = PC__CL_MUL(c->width[j], (double)c->span[j]), left = PC__CL_ADD(c->lo[j], PC__CL_MUL((double)at, w));
    double right = PC__CL_ADD(left, w);
    double gap = v < left ? PC__CL_SUB(left, v) : v > right ? PC__CL_SUB(v, right) : 0;
    gap = PC__CL_SUB(gap, PC__CL_MUL(1e-5, w));
    return gap > 0 ? PC__CL_MUL(gap, gap) : 0;
}

/* The references [*lo, *end) of the block at coordinates at (empty where it lies wholly beyond the
 * cut-off from x), and x in its frame (xr, where not empty). */
PC__CLIMB_FN void pc__climb_block_range(const pc__hca_climb *c, int dim, const double *x, const int *at, size_t *lo,
                                        size_t *end, float *xr)
{
    uint64_t k = 0;
    for (int j = 0; j < dim; j++)
        k += (uint64_t)at[j] * c->block_stride[j];
    /* A block wholly beyond the cut-off adds nothing: skipped. The gaps are taken 1e-5 of the block's
     * width short, so that no reference the float test of pc__climb_add would keep is ever skipped: an
     * offset from the frame is rounded to ~1e-7 of the frame's width or of h, whichever is more. */
    double gap2 = 0;
    for (int j = 0; j < dim; j++)
        gap2 = PC__CL_ADD(gap2, pc__climb_gap2(c, j, at[j], x[j]));
    if (gap2 > c->cutoff2) {
        *lo = *end = 0;
        return;
    }
    pc__climb_block_refs(c, k, lo, end);
    for (int j = 0; j < dim; j++)
        xr[j] = pc__climb_offset(c, j, at[j], x[j]);
}

#if !defined(__CUDA_ARCH__)
/* The CPU's walk over a step's blocks: pc__climb_block_range's ranges for blocks 0, 1, ... of
 * pc__climb_block_at's numbering, those beyond the cut-off or empty passed over, but each dimension's
 * gaps, frames and key parts worked out once a step for its (at most 3) blocks rather than once a
 * block (block by block, the walk took a third of a 4-band step's AVX-512 time). The gaps are summed in
 * pc__climb_block_range's order, so the two skip the same blocks (test_cpu_paths compares them). */
typedef struct {
    int n[PC__CLIMB_MAX_DIM], i[PC__CLIMB_MAX_DIM], done;
    double gap2[PC__CLIMB_MAX_DIM][3];
    float xr[PC__CLIMB_MAX_DIM][3];
    uint64_t key[PC__CLIMB_MAX_DIM][3];
} pc__climb_walk;

PC__CLIMB_FN void pc__climb_walk_begin(const pc__hca_climb *c, int dim, const double *x, pc__climb_walk *w)
{
    pc__climb_blocks b;
    pc__climb_blocks_begin(c, dim, x, &b);
    for (int j = 0; j < dim; j++) {
        w->n[j] = b.to[j] - b.from[j] + 1;
        w->i[j] = 0;
        for (int i = 0; i < w->n[j]; i++) {
            int at = b.from[j] + i;
            w->gap2[j][i] = pc__climb_gap2(c, j, at, x[j]);
            w->xr[j][i] = pc__climb_offset(c, j, at, x[j]);
            w->key[j][i] = (uint64_t)at * c->block_stride[j];
        }
    }
    w->done = 0;
}

/* The next block within the cut-off that holds references: [*lo, *end), x in its frame (xr); 0 when
 * there are no more. */
PC__CLIMB_FN int pc__climb_walk_next(const pc__hca_climb *c, int dim, pc__climb_walk *w, size_t *lo, size_t *end,
                                     float *xr)
{
    while (!w->done) {
        double gap2 = 0;
        uint64_t k = 0;
        for (int j = 0; j < dim; j++) {
            gap2 = PC__CL_ADD(gap2, w->gap2[j][w->i[j]]);
            k += w->key[j][w->i[j]];
        }
        int near = !(gap2 > c->cutoff2);
        if (near)
            for (int j = 0; j < dim; j++)
                xr[j] = w->xr[j][w->i[j]];
        int carry = 1; /* the next block, the last dimension fastest (no early exit: dim may unroll) */
        for (int j = dim - 1; j >= 0; j--)
            if (carry) {
                carry = w->i[j] + 1 >= w->n[j];
                w->i[j] = carry ? 0 : w->i[j] + 1;
            }
        w->done = carry;
        if (near) {
            pc__climb_block_refs(c, k, lo, end);
            if (*lo < *end)
                return 1;
        }
    }
    return 0;
}
#endif

/* A reference's part of a step from xr (x in the reference's frame), mu its offsets and *weight its
 * count, added into a lane's sums where it is within the cut-off: num (dim of them) the weighted
 * offsets of the references from x, den the weights. */
PC__CLIMB_FN void pc__climb_add_ref(int dim, const float *mu, const float *weight, const float *xr, float *num,
                                    float *den)
{
#if defined(__CUDA_ARCH__)
    float m[PC__CLIMB_MAX_DIM];
    if (dim == 4) { /* one 16-byte load (the references are 16 bytes apart from a 256-byte aligned start) */
        float4 v = __ldg(reinterpret_cast<const float4 *>(mu));
        m[0] = v.x, m[1] = v.y, m[2] = v.z, m[3] = v.w;
    } else {
        for (int j = 0; j < dim; j++)
            m[j] = mu[j];
    }
#else
    const float *m = mu;
#endif
    float e[PC__CLIMB_MAX_DIM];
    e[0] = PC__CLF_SUB(m[0], xr[0]);
    float d2 = PC__CLF_MUL(e[0], e[0]);
    for (int j = 1; j < dim; j++) {
        e[j] = PC__CLF_SUB(m[j], xr[j]);
        d2 = PC__CLF_FMA(e[j], e[j], d2);
    }
    if (d2 <= 9.0f) {
        float w = PC__CLF_MUL(*weight, pc__climb_exp(PC__CLF_MUL(d2, -0.5f)));
        for (int j = 0; j < dim; j++)
            num[j] = PC__CLF_FMA(w, e[j], num[j]);
        *den = PC__CLF_ADD(*den, w);
    }
}

/* Reference q's part (pc__climb_add_ref). */
PC__CLIMB_FN void pc__climb_add(const pc__hca_climb *c, int dim, const float *xr, size_t q, float *num, float *den)
{
    pc__climb_add_ref(dim, c->ref + q * (size_t)dim, c->weight + q, xr, num, den);
}

#if defined(__CUDA_ARCH__)
/* Lane s of a step from x on the GPU (thread s of the climb's group of 16): the sums over the
 * references at positions s, s + 16, ... of each block, the blocks in pc__climb_block_at's order. The
 * group shares the walk: thread s finds the range of blocks s, s + 16, ... (the last dimension
 * fastest) and x in their frames, and every thread takes each block's from its finder by shuffles, so
 * that a block's gap and start are worked out once, not by each of the 16. */
__device__ static __forceinline__ void pc__climb_lane(const pc__hca_climb *c, int dim, const double *x, int s,
                                                     float *num, float *den)
{
    for (int j = 0; j < dim; j++)
        num[j] = 0;
    *den = 0;
    pc__climb_blocks b;
    pc__climb_blocks_begin(c, dim, x, &b);
    int count = pc__climb_block_count(&b, dim);
    unsigned group = 0xffffu << (threadIdx.x & 16);
    for (int first = 0; first < count; first += PC__CLIMB_LANES) {
        size_t lo = 0, end = 0;
        float mine[PC__CLIMB_MAX_DIM];
        for (int j = 0; j < dim; j++)
            mine[j] = 0;
        if (first + s < count) {
            int at[PC__CLIMB_MAX_DIM];
            pc__climb_block_at(&b, dim, first + s, at);
            pc__climb_block_range(c, dim, x, at, &lo, &end, mine);
        }
        int blocks = count - first < PC__CLIMB_LANES ? count - first : PC__CLIMB_LANES;
        for (int k = 0; k < blocks; k++) {
            size_t from = __shfl_sync(group, (unsigned long long)lo, k, PC__CLIMB_LANES);
            size_t to = __shfl_sync(group, (unsigned long long)end, k, PC__CLIMB_LANES);
            if (from == to)
                continue;
            float xr[PC__CLIMB_MAX_DIM];
            for (int j = 0; j < dim; j++)
                xr[j] = __shfl_sync(group, mine[j], k, PC__CLIMB_LANES);
            /* the references s, s + 16, ... of the range, by pointers stepped (no pointer past the
             * range's end is formed) and a 32-bit count: 64-bit index arithmetic was a tenth of the
             * loop's instructions, and an index times dim a step 8% of the 4-band climbs' time */
            int n = (int)(to - from);
            if (s < n) {
                const float *mu = c->ref + (from + (size_t)s) * dim, *weight = c->weight + from + s;
                for (int i = s;;) {
                    pc__climb_add_ref(dim, mu, weight, xr, num, den);
                    i += PC__CLIMB_LANES;
                    if (i >= n)
                        break;
                    mu += PC__CLIMB_LANES * dim;
                    weight += PC__CLIMB_LANES;
                }
            }
        }
    }
}
#endif

/* The lanes' values v[0 .. 15] summed in the step's order. */
PC__CLIMB_FN float pc__climb_lanes_total8(const float *v)
{
    return PC__CLF_ADD(PC__CLF_ADD(PC__CLF_ADD(v[0], v[1]), PC__CLF_ADD(v[2], v[3])),
                       PC__CLF_ADD(PC__CLF_ADD(v[4], v[5]), PC__CLF_ADD(v[6], v[7])));
}
PC__CLIMB_FN float pc__climb_lanes_total(const float *v)
{
    return PC__CLF_ADD(pc__climb_lanes_total8(v), pc__climb_lanes_total8(v + 8));
}

#if !defined(__CUDA_ARCH__)
/* The CPU's step sums (climb_cpu.c): the AVX-512 lanes where c->ref_dim is set, else the lanes one
 * after another; num (dim) and den the lanes' totals. */
void pc__climb_sums_cpu(const pc__hca_climb *c, const double *x, float *num, float *den);
#endif

/* One mean shift step from x over the references within the cut-off: the shift (in h) into s, 0 when
 * no reference is that close. On the GPU every climb is a group of 16 threads of a warp (threadIdx.x %
 * 16 its lane, cuda_refine.cu). */
PC__CLIMB_FN int pc__climb_shift(const pc__hca_climb *c, int dim, const double *x, float *s)
{
    float num[PC__CLIMB_MAX_DIM], den;
#if defined(__CUDA_ARCH__)
    unsigned group = 0xffffu << (threadIdx.x & 16);
    pc__climb_lane(c, dim, x, (int)(threadIdx.x & 15), num, &den);
    /* lane s + its partner (s ^ 1), then pairs (s ^ 2), then quads (s ^ 4): every lane then holds its
     * half's tree, T(0 .. 7) or T(8 .. 15); then the halves (s ^ 8), in pc__climb_lanes_total's order
     * on every lane (an addition's operands commute exactly). */
    for (int step = 1; step < PC__CLIMB_LANES; step *= 2) {
        for (int j = 0; j < dim; j++)
            num[j] = __fadd_rn(num[j], __shfl_xor_sync(group, num[j], step, PC__CLIMB_LANES));
        den = __fadd_rn(den, __shfl_xor_sync(group, den, step, PC__CLIMB_LANES));
    }
#else
    pc__climb_sums_cpu(c, x, num, &den);
#endif
    if (!(den > 0))
        return 0;
    for (int j = 0; j < dim; j++)
        s[j] = PC__CLF_DIV(num[j], den);
    return 1;
}

/* Climbs x (in place) until a shift is below eps, no reference is within the cut-off, or max_iter; dim
 * is c->dim (pc__climb_blocks' note). */
PC__CLIMB_FN void pc__climb_run(const pc__hca_climb *c, int dim, double *x)
{
    float s[PC__CLIMB_MAX_DIM];
    for (int it = 0; it < c->max_iter; it++) {
        if (!pc__climb_shift(c, dim, x, s))
            break;
        float d2 = PC__CLF_MUL(s[0], s[0]);
        for (int j = 1; j < dim; j++)
            d2 = PC__CLF_FMA(s[j], s[j], d2);
        for (int j = 0; j < dim; j++)
            x[j] = PC__CL_ADD(x[j], PC__CL_MUL((double)s[j], c->h));
        if (d2 < c->eps2)
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
