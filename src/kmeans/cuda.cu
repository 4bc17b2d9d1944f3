// Lloyd's iterations on an NVIDIA GPU. Three ways to assign the points (the centre update and the
// stopping rules are lloyd.c's, on the host, as for the CPU):
//  - direct: centres (and |c|^2) in shared memory; each thread takes points in a grid-stride loop and
//    finds the nearest centre as min over c of |c|^2 - 2 x.c; with few clusters it adds the point to
//    its block's per-cluster sums in shared memory in the same pass (fused);
//  - GEMM (cuda_gemm.cu): register-tiled points x centres, for large k x dim;
//  - tensor (cuda_tensor.cu): a screen on the tensor cores with a rigorous error bound settles most
//    points; exact_nb_kernel below scans the rest in FP32 as the direct kernels do (same labels, bit
//    for bit) against the centres the triangle inequality leaves them (exact_kernel: all of them);
//  - seed 002: the direct assignment, then a second kernel that sums per block and cluster.
// With Hamerly's bounds (cuda_hamerly.cu) a pass rescans only the points they do not settle, with the
// direct kernels' arithmetic, and the fixed-point sums follow the points that change cluster.
// Unfused paths sum in a second pass where a group of lanes takes one point's coordinates (coalesced
// loads, consecutive shared addresses). Per-block sums (floats, added with shared-memory atomics, so
// their order within a block varies between runs) are added over the blocks in a fixed order in
// double.
#include "cuda_direct.cuh"
#include "cuda_km.cuh"

#include <algorithm>
#include <math.h>
#include <type_traits>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "internal_km.h"
}

namespace {

using namespace pc__km_direct;

// The end of an assignment block: the count of changed labels, and the block's per-cluster sums
// (entries) written to its row of `partial`.
template <bool ACCUMULATE>
__device__ __forceinline__ void finish_block(unsigned moved, unsigned long long *changed, const fixed *acc,
                                             fixed *partial, int entries)
{
    count_moved(moved, changed);
    if (ACCUMULATE) {
        __syncthreads();
        fixed *out = partial + (size_t)blockIdx.x * entries;
        for (int q = threadIdx.x; q < entries; q += blockDim.x)
            out[q] = acc[q];
    }
}

// Specialised dimensions: POINTS points a thread against every centre, centres read as float4s
// (broadcast: all threads read the same one), distance |c|^2 - 2 x.c, ties to the lower index.
template <int D, bool ACCUMULATE>
__global__ void __launch_bounds__(BLOCK) assign_kernel(const float *__restrict__ x, int n, int dim, int k,
                                                       const float *__restrict__ centres, int32_t *labels,
                                                       fixed *partial, unsigned long long *changed, float scale)
{
    extern __shared__ float4 smem4[];
    constexpr int DP = padded(D);
    float *sc = reinterpret_cast<float *>(smem4);
    fixed *acc = reinterpret_cast<fixed *>(sc + (size_t)k * DP);
    (void)dim;
    stage_centres<D>(centres, k, D, sc, nullptr);
    if (ACCUMULATE)
        for (int q = threadIdx.x; q < k * (D + 1); q += blockDim.x)
            acc[q] = 0;
    __syncthreads();
    unsigned moved = 0;
    const long tile = (long)gridDim.x * blockDim.x * POINTS;
    for (long base = (long)blockIdx.x * blockDim.x * POINTS + threadIdx.x; base < n; base += tile) {
        float m2x[POINTS][D], best[POINTS];
        int arg[POINTS], old[POINTS];
#pragma unroll
        for (int p = 0; p < POINTS; p++) {
            long i = base + (long)p * blockDim.x;
            long ii = i < n ? i : n - 1;
#pragma unroll
            for (int j = 0; j < D; j++)
                m2x[p][j] = -2.0f * x[ii * D + j];
            old[p] = labels[ii]; // loaded now, used after the centre loop: its latency hides there
            best[p] = INFINITY;
            arg[p] = 0;
        }
        // Unrolled so that the next centres' shared loads are in flight while this one is used
        // (profiled: 63% of the stalls were waits on shared-memory data).
#pragma unroll 4
        for (int c = 0; c < k; c++) {
            float cv[DP];
            load_centre<D>(smem4, c, cv);
            nearer<D, POINTS>(m2x, cv, c, best, arg);
        }
#pragma unroll
        for (int p = 0; p < POINTS; p++) {
            long i = base + (long)p * blockDim.x;
            if (i >= n)
                continue;
            moved += old[p] != arg[p];
            if (old[p] != arg[p])
                labels[i] = arg[p];
            if (ACCUMULATE) {
#pragma unroll
                for (int j = 0; j < D; j++)
                    atomicAdd(&acc[arg[p] * (D + 1) + j], to_fixed(-0.5f * m2x[p][j], scale));
                atomicAdd(&acc[arg[p] * (D + 1) + D], 1ull);
            }
        }
    }
    finish_block<ACCUMULATE>(moved, changed, acc, partial, k * (D + 1));
}

// Any dimension: one point a thread, read from global memory, centres as dim floats then |c|^2.
template <bool ACCUMULATE>
__global__ void __launch_bounds__(BLOCK) assign_any_kernel(const float *__restrict__ x, int n, int dim, int k,
                                                           const float *__restrict__ centres, int32_t *labels,
                                                           fixed *partial, unsigned long long *changed, float scale)
{
    extern __shared__ float4 smem4[];
    float *sc = reinterpret_cast<float *>(smem4), *sn = sc + (size_t)k * dim;
    fixed *acc = reinterpret_cast<fixed *>(sc + any_centres_floats(k, dim));
    for (int q = threadIdx.x; q < k * dim; q += blockDim.x)
        sc[q] = centres[q];
    for (int c = threadIdx.x; c < k; c += blockDim.x) {
        float s = 0.0f;
        for (int j = 0; j < dim; j++)
            s = fmaf(centres[c * dim + j], centres[c * dim + j], s);
        sn[c] = s;
    }
    if (ACCUMULATE)
        for (int q = threadIdx.x; q < k * (dim + 1); q += blockDim.x)
            acc[q] = 0;
    __syncthreads();
    unsigned moved = 0;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float *xg = x + i * dim;
        float best = INFINITY;
        int arg = 0;
        for (int c = 0; c < k; c++) {
            float d = sn[c];
            for (int j = 0; j < dim; j++)
                d = fmaf(-2.0f * xg[j], sc[c * dim + j], d);
            if (d < best) {
                best = d;
                arg = c;
            }
        }
        moved += labels[i] != arg;
        labels[i] = arg;
        if (ACCUMULATE) {
            for (int j = 0; j < dim; j++)
                atomicAdd(&acc[arg * (dim + 1) + j], to_fixed(xg[j], scale));
            atomicAdd(&acc[arg * (dim + 1) + dim], 1ull);
        }
    }
    finish_block<ACCUMULATE>(moved, changed, acc, partial, k * (dim + 1));
}

