// Mean shift on an NVIDIA GPU. Three kernels compute the shifts: the seeds' naive kernel (references
// read from global memory) and tiled kernel (references staged through shared memory, TILE_WIDTH =
// block size), and a fast default. All work in pre-scaled coordinates x' = (x - centre) * s, chosen so
// that the gaussian weight is exp2(-|q' - r'|^2) and the flat and epanechnikov supports are |d'| <= 1.
// Points that stopped are compacted out of the active list; with a finite radius (D <= 4) the
// references are sorted into a neighbour grid and a query visits only the 3^D cells around it.
#include "../cuda/common.cuh"

#include <cub/device/device_radix_sort.cuh>

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
// large enough for the dropped factor to overflow.
template <int D, bool SAFE>
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
                float w = ex2(e);
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
template <int D>
__global__ void finalize_kernel(const float *__restrict__ partial, int splits, int count, const int *active,
                                float *pos, int n, float eps2, unsigned char *stopped)
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

// Keeps the points still moving; the order of the new list does not matter (each point's sums do
// not depend on where it sits in the list).
__global__ void compact_active(const int *active, int count, const unsigned char *stopped, int *next, int *next_count)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < count && !stopped[active[t]])
        next[atomicAdd(next_count, 1)] = active[t];
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
    pc__device_buffer<int> active, next_active, counter, order, order_sorted;
    pc__device_buffer<unsigned char> stopped, sort_temp;
    pc__device_buffer<unsigned long long> keys, keys_sorted;
    pc__device_buffer<float> sref;
    grid_view grid;
    bool use_grid;
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

fast_kernel_fn pick_fast_kernel(int dim, int kernel, bool dot, bool safe)
{
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

pc_status launch_fast_kernel(run_state &s, bool dot, bool safe, int count)
{
    int n = (int)s.n, dim = (int)s.dim;
    fast_kernel_fn kernel = pick_fast_kernel(dim, s.kernel, dot, safe);
    int per_sm = 0;
    PC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, FAST_BLOCK, 0), "occupancy query");
    int qblocks = blocks_for(count, FAST_BLOCK * FAST_QUERIES);
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
    const void *refs = dot ? (const void *)s.ref4.ptr : (const void *)s.ref.ptr;
    kernel<<<dim3(qblocks, splits), FAST_BLOCK>>>(refs, n, chunk, s.pos.ptr, s.active.ptr, count, s.r2, s.partial.ptr);
    PC_CUDA_LAUNCHED("fast mean shift kernel");
    int fb = blocks_for(count, 256);
    switch (dim) {
    case 1: finalize_kernel<1><<<fb, 256>>>(s.partial.ptr, splits, count, s.active.ptr, s.pos.ptr, n, s.eps2, s.stopped.ptr); break;
    case 2: finalize_kernel<2><<<fb, 256>>>(s.partial.ptr, splits, count, s.active.ptr, s.pos.ptr, n, s.eps2, s.stopped.ptr); break;
    case 3: finalize_kernel<3><<<fb, 256>>>(s.partial.ptr, splits, count, s.active.ptr, s.pos.ptr, n, s.eps2, s.stopped.ptr); break;
    case 4: finalize_kernel<4><<<fb, 256>>>(s.partial.ptr, splits, count, s.active.ptr, s.pos.ptr, n, s.eps2, s.stopped.ptr); break;
    default: finalize_kernel<5><<<fb, 256>>>(s.partial.ptr, splits, count, s.active.ptr, s.pos.ptr, n, s.eps2, s.stopped.ptr); break;
    }
    PC_CUDA_LAUNCHED("mean shift finalize kernel");
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

