// A block held on the GPU for the k-means stream's passes (pc_kmeans_stream_hold, stream_held.c): its
// centred rows stay in device memory and a pass over them runs there whole, so that only the k x
// (dim + 1) sums, 256 inertia buckets and the candidates for the farthest points cross the bus, where
// the streamed pass (cuda_stream.cu) sends every row and label across and sums on the host.
//
// Every number is the host pass's (stream_pass.c) bit for bit:
//  - labels: pc__km_stream_nearest, the host's own arithmetic;
//  - sums: x * scale rounded to 64-bit integers (pc__km_fixed), added exactly in any order;
//  - a point's distance to its centre: double, (x_j - c_j)^2 added in dimension order with one
//    rounding each (no fused multiply-add: pc__km_dist2 on the host has none), then rounded to float32
//    for the inertia buckets (the mantissas by exponent, integers: any order);
//  - the first pass's sums of q^2: 128-bit integers (low and high words, carried by hand);
//  - the farthest points: pc__km_far keeps the k - 1 points farthest from their centres (ties by their
//    coordinates). Any superset of them offered in any order leaves the same list, so the GPU sends
//    every row whose distance's top 24 bits (sign, exponent, 12 bits of mantissa; for distances >= 0
//    the bits order as the values) reach those of the (k - 1)-th largest distance, found by two
//    histograms: of the top 12 bits, then of the next 12 within the top 12 bits' bin that holds it.
#include "cuda_km.cuh"

#include <algorithm>
#include <mutex>
#include <new>
#include <string.h>

extern "C" {
#include "stream_gpu.h"
}

namespace {

constexpr int THREADS = 256;
constexpr int BUCKETS = 256;       // the inertia's, by float32 biased exponent
constexpr int TOP_BINS = 2048;     // a distance's top 12 bits (its sign is 0)
constexpr int NEXT_BINS = 4096;    // the next 12
constexpr size_t SPARE_FAR = 65536; // candidates beyond the k - 1 the state has room for (ties)

__device__ __forceinline__ unsigned long long bits_of(double d) { return (unsigned long long)__double_as_longlong(d); }

// Each row's distance to its centre (kept for the histograms), its inertia bucket and its top bin.
__global__ void __launch_bounds__(THREADS) distance_kernel(const float *__restrict__ x, int n, int dim,
                                                           const float *__restrict__ centres,
                                                           const int32_t *__restrict__ labels, double *dist,
                                                           unsigned long long *inertia, unsigned *top)
{
    __shared__ unsigned long long buckets[BUCKETS];
    __shared__ unsigned bins[TOP_BINS];
    for (int q = threadIdx.x; q < TOP_BINS; q += blockDim.x) {
        bins[q] = 0;
        if (q < BUCKETS)
            buckets[q] = 0;
    }
    __syncthreads();
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        const float *xi = x + i * dim, *c = centres + (size_t)labels[i] * dim;
        double s = 0.0;
        for (int j = 0; j < dim; j++) {
            double t = __dsub_rn((double)xi[j], (double)c[j]);
            s = __dadd_rn(s, __dmul_rn(t, t));
        }
        dist[i] = s;
        unsigned u = __float_as_uint(__double2float_rn(s)), e = u >> 23;
        atomicAdd(&buckets[e], (unsigned long long)((u & 0x7fffffu) | (e ? 0x800000u : 0u)));
        atomicAdd(&bins[bits_of(s) >> 52], 1u);
    }
    __syncthreads();
    for (int q = threadIdx.x; q < TOP_BINS; q += blockDim.x) {
        if (bins[q])
            atomicAdd(&top[q], bins[q]);
        if (q < BUCKETS && buckets[q])
            atomicAdd(&inertia[q], buckets[q]);
    }
}

// The next 12 bits of the distances whose top 12 bits are `bin`.
__global__ void __launch_bounds__(THREADS) next_bins_kernel(const double *__restrict__ dist, int n, unsigned bin,
                                                            unsigned *next)
{
    __shared__ unsigned bins[NEXT_BINS];
    for (int q = threadIdx.x; q < NEXT_BINS; q += blockDim.x)
        bins[q] = 0;
    __syncthreads();
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        unsigned long long b = bits_of(dist[i]);
        if ((b >> 52) == bin)
            atomicAdd(&bins[(b >> 40) & 0xfff], 1u);
    }
    __syncthreads();
    for (int q = threadIdx.x; q < NEXT_BINS; q += blockDim.x)
        if (bins[q])
            atomicAdd(&next[q], bins[q]);
}

