// The CUDA backend under pc_hca_stream (src/hca/stream.c): the box, the counting and the labelling of
// host blocks on the GPU, with the plan's kernels (cuda_points.cu) and copies (cuda.cu). The truth of
// the histogram is the host's, in int64: the device counts in int32 (m^d counters, or a hash of the
// non-empty cells) and hands its counts to the host, a "fold", before the points counted since the last
// fold could overflow a counter or fill the hash, and whenever the host reads the histogram. So the
// histogram, merges and exported histograms stay plain host arrays, and totals may pass 2^31 points.
// Blocks larger than the piece buffer go through it in pieces. The cells come out as the CPU's: floats
// by the same double arithmetic, integer bands through tables of the CPU's own cell rule. A dense fold
// hands the cells over by increasing key, which the host merges into its list of cells. The finish
// reads the host's histogram: its component graph may be made here, by the plan's kernels over the
// histogram's cells (cuda_cells.cu), the dendrogram and cut are the host's; the cell-to-cluster map is
// put on the device once, by the first label call after it. Every call holds the state's mutex: labelling from
// several threads takes turns on the GPU (one stream, one piece buffer, one staging area).
#include "cuda_compact.cuh"

#include <math.h>
#include <mutex>
#include <new>
#include <stdlib.h>
#include <string.h>

namespace {

constexpr size_t MIN_PIECE_ROWS = 4096;
// Rows of a piece at most: copies and launches of 2^25 rows are far past their fixed costs, and the
// buffers stay a small part of a large card (the plan, which knows its n, takes what it needs).
constexpr size_t PIECE_CAP = (size_t)1 << 25;
constexpr size_t DEVICE_RESERVE = (size_t)512 << 20;
constexpr uint64_t HASH_MIN = 1024;
constexpr int THREADS = 256;
constexpr size_t NON_FINITE = 2 * PC__HCA_MAX_DIM; // scalars: lo bits, hi bits, this count, the gathered count
constexpr size_t GATHERED = 2 * PC__HCA_MAX_DIM + 1;

unsigned blocks_for(uint64_t n, int sms)
{
    uint64_t blocks = (n + THREADS - 1) / THREADS, most = 8 * (uint64_t)(sms > 0 ? sms : 1);
    return (unsigned)(blocks < 1 ? 1 : blocks < most ? blocks : most);
}

// The used slots of the counts' hash, packed in no particular order (the host adds them up).
__global__ void gather_kernel(const uint64_t *hash_key, const int32_t *hash_val, uint64_t capacity, uint64_t *keys,
                              int32_t *counts, unsigned long long *used)
{
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < capacity; i += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t key = hash_key[i];
        if (key != PC__HCA_EMPTY_KEY) {
            unsigned long long at = atomicAdd(used, 1ull);
            keys[at] = key;
            counts[at] = hash_val[i];
        }
    }
}

// The non-zero counters of a dense grid's range of slots, packed by increasing key (an order-preserving
// compaction): a fold moves the non-empty cells (thousands) instead of every counter (m^dim, a million
// at 4 bands), and the host merges them into its list of cells rather than listing its m^dim counts.
struct counted {
    const int32_t *slot;
    __device__ bool operator()(size_t i) const { return slot[i] != 0; }
};
struct counted_emit {
    const int32_t *slot;
    uint64_t first;
    uint64_t *keys;
    int32_t *counts;
    __device__ void operator()(size_t i, bool kept, int at) const
    {
        if (kept) {
            keys[at] = first + i;
            counts[at] = slot[i];
        }
    }
};

// A dense grid's cells entered: slot[key] = value (the cell's cluster, or with values null its number;
// every slot was set to -1 before).
__global__ void enter_dense_kernel(int32_t *slot, const uint64_t *keys, const int32_t *values, size_t cells)
{
    for (size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x; c < cells; c += (size_t)gridDim.x * blockDim.x)
        slot[keys[c]] = values ? values[c] : (int32_t)c;
}

// A sparse grid's cells entered: the (distinct) keys put into the emptied hash with their values.
__global__ void enter_hash_kernel(uint64_t *hash_key, int32_t *hash_val, uint64_t mask, const uint64_t *keys,
                                  const int32_t *values, size_t cells)
{
    for (size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x; c < cells; c += (size_t)gridDim.x * blockDim.x) {
        uint64_t key = keys[c], s = pc__hca_mix(key) & mask;
        while (atomicCAS((unsigned long long *)&hash_key[s], PC__HCA_EMPTY_KEY, key) != PC__HCA_EMPTY_KEY)
            s = (s + 1) & mask;
        hash_val[s] = values ? values[c] : (int32_t)c;
    }
}

} // namespace

