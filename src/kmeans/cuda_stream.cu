// The CUDA backend under pc_kmeans_stream (stream_pass.c): the nearest centre of every point of a
// piece of a block on the GPU; the host centres the rows before and gathers the pass (fixed-point sums,
// inertia, farthest points) after, as it does for its own labels. The GPU computes the host's very
// numbers: from |c|^2 as the host rounded it (pc__km_centres' norms, uploaded), one fused multiply-add
// of -2 x_j and c_j per dimension in dimension order, the smallest kept and ties to the lower index.
// pc__km_assign does the same on processors with FMA (its AVX2 + FMA path: every x86-64 machine this
// project runs on), so the labels, and with them the whole stream, equal the CPU backend's bit for
// bit. What the GPU takes off the host is the k x dim work a point; the host keeps the dim work.
#include "cuda_km.cuh"

#include <math.h>
#include <mutex>
#include <string.h>
#include <new>

extern "C" {
#include "stream_gpu.h"
}

namespace {

constexpr int THREADS = 256;

// P points a thread held in registers (D >= dim values, -2 x_j each: exact); the centres staged in
// shared memory by tiles, a centre's D values read as float4s that every thread of the warp reads
// alike (broadcasts), each serving P points: the multiply-adds, not the loads, set the pace. The
// points' own values must not be read from memory in the centre loop: a warp's 32 rows lie dim x 4
// bytes apart, and re-reading them there made each multiply-add wait on 16 cache lines (5.1 s an
// iteration for 100M x 16, k = 1000, on an H200; session 7, bench/RESULTS.md); reading each centre
// value through the cache once a point (one load a multiply-add) took 0.75 s (session 12).
template <int D> __host__ __device__ constexpr int tile_centres() { return D <= 16 ? 256 : 128; } // 16 or 32 KiB

template <int D, int P>
__global__ void __launch_bounds__(THREADS) nearest_reg_kernel(const float *__restrict__ x, size_t m, int dim, int k,
                                                              int kpad, const float *__restrict__ ct,
                                                              const float *__restrict__ cc, int32_t *labels)
{
    static_assert(D % 4 == 0, "centres are read as float4s");
    constexpr int TILE = tile_centres<D>();
    __shared__ __align__(16) float sc[TILE * D];
    __shared__ float sn[TILE];
    const size_t per_round = (size_t)THREADS * P;
    for (size_t base = blockIdx.x * per_round; base < m; base += (size_t)gridDim.x * per_round) {
        float m2x[P][D], best[P];
        int arg[P];
#pragma unroll
        for (int p = 0; p < P; p++) {
            const size_t i = base + (size_t)p * THREADS + threadIdx.x;
            const float *xi = x + (i < m ? i : 0) * (size_t)dim;
#pragma unroll
            for (int j = 0; j < D; j++)
                m2x[p][j] = j < dim && i < m ? -2.0f * xi[j] : 0.0f;
            best[p] = INFINITY;
            arg[p] = 0;
        }
        for (int c0 = 0; c0 < k; c0 += TILE) {
            const int tile = k - c0 < TILE ? k - c0 : TILE;
            __syncthreads(); // the previous tile is no longer read
            for (int q = threadIdx.x; q < tile * D; q += THREADS) {
                const int j = q / tile, c = q % tile; // consecutive threads, consecutive centres of a row of ct
                sc[c * D + j] = j < dim ? ct[(size_t)j * kpad + c0 + c] : 0.0f;
            }
            for (int c = threadIdx.x; c < tile; c += THREADS)
                sn[c] = cc[c0 + c];
            __syncthreads();
            for (int c = 0; c < tile; c++) {
                float cv[D];
#pragma unroll
                for (int j = 0; j < D; j += 4) {
                    const float4 v = *reinterpret_cast<const float4 *>(sc + c * D + j);
                    cv[j] = v.x;
                    cv[j + 1] = v.y;
                    cv[j + 2] = v.z;
                    cv[j + 3] = v.w;
                }
                const float norm = sn[c];
#pragma unroll
                for (int p = 0; p < P; p++) {
                    float d = norm;
                    // In dimension order, one rounding each: the host's value. Past dim both factors are
                    // 0, and d + 0 is d (but for the sign of a zero, which no comparison sees).
#pragma unroll
                    for (int j = 0; j < D; j++)
                        d = fmaf(m2x[p][j], cv[j], d);
                    if (d < best[p]) {
                        best[p] = d;
                        arg[p] = c0 + c;
                    }
                }
            }
        }
#pragma unroll
        for (int p = 0; p < P; p++) {
            const size_t i = base + (size_t)p * THREADS + threadIdx.x;
            if (i < m)
                labels[i] = arg[p];
        }
    }
}

// Beyond 64 values a point: the point read from memory (cached) for each centre.
__global__ void __launch_bounds__(THREADS) nearest_kernel(const float *__restrict__ x, size_t m, int dim, int k,
                                                          int kpad, const float *__restrict__ ct,
                                                          const float *__restrict__ cc, int32_t *labels)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < m; i += (size_t)gridDim.x * blockDim.x) {
        const float *xi = x + i * (size_t)dim;
        float best = INFINITY;
        int arg = 0;
        for (int c = 0; c < k; c++) {
            float d = __ldg(cc + c);
            for (int j = 0; j < dim; j++)
                d = fmaf(-2.0f * xi[j], __ldg(ct + (size_t)j * kpad + c), d);
            if (d < best) {
                best = d;
                arg = c;
            }
        }
        labels[i] = arg;
    }
}

} // namespace

