// Mean shift on an NVIDIA GPU. Three kernels compute the shifts: the seeds' naive kernel (references
// read from global memory) and tiled kernel (references staged through shared memory, TILE_WIDTH =
// block size), and a fast default. All work in pre-scaled coordinates x' = (x - centre) * s, chosen so
// that the gaussian weight is exp2(-|q' - r'|^2) and the flat and epanechnikov supports are |d'| <= 1.
// Points that stopped are compacted out of the active list; with a finite radius (D <= 4) the
// references are sorted into a neighbour grid and a query visits only the 3^D cells around it.
#include "../cuda/common.cuh"

#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cuda_fp16.h>

#include <algorithm>
#include <utility>
#include <math.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "internal_ms.h"
}

namespace {

constexpr int MAX_GPU_DIM = 64;
constexpr int FAST_BLOCK = 128; // threads per block of the fast kernels
constexpr int FAST_QUERIES = 4; // queries per thread of the fast kernels
constexpr int GRID_MAX_DIM = 4; // 16 bits of cell coordinate per dimension in a 64-bit key
constexpr float FAR_AWAY = 1e30f; // padding reference: its weight is 0 under every kernel

__device__ __forceinline__ float ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// 2^x on the FMA pipe instead of the MUFU unit (which does 16 exp2 a clock per SM against 128 FMA):
// round x to an integer n with the 1.5 * 2^23 trick, a polynomial for 2^f on [-0.5, 0.5] (Horner),
// and n added into the exponent bits. x is clamped to -125 (2^-125 for 0, as ex2.approx nearly
// gives), so the exponent never wraps. DEG 5: relative error 1.5e-7 (ex2.approx's own is ~1e-7);
// DEG 4: 2.6e-6, where the weight is rounded to half precision (2^-12) afterwards anyway.
// Coefficients: a weighted least-squares fit of the relative error (near minimax), in float.
template <int DEG> __device__ __forceinline__ float exp2_poly(float x)
{
    x = fmaxf(x, -125.0f);
    float t = __fadd_rn(x, 12582912.0f); // 1.5 * 2^23: t's low mantissa bits hold round(x)
    float f = __fsub_rn(x, __fsub_rn(t, 12582912.0f));
    float p;
    if (DEG >= 5) {
        p = fmaf(1.327647129073739e-3f, f, 9.675540961325169e-3f);
        p = fmaf(p, f, 5.550713092088699e-2f);
        p = fmaf(p, f, 2.4022120237350464e-1f);
        p = fmaf(p, f, 6.931469440460205e-1f);
        p = fmaf(p, f, 1.0000001192092896f);
    } else {
        p = fmaf(9.570101276040077e-3f, f, 5.591785907745361e-2f);
        p = fmaf(p, f, 2.40247443318367e-1f);
        p = fmaf(p, f, 6.931217908859253e-1f);
        p = fmaf(p, f, 9.999992847442627e-1f);
    }
    // t's bits are 0x4B400000 + n; shifted by 23 only n << 23 is left (mod 2^32).
    return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}

// Weight of a reference at squared scaled distance d2; r2 is the squared scaled cut-off (inf: none).
template <int K> __device__ __forceinline__ float weight(float d2, float r2)
{
    float w;
    if (K == PC_KERNEL_GAUSSIAN)
        w = ex2(-d2);
    else if (K == PC_KERNEL_FLAT)
        w = d2 <= 1.0f ? 1.0f : 0.0f;
    else
        w = d2 <= 1.0f ? 1.0f - d2 : 0.0f;
    return d2 <= r2 ? w : 0.0f;
}

// Stores the new position of point i from its weighted sums and flags it stopped when it moved by
// <= eps (or had no neighbour at all). Each thread touches only its own point, so updating in place
// is safe: the references are a separate array.
template <int D>
__device__ __forceinline__ void finish_point(int i, int n, int dim, const float *q, const float *acc, float ws,
                                             float *pos, float eps2, unsigned char *stopped)
{
    const int nd = D ? D : dim;
    if (!(ws > 0.0f)) {
        stopped[i] = 1;
        return;
    }
    float inv = 1.0f / ws, moved = 0.0f;
    for (int k = 0; k < nd; k++) {
        float v = acc[k] * inv, d = v - q[k];
        moved += d * d;
        pos[(size_t)k * n + i] = v;
    }
    if (moved <= eps2)
        stopped[i] = 1;
}

// ---------------------------------------------------------------- the seeds' kernels

// Seed 000/001 naive: one thread per active point, every reference read from global memory.
template <int D, int K>
__global__ void naive_kernel(const float *__restrict__ ref, int n, int dim, float *pos, const int *active, int count,
                             float r2, float eps2, unsigned char *stopped)
{
    const int nd = D ? D : dim;
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    int i = active[t];
    float q[D ? D : MAX_GPU_DIM], acc[D ? D : MAX_GPU_DIM];
    for (int k = 0; k < nd; k++) {
        q[k] = pos[(size_t)k * n + i];
        acc[k] = 0.0f;
    }
    float ws = 0.0f;
    // Partial sums of 256 references at a time, added to the totals (see fast_dot_kernel).
    for (int base = 0; base < n; base += 256) {
        float part[D ? D : MAX_GPU_DIM], pw = 0.0f;
        for (int k = 0; k < nd; k++)
            part[k] = 0.0f;
        for (int j = base; j < min(n, base + 256); j++) {
            float d2 = 0.0f;
            for (int k = 0; k < nd; k++) {
                float d = q[k] - ref[(size_t)k * n + j];
                d2 += d * d;
            }
            float w = weight<K>(d2, r2);
            pw += w;
            for (int k = 0; k < nd; k++)
                part[k] += w * ref[(size_t)k * n + j];
        }
        ws += pw;
        for (int k = 0; k < nd; k++)
            acc[k] += part[k];
    }
    finish_point<D>(i, n, dim, q, acc, ws, pos, eps2, stopped);
}

// Seed 000/001 tiled: the block loads TILE_WIDTH = blockDim.x references into shared memory, every
// thread of the block uses them, then the next tile.
template <int D, int K>
__global__ void tiled_kernel(const float *__restrict__ ref, int n, int dim, float *pos, const int *active, int count,
                             float r2, float eps2, unsigned char *stopped)
{
    extern __shared__ float tile[]; // nd x blockDim.x
    const int nd = D ? D : dim;
    const int tw = blockDim.x;
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    bool valid = t < count;
    int i = valid ? active[t] : 0;
    float q[D ? D : MAX_GPU_DIM], acc[D ? D : MAX_GPU_DIM];
    for (int k = 0; k < nd; k++) {
        q[k] = valid ? pos[(size_t)k * n + i] : 0.0f;
        acc[k] = 0.0f;
    }
    float ws = 0.0f;
    for (int base = 0; base < n; base += tw) {
        int j = base + threadIdx.x;
        for (int k = 0; k < nd; k++)
            tile[k * tw + threadIdx.x] = j < n ? ref[(size_t)k * n + j] : FAR_AWAY;
        __syncthreads();
        if (valid) {
            int m = min(tw, n - base);
            float part[D ? D : MAX_GPU_DIM], pw = 0.0f; // one tile's sums (see fast_dot_kernel)
            for (int k = 0; k < nd; k++)
                part[k] = 0.0f;
            for (int jj = 0; jj < m; jj++) {
                float d2 = 0.0f;
                for (int k = 0; k < nd; k++) {
                    float d = q[k] - tile[k * tw + jj];
                    d2 += d * d;
                }
                float w = weight<K>(d2, r2);
                pw += w;
                for (int k = 0; k < nd; k++)
                    part[k] += w * tile[k * tw + jj];
            }
            ws += pw;
            for (int k = 0; k < nd; k++)
                acc[k] += part[k];
        }
        __syncthreads();
    }
    if (valid)
        finish_point<D>(i, n, dim, q, acc, ws, pos, eps2, stopped);
}

// Beyond MAX_GPU_DIM dimensions: one thread per point as the naive kernel, with the point's weighted
// sums in global scratch (dim x count, dimension-major so that a warp's 32 sums of one dimension are
// adjacent and each access is one transaction, not 32) that only this thread touches.
template <int K>
__global__ void wide_kernel(const float *__restrict__ ref, int n, int dim, float *pos, const int *active, int count,
                            float r2, float eps2, unsigned char *stopped, float *scratch)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    int i = active[t];
    float *acc = scratch + t; // acc[k * count]: this thread's sum of dimension k
    for (int k = 0; k < dim; k++)
        acc[(size_t)k * count] = 0.0f;
    float ws = 0.0f;
    for (int j = 0; j < n; j++) {
        float d2 = 0.0f;
        for (int k = 0; k < dim; k++) {
            float d = pos[(size_t)k * n + i] - ref[(size_t)k * n + j];
            d2 = fmaf(d, d, d2);
        }
        float w = weight<K>(d2, r2);
        if (w == 0.0f)
            continue;
        ws += w;
        for (int k = 0; k < dim; k++)
            acc[(size_t)k * count] = fmaf(w, ref[(size_t)k * n + j], acc[(size_t)k * count]);
    }
    if (!(ws > 0.0f)) {
        stopped[i] = 1;
        return;
    }
    float inv = 1.0f / ws, moved = 0.0f;
    for (int k = 0; k < dim; k++) {
        float v = acc[(size_t)k * count] * inv, d = v - pos[(size_t)k * n + i];
        moved += d * d;
        pos[(size_t)k * n + i] = v;
    }
    if (moved <= eps2)
        stopped[i] = 1;
}