struct pc__hca_stream_gpu {
    // The stream, the staging buffers and the device buffers: data and labels hold a piece; slot (dense)
    // or hash_key/hash_val (sparse) the counts, then the map; key/density the gathered sparse counts,
    // then the map's upload; scalars the bounds, the non-finite count and the gathered count.
    pc__hca_gpu g;
    size_t piece_rows;  // rows of g.labels
    size_t piece_bytes; // bytes of g.data: piece_rows rows of float32 (float64 rows go half as many)
    uint64_t fold_rows; // a fold comes first when the pending points would exceed this
    uint64_t pending;   // points counted on the device since the last fold
    pc__hca_binning bin_float, bin_u8, bin_u16;
    bool started, mapped;
    size_t device_memory; // params->device_memory (0: what is free)
    // A held block (pc_hca_stream_hold): its rows on the GPU, read in place of the host's by every
    // call that passes the stream's view of it (held_view): the copy `held` (rows packed), or the
    // caller's own device memory (pc_hca_stream_hold_device; rows held_stride bytes apart, not ours).
    const pc_points *held_view;
    pc__device_buffer<unsigned char> held;
    const unsigned char *held_rows;
    size_t held_stride;
    std::mutex lock;
};

namespace {

pc__hca_point_pass pass_of(const pc__hca_stream_gpu &s) { return {s.g.sms, s.g.stream, (size_t)s.g.shared_optin}; }

const pc__hca_binning &binning(const pc__hca_stream_gpu &s, pc_dtype t)
{
    return t == PC_U8 ? s.bin_u8 : t == PC_U16 ? s.bin_u16 : s.bin_float;
}

// Rows of the block that one piece holds.
size_t piece_of(const pc__hca_stream_gpu &s, const pc_points *b)
{
    size_t rows = s.piece_bytes / (b->dim * pc__hca_element_size(b->dtype));
    rows = rows < s.piece_rows ? rows : s.piece_rows;
    return rows ? rows : 1;
}

bool is_held(const pc__hca_stream_gpu &s, const pc_points *b) { return b == s.held_view && s.held_rows; }

void forget_held(pc__hca_stream_gpu &s)
{
    s.held.release();
    s.held_view = nullptr;
    s.held_rows = nullptr;
}

// The block's rows [off, off + count) packed into the piece buffer (a held block's are on the GPU
// already: read where they are, the copy's or the caller's).
pc_status load(pc__hca_stream_gpu &s, const pc_points *b, size_t off, size_t count, pc__hca_rows *rows)
{
    size_t rowbytes = b->dim * pc__hca_element_size(b->dtype), stride = b->stride ? b->stride : rowbytes;
    if (is_held(s, b)) {
        *rows = {s.held_rows + off * s.held_stride, count, s.held_stride, (int)b->dim, b->dtype};
        return PC_OK;
    }
    *rows = {s.g.data.ptr, count, rowbytes, (int)b->dim, b->dtype};
    return pc__hca_load_rows(s.g, (const unsigned char *)b->data + off * stride, stride, rowbytes, count);
}

pc_status reset_bounds(pc__hca_stream_gpu &s)
{
    unsigned long long *w = s.g.scalars.ptr;
    PC_CUDA_TRY(cudaMemsetAsync(w, 0xff, PC__HCA_MAX_DIM * sizeof *w, s.g.stream), "HCA stream: bounds");
    PC_CUDA_TRY(cudaMemsetAsync(w + PC__HCA_MAX_DIM, 0, (PC__HCA_MAX_DIM + 1) * sizeof *w, s.g.stream),
                "HCA stream: bounds");
    return PC_OK;
}

pc_status add_bounds(pc__hca_stream_gpu &s, const pc__hca_rows &rows)
{
    unsigned long long *w = s.g.scalars.ptr;
    return pc__hca_cuda_bounds(rows, w, w + PC__HCA_MAX_DIM, w + NON_FINITE, pass_of(s));
}

// The bounds' words (order-preserving bits of the minima and maxima, then the non-finite count).
pc_status read_bounds(pc__hca_stream_gpu &s, unsigned long long *host)
{
    PC_CUDA_TRY(cudaMemcpyAsync(host, s.g.scalars.ptr, (NON_FINITE + 1) * sizeof *host, cudaMemcpyDeviceToHost,
                                s.g.stream),
                "HCA stream: bounds");
    return pc__cuda_status(cudaStreamSynchronize(s.g.stream), "HCA stream: bounds");
}

pc_status refuse(const char *call, unsigned long long bad)
{
    return pc__fail(PC_INVALID_ARGUMENT,
                    "%s: %llu non-finite value(s) (NaN or infinity, or float64 beyond float range) in the block", call,
                    bad);
}

// Values are checked before a block changes anything: a block of one piece on the GPU as it is read (the
// bounds kernel counts what is not finite), one of several pieces on the host first (pieces already
// counted or labelled could not be taken back), a held block's once, when it is held. Integers are
// always finite.
bool checked_on_host(const pc__hca_stream_gpu &s, const pc_points *b, size_t per)
{
    return (b->dtype == PC_F32 || b->dtype == PC_F64) && b->n > per && !is_held(s, b);
}
bool checked_on_device(const pc__hca_stream_gpu &s, const pc_points *b, size_t per)
{
    return (b->dtype == PC_F32 || b->dtype == PC_F64) && b->n <= per && !is_held(s, b);
}

// The gathered cells (keys and counts in device memory, `used` of them as counted in the scalars)
// handed to the sink a chunk at a time.
pc_status hand_over(pc__hca_stream_gpu &s, const pc__hca_fold_sink *sink, const uint64_t *keys, const int32_t *counts,
                    size_t used, unsigned char *key_chunk, unsigned char *count_chunk)
{
    pc__hca_gpu &g = s.g;
    // Should the host have no room, the device keeps its counts: nothing is lost.
    pc_status st = sink->reserve(sink->ctx, (size_t)used);
    if (st != PC_OK)
        return st;
    const size_t per = PC__HCA_STAGE_BYTES / sizeof(uint64_t);
    for (size_t first = 0; first < used; first += per) {
        size_t n = used - first < per ? (size_t)(used - first) : per;
        PC_CUDA_TRY(cudaMemcpyAsync(key_chunk, keys + first, n * sizeof(uint64_t), cudaMemcpyDeviceToHost, g.stream),
                    "HCA stream: counts to the host");
        PC_CUDA_TRY(cudaMemcpyAsync(count_chunk, counts + first, n * sizeof(int32_t), cudaMemcpyDeviceToHost, g.stream),
                    "HCA stream: counts to the host");
        PC_CUDA_TRY(cudaStreamSynchronize(g.stream), "HCA stream: counts to the host");
        sink->add(sink->ctx, 0, (const uint64_t *)key_chunk, (const int32_t *)count_chunk, n);
    }
    return PC_OK;
}

// A range of slots has no more non-empty cells than slots: ranges as long as the piece buffers (idle
// during a fold; the last piece's kernel is ahead on the same stream) gather into them, within the
// device memory the state was sized to.
pc_status fold_dense(pc__hca_stream_gpu &s, const pc__hca_fold_sink *sink, unsigned char *key_chunk,
                     unsigned char *count_chunk)
{
    pc__hca_gpu &g = s.g;
    uint64_t *keys = (uint64_t *)g.data.ptr;
    int32_t *counts = g.labels.ptr;
    uint64_t range = s.piece_bytes / sizeof(uint64_t) < s.piece_rows ? s.piece_bytes / sizeof(uint64_t) : s.piece_rows;
    pc_status st;
    for (uint64_t first = 0; first < g.total; first += range) {
        uint64_t n = g.total - first < range ? g.total - first : range;
        size_t used = 0;
        if ((st = pc__hca_cells::compact(g, (size_t)n, counted{g.slot.ptr + first},
                                         counted_emit{g.slot.ptr + first, first, keys, counts}, &used)) != PC_OK ||
            (st = hand_over(s, sink, keys, counts, used, key_chunk, count_chunk)) != PC_OK)
            return st;
    }
    PC_CUDA_TRY(cudaMemsetAsync(g.slot.ptr, 0, g.total * sizeof(int32_t), g.stream), "HCA stream: counts");
    return PC_OK;
}

pc_status fold_sparse(pc__hca_stream_gpu &s, const pc__hca_fold_sink *sink, unsigned char *key_chunk,
                      unsigned char *count_chunk)
{
    pc__hca_gpu &g = s.g;
    PC_CUDA_TRY(cudaMemsetAsync(g.scalars.ptr + GATHERED, 0, sizeof(unsigned long long), g.stream),
                "HCA stream: gathering the counts");
    gather_kernel<<<blocks_for(g.hash_mask + 1, g.sms), THREADS, 0, g.stream>>>(g.hash_key.ptr, g.hash_val.ptr,
                                                                              g.hash_mask + 1, g.key.ptr,
                                                                              g.density.ptr, g.scalars.ptr + GATHERED);
    PC_CUDA_LAUNCHED("HCA stream: gathering the counts");
    unsigned long long used = 0;
    PC_CUDA_TRY(cudaMemcpyAsync(&used, g.scalars.ptr + GATHERED, sizeof used, cudaMemcpyDeviceToHost, g.stream),
                "HCA stream: gathering the counts");
    PC_CUDA_TRY(cudaStreamSynchronize(g.stream), "HCA stream: gathering the counts");
    pc_status st = hand_over(s, sink, g.key.ptr, g.density.ptr, (size_t)used, key_chunk, count_chunk);
    if (st != PC_OK)
        return st;
    PC_CUDA_TRY(cudaMemsetAsync(g.hash_key.ptr, 0xff, (g.hash_mask + 1) * sizeof(uint64_t), g.stream),
                "HCA stream: counts");
    PC_CUDA_TRY(cudaMemsetAsync(g.hash_val.ptr, 0, (g.hash_mask + 1) * sizeof(int32_t), g.stream), "HCA stream: counts");
    return PC_OK;
}

pc_status fold(pc__hca_stream_gpu &s, const pc__hca_fold_sink *sink)
{
    if (s.pending == 0)
        return PC_OK;
    // Host chunks: the pinned staging buffers where a copy made them (idle between calls), else ordinary
    // memory (the gathered cells are few: not worth pinning buffers for them).
    unsigned char *a, *b, *owned = nullptr;
    if (s.g.staging[0] && s.g.staging[1]) {
        a = s.g.staging[0];
        b = s.g.staging[1];
    } else {
        owned = (unsigned char *)pc__alloc(2, PC__HCA_STAGE_BYTES, "HCA stream: fold buffers");
        if (!owned)
            return PC_OUT_OF_MEMORY;
        a = owned;
        b = owned + PC__HCA_STAGE_BYTES;
    }
    pc_status st = s.g.dense ? fold_dense(s, sink, a, b) : fold_sparse(s, sink, a, b);
    if (st == PC_OK)
        st = pc__cuda_status(cudaStreamSynchronize(s.g.stream), "HCA stream: counts");
    free(owned);
    if (st == PC_OK)
        s.pending = 0;
    return st;
}

// The cells (g.key[0..cells), after the finish) entered in the counts' place, none coming after it:
// the dense array maps every key (-1 where no cell is), the hash every cell's key; each to values[c]
// (device memory) or, with values null, to c.
pc_status enter_cells(pc__hca_stream_gpu &s, size_t cells, const int32_t *values)
{
    pc__hca_gpu &g = s.g;
    if (g.dense) {
        PC_CUDA_TRY(cudaMemsetAsync(g.slot.ptr, 0xff, g.total * sizeof(int32_t), g.stream), "HCA stream: cells");
        if (cells)
            enter_dense_kernel<<<blocks_for(cells, g.sms), THREADS, 0, g.stream>>>(g.slot.ptr, g.key.ptr, values, cells);
    } else {
        uint64_t capacity = HASH_MIN;
        while (capacity < 2 * (uint64_t)cells)
            capacity *= 2;
        if (capacity > g.hash_mask + 1) {
            g.hash_key.release();
            g.hash_val.release();
            pc_status st;
            if ((st = g.hash_key.alloc((size_t)capacity, "HCA stream: cells")) != PC_OK ||
                (st = g.hash_val.alloc((size_t)capacity, "HCA stream: cells")) != PC_OK)
                return st;
            g.hash_mask = capacity - 1;
        }
        PC_CUDA_TRY(cudaMemsetAsync(g.hash_key.ptr, 0xff, (g.hash_mask + 1) * sizeof(uint64_t), g.stream),
                    "HCA stream: cells");
        if (cells)
            enter_hash_kernel<<<blocks_for(cells, g.sms), THREADS, 0, g.stream>>>(g.hash_key.ptr, g.hash_val.ptr,
                                                                                 g.hash_mask, g.key.ptr, values, cells);
    }
    PC_CUDA_LAUNCHED("HCA stream: cells");
    return PC_OK;
}

// The cells' keys to g.key and their int32 values to g.density (a cluster or a count a cell).
pc_status upload_cells(pc__hca_gpu &g, size_t cells, const uint64_t *keys, const int32_t *values)
{
    pc_status st;
    if ((st = pc__hca_grow(g.key, cells, "HCA stream: cells")) != PC_OK ||
        (st = pc__hca_grow(g.density, cells, "HCA stream: cells")) != PC_OK)
        return st;
    if (cells) {
        PC_CUDA_TRY(cudaMemcpyAsync(g.key.ptr, keys, cells * sizeof *keys, cudaMemcpyHostToDevice, g.stream),
                    "HCA stream: cells");
        PC_CUDA_TRY(cudaMemcpyAsync(g.density.ptr, values, cells * sizeof *values, cudaMemcpyHostToDevice, g.stream),
                    "HCA stream: cells");
    }
    return PC_OK;
}

// The cell-to-cluster map on the device, in the counts' place.
pc_status put_map(pc__hca_stream_gpu &s, size_t cells, const uint64_t *keys, const int32_t *clusters)
{
    pc__hca_gpu &g = s.g;
    pc_status st;
    if ((st = upload_cells(g, cells, keys, clusters)) != PC_OK || (st = enter_cells(s, cells, g.density.ptr)) != PC_OK)
        return st;
    PC_CUDA_TRY(cudaStreamSynchronize(g.stream), "HCA stream: cell map");
    g.key.release();
    g.density.release();
    return PC_OK;
}

} // namespace

