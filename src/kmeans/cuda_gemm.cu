// The nearest centre of every point as a register-tiled product (points x centres), for large
// k x dim. A block takes 128 points at a time against all the centres, 128 centres at a time; each of
// its 256 threads holds 8 points x 8 centres of partial sums in registers, fed by float4 loads from
// shared memory (16 loads serve 64 FMAs a dimension), so the FMA units, not the loads, set the pace.
// The arithmetic stays exact FP32: d = |c|^2 + sum_j x_j (-2 c_j) in dimension order, one fmaf a term,
// bit for bit what the direct kernels compute (-2 x_j c_j is the same product with the factor on
// either side). Each thread keeps the running minimum of its 8 points over its centres; the 16
// threads that share points (8 lanes of each of two warps) then agree on the lowest (distance,
// index), so ties go to the lower index as everywhere else. The next point tile is copied into shared memory asynchronously while
// the current one is used.
#include "cuda_km.cuh"

#include <cuda_pipeline.h>
#include <math.h>

namespace {

constexpr int T = PC__KM_GEMM_THREADS, TILE = PC__KM_GEMM_TILE;

// Copies point tile `tile` (128 points, zeros past n) into xs transposed: xs[j * 128 + p].
__device__ __forceinline__ void load_tile(float *xs, const float *__restrict__ x, long n, int dim, long tile)
{
    const long first = tile * TILE;
    const long avail = (n - first) * dim; // elements of this tile that exist
    const float *src = x + first * dim;
    for (int e = threadIdx.x; e < TILE * dim; e += T) {
        int p = e / dim, j = e - p * dim;
        bool ok = e < avail;
        __pipeline_memcpy_async(xs + j * TILE + p, ok ? src + e : x, sizeof(float), ok ? 0 : sizeof(float));
    }
    __pipeline_commit();
}

__device__ __forceinline__ void take(float4 v, float *r)
{
    r[0] = v.x;
    r[1] = v.y;
    r[2] = v.z;
    r[3] = v.w;
}

// Warp w of the 8 covers 32 points (row wr = w / 2) x 64 centres (column wc = w % 2) of the block
// tile, its lanes 4 x 8: lane (lr, lc) holds points wr*32 + lr*4 + {0..3} and + 16, and centres
// wc*64 + lc*4 + {0..3} and + 32, so that a warp's loads of one dimension cover 32 points and 64
// centres (384 bytes: few shared-memory wavefronts for 2048 FMAs).
__global__ void __launch_bounds__(T, 2) gemm_assign_kernel(const float *__restrict__ x, int n, int dim, int k,
                                                           int kpad, const float *__restrict__ centres,
                                                           int32_t *__restrict__ labels,
                                                           unsigned long long *changed)
{
    extern __shared__ float4 smem4[];
    float *cs = reinterpret_cast<float *>(smem4); // dim x kpad: -2 c_j
    float *cn = cs + (size_t)dim * kpad;          // kpad: |c|^2, +inf for the padding
    float *xs = cn + kpad;                        // 2 tiles of dim x 128 points
    for (int q = threadIdx.x; q < kpad * dim; q += T) {
        int c = q / dim, j = q - c * dim;
        cs[j * kpad + c] = c < k ? -2.0f * centres[q] : 0.0f;
    }
    for (int c = threadIdx.x; c < kpad; c += T) {
        float norm = 0.0f;
        for (int j = 0; j < dim && c < k; j++)
            norm = fmaf(centres[c * dim + j], centres[c * dim + j], norm);
        cn[c] = c < k ? norm : INFINITY;
    }
    const long tiles = ((long)n + TILE - 1) / TILE;
    __shared__ float other_best[TILE]; // column 1's candidates, for column 0 to compare
    __shared__ int other_arg[TILE];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wr = warp >> 1, wc = warp & 1;
    const int lr = lane >> 3, lc = lane & 7;
    const int prow = wr * 32 + lr * 4, pcol = wc * 64 + lc * 4; // first point, first centre (+ c0)
    long t = blockIdx.x;
    if (t < tiles)
        load_tile(xs, x, n, dim, t);
    unsigned moved = 0;
    for (int buf = 0; t < tiles; t += gridDim.x, buf ^= 1) {
        __pipeline_wait_prior(0);
        __syncthreads(); // this tile is in; everyone is done with the other buffer (and the centres are in)
        if (t + gridDim.x < tiles)
            load_tile(xs + (buf ^ 1) * dim * TILE, x, n, dim, t + gridDim.x);
        const float *xt = xs + buf * dim * TILE;
        float best[8];
        int arg[8];
#pragma unroll
        for (int p = 0; p < 8; p++) {
            best[p] = INFINITY;
            arg[p] = 0;
        }
        for (int c0 = 0; c0 < kpad; c0 += TILE) {
            const int ca0 = c0 + pcol, cb0 = ca0 + 32;
            float acc[8][8], xv[8], cv[8], nv[8];
            take(*reinterpret_cast<const float4 *>(cn + ca0), nv);
            take(*reinterpret_cast<const float4 *>(cn + cb0), nv + 4);
            take(*reinterpret_cast<const float4 *>(xt + prow), xv);
            take(*reinterpret_cast<const float4 *>(xt + prow + 16), xv + 4);
            take(*reinterpret_cast<const float4 *>(cs + ca0), cv);
            take(*reinterpret_cast<const float4 *>(cs + cb0), cv + 4);
#pragma unroll
            for (int p = 0; p < 8; p++)
#pragma unroll
                for (int c = 0; c < 8; c++)
                    acc[p][c] = fmaf(xv[p], cv[c], nv[c]);
#pragma unroll 4
            for (int j = 1; j < dim; j++) {
                const float *xj = xt + j * TILE, *cj = cs + (size_t)j * kpad;
                take(*reinterpret_cast<const float4 *>(xj + prow), xv);
                take(*reinterpret_cast<const float4 *>(xj + prow + 16), xv + 4);
                take(*reinterpret_cast<const float4 *>(cj + ca0), cv);
                take(*reinterpret_cast<const float4 *>(cj + cb0), cv + 4);
#pragma unroll
                for (int p = 0; p < 8; p++)
#pragma unroll
                    for (int c = 0; c < 8; c++)
                        acc[p][c] = fmaf(xv[p], cv[c], acc[p][c]);
            }
            // Centres in increasing index, strict <: the first of equal distances stays.
#pragma unroll
            for (int p = 0; p < 8; p++)
#pragma unroll
                for (int c = 0; c < 8; c++)
                    if (acc[p][c] < best[p]) {
                        best[p] = acc[p][c];
                        arg[p] = (c < 4 ? ca0 : cb0 - 4) + c;
                    }
        }
        // The 8 lanes of a point row agree on the lowest (distance, index) of their 64 centres ...
#pragma unroll
        for (int off = 4; off > 0; off >>= 1)
#pragma unroll
            for (int p = 0; p < 8; p++) {
                float od = __shfl_xor_sync(0xffffffffu, best[p], off);
                int oi = __shfl_xor_sync(0xffffffffu, arg[p], off);
                if (od < best[p] || (od == best[p] && oi < arg[p])) {
                    best[p] = od;
                    arg[p] = oi;
                }
            }
        // ... then lane lc takes point lc of the row, and column 1 hands it to column 0.
        float mine_best = best[0];
        int mine = arg[0];
#pragma unroll
        for (int p = 1; p < 8; p++) {
            mine_best = lc == p ? best[p] : mine_best;
            mine = lc == p ? arg[p] : mine;
        }
        const int point = prow + (lc < 4 ? lc : 16 + lc - 4);
        if (wc == 1) {
            other_best[point] = mine_best;
            other_arg[point] = mine;
        }
        __syncthreads();
        if (wc == 0) {
            float od = other_best[point];
            int oi = other_arg[point];
            if (od < mine_best || (od == mine_best && oi < mine))
                mine = oi;
            long i = t * TILE + point;
            if (i < n) {
                moved += labels[i] != mine;
                labels[i] = mine;
            }
        }
    }
    for (int off = 16; off > 0; off >>= 1)
        moved += __shfl_down_sync(0xffffffffu, moved, off);
    if ((threadIdx.x & 31) == 0 && moved)
        atomicAdd(changed, (unsigned long long)moved);
}

} // namespace

pc_status pc__km_gemm_setup(size_t smem, int *blocks_per_sm)
{
    PC_CUDA_TRY(cudaFuncSetAttribute(gemm_assign_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                "k-means shared memory");
    PC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, gemm_assign_kernel, T, smem),
                "k-means occupancy");
    if (*blocks_per_sm < 1)
        *blocks_per_sm = 1;
    return PC_OK;
}

pc_status pc__km_gemm_assign(const float *x, int n, int dim, int k, const float *centres, int32_t *labels,
                             unsigned long long *changed, int blocks, size_t smem)
{
    gemm_assign_kernel<<<blocks, T, smem>>>(x, n, dim, k, (int)pc__km_gemm_kpad((size_t)k), centres, labels,
                                            changed);
    PC_CUDA_LAUNCHED("k-means GEMM assignment kernel");
    return PC_OK;
}