// The points the tensor screen left (list[0 .. *count)), each against every centre in plain FP32:
// for D > 0 the arithmetic and shared layout of assign_kernel<D> (POINTS points a thread, one shared
// load of a centre serving all of them), for D = 0 those of assign_any_kernel, so each label is bit
// for bit what the direct kernels give.
template <int D>
__global__ void __launch_bounds__(BLOCK) exact_kernel(const float *__restrict__ x, int dim, int k,
                                                      const float *__restrict__ centres, const int32_t *list,
                                                      const unsigned *count, int32_t *labels,
                                                      unsigned long long *changed)
{
    constexpr int P = D > 0 ? POINTS : 1;
    const unsigned m = *count;
    if ((size_t)blockIdx.x * blockDim.x * P >= m)
        return; // the whole block has nothing to do
    extern __shared__ float4 smem4[];
    float *sc = reinterpret_cast<float *>(smem4);
    constexpr int DP = D > 0 ? padded(D) : 4;
    float *sn = sc + (size_t)k * dim; // D = 0 only
    stage_centres<D>(centres, k, dim, sc, sn);
    __syncthreads();
    unsigned moved = 0;
    const size_t tile = (size_t)gridDim.x * blockDim.x * P;
    for (size_t q0 = (size_t)blockIdx.x * blockDim.x * P + threadIdx.x; q0 < m; q0 += tile) {
        long idx[P];
        float best[P];
        int arg[P];
#pragma unroll
        for (int p = 0; p < P; p++) {
            const size_t q = q0 + (size_t)p * blockDim.x;
            idx[p] = list[q < m ? q : m - 1]; // past the end: a repeat of the last, not written
            best[p] = INFINITY;
            arg[p] = 0;
        }
        if (D > 0) {
            float m2x[P][D > 0 ? D : 1];
#pragma unroll
            for (int p = 0; p < P; p++)
#pragma unroll
                for (int j = 0; j < D; j++)
                    m2x[p][j] = -2.0f * x[idx[p] * D + j];
#pragma unroll 2
            for (int c = 0; c < k; c++) {
                float cv[DP];
                load_centre<D>(smem4, c, cv);
                nearer<(D > 0 ? D : 1), P>(m2x, cv, c, best, arg);
            }
        } else {
            const float *xg = x + idx[0] * dim;
            for (int c = 0; c < k; c++) {
                float d = sn[c];
                for (int j = 0; j < dim; j++)
                    d = fmaf(-2.0f * xg[j], sc[c * dim + j], d);
                if (d < best[0]) {
                    best[0] = d;
                    arg[0] = c;
                }
            }
        }
#pragma unroll
        for (int p = 0; p < P; p++)
            if (q0 + (size_t)p * blockDim.x < m && labels[idx[p]] != arg[p]) {
                labels[idx[p]] = arg[p];
                moved++;
            }
    }
    count_moved(moved, changed);
}

// Candidates for the exact pass, by the triangle inequality (the tensor path, k <= PC__KM_NB_MAX_K).
// With r_c = |x - c| in exact arithmetic the direct kernels' d(c) = |c|^2 - 2 x.c = r_c^2 - |x|^2,
// computed with an error of at most e = (2 D + 2) 2^-24 1.02 (C^2 + 2 X C) (C = max |c|, X = |x|; the
// fmaf chain of |c|^2 then of -2 x_j c_j), plus underflow. Let b be a listed point's lowest-key
// centre and delta^2 >= 2e. A centre with |c - b| > 2 r_b + delta has r_c >= |c - b| - r_b > r_b +
// delta, so r_c^2 - r_b^2 > delta^2 >= 2e, and its computed d is strictly above the computed d(b),
// itself at least the computed minimum: c is neither the argmin nor tied with it. So the exact scan
// over the other centres, in index order with the direct kernels' arithmetic, gives the full scan's
// label bit for bit. Per step: radius_kernel takes, for each centre b, R_b = the largest 2 r_b +
// delta over the listed points whose lowest key is b (an upper bound: r_b rounded up); then
// neighbour_kernel lists, for each b with R_b > 0, in index order, the centres c with |c - b| not
// above R_b (|c - b| rounded down); exact_nb_kernel scans those. A point with a huge or non-finite
// value (S >= 1e37, or R_b not finite) makes R_b infinite: every centre.
constexpr size_t PC__KM_NB_MAX_K = 4096; // the lists take k x k indices: 64 MiB at most

__global__ void __launch_bounds__(BLOCK) radius_kernel(const float *__restrict__ x, int dim, int k,
                                                       const float *__restrict__ centres, const float *cnorm,
                                                       const int32_t *list, const int32_t *list_label,
                                                       const unsigned *count, unsigned *radius)
{
    __shared__ unsigned nmax_bits;
    if (threadIdx.x == 0)
        nmax_bits = 0;
    __syncthreads();
    unsigned top = 0; // max |c|^2 as float bits (non-negative floats order as integers; NaN is larger)
    for (int c = threadIdx.x; c < k; c += blockDim.x)
        top = max(top, __float_as_uint(fabsf(cnorm[c])));
    atomicMax(&nmax_bits, top);
    __syncthreads();
    const float N = __uint_as_float(nmax_bits), C = sqrtf(N) * 1.0001f;
    // 2e / (C^2 + 2 X C), e as above but counting the |c|^2 chain too (its rounding does not cancel
    // here): dim roundings there, dim + 1 in the chain of products, each at most 2^-24 (C^2 + 2 X C).
    const float e2 = 2.0f * (float)(2 * dim + 2) * 0x1p-24f * 1.02f;
    const unsigned m = *count;
    for (unsigned q = blockIdx.x * blockDim.x + threadIdx.x; q < m; q += gridDim.x * blockDim.x) {
        const int b = list_label[q];
        if (b < 0 || b >= k)
            continue; // exact_nb_kernel scans every centre for it
        const float *xi = x + (size_t)list[q] * dim, *cb = centres + (size_t)b * dim;
        float r2 = 0.0f, xx = 0.0f;
        for (int j = 0; j < dim; j++) {
            const float t = xi[j] - cb[j];
            r2 = fmaf(t, t, r2);
            xx = fmaf(xi[j], xi[j], xx);
        }
        const float X = sqrtf(xx) * 1.0001f, S = N + X * X + 2.0f * X * C;
        // r_b rounded up: (dim + 2) roundings of 2^-24 each on non-negative terms, underflow absolute.
        const float rb = sqrtf(r2 * (1.0f + 0x1p-16f) + 0x1p-100f) * (1.0f + 0x1p-20f);
        const float delta = sqrtf(e2 * (C * C + 2.0f * X * C) + 0x1p-100f) * 1.01f;
        float R = (2.0f * rb + delta) * (1.0f + 0x1p-20f);
        if (!(S < 1e37f) || !(R < INFINITY))
            R = INFINITY;
        atomicMax(radius + b, __float_as_uint(R));
    }
}

// One warp a centre b: the centres c (in index order) with |c - b| rounded down not above R_b.
__global__ void __launch_bounds__(BLOCK) neighbour_kernel(const float *__restrict__ centres, int dim, int k,
                                                          const unsigned *radius, int32_t *nb, int *nb_count)
{
    const int lane = threadIdx.x & 31;
    for (long b = (blockIdx.x * (long)blockDim.x + threadIdx.x) >> 5; b < k; b += (gridDim.x * (long)blockDim.x) >> 5) {
        const float R = __uint_as_float(radius[b]);
        int found = 0;
        if (R > 0.0f) { // 0: no listed point has b lowest
            const float *cb = centres + b * dim;
            for (int c0 = 0; c0 < k; c0 += 32) {
                const int c = c0 + lane;
                bool keep = false;
                if (c < k) {
                    const float *cc = centres + (size_t)c * dim;
                    float d2 = 0.0f;
                    for (int j = 0; j < dim; j++) {
                        const float t = cb[j] - cc[j];
                        d2 = fmaf(t, t, d2);
                    }
                    // Rounded down (a NaN keeps c): squares and sums of non-negative terms.
                    const float lo = sqrtf(d2 * (1.0f - 0x1p-16f)) * (1.0f - 0x1p-20f);
                    keep = !(lo > R);
                }
                const unsigned ballot = __ballot_sync(0xffffffffu, keep);
                if (keep)
                    nb[b * k + found + __popc(ballot & ((1u << lane) - 1))] = c;
                found += __popc(ballot);
            }
        }
        if (lane == 0)
            nb_count[b] = found;
    }
}