// ---------------------------------------------------------------- the fast kernels
//
// Each thread carries FAST_QUERIES queries, so one shared-memory load of a reference serves several
// pairs; the references are split into chunks over gridDim.y so that even a few thousand queries
// fill every SM, and the per-chunk partial sums are added in a fixed order by finalize_kernel.

// Gaussian without cut-off, D <= 3. A reference is stored as (x, y, z, -|r|^2) in one float4, and
// exp2(-|q - r|^2) = exp2(-|q|^2) * exp2(2 q.r - |r|^2): the first factor is the same for every
// reference of a query and cancels in the weighted mean, so a pair costs 3 FMA for the exponent,
// one exp2 and 4 for the sums. SAFE keeps -|q|^2 in the exponent (one more add) where |q|^2 is
// large enough for the dropped factor to overflow. The first POLYQ of a thread's queries take their
// exp2 from exp2_poly on the FMA pipe (issue 17: measured against 0, see bench/RESULTS.md).
template <int D, bool SAFE, int POLYQ = 0>
__global__ void __launch_bounds__(FAST_BLOCK)
    fast_dot_kernel(const void *__restrict__ refs, int n, int chunk, const float *__restrict__ pos,
                    const int *__restrict__ active, int count, float r2, float *__restrict__ partial)
{
    const float4 *__restrict__ ref4 = static_cast<const float4 *>(refs);
    (void)r2; // no cut-off on this path
    __shared__ float4 tile[FAST_BLOCK];
    const int first = blockIdx.x * FAST_BLOCK * FAST_QUERIES + threadIdx.x;
    float qx[FAST_QUERIES], qy[FAST_QUERIES], qz[FAST_QUERIES], nqq[FAST_QUERIES];
    float ax[FAST_QUERIES], ay[FAST_QUERIES], az[FAST_QUERIES], ws[FAST_QUERIES];
#pragma unroll
    for (int s = 0; s < FAST_QUERIES; s++) {
        int t = min(first + s * FAST_BLOCK, count - 1);
        int i = active[t];
        float x = pos[i], y = D >= 2 ? pos[(size_t)n + i] : 0.0f, z = D >= 3 ? pos[2 * (size_t)n + i] : 0.0f;
        qx[s] = 2.0f * x;
        qy[s] = 2.0f * y;
        qz[s] = 2.0f * z;
        nqq[s] = -(x * x + y * y + z * z);
        ax[s] = ay[s] = az[s] = ws[s] = 0.0f;
    }
    const int begin = blockIdx.y * chunk, end = min(n, begin + chunk);
    for (int base = begin; base < end; base += FAST_BLOCK) {
        int j = base + threadIdx.x;
        tile[threadIdx.x] = j < end ? ref4[j] : make_float4(0.0f, 0.0f, 0.0f, -INFINITY);
        __syncthreads();
        // Sums of one tile, then added to the totals: a float sum over a whole chunk would lose
        // about chunk * 2^-26 of its value.
        float tx[FAST_QUERIES], ty[FAST_QUERIES], tz[FAST_QUERIES], tw[FAST_QUERIES];
#pragma unroll
        for (int s = 0; s < FAST_QUERIES; s++)
            tx[s] = ty[s] = tz[s] = tw[s] = 0.0f;
#pragma unroll 8
        for (int jj = 0; jj < FAST_BLOCK; jj++) {
            const float4 r = tile[jj];
#pragma unroll
            for (int s = 0; s < FAST_QUERIES; s++) {
                float e = SAFE ? r.w + nqq[s] : r.w;
                if (D >= 3)
                    e = fmaf(qz[s], r.z, e);
                if (D >= 2)
                    e = fmaf(qy[s], r.y, e);
                e = fmaf(qx[s], r.x, e);
                float w = s < POLYQ ? exp2_poly<5>(e) : ex2(e);
                tw[s] += w;
                tx[s] = fmaf(w, r.x, tx[s]);
                if (D >= 2)
                    ty[s] = fmaf(w, r.y, ty[s]);
                if (D >= 3)
                    tz[s] = fmaf(w, r.z, tz[s]);
            }
        }
#pragma unroll
        for (int s = 0; s < FAST_QUERIES; s++) {
            ws[s] += tw[s];
            ax[s] += tx[s];
            ay[s] += ty[s];
            az[s] += tz[s];
        }
        __syncthreads();
    }
#pragma unroll
    for (int s = 0; s < FAST_QUERIES; s++) {
        int t = first + s * FAST_BLOCK;
        if (t < count) {
            float *out = partial + ((size_t)blockIdx.y * count + t) * (D + 1);
            out[0] = ax[s];
            if (D >= 2)
                out[1] = ay[s];
            if (D >= 3)
                out[2] = az[s];
            out[D] = ws[s];
        }
    }
}

// Gaussian without cut-off, D <= 3, on the tensor cores (issue 17). The fast_dot_kernel above issues 8
// instructions a pair for one exp2: 128 issue slots and 16 MUFU lanes a clock per SM bound it at 16
// pairs a clock either way, so exp2 moved to the FMA pipe would only trade one bound for the other.
// Here both sums are matrix products (m16n8k16, half inputs, float accumulators), as in attention:
//   E = Q R^T: e = 8 - |q - r|^2, in 16 terms of half-precision pieces (hi + lo splits of 2q and r,
//     hi + lo + lo2 of 8 - |q|^2 and -|r|^2: about 22 bits of every product, as float's own 24);
//   W = exp2(E) as half hi + lo (the factor 2^8 keeps the weights of neighbours normal); P of a
//     lane's 8 exp2 on the FMA pipe (exp2_poly), the rest on the MUFU unit;
//   S = W_hi R + W_lo R, R = [x_hi y_hi z_hi 1 x_lo y_lo z_lo 0]: the weighted sums and the weight.
// Left per pair on the ordinary pipes: one exp2 and about two instructions of splitting; with P = 2
// the MUFU unit's 6 x 8 clocks and the ~50 issue slots of a lane's 8 pairs about balance (predicted,
// not yet measured). A query whose weights sum below 1 (no reference
// within sqrt(8) scaled units: half precision would have lost the far weights) is left to the exact
// kernel (MMA_REDO in finalize). Queries: MMA_WARP_TILES x 16 a warp, 4 warps a block; the block's
// references in tiles of FAST_BLOCK staged through shared memory.
constexpr int MMA_WARP_TILES = 4;
constexpr int MMA_QUERIES = 4 * MMA_WARP_TILES * 16;   // a block's queries
constexpr int MMA_GROUP_U4 = 48;                        // 16 references packed: 768 bytes
constexpr float MMA_BIAS = 8.0f;                        // weights are 2^8 exp2(-|q - r|^2)
constexpr float MMA_MIN_WEIGHT = 1.0f;                  // below: redone by the exact kernel
// Far references add nothing: a weight exp2(e) at or below 2^-25 is 0 in both halves hi and lo (half's
// least step is 2^-24, round to nearest), and exp2(-26) with ex2.approx's error is below it. The
// packed references end with each tile's (FAST_BLOCK references') bounding box; a tile whose box is
// more than sqrt(MMA_FAR) scaled units from the box of the block's queries is skipped (not even
// staged), and one that far from a warp's queries is not computed by that warp: every e there is below
// 8 - MMA_FAR = -27, two units from -25; E's error (its pieces' 22 bits of |q|^2 <= 4096, the products'
// accumulation) is a few hundredths at worst. The sums are the same bit for
// bit as with every tile computed. The points are put in a spatial order first (spatial_order), so
// that a block's queries and a tile's references are near neighbours. On an H100, agnolucci's 250k
// points (two clusters apart): 0.192 -> 0.145-0.152 s; its clusters all overlapping (nothing skipped):
// 0.192 -> 0.201 s (RESULTS.md, 2026-11-27 session 21). A test of every lane's exponents a 16 x 16
// tile (a vote) skipped more but cost more: 0.155-0.159 s, and 0.221 overlapping (H200).
constexpr float MMA_FAR = 35.0f;
// Where the tiles' boxes begin after n packed references, in halves (the packing's, padded to tiles).
__host__ __device__ inline size_t mma_boxes_at(int n)
{
    return (size_t)((n + FAST_BLOCK - 1) / FAST_BLOCK * FAST_BLOCK) * MMA_GROUP_U4 / 2;
}