pc_status pc__hca_stream_gpu_new(const pc_hca_params *params, size_t dim, int dense_allowed, pc__hca_stream_gpu **out)
{
    *out = nullptr;
    pc__hca_stream_gpu *s = new (std::nothrow) pc__hca_stream_gpu();
    if (!s)
        return pc__fail(PC_OUT_OF_MEMORY, "HCA stream: cannot allocate the GPU state");
    pc__hca_gpu &g = s->g;
    g.dim = dim;
    g.m = params->m;
    g.total = 1;
    for (size_t j = 0; j < dim; j++) // the caller has checked that m^dim fits 64-bit keys
        g.total *= (uint64_t)params->m;
    size_t free_bytes = 0, total_bytes = 0;
    pc_status st = pc__hca_gpu_open(g);
    if (st == PC_OK)
        st = pc__cuda_status(cudaMemGetInfo(&free_bytes, &total_bytes), "HCA: querying GPU memory");
    if (st != PC_OK) {
        pc__hca_stream_gpu_free(s);
        return st;
    }
    size_t budget = params->device_memory ? params->device_memory
                                          : (free_bytes > DEVICE_RESERVE ? free_bytes - DEVICE_RESERVE : 0);
    s->device_memory = params->device_memory;
    size_t table_bytes = dim * (256 + 65536) * sizeof(uint16_t);
    // The counts: m^d counters where the host's histogram is dense and they take half the budget at
    // most; else a hash with room for twice the cells one fold can bring (12 bytes a slot, and 12 for
    // each gathered cell, half the slots at most).
    g.dense = dense_allowed && g.total <= (uint64_t)INT32_MAX && g.total * sizeof(int32_t) <= budget / 2;
    uint64_t capacity = 0;
    size_t grid_bytes;
    if (g.dense)
        grid_bytes = (size_t)g.total * sizeof(int32_t);
    else {
        uint64_t most = g.total < PIECE_CAP ? g.total : PIECE_CAP;
        capacity = HASH_MIN;
        while (capacity < 2 * most)
            capacity *= 2;
        while (capacity > 2 * MIN_PIECE_ROWS && capacity * 18 > budget / 2)
            capacity /= 2;
        grid_bytes = (size_t)capacity * 18;
    }
    size_t per_row = dim * sizeof(float) + sizeof(int32_t), fixed = grid_bytes + table_bytes;
    size_t rows = budget > fixed ? (budget - fixed) / per_row : 0;
    rows = (rows < PIECE_CAP ? rows : PIECE_CAP) / 32 * 32;
    if (rows < MIN_PIECE_ROWS) {
        pc__hca_stream_gpu_free(s);
        return pc__fail(PC_DEVICE_OUT_OF_MEMORY,
                        "HCA stream on the GPU needs %zu MiB for its counts and a piece of %zu rows; %zu MiB may be "
                        "used (%zu MiB free)",
                        (fixed + MIN_PIECE_ROWS * per_row) >> 20, MIN_PIECE_ROWS, budget >> 20, free_bytes >> 20);
    }
    s->piece_rows = rows;
    s->piece_bytes = rows * dim * sizeof(float);
    // A dense counter and a hash slot hold at most the points pending; a hash over more cells than half
    // its slots is emptied before it could fill.
    s->fold_rows = INT32_MAX;
    if (!g.dense && g.total > capacity / 2)
        s->fold_rows = capacity / 2;
    if (g.dense)
        st = g.slot.alloc((size_t)g.total, "HCA stream: counts");
    else {
        g.hash_mask = capacity - 1;
        st = g.hash_key.alloc((size_t)capacity, "HCA stream: counts");
        if (st == PC_OK)
            st = g.hash_val.alloc((size_t)capacity, "HCA stream: counts");
        if (st == PC_OK)
            st = g.key.alloc((size_t)capacity / 2, "HCA stream: gathered counts");
        if (st == PC_OK)
            st = g.density.alloc((size_t)capacity / 2, "HCA stream: gathered counts");
    }
    if (st == PC_OK)
        st = g.table.alloc(table_bytes / sizeof(uint16_t), "HCA cell tables");
    if (st == PC_OK)
        st = g.scalars.alloc(GATHERED + 1, "HCA counters");
    if (st == PC_OK)
        st = g.data.alloc(s->piece_bytes, "HCA points");
    if (st == PC_OK)
        st = g.labels.alloc(s->piece_rows, "HCA labels");
    if (st == PC_OK && g.dense)
        st = pc__cuda_status(cudaMemsetAsync(g.slot.ptr, 0, g.total * sizeof(int32_t), g.stream), "HCA stream: counts");
    if (st == PC_OK && !g.dense) {
        st = pc__cuda_status(cudaMemsetAsync(g.hash_key.ptr, 0xff, capacity * sizeof(uint64_t), g.stream),
                             "HCA stream: counts");
        if (st == PC_OK)
            st = pc__cuda_status(cudaMemsetAsync(g.hash_val.ptr, 0, capacity * sizeof(int32_t), g.stream),
                                 "HCA stream: counts");
    }
    if (st == PC_OK)
        st = pc__cuda_status(cudaStreamSynchronize(g.stream), "HCA stream: counts");
    if (st != PC_OK) {
        pc__hca_stream_gpu_free(s);
        return st;
    }
    *out = s;
    return PC_OK;
}

