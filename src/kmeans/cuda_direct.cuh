// The direct kernels' arithmetic and layouts, shared by cuda.cu (Lloyd's kernels) and cuda_hamerly.cu
// (Hamerly's rescans): a label computed through these helpers is bit for bit the direct kernels'.
#ifndef PC_KMEANS_CUDA_DIRECT_CUH
#define PC_KMEANS_CUDA_DIRECT_CUH

#include <math.h>
#include <stdint.h>

namespace pc__km_direct {

constexpr int BLOCK = 256;

constexpr int POINTS = 4; // points per thread in the specialised kernels: one shared load serves 4

// Floats a centre takes in shared memory: its coordinates, then |c|^2, padded to whole float4s.
__host__ __device__ constexpr int padded(int d) { return (d + 1 + 3) / 4 * 4; }

// Per-cluster sums are added as 64-bit fixed point, x * 2^s rounded to an integer (s from the data's
// largest |x| and n, so that no sum can overflow): integer additions give the same total in any
// order, so the sums, and the centres, do not depend on the order the atomics land in; the rounding
// (|x|max n 2^-63 a point) is far below float's. Counts are added as plain integers.
typedef unsigned long long fixed;

__device__ __forceinline__ fixed to_fixed(float v, float scale) { return (fixed)__float2ll_rn(v * scale); }

// The count of changed labels of a block's threads, one atomic a warp.
__device__ __forceinline__ void count_moved(unsigned moved, unsigned long long *changed)
{
    for (int off = 16; off > 0; off >>= 1)
        moved += __shfl_down_sync(0xffffffffu, moved, off);
    if ((threadIdx.x & 31) == 0 && moved)
        atomicAdd(changed, (unsigned long long)moved);
}

// The centres into shared memory with their |c|^2 (by fmaf from 0, in dimension order: the value every
// exact kernel compares): specialised D, rows of padded(D) floats with |c|^2 at D; D = 0, rows of dim
// floats and the norms apart in sn.
template <int D> __device__ __forceinline__ void stage_centres(const float *centres, int k, int dim, float *sc, float *sn)
{
    constexpr int DP = D > 0 ? padded(D) : 4;
    const int stride = D > 0 ? DP : dim;
    for (int c = threadIdx.x; c < k; c += blockDim.x) {
        float norm = 0.0f;
        for (int j = 0; j < (D > 0 ? D : dim); j++) {
            float v = centres[c * dim + j];
            sc[c * stride + j] = v;
            norm = fmaf(v, v, norm);
        }
        if (D > 0) {
            sc[c * DP + D] = norm;
            for (int j = D + 1; j < DP; j++)
                sc[c * DP + j] = 0.0f;
        } else {
            sn[c] = norm;
        }
    }
}

// Centre c of a specialised D staged as float4s: its padded(D) floats, |c|^2 at D.
template <int D> __device__ __forceinline__ void load_centre(const float4 *smem4, int c, float *cv)
{
    constexpr int V = padded(D) / 4;
#pragma unroll
    for (int v = 0; v < V; v++) {
        float4 f = smem4[c * V + v];
        cv[4 * v] = f.x;
        cv[4 * v + 1] = f.y;
        cv[4 * v + 2] = f.z;
        cv[4 * v + 3] = f.w;
    }
}

// Each of P points (rows of m2x = -2 x) against staged centre c: d = |c|^2 - 2 x.c in dimension order,
// kept where it is the lowest so far (centres come in increasing index: ties stay with the lower).
template <int D, int P>
__device__ __forceinline__ void nearer(const float (*m2x)[D], const float *cv, int c, float *best, int *arg)
{
#pragma unroll
    for (int p = 0; p < P; p++) {
        float d = cv[D];
#pragma unroll
        for (int j = 0; j < D; j++)
            d = fmaf(m2x[p][j], cv[j], d);
        if (d < best[p]) {
            best[p] = d;
            arg[p] = c;
        }
    }
}

// Floats before the sums in assign_any_kernel's shared memory: the centres and |c|^2, rounded up to
// whole 8-byte words.
__host__ __device__ constexpr size_t any_centres_floats(size_t k, size_t dim) { return (k * (dim + 1) + 1) / 2 * 2; }

// The dimensions with kernels of their own (D > 0); any other runs the D = 0 instance.
__host__ __device__ constexpr bool specialised(size_t dim) { return dim <= 4 || dim == 8 || dim == 16; }

} // namespace pc__km_direct

// The specialised dimensions' instance of an exact kernel template, D = 0 (any dimension) otherwise.
#define PC__PICK_BY_DIM(KERNEL)                                                                                \
    switch (dim) {                                                                                             \
    case 1: return KERNEL<1>;                                                                                  \
    case 2: return KERNEL<2>;                                                                                  \
    case 3: return KERNEL<3>;                                                                                  \
    case 4: return KERNEL<4>;                                                                                  \
    case 8: return KERNEL<8>;                                                                                  \
    case 16: return KERNEL<16>;                                                                                \
    default: return KERNEL<0>;                                                                                 \
    }

#endif