__device__ __forceinline__ void mma_16816(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t half2_bits(float lo, float hi)
{
    __half2 h = __floats2half2_rn(lo, hi); // lo in the low half: the lower k (or reference) index
    return *reinterpret_cast<uint32_t *>(&h);
}

// Two weights as half pairs hi + lo (about 22 bits: half alone moved the modes of 6000 points by
// 6e-4 h in 10 iterations, emulated on the CPU; hi + lo by 4e-8 h: bench/meanshift_mma_emu.py).
__device__ __forceinline__ void split_half2(float a, float b, uint32_t *hi, uint32_t *lo)
{
    __half2 h = __floats2half2_rn(a, b);
    float2 f = __half22float2(h);
    __half2 l = __floats2half2_rn(a - f.x, b - f.y);
    *hi = *reinterpret_cast<uint32_t *>(&h);
    *lo = *reinterpret_cast<uint32_t *>(&l);
}

// v = hi + lo in halves (lo: what hi's rounding left out).
__device__ __forceinline__ void split2(float v, float *hi, float *lo)
{
    *hi = __half2float(__float2half_rn(v));
    *lo = __half2float(__float2half_rn(v - *hi));
}
__device__ __forceinline__ void split3(float v, float *hi, float *lo, float *lo2)
{
    float rest;
    split2(v, hi, &rest);
    split2(v - *hi, lo, lo2);
    (void)rest;
}

// Packs references for mma_dot_kernel, 16 to a group of 768 bytes: the B operands of E for references
// 0-7 and 8-15 (256 bytes each: reference g's 16 halves at g * 32, words in the order w0 w4 w1 w5 w2 w6
// w3 w7 so that lane (g, t) loads its two registers {w_t, w_t+4} as one 8-byte word), then the B
// operand of S (column c's 16 references at 512 + c * 32, pairs in the same order). Padding (beyond n)
// is zeros: weight exp2(8 - |q|^2), finite, times a zero row.
__global__ void pack_mma_refs(const float *ref, int n, int n_pad, int dim, __half *packed)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n_pad)
        return;
    float v[3] = {0.0f, 0.0f, 0.0f};
    if (j < n)
        for (int k = 0; k < dim && k < 3; k++)
            v[k] = ref[(size_t)k * n + j];
    float e[16], c[8];
    for (int k = 0; k < 16; k++)
        e[k] = 0.0f;
    for (int k = 0; k < 8; k++)
        c[k] = 0.0f;
    if (j < n) {
        for (int k = 0; k < 3; k++) {
            float hi, lo;
            split2(v[k], &hi, &lo);
            e[3 * k] = hi;
            e[3 * k + 1] = lo;
            e[3 * k + 2] = hi;
            c[k] = hi;
            c[4 + k] = lo;
        }
        e[9] = e[10] = e[11] = 1.0f;
        split3(-(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]), &e[12], &e[13], &e[14]);
        c[3] = 1.0f;
    }
    __half *group = packed + (size_t)(j / 16) * (MMA_GROUP_U4 * 8);
    int r = j % 16;
    __half *b1 = group + (r / 8) * 128 + (r % 8) * 16;
    for (int w = 0; w < 8; w++) { // word w = halves 2w, 2w + 1 at position (w % 4) * 2 + w / 4
        int at = (w % 4) * 2 + w / 4;
        b1[2 * at] = __float2half_rn(e[2 * w]);
        b1[2 * at + 1] = __float2half_rn(e[2 * w + 1]);
    }
    int pair = r / 2, at = (pair % 4) * 2 + pair / 4;
    for (int col = 0; col < 8; col++)
        group[256 + col * 16 + 2 * at + (r % 2)] = __float2half_rn(c[col]);
}

