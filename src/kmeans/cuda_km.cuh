// What the CUDA k-means files share: the register-tiled (GEMM-style) assignment of cuda_gemm.cu and
// the tensor-core screening of cuda_tensor.cu.
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

// The tensor-core screening (cuda_tensor.cu): TF32 or BF16 split products, dim <= 64.
constexpr int PC__KM_TENSOR_THREADS = 256;
constexpr int PC__KM_TENSOR_MAX_DIM = 64;
enum { PC__KM_TENSOR_TF32 = 0, PC__KM_TENSOR_BF16 = 1 };

struct pc__km_tensor_args {
    const float *x;
    int n, dim, k, kpad;
    const uint32_t *cpack; // pc__km_tensor_packed_words words, written by the step's preparation kernel
    const float *cnorm;    // kpad
    int32_t *labels;       // written where the screen settles the point
    int32_t *list;         // n: the points it leaves to the exact kernel ...
    int32_t *list_label;   // ... beside each, its lowest key's centre (>= k: none) ...
    unsigned *list_count;  // ... and their number
    unsigned long long *changed;
    float prod, accref, mask_rel; // the error bound's factors (pc__km_tensor_bounds)
    uint32_t mask;                // the index bits of a key
};

size_t pc__km_tensor_kpad(size_t k);
size_t pc__km_tensor_smem(size_t k, size_t dim, int format);
size_t pc__km_tensor_packed_words(size_t k, size_t dim, int format);
void pc__km_tensor_bounds(size_t k, size_t dim, int format, pc__km_tensor_args *a);
pc_status pc__km_tensor_setup(size_t dim, int format, size_t smem, int *blocks_per_sm);
// Packs `centres` (device, k x dim), then screens every point: labels of the settled points (and
// *changed), the others listed.
pc_status pc__km_tensor_assign(const pc__km_tensor_args &a, const float *centres, int format, int blocks, size_t smem);

// Exact per-cluster sums (cuda.cu): totals (k x (dim + 1), count last, x * scale rounded to 64-bit
// integers as the host's pc__km_fixed does) of x's n points by label, on `stream`. Setup raises the
// kernel's shared-memory limit and says how many blocks (rows of `partial`, blocks x k x (dim + 1))
// to run; PC_UNSUPPORTED where the sums exceed a block's shared memory.
pc_status pc__km_fixed_sums_setup(size_t k, size_t dim, int *blocks);
pc_status pc__km_fixed_sums(const float *x, int n, int dim, int k, const int32_t *labels, float scale, int blocks,
                            unsigned long long *partial, unsigned long long *totals, cudaStream_t stream);

// The k-means stream's nearest centres (cuda_stream.cu): labels[i] of x's m rows by the host's own
// arithmetic (pc__km_assign's |c|^2 from cc, then one fused multiply-add a dimension in order, ties to
// the lower index), ct the centres transposed (dim x kpad), on `stream`.
void pc__km_stream_nearest(const float *x, size_t m, int dim, int k, int kpad, const float *ct, const float *cc,
                           int32_t *labels, int sms, cudaStream_t stream);

// Hamerly's bounds (cuda_hamerly.cu): the per-point bounds and lists kept between Lloyd's passes.
struct pc__km_ham;
struct pc__km_ham_counts {
    unsigned scanned, tightened, moved; // points scanned, bounds tightened, labels changed
    double distances;                   // point-to-centre and centre-to-centre distances evaluated
};
// The bounds' device memory for n points of dim values and k centres (PC_UNSUPPORTED where the scan's
// centres exceed a block's shared memory).
pc_status pc__km_ham_create(size_t n, size_t dim, size_t k, pc__km_ham **out);
void pc__km_ham_free(pc__km_ham *h);
// The points on the device (n x dim), kept by the caller for the state's life; before the first pass.
pc_status pc__km_ham_points(pc__km_ham *h, const float *x);
// One pass against `centres` (device), queued on the default stream without a wait: labels[] (device)
// becomes Lloyd's labels for them, the points whose bounds do not settle them scanned, and the
// fixed-point sums `totals` (k x (dim + 1), count last, x * scale) follow the points that changed
// cluster. *resum: the caller is to sum every point into totals instead (the first pass, where
// every point changes, unless the pass did it itself).
pc_status pc__km_ham_pass(pc__km_ham *h, const float *centres, int32_t *labels, float scale,
                          unsigned long long *totals, bool *resum);
// Waits for the last pass and returns its counts.
pc_status pc__km_ham_collect(pc__km_ham *h, pc__km_ham_counts *out);

#endif