// The listed points against their candidate centres (every centre where the list has none): a thread
// a point, the arithmetic and shared layout of exact_kernel<D>.
template <int D>
__global__ void __launch_bounds__(BLOCK) exact_nb_kernel(const float *__restrict__ x, int dim, int k,
                                                         const float *__restrict__ centres, const int32_t *list,
                                                         const int32_t *list_label, const unsigned *count,
                                                         const int32_t *nb, const int *nb_count, int32_t *labels,
                                                         unsigned long long *changed)
{
    const unsigned m = *count;
    if ((size_t)blockIdx.x * blockDim.x >= m)
        return;
    extern __shared__ float4 smem4[];
    float *sc = reinterpret_cast<float *>(smem4);
    constexpr int DP = D > 0 ? padded(D) : 4;
    float *sn = sc + (size_t)k * dim; // D = 0 only
    stage_centres<D>(centres, k, dim, sc, sn);
    __syncthreads();
    unsigned moved = 0;
    for (unsigned q = blockIdx.x * blockDim.x + threadIdx.x; q < m; q += gridDim.x * blockDim.x) {
        const long i = list[q];
        const int b = list_label[q];
        const bool listed = b >= 0 && b < k;
        const int *cand = listed ? nb + (size_t)b * k : nullptr;
        const int total = listed ? nb_count[b] : k;
        float best = INFINITY;
        int arg = 0;
        float m2x[D > 0 ? D : 1];
        if (D > 0)
#pragma unroll
            for (int j = 0; j < D; j++)
                m2x[j] = -2.0f * x[i * D + j];
        for (int u = 0; u < total; u++) {
            const int c = listed ? cand[u] : u;
            float d;
            if (D > 0) {
                float cv[DP];
                load_centre<D>(smem4, c, cv);
                d = cv[D > 0 ? D : 0];
#pragma unroll
                for (int j = 0; j < D; j++)
                    d = fmaf(m2x[j], cv[j], d);
            } else {
                const float *xg = x + i * dim;
                d = sn[c];
                for (int j = 0; j < dim; j++)
                    d = fmaf(-2.0f * xg[j], sc[c * dim + j], d);
            }
            if (d < best) {
                best = d;
                arg = c;
            }
        }
        if (labels[i] != arg) {
            labels[i] = arg;
            moved++;
        }
    }
    count_moved(moved, changed);
}

// Seed 002's second kernel: each block sums its points per cluster into its row of the
// (blocks x k) array.
__global__ void __launch_bounds__(BLOCK) block_sums_kernel(const float *__restrict__ x, int n, int dim, int k,
                                                           const int32_t *__restrict__ labels, float *partial)
{
    extern __shared__ float acc[];
    for (int q = threadIdx.x; q < k * (dim + 1); q += blockDim.x)
        acc[q] = 0.0f;
    __syncthreads();
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        int c = labels[i];
        for (int j = 0; j < dim; j++)
            atomicAdd(&acc[c * (dim + 1) + j], x[i * dim + j]);
        atomicAdd(&acc[c * (dim + 1) + dim], 1.0f);
    }
    __syncthreads();
    float *out = partial + (size_t)blockIdx.x * k * (dim + 1);
    for (int q = threadIdx.x; q < k * (dim + 1); q += blockDim.x)
        out[q] = acc[q];
}

// The unfused paths' sums: a warp takes 32 points at a time, their labels in one load; then a group
// of G lanes (a power of two >= dim + 1 for fixed-point sums, >= dim for float ones; at most 32) takes
// one point, lane j its coordinate j (and j + 32, ... when dim >= 32) and lane dim (lane 0 when
// dim >= G) its count. All G of a lane's coordinates are loaded before the first is added, so the
// loads overlap; a warp's loads cover whole points and its atomics hit consecutive shared addresses
// (against a thread a point: atomics 4 (dim + 1) bytes apart across the lanes, bank conflicts on
// every float compare-and-swap loop). Acc: fixed (exact in any order, see to_fixed) or float (the
// seed's sums; at most 85 registers so that three blocks share an SM: profiled at two, 126
// registers, the compare-and-swap latency not hidden, 33% of issue slots busy).
template <typename Acc> __device__ __forceinline__ Acc as_sum(float v, float scale)
{
    if constexpr (std::is_same<Acc, fixed>::value)
        return to_fixed(v, scale);
    else
        return (void)scale, v;
}

template <typename Acc, int G>
__global__ void __launch_bounds__(BLOCK, std::is_same<Acc, float>::value ? (G <= 16 ? 3 : 2) : 0)
    group_sums_kernel(const float *__restrict__ x, int n, int dim, int k, const int32_t *__restrict__ labels,
                      Acc *partial, float scale)
{
    extern __shared__ __align__(8) unsigned char group_smem[];
    Acc *acc = reinterpret_cast<Acc *>(group_smem);
    const int entries = k * (dim + 1);
    for (int q = threadIdx.x; q < entries; q += blockDim.x)
        acc[q] = 0;
    __syncthreads();
    constexpr int PER = 32 / G; // points a warp takes at once
    const int lane = threadIdx.x & 31, j0 = lane % G, sub = lane / G, counter = dim < G ? dim : 0;
    const long warps = (long)gridDim.x * blockDim.x >> 5;
    for (long base = ((blockIdx.x * (long)blockDim.x + threadIdx.x) >> 5) * 32; base < n; base += warps * 32) {
        const int mine = base + lane < n ? labels[base + lane] : -1;
        float v[G];
        int c[G];
#pragma unroll
        for (int r = 0; r < G; r++) {
            const int p = r * PER + sub;
            const long i = base + p;
            c[r] = __shfl_sync(0xffffffffu, mine, p);
            v[r] = i < n && j0 < dim ? x[i * dim + j0] : 0.0f;
        }
#pragma unroll
        for (int r = 0; r < G; r++) {
            if (c[r] < 0)
                continue;
            Acc *a = acc + c[r] * (dim + 1);
            if (j0 < dim)
                atomicAdd(a + j0, as_sum<Acc>(v[r], scale));
            if (j0 == counter)
                atomicAdd(a + dim, (Acc)1);
            for (int j = j0 + 32; j < dim; j += 32) // dim > 32 only
                atomicAdd(a + j, as_sum<Acc>(x[(base + r * PER + sub) * dim + j], scale));
        }
    }
    __syncthreads();
    Acc *out = partial + (size_t)blockIdx.x * entries;
    for (int q = threadIdx.x; q < entries; q += blockDim.x)
        out[q] = acc[q];
}