void pc__km_stream_nearest(const float *x, size_t m, int dim, int k, int kpad, const float *ct, const float *cc,
                           int32_t *labels, int sms, cudaStream_t stream)
{
    // Points a thread: 4 where a point takes 4 or 16 registers, 1 beyond (64 registers a point).
    const int per_thread = dim <= 16 ? 4 : 1;
    size_t blocks = (m + (size_t)THREADS * per_thread - 1) / ((size_t)THREADS * per_thread), most = 8 * (size_t)sms;
    unsigned grid = (unsigned)(blocks < most ? blocks : most);
    if (dim <= 4)
        nearest_reg_kernel<4, 4><<<grid, THREADS, 0, stream>>>(x, m, dim, k, kpad, ct, cc, labels);
    else if (dim <= 16)
        nearest_reg_kernel<16, 4><<<grid, THREADS, 0, stream>>>(x, m, dim, k, kpad, ct, cc, labels);
    else if (dim <= 64)
        nearest_reg_kernel<64, 1><<<grid, THREADS, 0, stream>>>(x, m, dim, k, kpad, ct, cc, labels);
    else
        nearest_kernel<<<grid, THREADS, 0, stream>>>(x, m, dim, k, kpad, ct, cc, labels);
}

struct pc__km_stream_gpu {
    size_t k, dim, kpad = 0;
    uint64_t version = 0;
    bool loaded = false;
    int sms = 1;
    cudaStream_t stream = nullptr;
    float *host_rows[PC__KM_GPU_SLOTS] = {};       // pinned: PC__KM_GPU_PIECE x dim each
    int32_t *host_labels[PC__KM_GPU_SLOTS] = {};   // pinned: PC__KM_GPU_PIECE each
    cudaEvent_t done[PC__KM_GPU_SLOTS] = {};       // a slot's labels are in host_labels
    pc__device_buffer<float> x[PC__KM_GPU_SLOTS], ct, cc;
    pc__device_buffer<int32_t> labels[PC__KM_GPU_SLOTS];
    std::mutex lock;
};

extern "C" pc_status pc__km_stream_gpu_create(size_t k, size_t dim, pc__km_stream_gpu **gpu)
{
    *gpu = nullptr;
    int device = 0, count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        cudaGetLastError();
        return pc__fail(PC_NO_DEVICE, "k-means stream: no CUDA device (%s)",
                        e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    }
    pc__km_stream_gpu *g = new (std::nothrow) pc__km_stream_gpu;
    if (!g)
        return pc__fail(PC_OUT_OF_MEMORY, "k-means stream: GPU state");
    g->k = k;
    g->dim = dim;
    pc_status st = PC_OK;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, device);
    if ((st = pc__cuda_status(cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking), "k-means stream: "
                              "cudaStreamCreate")) != PC_OK) {
        pc__km_stream_gpu_free(g);
        return st;
    }
    for (int q = 0; q < PC__KM_GPU_SLOTS; q++)
        if ((st = pc__cuda_status(cudaMallocHost((void **)&g->host_rows[q], PC__KM_GPU_PIECE * dim * sizeof(float)),
                                  "k-means stream: pinned rows")) != PC_OK ||
            (st = pc__cuda_status(cudaMallocHost((void **)&g->host_labels[q], PC__KM_GPU_PIECE * sizeof(int32_t)),
                                  "k-means stream: pinned labels")) != PC_OK ||
            (st = pc__cuda_status(cudaEventCreateWithFlags(&g->done[q], cudaEventDisableTiming),
                                  "k-means stream: cudaEventCreate")) != PC_OK ||
            (st = g->x[q].alloc(PC__KM_GPU_PIECE * dim, "k-means stream rows")) != PC_OK ||
            (st = g->labels[q].alloc(PC__KM_GPU_PIECE, "k-means stream labels")) != PC_OK) {
            pc__km_stream_gpu_free(g);
            return st;
        }
    *gpu = g;
    return PC_OK;
}