void pc__hca_stream_gpu_free(pc__hca_stream_gpu *s) { pc__hca_free_state(s); }

void pc__hca_stream_gpu_fold_every(pc__hca_stream_gpu *s, uint64_t rows)
{
    std::lock_guard<std::mutex> hold(s->lock);
    rows = rows ? rows : 1;
    if (rows < s->fold_rows)
        s->fold_rows = rows;
    if (rows < s->piece_rows)
        s->piece_rows = (size_t)rows;
}

namespace {

// The bounds' words of a whole block; its non-finite values refused for `call`.
pc_status block_bounds(pc__hca_stream_gpu &s, const pc_points *block, const char *call, unsigned long long *host)
{
    size_t per = piece_of(s, block);
    pc_status st = reset_bounds(s);
    for (size_t off = 0; st == PC_OK && off < block->n; off += per) {
        pc__hca_rows rows;
        size_t count = block->n - off < per ? block->n - off : per;
        if ((st = load(s, block, off, count, &rows)) == PC_OK)
            st = add_bounds(s, rows);
    }
    if (st != PC_OK || (st = read_bounds(s, host)) != PC_OK)
        return st;
    return host[NON_FINITE] ? refuse(call, host[NON_FINITE]) : PC_OK;
}

} // namespace

namespace {

// The caller's rows copied to the GPU (packed: strided rows a piece at a time through the piece buffer).
pc_status copy_held(pc__hca_stream_gpu &s, const pc_points *view)
{
    size_t rowbytes = view->dim * pc__hca_element_size(view->dtype);
    size_t stride = view->stride ? view->stride : rowbytes;
    size_t bytes = view->n * rowbytes, free_bytes = 0, total = 0;
    PC_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total), "HCA stream: the GPU's free memory");
    if (bytes > free_bytes || free_bytes - bytes < DEVICE_RESERVE)
        return pc__fail(PC_DEVICE_OUT_OF_MEMORY, "HCA stream: a held block of %zu MiB does not fit the GPU's %zu MiB "
                        "free", bytes >> 20, free_bytes >> 20);
    if (s.device_memory && bytes > s.device_memory) // a caller sharing the card asked for no more
        return pc__fail(PC_DEVICE_OUT_OF_MEMORY, "HCA stream: a held block of %zu MiB is more than the %zu MiB of "
                        "device_memory", bytes >> 20, s.device_memory >> 20);
    pc_status st = s.held.alloc(bytes, "HCA stream: held block");
    const unsigned char *src = (const unsigned char *)view->data;
    if (st == PC_OK && stride == rowbytes)
        st = pc__hca_stage_to_device(s.g, s.held.ptr, src, bytes);
    size_t per = piece_of(s, view);
    for (size_t off = 0; st == PC_OK && stride != rowbytes && off < view->n; off += per) {
        size_t count = view->n - off < per ? view->n - off : per;
        if ((st = pc__hca_load_rows(s.g, src + off * stride, stride, rowbytes, count)) == PC_OK)
            st = pc__cuda_status(cudaMemcpyAsync(s.held.ptr + off * rowbytes, s.g.data.ptr, count * rowbytes,
                                                 cudaMemcpyDeviceToDevice, s.g.stream),
                                 "HCA stream: held block");
    }
    if (st == PC_OK)
        st = pc__cuda_status(cudaStreamSynchronize(s.g.stream), "HCA stream: held block");
    s.held_rows = s.held.ptr;
    s.held_stride = rowbytes;
    return st;
}