// The rows of a blocks x entries array summed column by column in a fixed order: thread (r, e) of a
// block of 8 x 32 adds rows r, r + 8, ... of entry e (a warp reads 32 consecutive entries of a row),
// then the 8 row sums are added in row order; finish(q, total) takes entry q's total.
template <typename Acc, typename In, class Finish>
__device__ __forceinline__ void column_sums(const In *partial, int blocks, int entries, Finish finish)
{
    __shared__ Acc part[8][32];
    const int e = threadIdx.x & 31, r = threadIdx.x >> 5, q = blockIdx.x * 32 + e;
    Acc s = 0;
    if (q < entries)
        for (int b = r; b < blocks; b += 8)
            s += partial[(size_t)b * entries + q];
    part[r][e] = s;
    __syncthreads();
    if (r == 0 && q < entries) {
        Acc t = 0;
        for (int w = 0; w < 8; w++)
            t += part[w][e];
        finish(q, t);
    }
}

// The fixed-point sums over the blocks (exact integers, any order), then scaled: entry q is a
// coordinate sum (times 1 / scale) or, every dim + 1, a count.
__global__ void __launch_bounds__(256) reduce_fixed(const fixed *partial, int blocks, int entries, int dim,
                                                    double unscale, double *sums)
{
    column_sums<fixed>(partial, blocks, entries, [&](int q, fixed t) {
        sums[q] = q % (dim + 1) == dim ? (double)(long long)t : (double)(long long)t * unscale;
    });
}

// The fixed-point sums over the blocks, kept as integers (Hamerly's totals, which moved points update).
__global__ void __launch_bounds__(256) reduce_totals(const fixed *partial, int blocks, int entries, fixed *totals)
{
    column_sums<fixed>(partial, blocks, entries, [&](int q, fixed t) { totals[q] = t; });
}

// The largest |x| (as float bits: for non-negative floats the integer order is the float order).
__global__ void amax_kernel(const float *x, size_t count, unsigned *out)
{
    unsigned m = 0;
    for (size_t q = blockIdx.x * (size_t)blockDim.x + threadIdx.x; q < count; q += (size_t)gridDim.x * blockDim.x)
        m = max(m, __float_as_uint(fabsf(x[q])));
    for (int off = 16; off > 0; off >>= 1)
        m = max(m, __shfl_down_sync(0xffffffffu, m, off));
    if ((threadIdx.x & 31) == 0)
        atomicMax(out, m);
}

// Seed 002's final sum over its float per-block sums, in a fixed order, in double.
__global__ void __launch_bounds__(256) reduce_blocks(const float *partial, int blocks, int entries, double *sums)
{
    column_sums<double>(partial, blocks, entries, [&](int q, double t) { sums[q] = t; });
}

__global__ void inertia_kernel(const float *x, int n, int dim, const float *centres, const int32_t *labels,
                               double *per_block)
{
    __shared__ double part[BLOCK / 32];
    double s = 0.0;
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float *c = centres + (size_t)labels[i] * dim;
        for (int j = 0; j < dim; j++) {
            double t = (double)x[i * dim + j] - c[j];
            s += t * t;
        }
    }
    for (int off = 16; off > 0; off >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, off);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0.0;
        for (int w = 0; w < BLOCK / 32; w++)
            t += part[w];
        per_block[blockIdx.x] = t;
    }
}

enum class path { direct_fused, direct, seed, gemm, tensor };

struct gpu_engine {
    size_t n = 0, dim = 0, k = 0;
    path how = path::direct_fused;
    bool float_sums = false; // the seed's per-block float sums (else fixed point) ...
    bool float_group = false; // ... added by float_group_sums_kernel (FAST) rather than the seed's kernel
    int float_group_size = 2;
    // PC_KMEANS_CUDA_STATS: CUDA events between the stages of each step, their times summed (ms):
    // assignment (the tensor path: screen with its preparation), exact pass, block sums, reduction.
    bool stats = false;
    cudaEvent_t ev[5] = {};
    double stage_ms[4] = {};
    int assign_blocks = 0, sum_blocks = 0, group = 1;
    size_t smem_assign = 0, smem_sums = 0;
    // The tensor path: its screen's format, launch and buffers, the exact kernel's launch, and how
    // many points the screen left to it (summed over the steps, for PC_KMEANS_CUDA_STATS).
    int tensor_format = PC__KM_TENSOR_TF32, tensor_blocks = 0, exact_blocks = 0;
    size_t smem_tensor = 0, listed = 0, screened = 0;
    pc__km_tensor_args targs = {};
    pc__device_buffer<uint32_t> cpack;
    pc__device_buffer<float> cnorm;
    pc__device_buffer<int32_t> list, list_label;
    // The exact pass's candidates (k <= PC__KM_NB_MAX_K; PC_KMEANS_CUDA_EXACT=all: every centre).
    bool use_nb = false;
    int radius_blocks = 0, exact_nb_blocks = 0;
    pc__device_buffer<unsigned> radius;
    pc__device_buffer<int32_t> nb;
    pc__device_buffer<int> nb_count;
    pc__device_buffer<unsigned> list_count;
    float scale = 1.0f; // fixed-point sums: x * scale
    pc__device_buffer<float> x, centres, partial_float; // per-block sums: the seed's floats, or fixed
    pc__device_buffer<fixed> partial;
    pc__device_buffer<int32_t> labels;
    pc__device_buffer<double> sums, inertia;
    pc__device_buffer<unsigned long long> changed;
    double *host_sums = nullptr; // pinned: the sums' download is a host wait every iteration
    cudaEvent_t step_ev[2] = {};  // a step's GPU time
    double gpu_seconds = 0.0;
    // Hamerly's bounds (cuda_hamerly.cu) instead of Lloyd's full passes: the clusters' fixed-point sums
    // kept on the device and moved with the points that change cluster; the distances evaluated.
    pc__km_ham *ham = nullptr;
    pc__device_buffer<fixed> totals;
    double *distances = nullptr;
    ~gpu_engine()
    {
        pc__km_ham_free(ham);
        if (host_sums)
            cudaFreeHost(host_sums);
        for (cudaEvent_t ev : step_ev)
            if (ev)
                cudaEventDestroy(ev);
    }
};

typedef void (*assign_fn)(const float *, int, int, int, const float *, int32_t *, fixed *, unsigned long long *,
                          float);
typedef void (*sums_fn)(const float *, int, int, int, const int32_t *, fixed *, float);

typedef void (*float_sums_fn)(const float *, int, int, int, const int32_t *, float *, float);

template <typename Acc> void (*pick_group_sums(int group))(const float *, int, int, int, const int32_t *, Acc *, float)
{
    switch (group) {
    case 2: return group_sums_kernel<Acc, 2>;
    case 4: return group_sums_kernel<Acc, 4>;
    case 8: return group_sums_kernel<Acc, 8>;
    case 16: return group_sums_kernel<Acc, 16>;
    default: return group_sums_kernel<Acc, 32>;
    }
}
float_sums_fn pick_float_sums(int group) { return pick_group_sums<float>(group); }
sums_fn pick_sums(int group) { return pick_group_sums<fixed>(group); }

assign_fn pick(int dim, bool accumulate)
{
#define PC__PICK(DD) return accumulate ? assign_kernel<DD, true> : assign_kernel<DD, false>
    switch (dim) {
    case 1: PC__PICK(1);
    case 2: PC__PICK(2);
    case 3: PC__PICK(3);
    case 4: PC__PICK(4);
    case 8: PC__PICK(8);
    case 16: PC__PICK(16);
    default: return accumulate ? assign_any_kernel<true> : assign_any_kernel<false>;
    }
#undef PC__PICK
}