// Each tile's bounding box after the packed references (two float4 a tile: lo, hi; 0 beyond D).
__global__ void __launch_bounds__(FAST_BLOCK) mma_tile_boxes(const float *ref, int n, int dim, float4 *boxes)
{
    __shared__ float lo[3][FAST_BLOCK / 32], hi[3][FAST_BLOCK / 32];
    int j = blockIdx.x * FAST_BLOCK + threadIdx.x, warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    for (int k = 0; k < 3; k++) {
        float v = k < dim && j < n ? ref[(size_t)k * n + j] : 0.0f;
        float a = j < n ? v : INFINITY, b = j < n ? v : -INFINITY;
        for (int o = 16; o > 0; o >>= 1) {
            a = fminf(a, __shfl_xor_sync(0xffffffffu, a, o));
            b = fmaxf(b, __shfl_xor_sync(0xffffffffu, b, o));
        }
        if (lane == 0) {
            lo[k][warp] = a;
            hi[k][warp] = b;
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float l[3], h[3];
        for (int k = 0; k < 3; k++) {
            l[k] = lo[k][0];
            h[k] = hi[k][0];
            for (int w = 1; w < FAST_BLOCK / 32; w++) {
                l[k] = fminf(l[k], lo[k][w]);
                h[k] = fmaxf(h[k], hi[k][w]);
            }
        }
        boxes[2 * blockIdx.x] = make_float4(l[0], l[1], l[2], 0.0f);
        boxes[2 * blockIdx.x + 1] = make_float4(h[0], h[1], h[2], 0.0f);
    }
}

// Squared distance between a tile's box and the queries' box `at` of mma_dot_kernel's shared boxes (0
// where they overlap).
__device__ __forceinline__ float box_gap2(float4 lo, float4 hi, const float (*boxes)[3][5], int at)
{
    float gx = fmaxf(0.0f, fmaxf(lo.x - boxes[1][0][at], boxes[0][0][at] - hi.x));
    float gy = fmaxf(0.0f, fmaxf(lo.y - boxes[1][1][at], boxes[0][1][at] - hi.y));
    float gz = fmaxf(0.0f, fmaxf(lo.z - boxes[1][2][at], boxes[0][2][at] - hi.z));
    return gx * gx + gy * gy + gz * gz;
}

template <int D, int P>
__global__ void __launch_bounds__(FAST_BLOCK)
    mma_dot_kernel(const void *__restrict__ refs, int n, int chunk, const float *__restrict__ pos,
                   const int *__restrict__ active, int count, float far, float *__restrict__ partial)
{
    // `far`, in the cut-off's place (there is none here): MMA_FAR, or infinity to skip no tile.
    const uint4 *__restrict__ packed = static_cast<const uint4 *>(refs);
    const float4 *__restrict__ boxes =
        reinterpret_cast<const float4 *>(static_cast<const __half *>(refs) + mma_boxes_at(n));
    __shared__ uint4 tile[FAST_BLOCK / 16 * MMA_GROUP_U4];
    __shared__ uint32_t qrec[4][MMA_WARP_TILES * 16][9]; // a query's 8 words (+1: fewer bank conflicts)
    __shared__ float qbox[2][3][5]; // the queries' boxes (lo / hi, dimension): a warp's each, the block's at 4
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int qbase = blockIdx.x * MMA_QUERIES + warp * MMA_WARP_TILES * 16;
    float qlo[3] = {INFINITY, INFINITY, INFINITY}, qhi[3] = {-INFINITY, -INFINITY, -INFINITY};
    // Each lane writes the A rows (16 halves) of MMA_WARP_TILES / 2 queries.
    for (int h = 0; h < MMA_WARP_TILES / 2; h++) {
        int row = lane + 32 * h, i = active[min(qbase + row, count - 1)];
        float x = pos[i], y = D >= 2 ? pos[(size_t)n + i] : 0.0f, z = D >= 3 ? pos[2 * (size_t)n + i] : 0.0f;
        float a[16], v[3] = {x, y, z};
        for (int k = 0; k < 3; k++) {
            qlo[k] = fminf(qlo[k], v[k]);
            qhi[k] = fmaxf(qhi[k], v[k]);
        }
        for (int k = 0; k < 3; k++) {
            float hi, lo;
            split2(2.0f * v[k], &hi, &lo);
            a[3 * k] = hi;
            a[3 * k + 1] = hi;
            a[3 * k + 2] = lo;
        }
        split3(MMA_BIAS - (x * x + y * y + z * z), &a[9], &a[10], &a[11]);
        a[12] = a[13] = a[14] = 1.0f;
        a[15] = 0.0f;
        for (int w = 0; w < 8; w++)
            qrec[warp][row][w] = half2_bits(a[2 * w], a[2 * w + 1]);
    }
    for (int k = 0; k < 3; k++) {
        for (int o = 16; o > 0; o >>= 1) {
            qlo[k] = fminf(qlo[k], __shfl_xor_sync(0xffffffffu, qlo[k], o));
            qhi[k] = fmaxf(qhi[k], __shfl_xor_sync(0xffffffffu, qhi[k], o));
        }
        if (lane == 0) {
            qbox[0][k][warp] = qlo[k];
            qbox[1][k][warp] = qhi[k];
        }
    }
    __syncthreads();
    if (threadIdx.x < 3) {
        int k = threadIdx.x;
        qbox[0][k][4] = fminf(fminf(qbox[0][k][0], qbox[0][k][1]), fminf(qbox[0][k][2], qbox[0][k][3]));
        qbox[1][k][4] = fmaxf(fmaxf(qbox[1][k][0], qbox[1][k][1]), fmaxf(qbox[1][k][2], qbox[1][k][3]));
    }
    __syncthreads();
    uint32_t qa[MMA_WARP_TILES][4];
    float tot[MMA_WARP_TILES][4];
#pragma unroll
    for (int mt = 0; mt < MMA_WARP_TILES; mt++) {
        qa[mt][0] = qrec[warp][mt * 16 + g][t];
        qa[mt][1] = qrec[warp][mt * 16 + g + 8][t];
        qa[mt][2] = qrec[warp][mt * 16 + g][t + 4];
        qa[mt][3] = qrec[warp][mt * 16 + g + 8][t + 4];
        tot[mt][0] = tot[mt][1] = tot[mt][2] = tot[mt][3] = 0.0f;
    }
    const int begin = blockIdx.y * chunk, end = min(n, begin + chunk);
    for (int base = begin; base < end; base += FAST_BLOCK) {
        // Every thread reads the same box: the whole block skips the tile or none does; then each warp
        // against its own queries' box (shared memory) computes the tile or not.
        const float4 rlo = boxes[2 * (base / FAST_BLOCK)], rhi = boxes[2 * (base / FAST_BLOCK) + 1];
        if (box_gap2(rlo, rhi, qbox, 4) > far)
            continue;
        const uint4 *src = packed + (size_t)(base / 16) * MMA_GROUP_U4;
#pragma unroll
        for (int r = 0; r < MMA_GROUP_U4 * FAST_BLOCK / 16 / FAST_BLOCK; r++)
            tile[threadIdx.x + r * FAST_BLOCK] = src[threadIdx.x + r * FAST_BLOCK];
        __syncthreads();
        // A warp's queries that far too: this warp leaves the tile (one barrier for every thread).
        if (box_gap2(rlo, rhi, qbox, warp) <= far) {
            // One tile's sums, then added to the totals (see fast_dot_kernel).
            float acc[MMA_WARP_TILES][4];
#pragma unroll
            for (int mt = 0; mt < MMA_WARP_TILES; mt++)
                acc[mt][0] = acc[mt][1] = acc[mt][2] = acc[mt][3] = 0.0f;
            const int groups = min(FAST_BLOCK, end - base + 15) / 16;
            for (int grp = 0; grp < groups; grp++) {
                const unsigned char *gp = reinterpret_cast<const unsigned char *>(tile + grp * MMA_GROUP_U4);
                const uint2 b0 = *reinterpret_cast<const uint2 *>(gp + g * 32 + t * 8);
                const uint2 b1 = *reinterpret_cast<const uint2 *>(gp + 256 + g * 32 + t * 8);
                const uint2 bs = *reinterpret_cast<const uint2 *>(gp + 512 + g * 32 + t * 8);
#pragma unroll
                for (int mt = 0; mt < MMA_WARP_TILES; mt++) {
                    float e[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
                    mma_16816(e, qa[mt], b0.x, b0.y);
                    mma_16816(e + 4, qa[mt], b1.x, b1.y);
#pragma unroll
                    for (int k = 0; k < 8; k++)
                        e[k] = k < P ? exp2_poly<4>(e[k]) : ex2(e[k]);
                    uint32_t hi[4], lo[4];
#pragma unroll
                    for (int k = 0; k < 4; k++)
                        split_half2(e[2 * k], e[2 * k + 1], &hi[k], &lo[k]);
                    mma_16816(acc[mt], hi, bs.x, bs.y);
                    mma_16816(acc[mt], lo, bs.x, bs.y);
                }
            }
#pragma unroll
            for (int mt = 0; mt < MMA_WARP_TILES; mt++)
                for (int k = 0; k < 4; k++)
                    tot[mt][k] += acc[mt][k];
        }
        __syncthreads();
    }
    // Lane (g, t) holds columns 2t, 2t + 1 of rows g and g + 8: x = col 0 + col 4, y = 1 + 5,
    // z = 2 + 6, the weight col 3 (+ col 7, a zero). Lanes t = 0 and 1 gather them.
#pragma unroll
    for (int mt = 0; mt < MMA_WARP_TILES; mt++) {
        float s[4];
#pragma unroll
        for (int k = 0; k < 4; k++)
            s[k] = tot[mt][k] + __shfl_down_sync(0xffffffffu, tot[mt][k], 2);
#pragma unroll
        for (int half_row = 0; half_row < 2; half_row++) {
            int q = qbase + mt * 16 + g + 8 * half_row;
            if (t >= 2 || q >= count)
                continue;
            float *out = partial + ((size_t)blockIdx.y * count + q) * (D + 1);
            float c0 = s[2 * half_row], c1 = s[2 * half_row + 1];
            if (t == 0) {
                out[0] = c0;
                if (D >= 2)
                    out[1] = c1;
            } else {
                if (D >= 3)
                    out[2] = c0;
                out[D] = c1;
            }
        }
    }
}

// Any kernel and cut-off, 2 <= D <= 5: squared distances by differences, as the CPU computes them,
// so that the support edges of the flat and epanechnikov kernels fall where they fall there.
template <int D, int K>
__global__ void __launch_bounds__(FAST_BLOCK)
    fast_direct_kernel(const void *__restrict__ refs, int n, int chunk, const float *__restrict__ pos,
                       const int *__restrict__ active, int count, float r2, float *__restrict__ partial)
{
    const float *__restrict__ ref = static_cast<const float *>(refs);
    __shared__ float tile[FAST_BLOCK * D];
    const int first = blockIdx.x * FAST_BLOCK * FAST_QUERIES + threadIdx.x;
    float q[FAST_QUERIES][D], acc[FAST_QUERIES][D], ws[FAST_QUERIES];
#pragma unroll
    for (int s = 0; s < FAST_QUERIES; s++) {
        int i = active[min(first + s * FAST_BLOCK, count - 1)];
#pragma unroll
        for (int k = 0; k < D; k++) {
            q[s][k] = pos[(size_t)k * n + i];
            acc[s][k] = 0.0f;
        }
        ws[s] = 0.0f;
    }
    const int begin = blockIdx.y * chunk, end = min(n, begin + chunk);
    for (int base = begin; base < end; base += FAST_BLOCK) {
        int j = base + threadIdx.x;
#pragma unroll
        for (int k = 0; k < D; k++)
            tile[threadIdx.x * D + k] = j < end ? ref[(size_t)k * n + j] : FAR_AWAY;
        __syncthreads();
        float tacc[FAST_QUERIES][D], tw[FAST_QUERIES]; // one tile's sums (see fast_dot_kernel)
#pragma unroll
        for (int s = 0; s < FAST_QUERIES; s++) {
            tw[s] = 0.0f;
#pragma unroll
            for (int k = 0; k < D; k++)
                tacc[s][k] = 0.0f;
        }
#pragma unroll 4
        for (int jj = 0; jj < FAST_BLOCK; jj++) {
            float r[D];
#pragma unroll
            for (int k = 0; k < D; k++)
                r[k] = tile[jj * D + k];
#pragma unroll
            for (int s = 0; s < FAST_QUERIES; s++) {
                float d2 = 0.0f;
#pragma unroll
                for (int k = 0; k < D; k++) {
                    float d = q[s][k] - r[k];
                    d2 = fmaf(d, d, d2);
                }
                float w = weight<K>(d2, r2);
                tw[s] += w;
#pragma unroll
                for (int k = 0; k < D; k++)
                    tacc[s][k] = fmaf(w, r[k], tacc[s][k]);
            }
        }
#pragma unroll
        for (int s = 0; s < FAST_QUERIES; s++) {
            ws[s] += tw[s];
#pragma unroll
            for (int k = 0; k < D; k++)
                acc[s][k] += tacc[s][k];
        }
        __syncthreads();
    }
#pragma unroll
    for (int s = 0; s < FAST_QUERIES; s++) {
        int t = first + s * FAST_BLOCK;
        if (t < count) {
            float *out = partial + ((size_t)blockIdx.y * count + t) * (D + 1);
#pragma unroll
            for (int k = 0; k < D; k++)
                out[k] = acc[s][k];
            out[D] = ws[s];
        }
    }
}

// Adds the chunks' partial sums in chunk order (the same order every run) and moves the points.
// With redo: a point whose weights sum below min_ws is not moved but listed for the exact kernel.
template <int D>
__global__ void finalize_kernel(const float *__restrict__ partial, int splits, int count, const int *active,
                                float *pos, int n, float eps2, unsigned char *stopped, float min_ws = 0.0f,
                                int *redo = nullptr, int *redo_count = nullptr)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    int i = active[t];
    float acc[D], q[D], ws = 0.0f;
#pragma unroll
    for (int k = 0; k < D; k++) {
        acc[k] = 0.0f;
        q[k] = pos[(size_t)k * n + i];
    }
    for (int s = 0; s < splits; s++) {
        const float *p = partial + ((size_t)s * count + t) * (D + 1);
#pragma unroll
        for (int k = 0; k < D; k++)
            acc[k] += p[k];
        ws += p[D];
    }
    if (redo && !(ws >= min_ws)) {
        redo[atomicAdd(redo_count, 1)] = i;
        return;
    }
    finish_point<D>(i, n, D, q, acc, ws, pos, eps2, stopped);
}

// (x, y, z, -|r|^2) for the dot-product kernel.
__global__ void pack_dot_refs(const float *ref, int n, int dim, float4 *ref4)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n)
        return;
    float x = ref[j], y = dim >= 2 ? ref[(size_t)n + j] : 0.0f, z = dim >= 3 ? ref[2 * (size_t)n + j] : 0.0f;
    ref4[j] = make_float4(x, y, z, -(x * x + y * y + z * z));
}