// The caller's device rows, read where they are (memory of the state's GPU, the current one here).
pc_status adopt_held(pc__hca_stream_gpu &s, const pc_points *view)
{
    pc_status st = pc__hca_check_device_rows(view, nullptr);
    if (st != PC_OK)
        return st;
    size_t rowbytes = view->dim * pc__hca_element_size(view->dtype);
    s.held_rows = (const unsigned char *)view->data;
    s.held_stride = view->stride ? view->stride : rowbytes;
    return PC_OK;
}

} // namespace

pc_status pc__hca_stream_gpu_hold(pc__hca_stream_gpu *s, const pc_points *view, int device_input)
{
    std::lock_guard<std::mutex> hold(s->lock);
    pc__hca_device_scope on(s->g.device);
    pc_status st = device_input ? adopt_held(*s, view) : copy_held(*s, view);
    s->held_view = view;
    unsigned long long host[NON_FINITE + 1];
    if (st == PC_OK && (view->dtype == PC_F32 || view->dtype == PC_F64))
        st = block_bounds(*s, view, "pc_hca_stream_hold", host); // the values' one check
    if (st != PC_OK)
        forget_held(*s);
    return st;
}

pc_status pc__hca_stream_gpu_bound(pc__hca_stream_gpu *s, const pc_points *block, double *lo, double *hi)
{
    std::lock_guard<std::mutex> hold(s->lock);
    pc__hca_device_scope on(s->g.device);
    unsigned long long host[NON_FINITE + 1];
    pc_status st = block_bounds(*s, block, "pc_hca_stream_bound", host);
    if (st != PC_OK)
        return st;
    for (size_t j = 0; j < s->g.dim; j++) {
        lo[j] = fmin(lo[j], pc__hca_from_order_bits(host[j]));
        hi[j] = fmax(hi[j], pc__hca_from_order_bits(host[PC__HCA_MAX_DIM + j]));
    }
    return PC_OK;
}