extern "C" void pc__km_stream_gpu_free(pc__km_stream_gpu *g)
{
    if (!g)
        return;
    if (g->stream)
        cudaStreamSynchronize(g->stream);
    for (int q = 0; q < PC__KM_GPU_SLOTS; q++) {
        if (g->host_rows[q])
            cudaFreeHost(g->host_rows[q]);
        if (g->host_labels[q])
            cudaFreeHost(g->host_labels[q]);
        if (g->done[q])
            cudaEventDestroy(g->done[q]);
    }
    if (g->stream)
        cudaStreamDestroy(g->stream);
    delete g;
}

extern "C" void pc__km_stream_gpu_lock(pc__km_stream_gpu *g) { g->lock.lock(); }

extern "C" void pc__km_stream_gpu_unlock(pc__km_stream_gpu *g)
{
    // A holder that stopped early (a bad row) may leave a piece in flight: the next holder's rows
    // must not be written into a buffer the GPU is still reading.
    cudaStreamSynchronize(g->stream);
    g->lock.unlock();
}

extern "C" float *pc__km_stream_gpu_rows(pc__km_stream_gpu *g, int slot) { return g->host_rows[slot]; }

extern "C" pc_status pc__km_stream_gpu_centres(pc__km_stream_gpu *g, const float *ct, const float *cc, size_t kpad,
                                               uint64_t version)
{
    if (g->loaded && g->version == version && g->kpad == kpad)
        return PC_OK;
    pc_status st;
    if (g->kpad != kpad) {
        if ((st = g->ct.alloc(g->dim * kpad, "k-means stream centres")) != PC_OK ||
            (st = g->cc.alloc(kpad, "k-means stream centre norms")) != PC_OK)
            return st;
        g->kpad = kpad;
    }
    PC_CUDA_TRY(cudaMemcpyAsync(g->ct.ptr, ct, g->dim * kpad * sizeof(float), cudaMemcpyHostToDevice, g->stream),
                "k-means stream: centres to the GPU");
    PC_CUDA_TRY(cudaMemcpyAsync(g->cc.ptr, cc, kpad * sizeof(float), cudaMemcpyHostToDevice, g->stream),
                "k-means stream: centre norms to the GPU");
    g->version = version;
    g->loaded = true;
    return PC_OK;
}

extern "C" pc_status pc__km_stream_gpu_submit(pc__km_stream_gpu *g, int slot, size_t m)
{
    if (m == 0)
        return PC_OK;
    if (m > PC__KM_GPU_PIECE || !g->loaded || slot < 0 || slot >= PC__KM_GPU_SLOTS)
        return pc__fail(PC_INTERNAL_ERROR, "k-means stream: a GPU piece of %zu rows (at most %zu) in slot %d, centres %s",
                        m, (size_t)PC__KM_GPU_PIECE, slot, g->loaded ? "loaded" : "not loaded");
    PC_CUDA_TRY(cudaMemcpyAsync(g->x[slot].ptr, g->host_rows[slot], m * g->dim * sizeof(float), cudaMemcpyHostToDevice,
                                g->stream),
                "k-means stream: rows to the GPU");
    pc__km_stream_nearest(g->x[slot].ptr, m, (int)g->dim, (int)g->k, (int)g->kpad, g->ct.ptr, g->cc.ptr,
                          g->labels[slot].ptr, g->sms, g->stream);
    PC_CUDA_LAUNCHED("k-means stream: nearest-centre kernel");
    PC_CUDA_TRY(cudaMemcpyAsync(g->host_labels[slot], g->labels[slot].ptr, m * sizeof(int32_t), cudaMemcpyDeviceToHost,
                                g->stream),
                "k-means stream: labels from the GPU");
    PC_CUDA_TRY(cudaEventRecord(g->done[slot], g->stream), "k-means stream: cudaEventRecord");
    return PC_OK;
}

extern "C" pc_status pc__km_stream_gpu_wait(pc__km_stream_gpu *g, int slot, size_t m, int32_t *labels)
{
    if (m == 0)
        return PC_OK;
    PC_CUDA_TRY(cudaEventSynchronize(g->done[slot]), "k-means stream: nearest-centre kernel");
    memcpy(labels, g->host_labels[slot], m * sizeof(int32_t));
    return PC_OK;
}