// Keeps the points still moving. Each point's sums do not depend on where it sits in the list, but
// each block's 256 keep their order (one place claimed a block, blocks in the order they arrive):
// neighbours in the spatial order stay together, for mma_dot_kernel's tiles.
__global__ void compact_active(const int *active, int count, const unsigned char *stopped, int *next, int *next_count)
{
    using scan = cub::BlockScan<int, 256>;
    __shared__ typename scan::TempStorage temp;
    __shared__ int base;
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int keep = t < count && !stopped[active[t]], at, total;
    scan(temp).ExclusiveSum(keep, at, total);
    if (threadIdx.x == 0)
        base = total ? atomicAdd(next_count, total) : 0;
    __syncthreads();
    if (keep)
        next[base + at] = active[t];
}

// ---------------------------------------------------------------- neighbour grid (finite radius)

struct grid_view {
    const unsigned long long *keys; // sorted cell keys of the references
    const float *sref;              // references in key order, dimension-major
    int n;
    float lo[GRID_MAX_DIM];
    float inv_cell;
    int cells[GRID_MAX_DIM];
};

__device__ __forceinline__ int cell_of(float x, float lo, float inv_cell, int cells)
{
    int c = (int)floorf((x - lo) * inv_cell);
    return min(max(c, 0), cells - 1);
}

__global__ void grid_keys(const float *ref, int n, int dim, grid_view g, unsigned long long *keys, int *order)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n)
        return;
    unsigned long long key = 0;
    for (int k = 0; k < dim; k++)
        key |= (unsigned long long)cell_of(ref[(size_t)k * n + j], g.lo[k], g.inv_cell, g.cells[k]) << (16 * k);
    keys[j] = key;
    order[j] = j;
}

// The points (dimension-major) at their places in `order`: sref[p] = ref[order[p]] (the grid's references
// in key order, spatial_order's points in Morton order).
__global__ void grid_gather(const float *ref, int n, int dim, const int *order, float *sref)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n)
        return;
    for (int k = 0; k < dim; k++)
        sref[(size_t)k * n + p] = ref[(size_t)k * n + order[p]];
}

__device__ __forceinline__ int lower_bound_key(const unsigned long long *keys, int n, unsigned long long key)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) >> 1;
        if (keys[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

// One thread per active point: the 3^D cells around it, each found by binary search in the sorted keys.
template <int D, int K>
__global__ void grid_kernel(grid_view g, float *pos, const int *active, int count, float r2, float eps2,
                            unsigned char *stopped)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count)
        return;
    const int n = g.n;
    int i = active[t];
    float q[D], acc[D], ws = 0.0f;
    int c[D];
    for (int k = 0; k < D; k++) {
        q[k] = pos[(size_t)k * n + i];
        acc[k] = 0.0f;
        c[k] = cell_of(q[k], g.lo[k], g.inv_cell, g.cells[k]);
    }
    int combos = 1;
    for (int k = 0; k < D; k++)
        combos *= 3;
    for (int o = 0; o < combos; o++) {
        unsigned long long key = 0;
        bool inside = true;
        for (int k = 0, rest = o; k < D; k++, rest /= 3) {
            int ck = c[k] + rest % 3 - 1;
            inside = inside && ck >= 0 && ck < g.cells[k];
            key |= (unsigned long long)(ck & 0xffff) << (16 * k);
        }
        if (!inside)
            continue;
        int j = lower_bound_key(g.keys, n, key);
        float part[D], pw = 0.0f; // one cell's sums (see fast_dot_kernel)
        for (int k = 0; k < D; k++)
            part[k] = 0.0f;
        for (; j < n && g.keys[j] == key; j++) {
            float d2 = 0.0f, r[D];
            for (int k = 0; k < D; k++) {
                r[k] = g.sref[(size_t)k * n + j];
                float d = q[k] - r[k];
                d2 = fmaf(d, d, d2);
            }
            float w = weight<K>(d2, r2);
            pw += w;
            for (int k = 0; k < D; k++)
                part[k] = fmaf(w, r[k], part[k]);
        }
        ws += pw;
        for (int k = 0; k < D; k++)
            acc[k] += part[k];
    }
    finish_point<D>(i, n, D, q, acc, ws, pos, eps2, stopped);
}

// ---------------------------------------------------------------- host side

int blocks_for(long long work, int per_block) { return (int)((work + per_block - 1) / per_block); }

// Dispatches a runtime (dim, kernel) pair to a template instance: dims listed get their own code,
// others take the generic D = 0 instance.
#define PC__KERNEL_SWITCH(K, ...)                                                                   \
    switch (K) {                                                                                    \
    case PC_KERNEL_FLAT: { constexpr int KK = PC_KERNEL_FLAT; __VA_ARGS__; } break;                 \
    case PC_KERNEL_EPANECHNIKOV: { constexpr int KK = PC_KERNEL_EPANECHNIKOV; __VA_ARGS__; } break; \
    default: { constexpr int KK = PC_KERNEL_GAUSSIAN; __VA_ARGS__; } break;                         \
    }

struct run_state {
    size_t n, dim;
    float r2, eps2;
    int kernel;
    int sms;
    pc__device_buffer<float> ref, pos, partial;
    pc__device_buffer<float4> ref4;
    pc__device_buffer<__half> packed; // mma_dot_kernel's references
    pc__device_buffer<int> redo;      // points the mma kernel left to the exact one, then their count
    pc__device_buffer<int> active, next_active, counter, order, order_sorted;
    pc__device_buffer<unsigned char> stopped, sort_temp;
    pc__device_buffer<unsigned long long> keys, keys_sorted;
    pc__device_buffer<float> sref;
    grid_view grid;
    bool use_grid;
    bool mma = false; // the gaussian without cut-off on the tensor cores (mma_dot_kernel)
    int poly = 0;     // exp2 on the FMA pipe: of 8 (mma) or of FAST_QUERIES (fast_dot_kernel)
    bool redo_all = false;
    bool skip = true;
    long long redone = 0;
};

pc_status launch_seed_kernel(run_state &s, bool tiled, int block, int count)
{
    int n = (int)s.n, dim = (int)s.dim, blocks = blocks_for(count, block);
    size_t shared = tiled ? (size_t)dim * block * sizeof(float) : 0;
    if (tiled && shared > 48 * 1024)
        return pc__fail(PC_INVALID_ARGUMENT, "tiled kernel: %d dimensions x TILE_WIDTH %d do not fit in shared memory",
                        dim, block);
#define PC__SEED_LAUNCH(DD)                                                                                   \
    PC__KERNEL_SWITCH(s.kernel, {                                                                            \
        if (tiled)                                                                                            \
            tiled_kernel<DD, KK><<<blocks, block, shared>>>(s.ref.ptr, n, dim, s.pos.ptr, s.active.ptr, count, \
                                                            s.r2, s.eps2, s.stopped.ptr);                     \
        else                                                                                                  \
            naive_kernel<DD, KK><<<blocks, block>>>(s.ref.ptr, n, dim, s.pos.ptr, s.active.ptr, count, s.r2,   \
                                                   s.eps2, s.stopped.ptr);                                    \
    })
    if (dim == 2)
        PC__SEED_LAUNCH(2)
    else if (dim == 3)
        PC__SEED_LAUNCH(3)
    else
        PC__SEED_LAUNCH(0)
#undef PC__SEED_LAUNCH
    PC_CUDA_LAUNCHED(tiled ? "tiled mean shift kernel" : "naive mean shift kernel");
    return PC_OK;
}

typedef void (*fast_kernel_fn)(const void *, int, int, const float *, const int *, int, float, float *);

// Which kernel takes the gaussian without cut-off in D <= 3 (issue 17), and how it splits exp2
// between the MUFU unit and the FMA pipe. PC_MEANSHIFT_CUDA_PATH (for benchmarks and tests):
// "mma" (default, P = 0) and "mma:P" = mma_dot_kernel with P of 8 exp2 by exp2_poly; "dot" =
// fast_dot_kernel, round one's; "dot:Q" = Q of its 4 queries a thread by exp2_poly; a suffix ":redo"
// has every point redone by the exact kernel (a test of that way), ":noskip" has mma compute every
// tile (to check that skipping the far ones changes nothing). mma with every exp2 on the MUFU
// unit is the default since its run on an H200 (bench/RESULTS.md, 2026-11-23, session 7): 250k x 3D x
// 10 iterations 0.198 s against round one's 0.220 s, modes within 3.2e-5 h of it; a polynomial share
// only slowed every path down.
struct dot_path {
    bool mma = true;
    int poly = 0;
    bool redo_all = false;
    bool skip = true; // ":noskip": every tile computed (to check that skipping changes nothing)
};