pc_status pc__hca_stream_gpu_start(pc__hca_stream_gpu *s, const double *lo, const double *hi)
{
    std::lock_guard<std::mutex> hold(s->lock);
    pc__hca_device_scope on(s->g.device);
    size_t dim = s->g.dim;
    pc__hca_binning bin;
    memset(&bin, 0, sizeof bin);
    bin.dim = (int)dim;
    bin.m = s->g.m;
    uint64_t stride = 1;
    for (size_t j = dim; j-- > 0;) {
        bin.stride[j] = stride;
        stride *= (uint64_t)s->g.m;
    }
    for (size_t j = 0; j < dim; j++) {
        bin.lo[j] = lo[j];
        bin.hi[j] = hi[j];
    }
    // Both tables, as a stream's blocks may come in either type: uint8 (dim x 256), then uint16.
    uint16_t *table = (uint16_t *)pc__alloc(dim * (256 + 65536), sizeof(uint16_t), "HCA cell tables");
    if (!table)
        return PC_OUT_OF_MEMORY;
    uint16_t *t8 = table, *t16 = table + dim * 256;
    for (size_t j = 0; j < dim; j++) {
        pc__hca_coordinate_table(lo[j], hi[j], s->g.m, 65536, t16 + j * 65536);
        memcpy(t8 + j * 256, t16 + j * 65536, 256 * sizeof *t8);
    }
    pc_status st = pc__cuda_status(cudaMemcpyAsync(s->g.table.ptr, table, dim * (256 + 65536) * sizeof(uint16_t),
                                                   cudaMemcpyHostToDevice, s->g.stream),
                                   "HCA cell tables");
    if (st == PC_OK)
        st = pc__cuda_status(cudaStreamSynchronize(s->g.stream), "HCA cell tables");
    free(table);
    if (st != PC_OK)
        return st;
    s->bin_float = bin;
    s->bin_u8 = bin;
    s->bin_u8.table = s->g.table.ptr;
    s->bin_u16 = bin;
    s->bin_u16.table = s->g.table.ptr + dim * 256;
    s->started = true;
    return PC_OK;
}

