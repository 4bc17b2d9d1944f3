// What the CUDA k-means files share: the register-tiled (GEMM-style) assignment of cuda_gemm.cu.
#ifndef PC_KMEANS_CUDA_KM_CUH
#define PC_KMEANS_CUDA_KM_CUH

#include "../cuda/common.cuh"

#include <stdint.h>

// Threads of a GEMM assignment block, and the points and centres of one block tile.
constexpr int PC__KM_GEMM_THREADS = 256;
constexpr int PC__KM_GEMM_TILE = 128;

// Centres padded to whole tiles (the padding is never nearest).
static inline size_t pc__km_gemm_kpad(size_t k)
{
    return (k + PC__KM_GEMM_TILE - 1) / PC__KM_GEMM_TILE * PC__KM_GEMM_TILE;
}

// Shared memory of a GEMM assignment block: -2 x centres transposed (dim x kpad), |c|^2 (kpad), and
// two point tiles (dim x 128 each, one loading while the other is used).
static inline size_t pc__km_gemm_smem(size_t k, size_t dim)
{
    size_t kpad = pc__km_gemm_kpad(k);
    return (dim * kpad + kpad + 2 * dim * PC__KM_GEMM_TILE) * sizeof(float);
}

// Raises the kernel's shared-memory limit to `smem` and returns how many blocks an SM holds.
pc_status pc__km_gemm_setup(size_t smem, int *blocks_per_sm);

// labels[i] = the centre minimising |c|^2 - 2 x.c (ties to the lower index, the same FP32 value as
// the direct kernels compute); *changed += the labels that differ from the previous ones.
pc_status pc__km_gemm_assign(const float *x, int n, int dim, int k, const float *centres, int32_t *labels,
                             unsigned long long *changed, int blocks, size_t smem);

#endif