// Sorts the current references into grid cells (keys, then references in key order).
pc_status build_grid(run_state &s)
{
    int n = (int)s.n, dim = (int)s.dim, blocks = blocks_for(n, 256);
    grid_keys<<<blocks, 256>>>(s.ref.ptr, n, dim, s.grid, s.keys.ptr, s.order.ptr);
    PC_CUDA_LAUNCHED("grid key kernel");
    size_t temp = 0;
    PC_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, temp, s.keys.ptr, s.keys_sorted.ptr, s.order.ptr,
                                                s.order_sorted.ptr, n, 0, 16 * dim),
                "grid sort (size query)");
    if (temp > s.sort_temp.count) {
        pc_status st = s.sort_temp.alloc(temp, "grid sort scratch");
        if (st != PC_OK)
            return st;
    }
    PC_CUDA_TRY(cub::DeviceRadixSort::SortPairs(s.sort_temp.ptr, temp, s.keys.ptr, s.keys_sorted.ptr, s.order.ptr,
                                                s.order_sorted.ptr, n, 0, 16 * dim),
                "grid sort");
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
    int count = n, it = 0;
    st = pc__cuda_status(cudaMemcpy(s.ref.ptr, hs, s.n * s.dim * sizeof(float), cudaMemcpyHostToDevice), "upload");
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
            st = launch_fast_kernel(s, dot, safe, count);
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
    for (size_t i = 0; i < n; i++) {
        double qq = 0;
        for (size_t k = 0; k < dim; k++) {
            float v = (float)((points[i * dim + k] - centre[k]) * scale);
            hs[k * n + i] = v;
            qq += (double)v * v;
        }
        max_qq = fmax(max_qq, qq);
    }
    s.r2 = isfinite(setup->radius) ? (float)(setup->radius * setup->radius * scale * scale) : INFINITY;
    s.eps2 = (float)(setup->eps2 * scale * scale);
    bool dot = o->kernel == PC_CUDA_KERNEL_FAST && setup->shift.kernel == PC_KERNEL_GAUSSIAN &&
               !isfinite(setup->radius) && dim <= 3;
    // exp2(|q|^2) must stay far from float's limit (2^128) with N references summed.
    bool safe = max_qq > 64.0;
    s.use_grid = setup->use_grid && plan_grid(s, hs, setup->radius * scale);

    pc_status st;
    if ((st = s.ref.alloc(n * dim, "references")) != PC_OK || (st = s.pos.alloc(n * dim, "positions")) != PC_OK ||
        (st = s.active.alloc(n, "active list")) != PC_OK || (st = s.next_active.alloc(n, "active list")) != PC_OK ||
        (st = s.counter.alloc(1, "counter")) != PC_OK || (st = s.stopped.alloc(n, "stop flags")) != PC_OK ||
        (dot && (st = s.ref4.alloc(n, "packed references")) != PC_OK) ||
        (dim > MAX_GPU_DIM && (st = s.partial.alloc(n * dim, "per-point sums")) != PC_OK))
        goto done;
    if (s.use_grid &&
        ((st = s.keys.alloc(n, "grid keys")) != PC_OK || (st = s.keys_sorted.alloc(n, "grid keys")) != PC_OK ||
         (st = s.order.alloc(n, "grid order")) != PC_OK || (st = s.order_sorted.alloc(n, "grid order")) != PC_OK ||
         (st = s.sref.alloc(n * dim, "sorted references")) != PC_OK))
        goto done;
    {
        int *iota = (int *)pc__alloc(n, sizeof(int), "active list");
        if (!iota) {
            st = PC_OUT_OF_MEMORY;
            goto done;
        }
        for (size_t i = 0; i < n; i++)
            iota[i] = (int)i;
        st = pc__cuda_status(cudaMemcpy(s.active.ptr, iota, n * sizeof(int), cudaMemcpyHostToDevice), "upload");
        free(iota);
        if (st == PC_OK)
            st = pc__cuda_status(cudaMemcpy(s.pos.ptr, hs, n * dim * sizeof(float), cudaMemcpyHostToDevice), "upload");
        if (st == PC_OK)
            st = pc__cuda_status(cudaMemset(s.stopped.ptr, 0, n), "cudaMemset");
        if (st != PC_OK)
            goto done;
    }
    stage_seconds[0] = pc__now() - t0;
    if ((st = run(s, setup, o, hs, dot, safe, iterations, &stage_seconds[1])) != PC_OK)
        goto done;
    t0 = pc__now();
    if ((st = pc__cuda_status(cudaMemcpy(hs, s.pos.ptr, n * dim * sizeof(float), cudaMemcpyDeviceToHost),
                              "download")) != PC_OK)
        goto done;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < dim; k++)
            modes[i * dim + k] = (float)(hs[k * n + i] / scale + centre[k]);
    stage_seconds[2] = pc__now() - t0;
done:
    free(hs);
    free(centre);
    return st;
}