pc_status pc__hca_stream_gpu_add(pc__hca_stream_gpu *s, const pc_points *block, const pc__hca_fold_sink *sink)
{
    std::lock_guard<std::mutex> hold(s->lock);
    pc__hca_device_scope on(s->g.device);
    if (!s->started)
        return pc__fail(PC_INTERNAL_ERROR, "HCA stream: counting on the GPU before the box is there");
    size_t per = piece_of(*s, block);
    per = per < s->fold_rows ? per : (size_t)s->fold_rows;
    pc_status st;
    if (checked_on_host(*s, block, per) && (st = pc_points_check(block)) != PC_OK)
        return st;
    const pc__hca_binning &bin = binning(*s, block->dtype);
    pc__hca_point_pass pass = pass_of(*s);
    for (size_t off = 0; off < block->n; off += per) {
        size_t count = block->n - off < per ? block->n - off : per;
        if (s->pending + count > s->fold_rows && (st = fold(*s, sink)) != PC_OK)
            return st;
        pc__hca_rows rows;
        if ((st = load(*s, block, off, count, &rows)) != PC_OK)
            return st;
        if (checked_on_device(*s, block, per)) {
            unsigned long long host[NON_FINITE + 1];
            if ((st = reset_bounds(*s)) != PC_OK || (st = add_bounds(*s, rows)) != PC_OK ||
                (st = read_bounds(*s, host)) != PC_OK)
                return st;
            if (host[NON_FINITE])
                return refuse("pc_hca_stream_add", host[NON_FINITE]);
        }
        if ((st = pc__hca_cuda_histogram(rows, bin, pc__hca_view(s->g), s->g.total, pass)) != PC_OK)
            return st;
        s->pending += count;
    }
    return pc__cuda_status(cudaStreamSynchronize(s->g.stream), "HCA stream: counting a block");
}

pc_status pc__hca_stream_gpu_fold(pc__hca_stream_gpu *s, const pc__hca_fold_sink *sink)
{
    std::lock_guard<std::mutex> hold(s->lock);
    pc__hca_device_scope on(s->g.device);
    return fold(*s, sink);
}

pc_status pc__hca_stream_gpu_graph(pc__hca_stream_gpu *s, size_t cells, const uint64_t *keys, const int64_t *density,
                                   pc__hca_graph *gr, int *done)
{
    std::lock_guard<std::mutex> hold(s->lock);
    pc__hca_device_scope on(s->g.device);
    *done = 0;
    if (!s->started || s->mapped || cells == 0 || cells > (size_t)INT32_MAX)
        return PC_OK;
    int32_t *narrow = (int32_t *)pc__alloc(cells, sizeof *narrow, "HCA cells");
    if (!narrow)
        return PC_OUT_OF_MEMORY;
    for (size_t c = 0; c < cells; c++) {
        if (density[c] > INT32_MAX) { // the device's densities are int32: the host's graph
            free(narrow);
            return PC_OK;
        }
        narrow[c] = (int32_t)density[c];
    }
    pc__hca_gpu &g = s->g;
    g.bin = s->bin_float; // the neighbours' arithmetic: dim, m and the strides
    size_t components = 0, edges = 0, forest = 0;
    pc_status st;
    if ((st = upload_cells(g, cells, keys, narrow)) == PC_OK && (st = enter_cells(*s, cells, nullptr)) == PC_OK &&
        (st = pc__hca_cuda_components(g, cells, &components)) == PC_OK &&
        (st = pc__hca_cuda_edges(g, cells, components, &edges)) == PC_OK &&
        (st = pc__hca_cuda_spanning_forest(g, components, edges, &forest)) == PC_OK)
        st = pc__hca_fetch_graph(g, cells, components, forest, gr); // synchronises the stream
    if (st != PC_OK)
        cudaStreamSynchronize(g.stream); // no copy from narrow left in flight
    free(narrow);
    // The graph's buffers go (the labels' map takes key and density again; a held block needs the room).
    for (pc__device_buffer<int32_t> *b : {&g.link, &g.root, &g.comp, &g.comp_of_root, &g.representative, &g.edge_value,
                                         &g.parent, &g.best, &g.hook})
        b->release();
    for (pc__device_buffer<uint64_t> *b : {&g.edge_key, &g.edge_ab, &g.edge_ab_sorted, &g.mst_ab})
        b->release();
    for (pc__device_buffer<double> *b : {&g.edge_h, &g.edge_h_sorted, &g.mst_h})
        b->release();
    g.component_size.release();
    g.in_mst.release();
    g.tiles.release();
    g.temp.release();
    *done = st == PC_OK;
    return st;
}