// Every row whose distance's top 24 bits reach `floor`: its distance, label and centred row, in the
// order the atomics give (the host's list does not depend on it).
__global__ void __launch_bounds__(THREADS) gather_kernel(const float *__restrict__ x, int n, int dim,
                                                         const double *__restrict__ dist,
                                                         const int32_t *__restrict__ labels, unsigned floor,
                                                         unsigned room, unsigned *count, double *out_dist,
                                                         int32_t *out_label, float *out_x)
{
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
        double d = dist[i];
        if ((unsigned)(bits_of(d) >> 40) < floor)
            continue;
        unsigned slot = atomicAdd(count, 1u);
        if (slot >= room)
            continue;
        out_dist[slot] = d;
        out_label[slot] = labels[i];
        for (int j = 0; j < dim; j++)
            out_x[(size_t)slot * dim + j] = x[i * dim + j];
    }
}

// The first pass's sums of q^2 by dimension, q = x * scale rounded to an integer (|q| < 2^62): a
// thread keeps one dimension's 128-bit sum (its stride is a multiple of dim), then adds it to the
// low word and carries into the high one.
__global__ void __launch_bounds__(THREADS) squares_kernel(const float *__restrict__ x, size_t values, int dim,
                                                          float scale, unsigned long long *squares)
{
    const size_t threads = (size_t)gridDim.x * blockDim.x, stride = threads / dim * dim;
    const size_t start = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (start >= stride)
        return;
    unsigned long long lo = 0, hi = 0;
    for (size_t q = start; q < values; q += stride) {
        long long v = __float2ll_rn(x[q] * scale);
        unsigned long long a = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
        unsigned long long plo = a * a;
        lo += plo;
        hi += __umul64hi(a, a) + (lo < plo);
    }
    const size_t d = start % dim;
    unsigned long long old = atomicAdd(&squares[2 * d], lo);
    atomicAdd(&squares[2 * d + 1], hi + (old + lo < old));
}

} // namespace

struct pc__km_held {
    size_t n, dim, k, kpad = 0, room;
    int sms = 1, sum_blocks = 1, grid = 1;
    uint64_t version = 0;
    bool loaded = false;
    cudaStream_t stream = nullptr;
    pc__device_buffer<float> x, ct, cc, centres, far_x;
    pc__device_buffer<int32_t> labels, far_label;
    pc__device_buffer<double> dist, far_dist;
    // totals (k x (dim + 1)), then the inertia buckets, then the squares (dim x 2): one download
    pc__device_buffer<unsigned long long> partial, out;
    pc__device_buffer<unsigned> bins; // TOP_BINS, NEXT_BINS, then the candidates' count
    unsigned long long *host_out = nullptr;
    unsigned *host_bins = nullptr;
    double *host_far_dist = nullptr;
    int32_t *host_far_label = nullptr;
    float *host_far_x = nullptr;
    std::mutex lock;
};