dot_path read_dot_path()
{
    dot_path d;
    const char *e = getenv("PC_MEANSHIFT_CUDA_PATH");
    if (!e || !*e)
        return d;
    d.mma = strncmp(e, "dot", 3) != 0;
    d.poly = 0;
    const char *colon = strchr(e, ':');
    if (colon)
        d.poly = atoi(colon + 1);
    d.poly = std::max(0, std::min(d.mma ? 8 : FAST_QUERIES, d.poly));
    d.redo_all = strstr(e, ":redo") != nullptr;
    d.skip = strstr(e, ":noskip") == nullptr;
    return d;
}

fast_kernel_fn pick_mma_kernel(int dim, int poly)
{
#define PC__MMA(DD)                                                                                          \
    switch (poly) {                                                                                          \
    case 0: return mma_dot_kernel<DD, 0>;                                                                    \
    case 1: return mma_dot_kernel<DD, 1>;                                                                    \
    case 2: return mma_dot_kernel<DD, 2>;                                                                    \
    case 3: return mma_dot_kernel<DD, 3>;                                                                    \
    case 4: return mma_dot_kernel<DD, 4>;                                                                    \
    case 5: return mma_dot_kernel<DD, 5>;                                                                    \
    case 6: return mma_dot_kernel<DD, 6>;                                                                    \
    case 7: return mma_dot_kernel<DD, 7>;                                                                    \
    default: return mma_dot_kernel<DD, 8>;                                                                   \
    }
    switch (dim) {
    case 1: PC__MMA(1)
    case 2: PC__MMA(2)
    default: PC__MMA(3)
    }
#undef PC__MMA
}

fast_kernel_fn pick_fast_kernel(int dim, int kernel, bool dot, bool safe, int polyq = 0)
{
    if (dot && polyq > 0) { // round one's kernel with part of its exp2 on the FMA pipe (benchmarks)
#define PC__POLYQ(DD)                                                                                        \
    switch (polyq) {                                                                                         \
    case 1: return safe ? fast_dot_kernel<DD, true, 1> : fast_dot_kernel<DD, false, 1>;                     \
    case 2: return safe ? fast_dot_kernel<DD, true, 2> : fast_dot_kernel<DD, false, 2>;                     \
    case 3: return safe ? fast_dot_kernel<DD, true, 3> : fast_dot_kernel<DD, false, 3>;                     \
    default: return safe ? fast_dot_kernel<DD, true, 4> : fast_dot_kernel<DD, false, 4>;                    \
    }
        switch (dim) {
        case 1: PC__POLYQ(1)
        case 2: PC__POLYQ(2)
        default: PC__POLYQ(3)
        }
#undef PC__POLYQ
    }
    if (dot) {
        switch (dim) {
        case 1: return safe ? fast_dot_kernel<1, true> : fast_dot_kernel<1, false>;
        case 2: return safe ? fast_dot_kernel<2, true> : fast_dot_kernel<2, false>;
        default: return safe ? fast_dot_kernel<3, true> : fast_dot_kernel<3, false>;
        }
    }
#define PC__DIRECT(DD)                                                                                   \
    return kernel == PC_KERNEL_FLAT           ? fast_direct_kernel<DD, PC_KERNEL_FLAT>                  \
           : kernel == PC_KERNEL_EPANECHNIKOV ? fast_direct_kernel<DD, PC_KERNEL_EPANECHNIKOV>          \
                                              : fast_direct_kernel<DD, PC_KERNEL_GAUSSIAN>;
    switch (dim) {
    case 2: PC__DIRECT(2)
    case 3: PC__DIRECT(3)
    case 4: PC__DIRECT(4)
    default: PC__DIRECT(5)
    }
#undef PC__DIRECT
}

// Splits the references into chunks (gridDim.y) so that the blocks fill whole waves of the GPU: with
// `capacity` blocks resident at once, q * splits blocks waste the idle part of the last wave.
int choose_splits(int qblocks, int capacity, int max_splits)
{
    int best = 1;
    double best_eff = 0.0;
    for (int sp = 1; sp <= max_splits; sp++) {
        long long blocks = (long long)qblocks * sp;
        long long waves = (blocks + capacity - 1) / capacity;
        double eff = (double)blocks / (double)(waves * capacity);
        if (eff > best_eff + 0.005) {
            best = sp;
            best_eff = eff;
        }
        if (best_eff > 0.97)
            break;
    }
    return best;
}

// mma: mma_dot_kernel with `poly` exp2 of 8 on the FMA pipe; else `poly` = fast_dot_kernel's POLYQ.
// The points listed in `active` (count of them) get their new positions; with redo (mma only), those
// the kernel leaves are listed in s.redo for launch_fast_kernel to finish.
pc_status launch_fast_kernel(run_state &s, bool dot, bool safe, int count, const int *active, bool mma = false,
                             int poly = 0)
{
    int n = (int)s.n, dim = (int)s.dim;
    fast_kernel_fn kernel = mma ? pick_mma_kernel(dim, poly) : pick_fast_kernel(dim, s.kernel, dot, safe, poly);
    int per_sm = 0;
    PC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, FAST_BLOCK, 0), "occupancy query");
    int qblocks = blocks_for(count, mma ? MMA_QUERIES : FAST_BLOCK * FAST_QUERIES);
    // Chunks of at least 4 tiles keep the partial sums small next to the work.
    int max_splits = std::max(1, std::min(64, blocks_for(n, 4 * FAST_BLOCK)));
    int splits = choose_splits(qblocks, std::max(1, per_sm) * s.sms, max_splits);
    int chunk = blocks_for(blocks_for(n, splits), FAST_BLOCK) * FAST_BLOCK;
    splits = blocks_for(n, chunk);
    size_t need = (size_t)splits * count * (dim + 1);
    if (need > s.partial.count) {
        pc_status st = s.partial.alloc(need, "partial sums");
        if (st != PC_OK)
            return st;
    }
    const void *refs = mma ? (const void *)s.packed.ptr : dot ? (const void *)s.ref4.ptr : (const void *)s.ref.ptr;
    float r2 = !mma ? s.r2 : s.skip ? MMA_FAR : INFINITY; // mma: the skip's bound in the cut-off's place
    kernel<<<dim3(qblocks, splits), FAST_BLOCK>>>(refs, n, chunk, s.pos.ptr, active, count, r2, s.partial.ptr);
    PC_CUDA_LAUNCHED("fast mean shift kernel");
    int fb = blocks_for(count, 256);
    float min_ws = !mma ? 0.0f : s.redo_all ? INFINITY : MMA_MIN_WEIGHT;
    int *redo = mma ? s.redo.ptr : nullptr, *redo_count = mma ? s.redo.ptr + n : nullptr;
    if (mma)
        PC_CUDA_TRY(cudaMemsetAsync(redo_count, 0, sizeof(int)), "cudaMemset");
#define PC__FIN(DD) \
    finalize_kernel<DD><<<fb, 256>>>(s.partial.ptr, splits, count, active, s.pos.ptr, n, s.eps2, s.stopped.ptr, min_ws, redo, redo_count)
    switch (dim) {
    case 1: PC__FIN(1); break;
    case 2: PC__FIN(2); break;
    case 3: PC__FIN(3); break;
    case 4: PC__FIN(4); break;
    default: PC__FIN(5); break;
    }
#undef PC__FIN
    PC_CUDA_LAUNCHED("mean shift finalize kernel");
    if (mma) {
        int left = 0;
        PC_CUDA_TRY(cudaMemcpy(&left, redo_count, sizeof left, cudaMemcpyDeviceToHost), "mean shift redo count");
        s.redone += left;
        if (left > 0)
            return launch_fast_kernel(s, true, true, left, s.redo.ptr);
    }
    return PC_OK;
}

pc_status launch_grid_kernel(run_state &s, int count)
{
    int blocks = blocks_for(count, 128);
#define PC__GRIDK(DD) \
    PC__KERNEL_SWITCH(s.kernel, grid_kernel<DD, KK><<<blocks, 128>>>(s.grid, s.pos.ptr, s.active.ptr, count, s.r2, s.eps2, s.stopped.ptr))
    switch (s.dim) {
    case 1: PC__GRIDK(1) break;
    case 2: PC__GRIDK(2) break;
    case 3: PC__GRIDK(3) break;
    default: PC__GRIDK(4) break;
    }
#undef PC__GRIDK
    PC_CUDA_LAUNCHED("neighbour-grid mean shift kernel");
    return PC_OK;
}

// s.keys (their low `bits` bits) with the points' numbers s.order sorted into s.keys_sorted and
// s.order_sorted, the scratch grown as needed.
pc_status sort_keys(run_state &s, int bits, const char *what)
{
    size_t temp = 0;
    int n = (int)s.n;
    PC_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, temp, s.keys.ptr, s.keys_sorted.ptr, s.order.ptr,
                                                s.order_sorted.ptr, n, 0, bits),
                what);
    if (temp > s.sort_temp.count) {
        pc_status st = s.sort_temp.alloc(temp, what);
        if (st != PC_OK)
            return st;
    }
    PC_CUDA_TRY(cub::DeviceRadixSort::SortPairs(s.sort_temp.ptr, temp, s.keys.ptr, s.keys_sorted.ptr, s.order.ptr,
                                                s.order_sorted.ptr, n, 0, bits),
                what);
    return PC_OK;
}