typedef void (*exact_fn)(const float *, int, int, const float *, const int32_t *, const unsigned *, int32_t *,
                         unsigned long long *);

exact_fn pick_exact(int dim) { PC__PICK_BY_DIM(exact_kernel) }

typedef void (*exact_nb_fn)(const float *, int, int, const float *, const int32_t *, const int32_t *,
                            const unsigned *, const int32_t *, const int *, int32_t *, unsigned long long *);

exact_nb_fn pick_exact_nb(int dim) { PC__PICK_BY_DIM(exact_nb_kernel) }

// Shared memory of a direct assignment kernel: the centres (padded for the specialised kernels), and
// the per-cluster sums when it accumulates.
size_t assign_smem(size_t k, size_t dim, bool accumulate)
{
    size_t centres = specialised(dim) ? k * (size_t)padded((int)dim) : any_centres_floats(k, dim);
    return centres * sizeof(float) + (accumulate ? k * (dim + 1) * sizeof(fixed) : 0);
}

// Assigns every point (and, fused, sums the clusters per block); labels only when !sums.
pc_status assign(gpu_engine &e, bool sums)
{
    if (e.how == path::tensor) {
        pc_status st = pc__km_tensor_assign(e.targs, e.centres.ptr, e.tensor_format, e.tensor_blocks, e.smem_tensor);
        if (st != PC_OK)
            return st;
        if (e.stats && sums)
            cudaEventRecord(e.ev[1]);
        if (e.use_nb) {
            PC_CUDA_TRY(cudaMemsetAsync(e.radius.ptr, 0, e.k * sizeof(unsigned)), "cudaMemset");
            radius_kernel<<<e.radius_blocks, BLOCK>>>(e.x.ptr, (int)e.dim, (int)e.k, e.centres.ptr, e.cnorm.ptr,
                                                      e.list.ptr, e.list_label.ptr, e.list_count.ptr, e.radius.ptr);
            PC_CUDA_LAUNCHED("k-means candidate radius kernel");
            neighbour_kernel<<<(int)((e.k * 32 + BLOCK - 1) / BLOCK), BLOCK>>>(e.centres.ptr, (int)e.dim, (int)e.k,
                                                                             e.radius.ptr, e.nb.ptr, e.nb_count.ptr);
            PC_CUDA_LAUNCHED("k-means candidate list kernel");
            pick_exact_nb((int)e.dim)<<<e.exact_nb_blocks, BLOCK, e.smem_assign>>>(
                e.x.ptr, (int)e.dim, (int)e.k, e.centres.ptr, e.list.ptr, e.list_label.ptr, e.list_count.ptr,
                e.nb.ptr, e.nb_count.ptr, e.labels.ptr, e.changed.ptr);
        } else {
            pick_exact((int)e.dim)<<<e.exact_blocks, BLOCK, e.smem_assign>>>(
                e.x.ptr, (int)e.dim, (int)e.k, e.centres.ptr, e.list.ptr, e.list_count.ptr, e.labels.ptr,
                e.changed.ptr);
        }
        PC_CUDA_LAUNCHED("k-means exact assignment kernel");
        return PC_OK;
    }
    if (e.how == path::gemm)
        return pc__km_gemm_assign(e.x.ptr, (int)e.n, (int)e.dim, (int)e.k, e.centres.ptr, e.labels.ptr, e.changed.ptr,
                                  e.assign_blocks, e.smem_assign);
    bool fused = sums && e.how == path::direct_fused;
    fused ? pick((int)e.dim, true)<<<e.assign_blocks, BLOCK, e.smem_assign>>>(
                e.x.ptr, (int)e.n, (int)e.dim, (int)e.k, e.centres.ptr, e.labels.ptr, e.partial.ptr, e.changed.ptr,
                e.scale)
          : pick((int)e.dim, false)<<<e.assign_blocks, BLOCK, e.smem_assign>>>(
                e.x.ptr, (int)e.n, (int)e.dim, (int)e.k, e.centres.ptr, e.labels.ptr, e.partial.ptr, e.changed.ptr,
                e.scale);
    PC_CUDA_LAUNCHED("k-means assignment kernel");
    return PC_OK;
}

// The per-block sums of the unfused paths.
pc_status block_sums(gpu_engine &e)
{
    if (e.float_sums && e.float_group)
        pick_float_sums(e.float_group_size)<<<e.sum_blocks, BLOCK, e.smem_sums>>>(
            e.x.ptr, (int)e.n, (int)e.dim, (int)e.k, e.labels.ptr, e.partial_float.ptr, 1.0f);
    else if (e.float_sums)
        block_sums_kernel<<<e.sum_blocks, BLOCK, e.smem_sums>>>(e.x.ptr, (int)e.n, (int)e.dim, (int)e.k, e.labels.ptr,
                                                                e.partial_float.ptr);
    else
        pick_sums(e.group)<<<e.sum_blocks, BLOCK, e.smem_sums>>>(e.x.ptr, (int)e.n, (int)e.dim, (int)e.k, e.labels.ptr,
                                                                 e.partial.ptr, e.scale);
    PC_CUDA_LAUNCHED("k-means block sums kernel");
    return PC_OK;
}

pc_status gpu_step(void *ctx, const float *centres, double *sums, int64_t *counts, size_t *changed)
{
    gpu_engine &e = *static_cast<gpu_engine *>(ctx);
    cudaEvent_t t0 = e.step_ev[0], t1 = e.step_ev[1];
    PC_CUDA_TRY(cudaMemcpy(e.centres.ptr, centres, e.k * e.dim * sizeof(float), cudaMemcpyHostToDevice), "centres upload");
    PC_CUDA_TRY(cudaMemset(e.changed.ptr, 0, sizeof(unsigned long long)), "cudaMemset");
    cudaEventRecord(t0);
    if (e.stats)
        cudaEventRecord(e.ev[0]);
    const int entries = (int)(e.k * (e.dim + 1));
    pc__km_ham_counts hc = {};
    bool resum = false;
    pc_status st = e.ham ? pc__km_ham_pass(e.ham, e.centres.ptr, e.labels.ptr, e.scale, e.totals.ptr, &resum)
                         : assign(e, true);
    if (e.stats)
        cudaEventRecord(e.ev[2]);
    if (st == PC_OK && resum) { /* every point moved: summed again as Lloyd sums them */
        if ((st = block_sums(e)) == PC_OK) {
            reduce_totals<<<(entries + 31) / 32, 256>>>(e.partial.ptr, e.sum_blocks, entries, e.totals.ptr);
            st = pc__cuda_status(cudaGetLastError(), "k-means reduction kernel");
        }
    } else if (st == PC_OK && !e.ham && e.how != path::direct_fused)
        st = block_sums(e);
    if (e.stats)
        cudaEventRecord(e.ev[3]);
    if (st != PC_OK)
        return st;
    int rows = e.how == path::direct_fused ? e.assign_blocks : e.sum_blocks;
    if (e.ham)
        reduce_fixed<<<(entries + 31) / 32, 256>>>(e.totals.ptr, 1, entries, (int)e.dim, 1.0 / e.scale, e.sums.ptr);
    else if (e.float_sums)
        reduce_blocks<<<(entries + 31) / 32, 256>>>(e.partial_float.ptr, rows, entries, e.sums.ptr);
    else
        reduce_fixed<<<(entries + 31) / 32, 256>>>(e.partial.ptr, rows, entries, (int)e.dim, 1.0 / e.scale,
                                                   e.sums.ptr);
    PC_CUDA_LAUNCHED("k-means reduction kernel");
    cudaEventRecord(t1);
    if (e.stats)
        cudaEventRecord(e.ev[4]);
    unsigned long long moved = 0;
    PC_CUDA_TRY(cudaMemcpy(e.host_sums, e.sums.ptr, entries * sizeof(double), cudaMemcpyDeviceToHost), "sums download");
    if (e.ham) {
        if ((st = pc__km_ham_collect(e.ham, &hc)) != PC_OK)
            return st;
        moved = hc.moved;
    } else
        PC_CUDA_TRY(cudaMemcpy(&moved, e.changed.ptr, sizeof moved, cudaMemcpyDeviceToHost), "k-means iteration");
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, t0, t1);
    e.gpu_seconds += ms * 1e-3;
    if (e.stats) {
        const bool exact = e.how == path::tensor && !e.ham; // else no exact pass: event 1 was not recorded
        for (int q = 0; q < 4; q++) {
            float part = 0.0f;
            if (exact || q >= 2)
                cudaEventElapsedTime(&part, e.ev[q], e.ev[q + 1]);
            else if (q == 0)
                cudaEventElapsedTime(&part, e.ev[0], e.ev[2]);
            e.stage_ms[q] += part;
        }
    }
    for (size_t c = 0; c < e.k; c++) {
        for (size_t j = 0; j < e.dim; j++)
            sums[c * e.dim + j] = e.host_sums[c * (e.dim + 1) + j];
        counts[c] = (int64_t)llround(e.host_sums[c * (e.dim + 1) + e.dim]);
    }
    *changed = (size_t)moved;
    if (e.ham) {
        *e.distances += hc.distances;
        e.listed += hc.scanned;
        e.screened += e.n;
    } else if (e.how == path::tensor) {
        unsigned listed = 0;
        PC_CUDA_TRY(cudaMemcpy(&listed, e.list_count.ptr, sizeof listed, cudaMemcpyDeviceToHost), "k-means iteration");
        e.listed += listed;
        e.screened += e.n;
    }
    return PC_OK;
}