namespace {

// The device and pinned buffers of a held block of h->n rows.
pc_status allocate(pc__km_held *h)
{
    const size_t n = h->n, dim = h->dim, k = h->k, entries = k * (dim + 1), words = entries + BUCKETS + 2 * dim;
    pc_status st;
    if ((st = pc__km_fixed_sums_setup(k, dim, &h->sum_blocks)) != PC_OK)
        return st;
    PC_CUDA_TRY(cudaStreamCreateWithFlags(&h->stream, cudaStreamNonBlocking), "k-means stream: cudaStreamCreate");
    if ((st = h->x.alloc(n * dim, "held rows")) != PC_OK || (st = h->labels.alloc(n, "held labels")) != PC_OK ||
        (st = h->dist.alloc(n, "held distances")) != PC_OK ||
        (st = h->partial.alloc((size_t)h->sum_blocks * entries, "per-block sums")) != PC_OK ||
        (st = h->out.alloc(words, "pass sums")) != PC_OK ||
        (st = h->bins.alloc(TOP_BINS + NEXT_BINS + 1, "distance bins")) != PC_OK ||
        (st = h->centres.alloc(k * dim, "centres")) != PC_OK ||
        (st = h->far_dist.alloc(h->room, "farthest points")) != PC_OK ||
        (st = h->far_label.alloc(h->room, "farthest points")) != PC_OK ||
        (st = h->far_x.alloc(h->room * dim, "farthest points")) != PC_OK)
        return st;
    PC_CUDA_TRY(cudaMallocHost((void **)&h->host_out, words * sizeof(unsigned long long)), "k-means stream: pinned sums");
    PC_CUDA_TRY(cudaMallocHost((void **)&h->host_bins, (TOP_BINS + NEXT_BINS + 1) * sizeof(unsigned)),
                "k-means stream: pinned bins");
    PC_CUDA_TRY(cudaMallocHost((void **)&h->host_far_dist, h->room * sizeof(double)), "k-means stream: pinned "
                "candidates");
    PC_CUDA_TRY(cudaMallocHost((void **)&h->host_far_label, h->room * sizeof(int32_t)), "k-means stream: pinned "
                "candidates");
    PC_CUDA_TRY(cudaMallocHost((void **)&h->host_far_x, h->room * dim * sizeof(float)), "k-means stream: pinned "
                "candidates");
    return PC_OK;
}

} // namespace

extern "C" void pc__km_held_free(pc__km_held *h)
{
    if (!h)
        return;
    if (h->stream) {
        cudaStreamSynchronize(h->stream);
        cudaStreamDestroy(h->stream);
    }
    void *pinned[] = {h->host_out, h->host_bins, h->host_far_dist, h->host_far_label, h->host_far_x};
    for (void *p : pinned)
        if (p)
            cudaFreeHost(p);
    delete h;
}

extern "C" pc_status pc__km_held_create(size_t n, size_t dim, size_t k, pc__km_held **out)
{
    *out = nullptr;
    if (n > (size_t)INT32_MAX || n * dim > ((size_t)1 << 40))
        return pc__fail(PC_UNSUPPORTED, "k-means stream: a held block of %zu rows is more than the GPU pass takes", n);
    pc__km_held *h = new (std::nothrow) pc__km_held;
    if (!h)
        return pc__fail(PC_OUT_OF_MEMORY, "k-means stream: held block state");
    h->n = n;
    h->dim = dim;
    h->k = k;
    // Candidates: never more than the rows; the spare for ties within 256 MiB of rows.
    const size_t spare = std::max<size_t>(1, std::min<size_t>(SPARE_FAR, ((size_t)256 << 20) / (dim * sizeof(float))));
    h->room = std::min(n, (k - 1) + spare);
    int device = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&h->sms, cudaDevAttrMultiProcessorCount, device);
    h->grid = (int)std::min<size_t>(std::max<size_t>(1, (n + THREADS - 1) / THREADS), 8 * (size_t)h->sms);
    pc_status st = allocate(h);
    if (st != PC_OK) {
        pc__km_held_free(h);
        return st;
    }
    *out = h;
    return PC_OK;
}

extern "C" pc_status pc__km_held_rows(pc__km_held *h, size_t begin, const float *x, size_t m)
{
    if (begin > h->n || m > h->n - begin)
        return pc__fail(PC_INTERNAL_ERROR, "k-means stream: held rows %zu + %zu of %zu", begin, m, h->n);
    // Synchronous: the caller reuses its buffer at once.
    PC_CUDA_TRY(cudaMemcpyAsync(h->x.ptr + begin * h->dim, x, m * h->dim * sizeof(float), cudaMemcpyHostToDevice,
                                h->stream),
                "k-means stream: held rows to the GPU");
    PC_CUDA_TRY(cudaStreamSynchronize(h->stream), "k-means stream: held rows to the GPU");
    return PC_OK;
}