// Sorts the current references into grid cells (keys, then references in key order).
pc_status build_grid(run_state &s)
{
    int n = (int)s.n, dim = (int)s.dim, blocks = blocks_for(n, 256);
    grid_keys<<<blocks, 256>>>(s.ref.ptr, n, dim, s.grid, s.keys.ptr, s.order.ptr);
    PC_CUDA_LAUNCHED("grid key kernel");
    pc_status st = sort_keys(s, 16 * dim, "grid sort");
    if (st != PC_OK)
        return st;
    grid_gather<<<blocks, 256>>>(s.ref.ptr, n, dim, s.order_sorted.ptr, s.sref.ptr);
    PC_CUDA_LAUNCHED("grid gather kernel");
    s.grid.keys = s.keys_sorted.ptr;
    s.grid.sref = s.sref.ptr;
    return PC_OK;
}

// Decides whether the neighbour grid pays and fills its geometry (scaled units). The points never
// leave the bounding box of the data (a weighted mean stays inside it), so one box serves every
// iteration, blurring included.
bool plan_grid(run_state &s, const float *hs, double radius_scaled)
{
    size_t n = s.n, dim = s.dim;
    if (dim > GRID_MAX_DIM || !isfinite(radius_scaled) || radius_scaled <= 0)
        return false;
    double visited = 1.0;
    s.grid.n = (int)n;
    s.grid.inv_cell = (float)(1.0 / radius_scaled);
    for (size_t k = 0; k < dim; k++) {
        float lo = INFINITY, hi = -INFINITY;
        for (size_t i = 0; i < n; i++) {
            lo = fminf(lo, hs[k * n + i]);
            hi = fmaxf(hi, hs[k * n + i]);
        }
        double cells = floor((double)(hi - lo) / radius_scaled) + 1;
        if (cells > 65535)
            return false;
        s.grid.lo[k] = lo;
        s.grid.cells[k] = (int)cells;
        visited *= fmin(1.0, 3.0 / cells);
    }
    // Same rule as the CPU: the 3^D cells a query visits must hold far fewer than all the points.
    return visited <= 0.25;
}

pc_status run(run_state &s, const pc__ms_setup *setup, const pc__ms_cuda_options *o, const float *hs, bool dot,
              bool safe, int *iterations, double *shift_seconds)
{
    const int n = (int)s.n;
    pc_status st;
    cudaEvent_t start, stop;
    PC_CUDA_TRY(cudaEventCreate(&start), "cudaEventCreate");
    PC_CUDA_TRY(cudaEventCreate(&stop), "cudaEventCreate");
    float total_ms = 0.0f;
    int count = (int)setup->count, it = 0; // the climbing points (the active list holds their indices)
    // hs NULL: the references are there already (spatial_order).
    st = hs ? pc__cuda_status(cudaMemcpy(s.ref.ptr, hs, s.n * s.dim * sizeof(float), cudaMemcpyHostToDevice), "upload")
            : PC_OK;
    while (st == PC_OK && it < setup->max_iter && count > 0) {
        cudaEventRecord(start);
        if (it == 0 || setup->blurring) {
            if (it > 0)
                st = pc__cuda_status(cudaMemcpy(s.ref.ptr, s.pos.ptr, s.n * s.dim * sizeof(float),
                                                cudaMemcpyDeviceToDevice), "blurring copy");
            if (st == PC_OK && dot) {
                pack_dot_refs<<<blocks_for(n, 256), 256>>>(s.ref.ptr, n, (int)s.dim, s.ref4.ptr);
                st = pc__cuda_status(cudaGetLastError(), "reference packing kernel");
            }
            if (st == PC_OK && s.mma) {
                int n_pad = blocks_for(n, FAST_BLOCK) * FAST_BLOCK;
                pack_mma_refs<<<blocks_for(n_pad, 256), 256>>>(s.ref.ptr, n, n_pad, (int)s.dim, s.packed.ptr);
                mma_tile_boxes<<<n_pad / FAST_BLOCK, FAST_BLOCK>>>(s.ref.ptr, n, (int)s.dim,
                                                                   reinterpret_cast<float4 *>(s.packed.ptr + mma_boxes_at(n)));
                st = pc__cuda_status(cudaGetLastError(), "reference packing kernel");
            }
            if (st == PC_OK && s.use_grid)
                st = build_grid(s);
        }
        if (st != PC_OK)
            break;
        if (s.dim > MAX_GPU_DIM) {
            int blocks = blocks_for(count, 128);
            PC__KERNEL_SWITCH(s.kernel, wide_kernel<KK><<<blocks, 128>>>(s.ref.ptr, n, (int)s.dim, s.pos.ptr,
                                                                         s.active.ptr, count, s.r2, s.eps2,
                                                                         s.stopped.ptr, s.partial.ptr));
            st = pc__cuda_status(cudaGetLastError(), "wide mean shift kernel");
        } else if (s.use_grid)
            st = launch_grid_kernel(s, count);
        else if (o->kernel == PC_CUDA_KERNEL_FAST && (dot || (s.dim >= 2 && s.dim <= 5)))
            st = launch_fast_kernel(s, dot, safe, count, s.active.ptr, s.mma, s.poly);
        else
            st = launch_seed_kernel(s, o->kernel != PC_CUDA_KERNEL_NAIVE,
                                    o->block ? o->block : (o->kernel == PC_CUDA_KERNEL_NAIVE ? 256 : 64), count);
        if (st != PC_OK)
            break;
        cudaMemset(s.counter.ptr, 0, sizeof(int));
        compact_active<<<blocks_for(count, 256), 256>>>(s.active.ptr, count, s.stopped.ptr, s.next_active.ptr,
                                                         s.counter.ptr);
        cudaEventRecord(stop);
        if ((st = pc__cuda_status(cudaGetLastError(), "compaction kernel")) != PC_OK)
            break;
        int next = 0;
        if ((st = pc__cuda_status(cudaMemcpy(&next, s.counter.ptr, sizeof next, cudaMemcpyDeviceToHost),
                                  "mean shift iteration")) != PC_OK)
            break;
        float ms = 0.0f;
        cudaEventElapsedTime(&ms, start, stop);
        total_ms += ms;
        std::swap(s.active.ptr, s.next_active.ptr);
        count = next;
        it++;
        if (setup->progress && setup->progress(setup->progress_user, (double)it / setup->max_iter))
            st = pc__fail(PC_CANCELLED, "mean shift cancelled after %d iterations", it);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    *iterations = it;
    *shift_seconds = total_ms * 1e-3;
    return st;
}

// x's low 10 bits spread 3 apart (bit b to bit 3b), and its low 15 bits spread 2 apart.
__device__ __forceinline__ uint32_t spread3(uint32_t x)
{
    x &= 0x3ffu;
    x = (x | (x << 16)) & 0x030000ffu;
    x = (x | (x << 8)) & 0x0300f00fu;
    x = (x | (x << 4)) & 0x030c30c3u;
    return (x | (x << 2)) & 0x09249249u;
}
__device__ __forceinline__ uint32_t spread2(uint32_t x)
{
    x &= 0x7fffu;
    x = (x | (x << 8)) & 0x00ff00ffu;
    x = (x | (x << 4)) & 0x0f0f0f0fu;
    x = (x | (x << 2)) & 0x33333333u;
    return (x | (x << 1)) & 0x55555555u;
}

struct morton_frame {
    float lo[3], step[3]; // cell = (x - lo) * step, in 0 .. top = 2^(30 / dim) - 1
    uint32_t top;
};

// Each point's Morton key (30 bits: 10 a dimension in 3D, 15 in 2D, 30 in 1D) and its number.
__global__ void morton_keys(const float *ref, int n, int dim, morton_frame f, unsigned long long *keys, int *order)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    uint32_t c[3] = {0, 0, 0};
    for (int k = 0; k < dim && k < 3; k++) // clamped: (float)(2^30 - 1) is 2^30
        c[k] = min((uint32_t)fmaxf(0.0f, (ref[(size_t)k * n + i] - f.lo[k]) * f.step[k]), f.top);
    keys[i] = dim == 3   ? spread3(c[0]) << 2 | spread3(c[1]) << 1 | spread3(c[2])
              : dim == 2 ? spread2(c[0]) << 1 | spread2(c[1])
                         : c[0] & 0x3fffffffu;
    order[i] = i;
}