pc_status gpu_labels(void *ctx, int32_t *labels)
{
    gpu_engine &e = *static_cast<gpu_engine *>(ctx);
    PC_CUDA_TRY(cudaMemcpy(labels, e.labels.ptr, e.n * sizeof(int32_t), cudaMemcpyDeviceToHost), "labels download");
    return PC_OK;
}

pc_status gpu_finish(void *ctx, const float *centres, int relabel, double *inertia)
{
    gpu_engine &e = *static_cast<gpu_engine *>(ctx);
    PC_CUDA_TRY(cudaMemcpy(e.centres.ptr, centres, e.k * e.dim * sizeof(float), cudaMemcpyHostToDevice), "centres upload");
    if (relabel) {
        pc__km_ham_counts hc;
        bool resum; // the sums are not needed any more
        pc_status st = e.ham ? pc__km_ham_pass(e.ham, e.centres.ptr, e.labels.ptr, e.scale, e.totals.ptr, &resum)
                             : assign(e, false);
        if (st == PC_OK && e.ham)
            st = pc__km_ham_collect(e.ham, &hc);
        if (st != PC_OK)
            return st;
        if (e.ham)
            *e.distances += hc.distances;
    }
    inertia_kernel<<<e.assign_blocks, BLOCK>>>(e.x.ptr, (int)e.n, (int)e.dim, e.centres.ptr, e.labels.ptr, e.inertia.ptr);
    PC_CUDA_LAUNCHED("k-means inertia kernel");
    double *part = (double *)pc__alloc((size_t)e.assign_blocks, sizeof(double), "inertia");
    if (!part)
        return PC_OUT_OF_MEMORY;
    pc_status st = pc__cuda_status(cudaMemcpy(part, e.inertia.ptr, e.assign_blocks * sizeof(double), cudaMemcpyDeviceToHost),
                                   "inertia download");
    double total = 0;
    for (int b = 0; b < e.assign_blocks; b++)
        total += part[b];
    free(part);
    *inertia = total;
    return st;
}

} // namespace

// The exact per-cluster sums on their own (the k-means stream's held blocks, cuda_stream_held.cu):
// the unfused paths' group_sums_kernel over a blocks x entries array, then its columns added.
pc_status pc__km_fixed_sums_setup(size_t k, size_t dim, int *blocks)
{
    int device = 0, sms = 0, max_smem = 0, group = 2;
    PC_CUDA_TRY(cudaGetDevice(&device), "cudaGetDevice");
    PC_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "device query");
    PC_CUDA_TRY(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), "device query");
    const size_t smem = k * (dim + 1) * sizeof(fixed);
    if (smem > (size_t)max_smem || k * (dim + 1) > (size_t)INT32_MAX)
        return pc__fail(PC_UNSUPPORTED, "the GPU's per-cluster sums take %zu KiB of shared memory, over the %d KiB "
                        "a block may use", smem >> 10, max_smem >> 10);
    while (group < 32 && group < (int)dim + 1)
        group *= 2;
    // The device's most, not this caller's need: the attribute is the kernel's, for the whole process,
    // and a smaller value set by a later caller (another stream, pc_kmeans) would fail this one's launches.
    PC_CUDA_TRY(cudaFuncSetAttribute(pick_sums(group), cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem),
                "k-means shared memory");
    int per_sm = 1;
    PC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, pick_sums(group), BLOCK, smem),
                "k-means occupancy");
    *blocks = sms * std::max(1, std::min(4, per_sm));
    return PC_OK;
}

pc_status pc__km_fixed_sums(const float *x, int n, int dim, int k, const int32_t *labels, float scale, int blocks,
                            unsigned long long *partial, unsigned long long *totals, cudaStream_t stream)
{
    int group = 2;
    while (group < 32 && group < dim + 1)
        group *= 2;
    const int entries = k * (dim + 1);
    pick_sums(group)<<<blocks, BLOCK, (size_t)entries * sizeof(fixed), stream>>>(x, n, dim, k, labels, partial, scale);
    PC_CUDA_LAUNCHED("k-means block sums kernel");
    reduce_totals<<<(entries + 31) / 32, 256, 0, stream>>>(partial, blocks, entries, totals);
    PC_CUDA_LAUNCHED("k-means reduction kernel");
    return PC_OK;
}