pc_status pc__hca_stream_gpu_label(pc__hca_stream_gpu *s, const pc_points *block, size_t cells, const uint64_t *keys,
                                   const int32_t *cluster_of_cell, size_t k, int32_t *labels, int labels_on_device,
                                   double *sums)
{
    std::lock_guard<std::mutex> hold(s->lock);
    pc__hca_device_scope on(s->g.device);
    pc__hca_gpu &g = s->g;
    pc_status st;
    if (!s->started)
        return pc__fail(PC_INTERNAL_ERROR, "HCA stream: labelling on the GPU before the box is there");
    if (labels_on_device && (st = pc__hca_check_device_rows(block, labels)) != PC_OK)
        return st;
    if (!s->mapped) {
        st = put_map(*s, cells, keys, cluster_of_cell);
        if (st == PC_DEVICE_OUT_OF_MEMORY && s->held.ptr) {
            // The held copy gives way to the map (many cells, rows that filled the card): the rows
            // come from the caller's memory from here on, as without a held copy.
            forget_held(*s);
            pc__clear_error();
            st = put_map(*s, cells, keys, cluster_of_cell);
        }
        if (st != PC_OK)
            return st;
        s->mapped = true;
    }
    size_t dim = g.dim, words = k * (dim + 1), per = piece_of(*s, block);
    // Rows on the GPU labelled into GPU memory need no piece buffer: launches of up to 2^31 - 1 rows (the
    // test hook's fold_rows, lower), whose sums stay far from overflowing 64 bits (floats' 2^30 steps).
    if (labels_on_device && is_held(*s, block))
        per = block->n < s->fold_rows ? (block->n ? block->n : 1) : (size_t)s->fold_rows;
    if ((st = pc__hca_grow(g.sums, words ? words : 1, "HCA cluster sums")) != PC_OK)
        return st;
    if (checked_on_host(*s, block, per) && (st = pc_points_check(block)) != PC_OK)
        return st;
    unsigned long long *raw = nullptr;
    if (sums && !(raw = (unsigned long long *)pc__alloc(words ? words : 1, sizeof *raw, "HCA cluster sums")))
        return PC_OUT_OF_MEMORY;
    bool integer = block->dtype == PC_U8 || block->dtype == PC_U16;
    const pc__hca_binning &bin = binning(*s, block->dtype);
    pc__hca_point_pass pass = pass_of(*s);
    for (size_t off = 0; st == PC_OK && off < block->n; off += per) {
        size_t count = block->n - off < per ? block->n - off : per;
        pc__hca_rows rows;
        pc__hca_scale scale;
        memset(&scale, 0, sizeof scale);
        if ((st = load(*s, block, off, count, &rows)) != PC_OK)
            break;
        if (!integer) {
            // The piece's own box is the fixed point's frame: labelled rows may lie outside the grid's.
            unsigned long long host[NON_FINITE + 1];
            if ((st = reset_bounds(*s)) != PC_OK || (st = add_bounds(*s, rows)) != PC_OK ||
                (st = read_bounds(*s, host)) != PC_OK)
                break;
            if (host[NON_FINITE]) {
                st = refuse("pc_hca_stream_label", host[NON_FINITE]);
                break;
            }
            for (size_t j = 0; j < dim; j++) {
                double lo = pc__hca_from_order_bits(host[j]);
                double hi = pc__hca_from_order_bits(host[PC__HCA_MAX_DIM + j]);
                // A denormal range overflows the factor: sums of 0, centres at lo, off by less than the range.
                double f = hi > lo ? ldexp(1.0, 30) / (hi - lo) : 0;
                scale.origin[j] = lo;
                scale.factor[j] = isfinite(f) ? f : 0;
            }
        }
        if ((st = pc__cuda_status(cudaMemsetAsync(g.sums.ptr, 0, (words ? words : 1) * sizeof(unsigned long long),
                                                  g.stream),
                                  "HCA cluster sums")) != PC_OK ||
            (st = pc__hca_cuda_label(rows, bin, pc__hca_view(g), nullptr, labels_on_device ? labels + off : g.labels.ptr,
                                     k, g.sums.ptr, scale, pass)) != PC_OK ||
            (st = pc__cuda_status(cudaStreamSynchronize(g.stream), "HCA stream: label kernel")) != PC_OK ||
            (!labels_on_device && (st = pc__hca_labels_to_host(g, count, k, labels + off)) != PC_OK))
            break;
        if (!sums || words == 0)
            continue;
        if ((st = pc__cuda_status(cudaMemcpyAsync(raw, g.sums.ptr, words * sizeof *raw, cudaMemcpyDeviceToHost, g.stream),
                                  "HCA cluster sums")) != PC_OK ||
            (st = pc__cuda_status(cudaStreamSynchronize(g.stream), "HCA cluster sums")) != PC_OK)
            break;
        for (size_t c = 0; c < k; c++) {
            double n = (double)raw[c * (dim + 1) + dim];
            sums[c * (dim + 1) + dim] += n;
            for (size_t j = 0; j < dim; j++) {
                double q = (double)raw[c * (dim + 1) + j];
                sums[c * (dim + 1) + j] +=
                    integer ? q : scale.origin[j] * n + (scale.factor[j] > 0 ? q / scale.factor[j] : 0);
            }
        }
    }
    free(raw);
    return st;
}