// The points (scaled, dimension-major hs, bounds lo and hi) put in a spatial order on the device, for
// mma_dot_kernel's skip of far tiles: order[p] (host) = the point now at place p, by its Morton key;
// the positions and the references in that order on the device (hs as it was). A sort on the device:
// the host's took 15-20 ms for 250k points, most of it first touches of the sort's memory.
pc_status spatial_order(run_state &s, const float *hs, const float *lo, const float *hi, int *order)
{
    int n = (int)s.n, dim = (int)s.dim, blocks = blocks_for(n, 256);
    morton_frame f;
    int bits = 30 / dim;
    f.top = (1u << bits) - 1;
    for (int k = 0; k < 3; k++) {
        f.lo[k] = k < dim ? lo[k] : 0.0f;
        f.step[k] = k < dim && hi[k] > lo[k] ? (float)((1u << bits) - 1) / (hi[k] - lo[k]) : 0.0f;
    }
    size_t bytes = (size_t)n * dim * sizeof(float);
    PC_CUDA_TRY(cudaMemcpy(s.ref.ptr, hs, bytes, cudaMemcpyHostToDevice), "upload");
    morton_keys<<<blocks, 256>>>(s.ref.ptr, n, dim, f, s.keys.ptr, s.order.ptr);
    PC_CUDA_LAUNCHED("spatial order kernel");
    pc_status st = sort_keys(s, 30, "spatial order");
    if (st != PC_OK)
        return st;
    grid_gather<<<blocks, 256>>>(s.ref.ptr, n, dim, s.order_sorted.ptr, s.pos.ptr);
    PC_CUDA_LAUNCHED("spatial order kernel");
    PC_CUDA_TRY(cudaMemcpy(s.ref.ptr, s.pos.ptr, bytes, cudaMemcpyDeviceToDevice), "spatial order");
    PC_CUDA_TRY(cudaMemcpy(order, s.order_sorted.ptr, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost), "download");
    return PC_OK;
}

} // namespace

extern "C" pc_status pc__meanshift_cuda(const float *points, size_t n, size_t dim, const pc__ms_setup *setup,
                                        const pc__ms_cuda_options *o, float *modes, int *iterations,
                                        double stage_seconds[3])
{
    if (n > (size_t)INT32_MAX / 8)
        return pc__fail(PC_UNSUPPORTED, "the CUDA mean shift handles up to %d points, got %zu", INT32_MAX / 8, n);
    int block = o->block;
    if (block && (block < 16 || block > 1024 || block % 16))
        return pc__fail(PC_INVALID_ARGUMENT, "CUDA block size must be 16..1024 in steps of 16, got %d", block);
    if (block && o->kernel == PC_CUDA_KERNEL_FAST && block != FAST_BLOCK)
        return pc__fail(PC_INVALID_ARGUMENT, "the fast CUDA kernel runs %d threads per block; the block size "
                                             "applies to the naive and tiled kernels", FAST_BLOCK);
    int device = 0;
    PC_CUDA_TRY(cudaGetDevice(&device), "cudaGetDevice");
    run_state s;
    s.n = n;
    s.dim = dim;
    s.kernel = setup->shift.kernel;
    PC_CUDA_TRY(cudaDeviceGetAttribute(&s.sms, cudaDevAttrMultiProcessorCount, device), "device query");

    // Centre and scale in double on the host: x' = (x - centre) * scale.
    double t0 = pc__now();
    double scale = sqrt((double)setup->shift.scale); // gaussian: sqrt(log2 e / 2h^2); others: 1/h
    if (setup->shift.kernel != PC_KERNEL_GAUSSIAN)
        scale = 1.0 / setup->bandwidth;
    double *centre = (double *)pc__calloc(dim, sizeof(double), "centre");
    if (!centre)
        return PC_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < dim; k++)
            centre[k] += points[i * dim + k];
    for (size_t k = 0; k < dim; k++)
        centre[k] /= (double)n;
    float *hs = (float *)pc__alloc(n, dim * sizeof(float), "scaled points");
    if (!hs) {
        free(centre);
        return PC_OUT_OF_MEMORY;
    }
    double max_qq = 0;
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t i = 0; i < n; i++) {
        double qq = 0;
        for (size_t k = 0; k < dim; k++) {
            float v = (float)((points[i * dim + k] - centre[k]) * scale);
            hs[k * n + i] = v;
            qq += (double)v * v;
            if (k < 3) {
                lo[k] = fminf(lo[k], v);
                hi[k] = fmaxf(hi[k], v);
            }
        }
        max_qq = fmax(max_qq, qq);
    }
    s.r2 = isfinite(setup->radius) ? (float)(setup->radius * setup->radius * scale * scale) : INFINITY;
    s.eps2 = (float)(setup->eps2 * scale * scale);
    bool dot = o->kernel == PC_CUDA_KERNEL_FAST && setup->shift.kernel == PC_KERNEL_GAUSSIAN &&
               !isfinite(setup->radius) && dim <= 3;
    // exp2(|q|^2) must stay far from float's limit (2^128) with N references summed.
    bool safe = max_qq > 64.0;
    {
        // The mma kernel's half-precision pieces hold coordinates up to 64 scaled units (|q|^2 <= 4096:
        // 8 - |q|^2 and 2q stay far inside half's 65504); beyond, round one's kernel.
        dot_path path = read_dot_path();
        s.mma = dot && path.mma && max_qq <= 4096.0;
        s.poly = dot && (s.mma || !path.mma) ? path.poly : 0;
        s.redo_all = path.redo_all;
        s.skip = path.skip;
    }
    s.use_grid = setup->use_grid && plan_grid(s, hs, setup->radius * scale);
    // The mma kernel's points in a spatial order (order[p]: the point at place p; place[i]: where point
    // i is), so that its tiles of far references are skipped; the modes go back in the caller's order.
    bool ordered = s.mma && n > 1;
    int *order = nullptr, *place = nullptr;

    pc_status st;
    if ((st = s.ref.alloc(n * dim, "references")) != PC_OK || (st = s.pos.alloc(n * dim, "positions")) != PC_OK ||
        (st = s.active.alloc(n, "active list")) != PC_OK || (st = s.next_active.alloc(n, "active list")) != PC_OK ||
        (st = s.counter.alloc(1, "counter")) != PC_OK || (st = s.stopped.alloc(n, "stop flags")) != PC_OK ||
        (dot && (st = s.ref4.alloc(n, "packed references")) != PC_OK) ||
        (s.mma && (st = s.packed.alloc(mma_boxes_at((int)n) + (size_t)blocks_for((long long)n, FAST_BLOCK) * 16,
                                       "packed references and their tiles' boxes")) != PC_OK) ||
        (s.mma && (st = s.redo.alloc(n + 1, "redo list")) != PC_OK) ||
        (dim > MAX_GPU_DIM && (st = s.partial.alloc(n * dim, "per-point sums")) != PC_OK))
        goto done;
    if ((s.use_grid || ordered) &&
        ((st = s.keys.alloc(n, "grid keys")) != PC_OK || (st = s.keys_sorted.alloc(n, "grid keys")) != PC_OK ||
         (st = s.order.alloc(n, "grid order")) != PC_OK || (st = s.order_sorted.alloc(n, "grid order")) != PC_OK))
        goto done;
    if (s.use_grid && (st = s.sref.alloc(n * dim, "sorted references")) != PC_OK)
        goto done;
    if (ordered) {
        order = (int *)pc__alloc(n, sizeof(int), "spatial order");
        place = (int *)pc__alloc(n, sizeof(int), "spatial order");
        if (!order || !place) {
            st = PC_OUT_OF_MEMORY;
            goto done;
        }
        if ((st = spatial_order(s, hs, lo, hi, order)) != PC_OK)
            goto done;
        for (size_t p = 0; p < n; p++)
            place[order[p]] = (int)p;
    }
    {
        int *iota = (int *)pc__alloc(n, sizeof(int), "active list");
        if (!iota) {
            st = PC_OUT_OF_MEMORY;
            goto done;
        }
        // The climbing points first .. first + count - 1 (at their places, in the places' order); every
        // position is there, as the kernels index positions and references alike, but only the active
        // ones move.
        if (order) {
            size_t c = 0;
            for (size_t p = 0; p < n; p++)
                if ((size_t)order[p] >= setup->first && (size_t)order[p] < setup->first + setup->count)
                    iota[c++] = (int)p;
        } else {
            for (size_t i = 0; i < setup->count; i++)
                iota[i] = (int)(setup->first + i);
        }
        st = pc__cuda_status(cudaMemcpy(s.active.ptr, iota, setup->count * sizeof(int), cudaMemcpyHostToDevice),
                             "upload");
        free(iota);
        if (st == PC_OK && !ordered) // else spatial_order put them there
            st = pc__cuda_status(cudaMemcpy(s.pos.ptr, hs, n * dim * sizeof(float), cudaMemcpyHostToDevice), "upload");
        if (st == PC_OK)
            st = pc__cuda_status(cudaMemset(s.stopped.ptr, 0, n), "cudaMemset");
        if (st != PC_OK)
            goto done;
    }
    stage_seconds[0] = pc__now() - t0;
    if ((st = run(s, setup, o, ordered ? nullptr : hs, dot, safe, iterations, &stage_seconds[1])) != PC_OK)
        goto done;
    t0 = pc__now();
    if ((st = pc__cuda_status(cudaMemcpy(hs, s.pos.ptr, n * dim * sizeof(float), cudaMemcpyDeviceToHost),
                              "download")) != PC_OK)
        goto done;
    for (size_t i = 0; i < setup->count; i++) {
        size_t at = place ? (size_t)place[setup->first + i] : setup->first + i;
        for (size_t k = 0; k < dim; k++)
            modes[i * dim + k] = (float)(hs[k * n + at] / scale + centre[k]);
    }
    stage_seconds[2] = pc__now() - t0;
done:
    free(hs);
    free(centre);
    free(order);
    free(place);
    return st;
}