extern "C" pc_status pc__km_lloyd_cuda(const float *x, size_t n, size_t dim, size_t k, pc__km_options *o,
                                       pc_kmeans_cuda_variant variant, int *bounded, float *centres, int32_t *labels,
                                       int *iterations, double *inertia, double *gpu_seconds)
{
    if (n > (size_t)INT32_MAX)
        return pc__fail(PC_UNSUPPORTED, "the CUDA k-means handles up to %d points", INT32_MAX);
    gpu_engine e;
    e.n = n;
    e.dim = dim;
    e.k = k;
    int device = 0, sms = 0, max_smem = 0;
    PC_CUDA_TRY(cudaGetDevice(&device), "cudaGetDevice");
    PC_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "device query");
    PC_CUDA_TRY(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), "device query");
    const size_t limit = (size_t)max_smem, entries = k * (dim + 1);
    switch (variant) {
    case PC_KMEANS_CUDA_SEED: e.how = path::seed; break;
    case PC_KMEANS_CUDA_GEMM: e.how = path::gemm; break;
    case PC_KMEANS_CUDA_DIRECT: e.how = path::direct; break;
    case PC_KMEANS_CUDA_TENSOR: e.how = dim <= (size_t)PC__KM_TENSOR_MAX_DIM ? path::tensor : path::direct; break;
    default:
        /* Small per-block sums are added in the assignment pass (fixed point: deterministic); with
         * large k x dim they would take the shared memory that lets several blocks share an SM, so
         * there the sums take a second pass in float (not bit-reproducible across runs; H200, 10M x
         * 16, k = 1000: 0.62 ms with float_group_sums_kernel, 0.78 with the seed's block sums, 3.4
         * with fixed point). The assignment there is the
         * tensor screen from dim 8 (to 64) where its packed centres fit, else the direct kernel. */
        e.how = entries <= 4096 ? path::direct_fused : path::seed;
        if (e.how == path::seed && dim >= 8 && dim <= (size_t)PC__KM_TENSOR_MAX_DIM &&
            pc__km_tensor_smem(k, dim, PC__KM_TENSOR_BF16) <= limit)
            e.how = path::tensor;
        e.float_sums = e.how != path::direct_fused;
        /* PC_KMEANS_CUDA_SUMS=block: the seed's float block-sums kernel instead (for measuring). */
        e.float_group = e.float_sums && !(getenv("PC_KMEANS_CUDA_SUMS") && strcmp(getenv("PC_KMEANS_CUDA_SUMS"), "block") == 0);
    }
    if (e.how == path::seed)
        e.float_sums = true;
    /* Hamerly's bounds keep exact (fixed-point) sums, as Lloyd's do where their centres are compared,
     * in shared memory where every point is summed again. Where those, the scan's centres or the
     * bounds' memory do not fit, Lloyd's passes run instead, decided here, before Lloyd's own sums and
     * buffers are chosen. */
    if (*bounded && entries * sizeof(fixed) > limit)
        *bounded = 0;
    if (*bounded) {
        pc_status hst = pc__km_ham_create(n, dim, k, &e.ham);
        if (hst == PC_UNSUPPORTED || hst == PC_DEVICE_OUT_OF_MEMORY)
            *bounded = 0;
        else if (hst != PC_OK)
            return hst;
    }
    if (*bounded)
        e.float_sums = false;
    if (e.how == path::tensor) {
        /* The screen's format: BF16 by default (H200, 10M x 16, k = 1000, before the candidate lists
         * and the faster screen: 7.38 ms an iteration with 10% of the points left to the exact kernel, against 8.46 ms and 4% with TF32, whose packed
         * centres take twice the shared memory and its kernel 156 registers: one block an SM);
         * PC_KMEANS_TENSOR_FORMAT=tf32 picks TF32 (for measuring one against the other). */
        const char *f = getenv("PC_KMEANS_TENSOR_FORMAT");
        e.tensor_format = f && strcmp(f, "tf32") == 0 ? PC__KM_TENSOR_TF32 : PC__KM_TENSOR_BF16;
        e.smem_tensor = pc__km_tensor_smem(k, dim, e.tensor_format);
    }
    e.smem_sums = e.how == path::direct_fused && !*bounded ? 0 : entries * (e.float_sums ? sizeof(float) : sizeof(fixed));
    e.smem_assign = e.how == path::gemm ? pc__km_gemm_smem(k, dim) : assign_smem(k, dim, e.how == path::direct_fused);
    if (std::max(e.smem_assign, e.smem_tensor) > limit || e.smem_sums > limit)
        return pc__fail(PC_UNSUPPORTED, "the CUDA k-means keeps the centres (or the per-cluster sums) in shared "
                                        "memory: %zu KiB exceed the %d KiB a block may use",
                        std::max(std::max(e.smem_assign, e.smem_tensor), e.smem_sums) >> 10, max_smem >> 10);
    // Blocks resident at once: enough to fill the GPU, few enough that the per-block sums stay small.
    const size_t sm_bytes = 228 * 1024, point_blocks = (n + BLOCK - 1) / BLOCK;
    int per_sm = std::max(1, std::min(4, (int)(sm_bytes / std::max<size_t>(e.smem_assign, 1))));
    size_t assign_blocks = std::min((size_t)sms * per_sm, point_blocks);
    if (e.how == path::gemm) {
        pc_status gst = pc__km_gemm_setup(e.smem_assign, &per_sm);
        if (gst != PC_OK)
            return gst;
        assign_blocks = std::min((size_t)sms * per_sm, (n + PC__KM_GEMM_TILE - 1) / PC__KM_GEMM_TILE);
    } else {
        for (int acc = 0; acc < 2; acc++)
            PC_CUDA_TRY(cudaFuncSetAttribute(pick((int)dim, acc), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)e.smem_assign), "k-means shared memory");
        // As many blocks as fit (registers, shared memory), up to 8 an SM: the per-block sums stay small.
        PC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, pick((int)dim, e.how == path::direct_fused),
                                                                  BLOCK, e.smem_assign), "k-means occupancy");
        per_sm = std::max(1, std::min(8, per_sm));
        // Then as few as take the same number of grid-stride rounds, so that no block has one more.
        const size_t per_round = (size_t)BLOCK * (specialised(dim) ? POINTS : 1);
        const size_t rounds = (n + (size_t)sms * per_sm * per_round - 1) / ((size_t)sms * per_sm * per_round);
        assign_blocks = (n + rounds * per_round - 1) / (rounds * per_round);
    }
    if (e.how == path::tensor && !e.ham) { // the bounds never call Lloyd's assignment
        int tensor_per_sm = 1, exact_per_sm = 1;
        pc_status tst = pc__km_tensor_setup(dim, e.tensor_format, e.smem_tensor, &tensor_per_sm);
        if (tst != PC_OK)
            return tst;
        const size_t warp_tiles = (n + 63) / 64, per_block = PC__KM_TENSOR_THREADS / 32;
        e.tensor_blocks = (int)std::max<size_t>(1, std::min((size_t)sms * tensor_per_sm, (warp_tiles + per_block - 1) / per_block));
        PC_CUDA_TRY(cudaFuncSetAttribute(pick_exact((int)dim), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)e.smem_assign), "k-means shared memory");
        PC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&exact_per_sm, pick_exact((int)dim), BLOCK,
                                                                  e.smem_assign), "k-means occupancy");
        e.exact_blocks = (int)std::max<size_t>(1, std::min((size_t)sms * std::max(1, std::min(4, exact_per_sm)), point_blocks));
        const char *ex = getenv("PC_KMEANS_CUDA_EXACT");
        e.use_nb = k <= PC__KM_NB_MAX_K && !(ex && strcmp(ex, "all") == 0);
        if (e.use_nb) {
            PC_CUDA_TRY(cudaFuncSetAttribute(pick_exact_nb((int)dim), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             (int)e.smem_assign), "k-means shared memory");
            PC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&exact_per_sm, pick_exact_nb((int)dim), BLOCK,
                                                                      e.smem_assign), "k-means occupancy");
            e.exact_nb_blocks = (int)std::max<size_t>(1, std::min((size_t)sms * std::max(1, std::min(8, exact_per_sm)), point_blocks));
            e.radius_blocks = (int)std::max<size_t>(1, std::min((size_t)sms * 4, point_blocks));
        }
    }
    PC_CUDA_TRY(cudaFuncSetAttribute(block_sums_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)e.smem_sums), "k-means shared memory");
    for (e.group = 2; e.group < 32 && e.group < (int)dim + 1; e.group *= 2)
        ;
    for (e.float_group_size = 2; e.float_group_size < 32 && e.float_group_size < (int)dim; e.float_group_size *= 2)
        ;
    PC_CUDA_TRY(cudaFuncSetAttribute(pick_float_sums(e.float_group_size), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)e.smem_sums), "k-means shared memory");
    PC_CUDA_TRY(cudaFuncSetAttribute(pick_sums(e.group), cudaFuncAttributeMaxDynamicSharedMemorySize, max_smem),
                "k-means shared memory"); // the device's most: held streams launch this kernel too
    int per_sm_sums = std::max(1, std::min(4, (int)(sm_bytes / std::max<size_t>(e.smem_sums, 1))));
    if (e.float_group) { // its registers, not only its shared memory, may bound the blocks an SM holds
        int fit = 1;
        PC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, pick_float_sums(e.float_group_size), BLOCK,
                                                                  e.smem_sums), "k-means occupancy");
        per_sm_sums = std::max(1, std::min(per_sm_sums, fit));
    }
    e.assign_blocks = (int)std::max<size_t>(1, assign_blocks);
    e.sum_blocks = (int)std::max<size_t>(1, std::min((size_t)sms * per_sm_sums, point_blocks));
    const size_t rows = e.ham ? (size_t)e.sum_blocks : (size_t)std::max(e.assign_blocks, e.sum_blocks);
    pc_status st;
    if ((st = e.x.alloc(n * dim, "points")) != PC_OK || (st = e.centres.alloc(k * dim, "centres")) != PC_OK ||
        (st = (e.float_sums ? e.partial_float.alloc(rows * entries, "per-block sums")
                                   : e.partial.alloc(rows * entries, "per-block sums"))) != PC_OK ||
        (st = e.labels.alloc(n, "labels")) != PC_OK || (st = e.sums.alloc(k * (dim + 1), "sums")) != PC_OK ||
        (st = e.inertia.alloc((size_t)e.assign_blocks, "inertia")) != PC_OK || (st = e.changed.alloc(1, "counter")) != PC_OK)
        return st;
    if (*bounded && (st = e.totals.alloc(entries, "centre sums")) != PC_OK)
        return st;
    if (e.how == path::tensor && !e.ham) {
        if ((st = e.cpack.alloc(pc__km_tensor_packed_words(k, dim, e.tensor_format), "packed centres")) != PC_OK ||
            (st = e.cnorm.alloc(pc__km_tensor_kpad(k), "centre norms")) != PC_OK ||
            (st = e.list.alloc(n, "point list")) != PC_OK || (st = e.list_label.alloc(n, "point list")) != PC_OK ||
            (st = e.list_count.alloc(1, "counter")) != PC_OK)
            return st;
        if (e.use_nb && ((st = e.radius.alloc(k, "candidate radii")) != PC_OK ||
                         (st = e.nb.alloc(k * k, "candidate lists")) != PC_OK ||
                         (st = e.nb_count.alloc(k, "candidate lists")) != PC_OK))
            return st;
        pc__km_tensor_args &a = e.targs;
        a.x = e.x.ptr;
        a.n = (int)n;
        a.dim = (int)dim;
        a.k = (int)k;
        a.kpad = (int)pc__km_tensor_kpad(k);
        a.cpack = e.cpack.ptr;
        a.cnorm = e.cnorm.ptr;
        a.labels = e.labels.ptr;
        a.list = e.list.ptr;
        a.list_label = e.list_label.ptr;
        a.list_count = e.list_count.ptr;
        a.changed = e.changed.ptr;
        pc__km_tensor_bounds(k, dim, e.tensor_format, &a);
    }
    PC_CUDA_TRY(cudaMemcpy(e.x.ptr, x, n * dim * sizeof(float), cudaMemcpyHostToDevice), "points upload");
    {
        /* The fixed-point scale 2^s: |x| * 2^s * n < 2^62, so that no sum (of a block or of all of
         * them) overflows; s within float's exponents. */
        PC_CUDA_TRY(cudaMemset(e.changed.ptr, 0, sizeof(unsigned long long)), "cudaMemset");
        amax_kernel<<<sms * 4, 256>>>(e.x.ptr, n * dim, reinterpret_cast<unsigned *>(e.changed.ptr));
        PC_CUDA_LAUNCHED("k-means range kernel");
        unsigned long long bits = 0;
        PC_CUDA_TRY(cudaMemcpy(&bits, e.changed.ptr, sizeof bits, cudaMemcpyDeviceToHost), "range download");
        unsigned b32 = (unsigned)bits; // the low word on a little-endian host and device
        float amax;
        memcpy(&amax, &b32, sizeof amax);
        int ex = 0, en = 0;
        frexpf(amax > 0 ? amax : 1.0f, &ex); // amax < 2^ex
        frexp((double)n, &en);               // n < 2^en
        e.scale = ldexpf(1.0f, std::max(-126, std::min(126, 62 - ex - en)));
    }
    PC_CUDA_TRY(cudaMemset(e.labels.ptr, 0xff, n * sizeof(int32_t)), "cudaMemset"); // -1: every label changes first
    if (e.ham) {
        if ((st = pc__km_ham_points(e.ham, e.x.ptr)) != PC_OK)
            return st;
        e.distances = &o->distances;
    }
    PC_CUDA_TRY(cudaMallocHost((void **)&e.host_sums, k * (dim + 1) * sizeof(double)), "k-means pinned sums");
    for (cudaEvent_t &ev : e.step_ev)
        PC_CUDA_TRY(cudaEventCreate(&ev), "cudaEventCreate");
    e.stats = getenv("PC_KMEANS_CUDA_STATS") != NULL;
    for (int q = 0; e.stats && q < 5; q++)
        PC_CUDA_TRY(cudaEventCreate(&e.ev[q]), "cudaEventCreate");
    pc__km_engine engine = {&e, gpu_step, gpu_labels, gpu_finish};
    st = pc__km_lloyd(&engine, x, n, dim, k, o, centres, iterations, inertia);
    if (st == PC_OK)
        st = gpu_labels(&e, labels);
    *gpu_seconds = e.gpu_seconds;
    if (e.stats) {
        const int it = std::max(1, *iterations);
        fprintf(stderr, "k-means GPU stages, ms per iteration: assignment %.3f, exact pass %.3f, block sums %.3f, "
                        "reduction %.3f\n", e.stage_ms[0] / it, e.stage_ms[1] / it, e.stage_ms[2] / it,
                e.stage_ms[3] / it);
        for (int q = 0; q < 5; q++)
            cudaEventDestroy(e.ev[q]);
    }
    if (e.ham && e.stats)
        fprintf(stderr, "k-means bounds: %zu of %zu point steps scanned (%.3f%%)\n", e.listed, e.screened,
                e.screened ? 100.0 * (double)e.listed / (double)e.screened : 0.0);
    else if (e.how == path::tensor && e.stats)
        fprintf(stderr, "k-means tensor screen (%s): %zu of %zu point steps left to the exact kernel (%.3f%%)\n",
                e.tensor_format == PC__KM_TENSOR_BF16 ? "bf16" : "tf32", e.listed, e.screened,
                e.screened ? 100.0 * (double)e.listed / (double)e.screened : 0.0);
    return st;
}