namespace {

pc_status load_centres(pc__km_held *h, const float *ct, const float *cc, size_t kpad, const float *centres,
                       uint64_t version)
{
    if (h->loaded && h->version == version && h->kpad == kpad)
        return PC_OK;
    pc_status st;
    if (h->kpad != kpad) {
        if ((st = h->ct.alloc(h->dim * kpad, "k-means stream centres")) != PC_OK ||
            (st = h->cc.alloc(kpad, "k-means stream centre norms")) != PC_OK)
            return st;
        h->kpad = kpad;
    }
    PC_CUDA_TRY(cudaMemcpyAsync(h->ct.ptr, ct, h->dim * kpad * sizeof(float), cudaMemcpyHostToDevice, h->stream),
                "k-means stream: centres to the GPU");
    PC_CUDA_TRY(cudaMemcpyAsync(h->cc.ptr, cc, kpad * sizeof(float), cudaMemcpyHostToDevice, h->stream),
                "k-means stream: centre norms to the GPU");
    PC_CUDA_TRY(cudaMemcpyAsync(h->centres.ptr, centres, h->k * h->dim * sizeof(float), cudaMemcpyHostToDevice,
                                h->stream),
                "k-means stream: centres to the GPU");
    h->version = version;
    h->loaded = true;
    return PC_OK;
}

// The top 24 bits every row that may be among the `want` farthest reaches; *count: the rows that
// reach them. Two waits for the histograms.
pc_status far_floor(pc__km_held *h, size_t want, unsigned *floor, size_t *count)
{
    const int n = (int)h->n;
    unsigned *top = h->bins.ptr, *next = top + TOP_BINS;
    PC_CUDA_TRY(cudaMemcpyAsync(h->host_bins, top, TOP_BINS * sizeof(unsigned), cudaMemcpyDeviceToHost, h->stream),
                "k-means stream: distance bins from the GPU");
    PC_CUDA_TRY(cudaStreamSynchronize(h->stream), "k-means stream: pass kernels");
    size_t above = 0;
    int bin = TOP_BINS - 1;
    while (bin > 0 && above + h->host_bins[bin] < want)
        above += h->host_bins[bin--];
    next_bins_kernel<<<h->grid, THREADS, 0, h->stream>>>(h->dist.ptr, n, (unsigned)bin, next);
    PC_CUDA_LAUNCHED("k-means stream: distance bins kernel");
    PC_CUDA_TRY(cudaMemcpyAsync(h->host_bins, next, NEXT_BINS * sizeof(unsigned), cudaMemcpyDeviceToHost, h->stream),
                "k-means stream: distance bins from the GPU");
    PC_CUDA_TRY(cudaStreamSynchronize(h->stream), "k-means stream: distance bins kernel");
    int sub = NEXT_BINS - 1;
    while (sub > 0 && above + h->host_bins[sub] < want)
        above += h->host_bins[sub--];
    *floor = (unsigned)bin << 12 | (unsigned)sub;
    *count = above + h->host_bins[sub];
    return PC_OK;
}

} // namespace

extern "C" pc_status pc__km_held_pass_run(pc__km_held *h, const float *ct, const float *cc, size_t kpad,
                                          const float *centres, uint64_t version, float scale, int first_pass,
                                          pc__km_held_pass *out)
{
    std::lock_guard<std::mutex> guard(h->lock);
    memset(out, 0, sizeof *out);
    const int n = (int)h->n, dim = (int)h->dim, k = (int)h->k;
    const size_t entries = h->k * (h->dim + 1), words = entries + BUCKETS + 2 * h->dim;
    unsigned long long *totals = h->out.ptr, *inertia = totals + entries, *squares = inertia + BUCKETS;
    pc_status st = load_centres(h, ct, cc, kpad, centres, version);
    if (st != PC_OK)
        return st;
    PC_CUDA_TRY(cudaMemsetAsync(h->out.ptr, 0, words * sizeof(unsigned long long), h->stream), "cudaMemset");
    PC_CUDA_TRY(cudaMemsetAsync(h->bins.ptr, 0, (TOP_BINS + NEXT_BINS + 1) * sizeof(unsigned), h->stream),
                "cudaMemset");
    pc__km_stream_nearest(h->x.ptr, h->n, dim, k, (int)kpad, h->ct.ptr, h->cc.ptr, h->labels.ptr, h->sms, h->stream);
    PC_CUDA_LAUNCHED("k-means stream: nearest-centre kernel");
    if ((st = pc__km_fixed_sums(h->x.ptr, n, dim, k, h->labels.ptr, scale, h->sum_blocks, h->partial.ptr, totals,
                                h->stream)) != PC_OK)
        return st;
    distance_kernel<<<h->grid, THREADS, 0, h->stream>>>(h->x.ptr, n, dim, h->centres.ptr, h->labels.ptr, h->dist.ptr,
                                                        inertia, h->bins.ptr);
    PC_CUDA_LAUNCHED("k-means stream: distance kernel");
    if (first_pass) {
        const int grid = std::max(h->grid, (dim + THREADS - 1) / THREADS); // at least a thread a dimension
        squares_kernel<<<grid, THREADS, 0, h->stream>>>(h->x.ptr, h->n * h->dim, dim, scale, squares);
        PC_CUDA_LAUNCHED("k-means stream: squares kernel");
    }
    // The candidates for the k - 1 farthest points (all the rows when there are no more).
    const size_t want = h->k - 1 < h->n ? h->k - 1 : h->n;
    unsigned floor = 0;
    size_t count = want == 0 ? 0 : h->n;
    if (want > 0 && want < h->n && (st = far_floor(h, want, &floor, &count)) != PC_OK)
        return st;
    if (count > h->room) {
        out->far = SIZE_MAX;
    } else if (count > 0) {
        unsigned *counter = h->bins.ptr + TOP_BINS + NEXT_BINS;
        gather_kernel<<<h->grid, THREADS, 0, h->stream>>>(h->x.ptr, n, dim, h->dist.ptr, h->labels.ptr, floor,
                                                          (unsigned)h->room, counter, h->far_dist.ptr,
                                                          h->far_label.ptr, h->far_x.ptr);
        PC_CUDA_LAUNCHED("k-means stream: farthest points kernel");
        PC_CUDA_TRY(cudaMemcpyAsync(h->host_far_dist, h->far_dist.ptr, count * sizeof(double), cudaMemcpyDeviceToHost,
                                    h->stream),
                    "k-means stream: farthest points from the GPU");
        PC_CUDA_TRY(cudaMemcpyAsync(h->host_far_label, h->far_label.ptr, count * sizeof(int32_t),
                                    cudaMemcpyDeviceToHost, h->stream),
                    "k-means stream: farthest points from the GPU");
        PC_CUDA_TRY(cudaMemcpyAsync(h->host_far_x, h->far_x.ptr, count * h->dim * sizeof(float),
                                    cudaMemcpyDeviceToHost, h->stream),
                    "k-means stream: farthest points from the GPU");
        out->far = count;
    }
    PC_CUDA_TRY(cudaMemcpyAsync(h->host_out, h->out.ptr, words * sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                                h->stream),
                "k-means stream: sums from the GPU");
    PC_CUDA_TRY(cudaStreamSynchronize(h->stream), "k-means stream: held pass");
    out->totals = (const int64_t *)h->host_out;
    out->inertia = (const uint64_t *)(h->host_out + entries);
    out->squares = (const uint64_t *)(h->host_out + entries + BUCKETS);
    out->far_dist = h->host_far_dist;
    out->far_label = h->host_far_label;
    out->far_x = h->host_far_x;
    return PC_OK;
}

extern "C" pc_status pc__km_held_labels(pc__km_held *h, const float *ct, const float *cc, size_t kpad,
                                        const float *centres, uint64_t version, int32_t *labels)
{
    std::lock_guard<std::mutex> guard(h->lock);
    pc_status st = load_centres(h, ct, cc, kpad, centres, version);
    if (st != PC_OK)
        return st;
    pc__km_stream_nearest(h->x.ptr, h->n, (int)h->dim, (int)h->k, (int)kpad, h->ct.ptr, h->cc.ptr, h->labels.ptr,
                          h->sms, h->stream);
    PC_CUDA_LAUNCHED("k-means stream: nearest-centre kernel");
    PC_CUDA_TRY(cudaMemcpyAsync(labels, h->labels.ptr, h->n * sizeof(int32_t), cudaMemcpyDeviceToHost, h->stream),
                "k-means stream: labels from the GPU");
    PC_CUDA_TRY(cudaStreamSynchronize(h->stream), "k-means stream: held labels");
    return PC_OK;
}
