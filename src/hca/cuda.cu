// The CUDA backend of HCA: the six stages of the paper's GPU section in order, with the device
// buffers of a plan kept between runs. The dendrogram's rows and the cut are made on the host by the
// CPU backend's own functions from what the GPU computed (the components and their minimum spanning
// forest: a few thousand numbers), so both backends give the same dendrogram and labels. Host inputs
// too large for the card go through it in pieces (read three times: box, histogram, labels).
#include "cuda_hca.cuh"

#include <math.h>
#include <new>
#include <stdlib.h>
#include <string.h>

namespace {

constexpr size_t MIN_PIECE_ROWS = 4096;
constexpr size_t STAGE_BYTES = PC__HCA_STAGE_BYTES; // each of the two pinned staging buffers
constexpr size_t STAGED_MIN = PC__HCA_STAGE_BYTES;  // smaller copies go the driver's way
constexpr size_t DEVICE_RESERVE = (size_t)512 << 20; // cells, edges and sort scratch

// 1 when the staging buffers are there (made on first use); 0 when pinned memory cannot be had (a low
// locked-memory limit), and copies go the driver's way.
bool have_staging(pc__hca_gpu &s)
{
    for (int b = 0; b < 2; b++) {
        if (s.staging[b])
            continue;
        if (!s.staged[b] && cudaEventCreateWithFlags(&s.staged[b], cudaEventDisableTiming) != cudaSuccess) {
            s.staged[b] = nullptr;
            cudaGetLastError();
            return false;
        }
        if (cudaMallocHost((void **)&s.staging[b], STAGE_BYTES) != cudaSuccess) {
            s.staging[b] = nullptr;
            cudaGetLastError();
            return false;
        }
    }
    return true;
}

// Pageable host memory to the GPU through the pinned buffers: all cores fill one while the bus empties
// the other (the driver's own pageable copy measured 10.7 GB/s).
pc_status staged_to_device(pc__hca_gpu &s, unsigned char *dst, const unsigned char *src, size_t bytes)
{
    if (!have_staging(s)) {
        PC_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s.stream), "HCA: copying to the GPU");
        return pc__cuda_status(cudaStreamSynchronize(s.stream), "HCA: copying to the GPU");
    }
    for (size_t off = 0, i = 0; off < bytes; off += STAGE_BYTES, i++) {
        int b = (int)(i & 1);
        size_t len = bytes - off < STAGE_BYTES ? bytes - off : STAGE_BYTES;
        if (i >= 2)
            PC_CUDA_TRY(cudaEventSynchronize(s.staged[b]), "HCA: copying to the GPU");
        pc__hca_copy_parallel(s.staging[b], src + off, len);
        PC_CUDA_TRY(cudaMemcpyAsync(dst + off, s.staging[b], len, cudaMemcpyHostToDevice, s.stream),
                    "HCA: copying to the GPU");
        PC_CUDA_TRY(cudaEventRecord(s.staged[b], s.stream), "HCA: copying to the GPU");
    }
    return pc__cuda_status(cudaStreamSynchronize(s.stream), "HCA: copying to the GPU");
}

// The GPU's bytes to the host through the pinned buffers: the bus fills one while all cores empty the
// other into its place, through consume(host chunk, offset, length).
template <class Consume> pc_status staged_to_host(pc__hca_gpu &s, const unsigned char *src, size_t bytes, Consume consume)
{
    size_t chunks = (bytes + STAGE_BYTES - 1) / STAGE_BYTES;
    for (size_t i = 0; i <= chunks; i++) {
        if (i < chunks) { // chunk i in flight while chunk i - 1 is consumed
            size_t off = i * STAGE_BYTES, len = bytes - off < STAGE_BYTES ? bytes - off : STAGE_BYTES;
            PC_CUDA_TRY(cudaMemcpyAsync(s.staging[i & 1], src + off, len, cudaMemcpyDeviceToHost, s.stream),
                        "HCA: copying to the host");
            PC_CUDA_TRY(cudaEventRecord(s.staged[i & 1], s.stream), "HCA: copying to the host");
        }
        if (i > 0) {
            size_t j = i - 1, off = j * STAGE_BYTES, len = bytes - off < STAGE_BYTES ? bytes - off : STAGE_BYTES;
            PC_CUDA_TRY(cudaEventSynchronize(s.staged[j & 1]), "HCA: copying to the host");
            consume(s.staging[j & 1], off, len);
        }
    }
    return PC_OK;
}

// count host rows, stride bytes apart, packed into s.data.
pc_status load_rows(pc__hca_gpu &s, const unsigned char *src, size_t stride, size_t rowbytes, size_t count)
{
    // A 2D copy from pageable memory goes row by row (20x slower measured): packed rows go at once.
    if (stride == rowbytes && count * stride >= STAGED_MIN) {
        pc_status st = staged_to_device(s, s.data.ptr, src, count * stride);
        if (st != PC_OK)
            return st;
    } else if (stride == rowbytes) {
        PC_CUDA_TRY(cudaMemcpyAsync(s.data.ptr, src, count * stride, cudaMemcpyHostToDevice, s.stream),
                    "HCA: copying the points to the GPU");
    } else {
        PC_CUDA_TRY(cudaMemcpy2DAsync(s.data.ptr, rowbytes, src, stride, rowbytes, count, cudaMemcpyHostToDevice,
                                      s.stream),
                    "HCA: copying the points to the GPU");
    }
    return pc__cuda_status(cudaStreamSynchronize(s.stream), "HCA: copying the points to the GPU");
}

// ---------------------------------------------------------------- host to host, overlapped (issue 17)
//
// A host input that the card holds whole goes in through a ring of RING pinned buffers of STAGE_BYTES:
// all cores fill one while the bus empties the others on s.copy, and the bounding box of each chunk
// runs on s.stream as soon as its copy is there. The labels come back the same way: each chunk of
// rows is labelled and narrowed to bytes on s.stream, its bytes go out on s.copy while the next chunk
// is labelled, and all cores widen them into the caller's labels (or copy them, as bytes) while the
// bus brings the next. The default where the labels go out as bytes (pc_hca_plan_run_u8: 115 Mpix RGB
// on an H100, 11.6-12.2 ms against 15.0-15.8 ms round one's way); for int32 labels round one's way (one
// copy in, then the kernels, then the labels out) is the faster (26.6 against 32-37 ms: widening into
// the caller's fresh int32 labels is what the copies wait on; bench/RESULTS.md, 2026-11-23 and -26).
// PC_HCA_CUDA_OVERLAP=1 or 0 takes one way or the other whatever the labels.
constexpr int RING = 4;
constexpr int RING_AHEAD = 2; // copies out in flight while the host widens

// Where a run's labels go on the host: the result's int32 labels, or the bytes of a caller of
// pc_hca_plan_run_u8 (then the bytes that cross the bus are copied, not widened).
struct host_labels {
    int32_t *i32 = nullptr;
    uint8_t *u8 = nullptr;
    host_labels at(size_t off) const { return {i32 ? i32 + off : nullptr, u8 ? u8 + off : nullptr}; }
    bool any() const { return i32 || u8; }
    void from_bytes(const unsigned char *bytes, size_t n) const
    {
        if (u8)
            pc__hca_copy_parallel(u8, bytes, n);
        else
            pc__hca_widen_labels(bytes, n, i32);
    }
};

bool overlap_wanted(bool bytes_out)
{
    const char *e = getenv("PC_HCA_CUDA_OVERLAP");
    return e && *e ? strcmp(e, "1") == 0 : bytes_out;
}

// The ring and the copy stream, made on first use; false when pinned memory cannot be had.
bool have_ring(pc__hca_gpu &s)
{
    if (!s.copy && cudaStreamCreate(&s.copy) != cudaSuccess) {
        s.copy = nullptr;
        cudaGetLastError();
        return false;
    }
    for (int b = 0; b < RING; b++) {
        if (!s.ring_done[b] && cudaEventCreateWithFlags(&s.ring_done[b], cudaEventDisableTiming) != cudaSuccess) {
            s.ring_done[b] = nullptr;
            cudaGetLastError();
            return false;
        }
        if (!s.piece_done[b] && cudaEventCreateWithFlags(&s.piece_done[b], cudaEventDisableTiming) != cudaSuccess) {
            s.piece_done[b] = nullptr;
            cudaGetLastError();
            return false;
        }
        if (!s.ring[b] && cudaMallocHost((void **)&s.ring[b], STAGE_BYTES) != cudaSuccess) {
            s.ring[b] = nullptr;
            cudaGetLastError();
            return false;
        }
    }
    return true;
}

void free_ring(pc__hca_gpu &s)
{
    if (s.copy) {
        cudaStreamSynchronize(s.copy);
        cudaStreamDestroy(s.copy);
        s.copy = nullptr;
    }
    for (int b = 0; b < RING; b++) {
        if (s.ring[b])
            cudaFreeHost(s.ring[b]);
        if (s.ring_done[b])
            cudaEventDestroy(s.ring_done[b]);
        if (s.piece_done[b])
            cudaEventDestroy(s.piece_done[b]);
        s.ring[b] = nullptr;
        s.ring_done[b] = s.piece_done[b] = nullptr;
    }
}

// Rows per chunk: whole rows in STAGE_BYTES (a chunk's bytes of labels fit in one buffer too).
size_t ring_rows(const pc__hca_gpu &s) { return STAGE_BYTES / s.rowbytes; }

// When the overlapped way applies: host rows, packed, all on the card at once, large enough.
bool overlap_applies(pc__hca_gpu &s, const pc_points &points, int device_input, size_t stride, size_t n,
                     bool bytes_out)
{
    return !device_input && stride == s.rowbytes && s.piece_rows >= n && n * s.rowbytes >= STAGED_MIN &&
           overlap_wanted(bytes_out) && have_ring(s);
}

// All n rows into s.data, and the box of each chunk folded into the words at w as it arrives.
pc_status load_and_bound(pc__hca_gpu &s, const unsigned char *src, size_t n, unsigned long long *w,
                         const pc__hca_point_pass &pass)
{
    size_t per = ring_rows(s), chunks = (n + per - 1) / per;
    for (size_t i = 0; i < chunks; i++) {
        int b = (int)(i % RING);
        size_t off = i * per, count = n - off < per ? n - off : per, len = count * s.rowbytes;
        if (i >= (size_t)RING) // this buffer's previous copy has left
            PC_CUDA_TRY(cudaEventSynchronize(s.ring_done[b]), "HCA: copying to the GPU");
        pc__hca_copy_parallel(s.ring[b], src + off * s.rowbytes, len);
        PC_CUDA_TRY(cudaMemcpyAsync(s.data.ptr + off * s.rowbytes, s.ring[b], len, cudaMemcpyHostToDevice, s.copy),
                    "HCA: copying to the GPU");
        PC_CUDA_TRY(cudaEventRecord(s.ring_done[b], s.copy), "HCA: copying to the GPU");
        PC_CUDA_TRY(cudaStreamWaitEvent(s.stream, s.ring_done[b], 0), "HCA: copying to the GPU");
        pc__hca_rows rows = {s.data.ptr + off * s.rowbytes, count, s.rowbytes, (int)s.dim, s.dtype};
        pc_status st = pc__hca_cuda_bounds(rows, w, w + PC__HCA_MAX_DIM, w + 2 * PC__HCA_MAX_DIM, pass);
        if (st != PC_OK)
            return st;
    }
    return pc__cuda_status(cudaStreamSynchronize(s.copy), "HCA: copying to the GPU");
}

// Labels of all n resident rows to the host as bytes (k < 255), chunk by chunk; *copy_seconds: the
// host's time from the first chunk's bytes on their way to the last one widened.
pc_status label_overlapped(pc__hca_gpu &s, size_t n, size_t k, const int32_t *cluster_of_cell, host_labels host,
                           const pc__hca_scale &scale, const pc__hca_point_pass &pass)
{
    size_t per = ring_rows(s), chunks = (n + per - 1) / per;
    if (per > STAGE_BYTES)
        per = STAGE_BYTES;
    // Every chunk labelled and narrowed on s.stream, an event after each; the copies wait on them.
    // The bytes of a chunk go where its rows began (row off's bytes start at off * rowbytes >= off):
    // only rows of this chunk or earlier ones, labelled already, are overwritten.
    auto enqueue = [&](size_t i) -> pc_status {
        size_t off = i * per, count = n - off < per ? n - off : per;
        pc__hca_rows rows = {s.data.ptr + off * s.rowbytes, count, s.rowbytes, (int)s.dim, s.dtype};
        pc_status st = pc__hca_cuda_label(rows, s.bin, pc__hca_view(s), cluster_of_cell, s.labels.ptr + off, k,
                                          s.sums.ptr, scale, pass);
        if (st == PC_OK)
            st = pc__hca_cuda_narrow(s.labels.ptr + off, s.data.ptr + off, count, s.stream);
        if (st == PC_OK)
            st = pc__cuda_status(cudaEventRecord(s.piece_done[i % RING], s.stream), "HCA label kernel");
        if (st == PC_OK)
            st = pc__cuda_status(cudaStreamWaitEvent(s.copy, s.piece_done[i % RING], 0), "HCA label kernel");
        if (st == PC_OK)
            st = pc__cuda_status(cudaMemcpyAsync(s.ring[i % RING], s.data.ptr + off, count, cudaMemcpyDeviceToHost,
                                                 s.copy),
                                 "HCA: copying the labels to the host");
        if (st == PC_OK)
            st = pc__cuda_status(cudaEventRecord(s.ring_done[i % RING], s.copy), "HCA: copying the labels to the host");
        return st;
    };
    pc_status st = PC_OK;
    for (size_t i = 0; st == PC_OK && i < chunks && i < (size_t)RING_AHEAD; i++)
        st = enqueue(i);
    for (size_t i = 0; st == PC_OK && i < chunks; i++) {
        // Chunk i's buffer is widened below; chunk i + RING_AHEAD takes a buffer widened before.
        if (i + RING_AHEAD < chunks && (st = enqueue(i + RING_AHEAD)) != PC_OK)
            break;
        if ((st = pc__cuda_status(cudaEventSynchronize(s.ring_done[i % RING]), "HCA: copying the labels to the host")) !=
            PC_OK)
            break;
        size_t off = i * per, count = n - off < per ? n - off : per;
        host.at(off).from_bytes(s.ring[i % RING], count);
    }
    cudaError_t e = cudaStreamSynchronize(s.copy);
    return st != PC_OK ? st : pc__cuda_status(e, "HCA: copying the labels to the host");
}

// The rows [off, off + count) as the kernels read them: in place for device input, else copied into
// the plan's buffer (unless they are there already: a resident input is copied once per run).
struct row_source {
    pc__hca_gpu &s;
    const pc_points &points;
    int device_input;
    size_t stride;
    size_t loaded_off = 0, loaded_count = 0;
    double copy_seconds = 0;
    bool overlap = false; // the copies overlapped with the kernels (issue 17)

    pc_status rows(size_t off, size_t count, pc__hca_rows *out)
    {
        const unsigned char *src = (const unsigned char *)points.data + off * stride;
        *out = {src, count, stride, (int)s.dim, s.dtype};
        if (device_input)
            return PC_OK;
        out->data = s.data.ptr;
        out->stride = s.rowbytes;
        if (loaded_count == count && loaded_off == off)
            return PC_OK;
        double t0 = pc__now();
        pc_status st = load_rows(s, src, stride, s.rowbytes, count);
        if (st != PC_OK)
            return st;
        copy_seconds += pc__now() - t0;
        loaded_off = off;
        loaded_count = count;
        return PC_OK;
    }
};

// What the host needs of the GPU's cells and components to make the dendrogram and the cut.
struct host_model {
    pc__hca_grid grid;
    pc__hca_graph graph;
    host_model()
    {
        memset(&grid, 0, sizeof grid);
        memset(&graph, 0, sizeof graph);
    }
    ~host_model()
    {
        pc__hca_grid_free(&grid);
        pc__hca_graph_free(&graph);
    }
};

template <typename T> pc_status to_host(T *dst, const T *src, size_t n, cudaStream_t stream, const char *what)
{
    if (n)
        PC_CUDA_TRY(cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyDeviceToHost, stream), what);
    return PC_OK;
}

pc_status fetch_model(pc__hca_gpu &s, size_t n, size_t cells, size_t components, size_t forest, host_model &h)
{
    pc__hca_grid &g = h.grid;
    g.n = n;
    g.dim = s.dim;
    g.m = s.m;
    g.threads = 1;
    for (size_t j = 0; j < s.dim; j++) {
        g.lo[j] = s.bin.lo[j];
        g.hi[j] = s.bin.hi[j];
        g.stride[j] = s.bin.stride[j];
    }
    g.cells = cells;
    g.key = (uint64_t *)pc__alloc(cells, sizeof(uint64_t), "HCA cells");
    g.density = (int64_t *)pc__alloc(cells, sizeof(int64_t), "HCA cells");
    int32_t *density = (int32_t *)pc__alloc(cells, sizeof(int32_t), "HCA cells");
    pc_status st = g.key && g.density && density ? PC_OK : PC_OUT_OF_MEMORY;
    if (st == PC_OK)
        st = to_host(g.key, s.key.ptr, cells, s.stream, "HCA cells to the host");
    if (st == PC_OK)
        st = to_host(density, s.density.ptr, cells, s.stream, "HCA cells to the host");
    if (st == PC_OK) // synchronises the stream
        st = pc__hca_fetch_graph(s, cells, components, forest, &h.graph);
    for (size_t c = 0; st == PC_OK && c < cells; c++)
        g.density[c] = density[c];
    free(density);
    return st;
}

// Step 1's tables for integer bands: the cell coordinate of every value, by the CPU's rule.
pc_status upload_tables(pc__hca_gpu &s)
{
    size_t values = s.dtype == PC_U8 ? 256 : s.dtype == PC_U16 ? 65536 : 0;
    s.bin.table = nullptr;
    if (!values)
        return PC_OK;
    uint16_t *table = (uint16_t *)pc__alloc(s.dim * values, sizeof(uint16_t), "HCA cell tables");
    if (!table)
        return PC_OUT_OF_MEMORY;
    for (size_t j = 0; j < s.dim; j++)
        pc__hca_coordinate_table(s.bin.lo[j], s.bin.hi[j], s.m, values, table + j * values);
    pc_status st = pc__cuda_status(cudaMemcpyAsync(s.table.ptr, table, s.dim * values * sizeof(uint16_t),
                                                   cudaMemcpyHostToDevice, s.stream),
                                   "HCA cell tables");
    if (st == PC_OK)
        st = pc__cuda_status(cudaStreamSynchronize(s.stream), "HCA cell tables");
    free(table);
    s.bin.table = s.table.ptr;
    return st;
}

// Bounding box over all rows (pieces fold into the same words), then the binning.
pc_status bounding_box(pc__hca_gpu &s, row_source &src, size_t n, int device_input, const pc__hca_point_pass &pass)
{
    unsigned long long *w = s.scalars.ptr, host[2 * PC__HCA_MAX_DIM + 1];
    PC_CUDA_TRY(cudaMemsetAsync(w, 0xff, PC__HCA_MAX_DIM * sizeof *w, s.stream), "HCA bounding box");
    PC_CUDA_TRY(cudaMemsetAsync(w + PC__HCA_MAX_DIM, 0, (PC__HCA_MAX_DIM + 1) * sizeof *w, s.stream),
                "HCA bounding box");
    if (src.overlap) {
        double t0 = pc__now();
        pc_status st = load_and_bound(s, (const unsigned char *)src.points.data, n, w, pass);
        if (st != PC_OK)
            return st;
        src.copy_seconds += pc__now() - t0; // the box's kernels ran under the copies
        src.loaded_off = 0;
        src.loaded_count = n;
    }
    for (size_t off = 0; off < n && !src.overlap; off += s.piece_rows) {
        pc__hca_rows rows;
        size_t count = n - off < s.piece_rows ? n - off : s.piece_rows;
        pc_status st = src.rows(off, count, &rows);
        if (st != PC_OK || (st = pc__hca_cuda_bounds(rows, w, w + PC__HCA_MAX_DIM, w + 2 * PC__HCA_MAX_DIM, pass)) != PC_OK)
            return st;
    }
    PC_CUDA_TRY(cudaMemcpyAsync(host, w, sizeof host, cudaMemcpyDeviceToHost, s.stream), "HCA bounding box");
    PC_CUDA_TRY(cudaStreamSynchronize(s.stream), "HCA bounding box");
    if (host[2 * PC__HCA_MAX_DIM])
        return pc__fail(PC_INVALID_ARGUMENT,
                        "%llu non-finite value(s) (NaN or infinity, or float64 beyond float range) in the %s points",
                        host[2 * PC__HCA_MAX_DIM], device_input ? "device" : "host");
    for (size_t j = 0; j < s.dim; j++) {
        unsigned long long lo = pc__hca_unorder_bits(host[j]), hi = pc__hca_unorder_bits(host[PC__HCA_MAX_DIM + j]);
        memcpy(&s.bin.lo[j], &lo, sizeof lo);
        memcpy(&s.bin.hi[j], &hi, sizeof hi);
        if (!isfinite(s.bin.hi[j] - s.bin.lo[j]))
            return pc__fail(PC_INVALID_ARGUMENT, "dimension %zu spans [%g, %g], a range beyond double", j, s.bin.lo[j],
                            s.bin.hi[j]);
    }
    return upload_tables(s);
}

pc_status histogram(pc__hca_gpu &s, row_source &src, size_t n, const pc__hca_point_pass &pass)
{
    if (s.dense)
        PC_CUDA_TRY(cudaMemsetAsync(s.slot.ptr, 0, s.total * sizeof(int32_t), s.stream), "HCA grid");
    else {
        PC_CUDA_TRY(cudaMemsetAsync(s.hash_key.ptr, 0xff, (s.hash_mask + 1) * sizeof(uint64_t), s.stream), "HCA grid");
        PC_CUDA_TRY(cudaMemsetAsync(s.hash_val.ptr, 0, (s.hash_mask + 1) * sizeof(int32_t), s.stream), "HCA grid");
    }
    for (size_t off = 0; off < n; off += s.piece_rows) {
        pc__hca_rows rows;
        size_t count = n - off < s.piece_rows ? n - off : s.piece_rows;
        pc_status st = src.rows(off, count, &rows);
        if (st != PC_OK || (st = pc__hca_cuda_histogram(rows, s.bin, pc__hca_view(s), s.total, pass)) != PC_OK)
            return st;
    }
    return PC_OK;
}

// The labels of a piece (in s.labels) to the host through the pinned buffers; with fewer than 255
// clusters as bytes, widened on the host (a quarter of the bytes over the bus). As int32 straight into
// fresh pageable memory they took 97 ms for 115 Mpix, measured.
pc_status labels_to_host(pc__hca_gpu &s, size_t count, size_t k, host_labels host)
{
    if (host.u8) { // k < 255 (pc__hca_gpu_run): narrowed here, the bytes copied out
        pc_status st = pc__hca_cuda_narrow(s.labels.ptr, s.data.ptr, count, s.stream);
        if (st != PC_OK)
            return st;
        if (count < STAGED_MIN || !have_staging(s)) {
            PC_CUDA_TRY(cudaMemcpyAsync(host.u8, s.data.ptr, count, cudaMemcpyDeviceToHost, s.stream),
                        "HCA: copying the labels to the host");
            return pc__cuda_status(cudaStreamSynchronize(s.stream), "HCA: copying the labels to the host");
        }
        return staged_to_host(s, s.data.ptr, count, [&](const unsigned char *chunk, size_t off, size_t len) {
            host.at(off).from_bytes(chunk, len);
        });
    }
    int32_t *i32 = host.i32;
    if (count * sizeof(int32_t) < STAGED_MIN || !have_staging(s)) {
        PC_CUDA_TRY(cudaMemcpyAsync(i32, s.labels.ptr, count * sizeof(int32_t), cudaMemcpyDeviceToHost, s.stream),
                    "HCA: copying the labels to the host");
        return pc__cuda_status(cudaStreamSynchronize(s.stream), "HCA: copying the labels to the host");
    }
    if (k >= 255)
        return staged_to_host(s, (const unsigned char *)s.labels.ptr, count * sizeof(int32_t),
                              [&](const unsigned char *chunk, size_t off, size_t len) {
                                  pc__hca_copy_parallel((unsigned char *)i32 + off, chunk, len);
                              });
    // The bytes go where this piece's rows were: the label kernel was their last reader.
    pc_status st = pc__hca_cuda_narrow(s.labels.ptr, s.data.ptr, count, s.stream);
    if (st != PC_OK)
        return st;
    return staged_to_host(s, s.data.ptr, count, [&](const unsigned char *chunk, size_t off, size_t len) {
        host.at(off).from_bytes(chunk, len);
    });
}

// Every row's cluster, into device_labels or (piece by piece) the host's labels; the clusters' sums
// into sums (k x (dim + 1) doubles).
pc_status label(pc__hca_gpu &s, row_source &src, size_t n, const int32_t *cluster_of_cell, size_t cells, size_t k,
                int32_t *device_labels, host_labels host, double *sums, const pc__hca_point_pass &pass,
                double *copy_back_seconds)
{
    pc_status st;
    size_t words = k * (s.dim + 1);
    if ((st = pc__hca_grow(s.cluster, cells, "HCA cell clusters")) != PC_OK ||
        (st = pc__hca_grow(s.sums, words, "HCA cluster sums")) != PC_OK)
        return st;
    PC_CUDA_TRY(cudaMemcpyAsync(s.cluster.ptr, cluster_of_cell, cells * sizeof(int32_t), cudaMemcpyHostToDevice,
                                s.stream),
                "HCA cell clusters");
    PC_CUDA_TRY(cudaMemsetAsync(s.sums.ptr, 0, words * sizeof(unsigned long long), s.stream), "HCA cluster sums");
    pc__hca_scale scale;
    for (size_t j = 0; j < PC__HCA_MAX_DIM; j++)
    {
        // A denormal range overflows the factor: sums of 0, centres at lo, off by less than the range.
        double f = j < s.dim && s.bin.hi[j] > s.bin.lo[j] ? ldexp(1.0, 30) / (s.bin.hi[j] - s.bin.lo[j]) : 0;
        scale.factor[j] = isfinite(f) ? f : 0;
        scale.origin[j] = j < s.dim ? s.bin.lo[j] : 0;
    }
    *copy_back_seconds = 0;
    if (src.overlap && host.any() && k < 255) {
        double t0 = pc__now();
        if ((st = label_overlapped(s, n, k, s.cluster.ptr, host, scale, pass)) != PC_OK)
            return st;
        *copy_back_seconds = pc__now() - t0; // the label kernels ran under the copies
        n = 0;                               // done: the loop below has nothing left
    }
    for (size_t off = 0; off < n; off += s.piece_rows) {
        pc__hca_rows rows;
        size_t count = n - off < s.piece_rows ? n - off : s.piece_rows;
        int32_t *out = device_labels ? device_labels + off : s.labels.ptr;
        if ((st = src.rows(off, count, &rows)) != PC_OK ||
            (st = pc__hca_cuda_label(rows, s.bin, pc__hca_view(s), s.cluster.ptr, out, k, s.sums.ptr, scale, pass)) !=
                PC_OK)
            return st;
        if (!device_labels) {
            PC_CUDA_TRY(cudaStreamSynchronize(s.stream), "HCA label kernel");
            double t0 = pc__now();
            if ((st = labels_to_host(s, count, k, host.at(off))) != PC_OK)
                return st;
            *copy_back_seconds += pc__now() - t0;
        }
    }
    unsigned long long *raw = (unsigned long long *)pc__alloc(words ? words : 1, sizeof *raw, "HCA cluster sums");
    if (!raw)
        return PC_OUT_OF_MEMORY;
    st = to_host(raw, s.sums.ptr, words, s.stream, "HCA cluster sums");
    if (st == PC_OK)
        st = pc__cuda_status(cudaStreamSynchronize(s.stream), "HCA label kernel");
    for (size_t c = 0; st == PC_OK && c < k; c++) {
        double count = (double)raw[c * (s.dim + 1) + s.dim];
        sums[c * (s.dim + 1) + s.dim] = count;
        for (size_t j = 0; j < s.dim; j++) {
            double q = (double)raw[c * (s.dim + 1) + j];
            int integer = s.dtype == PC_U8 || s.dtype == PC_U16;
            sums[c * (s.dim + 1) + j] =
                integer ? q : s.bin.lo[j] * count + (scale.factor[j] > 0 ? q / scale.factor[j] : 0);
        }
    }
    free(raw);
    return st;
}

} // namespace

pc_status pc__hca_fetch_graph(pc__hca_gpu &s, size_t cells, size_t components, size_t forest, pc__hca_graph *gr)
{
    memset(gr, 0, sizeof *gr);
    gr->components = components;
    gr->component_of_cell = (int32_t *)pc__alloc(cells, sizeof(int32_t), "HCA components");
    gr->representative = (size_t *)pc__alloc(components, sizeof(size_t), "HCA components");
    gr->size = (int64_t *)pc__alloc(components, sizeof(int64_t), "HCA components");
    gr->edges = forest;
    gr->edge_a = (int32_t *)pc__alloc(forest, sizeof(int32_t), "HCA forest");
    gr->edge_b = (int32_t *)pc__alloc(forest, sizeof(int32_t), "HCA forest");
    gr->edge_h = (double *)pc__alloc(forest, sizeof(double), "HCA forest");
    int32_t *representative = (int32_t *)pc__alloc(components, sizeof(int32_t), "HCA components");
    uint64_t *ab = (uint64_t *)pc__alloc(forest, sizeof(uint64_t), "HCA forest");
    pc_status st = PC_OUT_OF_MEMORY;
    if (gr->component_of_cell && gr->representative && gr->size && gr->edge_a && gr->edge_b && gr->edge_h &&
        representative && ab) {
        st = to_host(gr->component_of_cell, s.comp.ptr, cells, s.stream, "HCA components to the host");
        if (st == PC_OK)
            st = to_host(representative, s.representative.ptr, components, s.stream, "HCA components to the host");
        if (st == PC_OK)
            st = to_host((unsigned long long *)gr->size, s.component_size.ptr, components, s.stream,
                         "HCA components to the host");
        if (st == PC_OK)
            st = to_host(ab, s.mst_ab.ptr, forest, s.stream, "HCA forest to the host");
        if (st == PC_OK)
            st = to_host(gr->edge_h, s.mst_h.ptr, forest, s.stream, "HCA forest to the host");
        if (st == PC_OK)
            st = pc__cuda_status(cudaStreamSynchronize(s.stream), "HCA model to the host");
    }
    if (st == PC_OK) {
        for (size_t c = 0; c < components; c++)
            gr->representative[c] = (size_t)representative[c];
        for (size_t e = 0; e < forest; e++) {
            gr->edge_a[e] = (int32_t)(ab[e] >> 32);
            gr->edge_b[e] = (int32_t)(ab[e] & 0xffffffffu);
        }
    }
    free(representative);
    free(ab);
    if (st != PC_OK)
        pc__hca_graph_free(gr);
    return st;
}

bool pc__hca_have_staging(pc__hca_gpu &s) { return have_staging(s); }

pc_status pc__hca_stage_to_device(pc__hca_gpu &s, unsigned char *dst, const unsigned char *src, size_t bytes)
{
    return staged_to_device(s, dst, src, bytes);
}

pc_status pc__hca_load_rows(pc__hca_gpu &s, const unsigned char *src, size_t stride, size_t rowbytes, size_t count)
{
    return load_rows(s, src, stride, rowbytes, count);
}

pc_status pc__hca_labels_to_host(pc__hca_gpu &s, size_t count, size_t k, int32_t *host)
{
    return labels_to_host(s, count, k, host_labels{host, nullptr});
}

pc_status pc__hca_gpu_open(pc__hca_gpu &s)
{
    int device = 0;
    pc_status st = pc__cuda_status(cudaGetDevice(&device), "HCA: choosing the GPU");
    if (st == PC_OK)
        st = pc__cuda_status(cudaDeviceGetAttribute(&s.sms, cudaDevAttrMultiProcessorCount, device),
                             "HCA: querying the GPU");
    if (st == PC_OK)
        st = pc__cuda_status(cudaDeviceGetAttribute(&s.shared_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
                             "HCA: querying the GPU");
    if (st == PC_OK)
        // A blocking stream: work the caller queued on the legacy default stream (filling device input)
        // is finished before the kernels read it.
        st = pc__cuda_status(cudaStreamCreate(&s.stream), "HCA: creating a stream");
    s.device = device;
    return st;
}

void pc__hca_gpu_close(pc__hca_gpu &s)
{
    if (s.stream) {
        cudaStreamSynchronize(s.stream);
        cudaStreamDestroy(s.stream);
        s.stream = nullptr;
    }
    for (int b = 0; b < 2; b++) {
        if (s.staging[b])
            cudaFreeHost(s.staging[b]);
        if (s.staged[b])
            cudaEventDestroy(s.staged[b]);
        s.staging[b] = nullptr;
        s.staged[b] = nullptr;
    }
    free_ring(s);
    pc__hca_refine_close(s.refine);
    cudaGetLastError();
}

pc_status pc__hca_gpu_new(const pc_hca_params *params, size_t n, size_t dim, pc_dtype dtype, pc__hca_gpu **out)
{
    *out = nullptr;
    pc__hca_gpu *s = new (std::nothrow) pc__hca_gpu();
    if (!s)
        return pc__fail(PC_OUT_OF_MEMORY, "HCA: cannot allocate the GPU state");
    s->n = n;
    s->dim = dim;
    s->dtype = dtype;
    s->elem = pc__hca_element_size(dtype);
    s->rowbytes = dim * s->elem;
    s->m = params->m;
    s->bin.dim = (int)dim;
    s->bin.m = params->m;
    uint64_t total = 1;
    bool fits_64 = true;
    for (size_t j = dim; j-- > 0;) {
        s->bin.stride[j] = total;
        if (total > UINT64_MAX / (uint64_t)params->m / 2)
            fits_64 = false;
        total *= (uint64_t)params->m;
    }
    pc_status st = PC_OK;
    if (!fits_64)
        st = pc__fail(PC_INVALID_ARGUMENT, "m^d = %d^%zu cells do not fit in 64-bit indices", params->m, dim);
    s->total = total;
    s->dense = total <= (uint64_t)INT32_MAX && total * sizeof(int32_t) <= params->memory_budget;
    if (st == PC_OK)
        st = pc__hca_gpu_open(*s);
    size_t free_bytes = 0, total_bytes = 0;
    if (st == PC_OK)
        st = pc__cuda_status(cudaMemGetInfo(&free_bytes, &total_bytes), "HCA: querying GPU memory");
    if (st != PC_OK) {
        pc__hca_gpu_free(s);
        return st;
    }
    // The grid: dense counters, or a hash with room for twice the cells there can be.
    uint64_t hash_capacity = 1024;
    while (!s->dense && hash_capacity < 2 * (uint64_t)n)
        hash_capacity *= 2;
    size_t grid_bytes = s->dense ? (size_t)total * 4 : (size_t)hash_capacity * 12;
    size_t table_bytes = dim * (dtype == PC_U8 ? 256 : dtype == PC_U16 ? 65536 : 1) * 2;
    size_t budget = params->device_memory ? params->device_memory
                                          : (free_bytes > DEVICE_RESERVE ? free_bytes - DEVICE_RESERVE : 0);
    // Per non-empty cell (at most min(n, m^d)) about 60 bytes of keys, densities, links, components.
    size_t most_cells = s->dense && total < n ? (size_t)total : n;
    size_t fixed = grid_bytes + table_bytes + 60 * most_cells, per_row = s->rowbytes + sizeof(int32_t);
    size_t rows_fit = budget > fixed ? (budget - fixed) / per_row : 0;
    s->piece_rows = rows_fit >= n ? n : rows_fit / 32 * 32;
    if (s->piece_rows < n && s->piece_rows < MIN_PIECE_ROWS) {
        pc__hca_gpu_free(s);
        return pc__fail(PC_DEVICE_OUT_OF_MEMORY,
                        "HCA on the GPU needs %zu MiB for its grid and a piece of %zu rows; %zu MiB may be used "
                        "(%zu MiB free)",
                        (fixed + MIN_PIECE_ROWS * per_row) >> 20, MIN_PIECE_ROWS, budget >> 20, free_bytes >> 20);
    }
    if (s->dense)
        st = s->slot.alloc((size_t)total, "HCA grid");
    else {
        s->hash_mask = hash_capacity - 1;
        st = s->hash_key.alloc((size_t)hash_capacity, "HCA cell hash");
        if (st == PC_OK)
            st = s->hash_val.alloc((size_t)hash_capacity, "HCA cell hash");
    }
    if (st == PC_OK)
        st = s->table.alloc(table_bytes / 2, "HCA cell tables");
    if (st == PC_OK)
        st = s->scalars.alloc(2 * PC__HCA_MAX_DIM + 2, "HCA counters");
    if (st == PC_OK)
        st = s->data.alloc(s->piece_rows * s->rowbytes, "HCA points");
    if (st == PC_OK)
        st = s->labels.alloc(s->piece_rows, "HCA labels");
    if (st != PC_OK) {
        pc__hca_gpu_free(s);
        return st;
    }
    *out = s;
    return PC_OK;
}

void pc__hca_gpu_free(pc__hca_gpu *s)
{
    if (!s)
        return;
    pc__hca_device_scope on(s->device);
    pc__hca_gpu_close(*s);
    delete s;
    cudaGetLastError();
}

pc_status pc__hca_check_device_rows(const pc_points *points, const int32_t *device_labels)
{
    size_t elem = pc__hca_element_size(points->dtype), rowbytes = points->dim * elem;
    size_t stride = points->stride ? points->stride : rowbytes;
    if (stride < rowbytes)
        return pc__fail(PC_INVALID_ARGUMENT, "stride %zu is shorter than a row (%zu bytes)", stride, rowbytes);
    if (((uintptr_t)points->data | stride) % elem != 0 || (uintptr_t)device_labels % 4 != 0)
        return pc__fail(PC_INVALID_ARGUMENT, "device points and labels must be aligned to their element size");
    // A host pointer, or another GPU's memory, would fault inside a kernel and take the CUDA context
    // down with it.
    cudaPointerAttributes at;
    int device = 0;
    PC_CUDA_TRY(cudaGetDevice(&device), "checking device memory");
    for (const void *p : {(const void *)points->data, (const void *)device_labels}) {
        if (!p)
            continue;
        const char *name = p == points->data ? "points->data" : "device_labels";
        if (cudaPointerGetAttributes(&at, p) != cudaSuccess ||
            (at.type != cudaMemoryTypeDevice && at.type != cudaMemoryTypeManaged)) {
            cudaGetLastError();
            return pc__fail(PC_INVALID_ARGUMENT, "%s is not GPU memory (cudaMalloc'd or managed)", name);
        }
        if (at.type == cudaMemoryTypeDevice && at.device != device)
            return pc__fail(PC_INVALID_ARGUMENT, "%s is memory of GPU %d; the work runs on GPU %d", name, at.device,
                            device);
    }
    return PC_OK;
}

pc_status pc__hca_gpu_run(pc__hca_gpu *s, const pc_points *points, int device_input, int32_t *device_labels,
                          uint8_t *host_bytes, const pc_hca_params *params, int64_t min_size, pc_result *r)
{
    pc__hca_device_scope on(s->device);
    size_t n = points->n, stride = points->stride ? points->stride : s->rowbytes;
    pc_status st = device_input ? pc__hca_check_device_rows(points, device_labels) : PC_OK;
    if (st != PC_OK)
        return st;
    if (!device_labels && !host_bytes) {
        r->labels = (int32_t *)pc__alloc_large(n, sizeof(int32_t), "labels");
        if (!r->labels)
            return PC_OUT_OF_MEMORY;
    }
    row_source src{*s, *points, device_input, stride};
    src.overlap = overlap_applies(*s, *points, device_input, stride, n, host_bytes != nullptr);
    pc__hca_point_pass pass{s->sms, s->stream, (size_t)s->shared_optin};
    size_t cells = 0, components = 0, edges = 0, forest = 0, k = 0;
    host_model model;
    int32_t *cluster_of_cell = nullptr;
    double *sums = nullptr, copy_back = 0;
    double t0 = pc__now();
    if ((st = bounding_box(*s, src, n, device_input, pass)) != PC_OK || (st = histogram(*s, src, n, pass)) != PC_OK ||
        (st = pc__hca_cuda_cells(*s, &cells)) != PC_OK)
        return st;
    if ((st = pc__hca_progress(params, 0.35)) != PC_OK) return st; // hca.c: progress between stages
    double t1 = pc__now(), copy_in_grid = src.copy_seconds;
    if ((st = pc__hca_cuda_components(*s, cells, &components)) != PC_OK ||
        (st = pc__hca_cuda_edges(*s, cells, components, &edges)) != PC_OK)
        return st;
    if ((st = pc__hca_progress(params, 0.45)) != PC_OK) return st;
    double t2 = pc__now();
    if ((st = pc__hca_cuda_spanning_forest(*s, components, edges, &forest)) != PC_OK ||
        (st = fetch_model(*s, n, cells, components, forest, model)) != PC_OK ||
        (st = pc__hca_dendrogram(&model.graph, &r->dendrogram)) != PC_OK)
        return st;
    if ((st = pc__hca_progress(params, 0.5)) != PC_OK) return st;
    double t3 = pc__now();
    cluster_of_cell = (int32_t *)pc__alloc(cells, sizeof(int32_t), "HCA cell clusters");
    if (!cluster_of_cell)
        return PC_OUT_OF_MEMORY;
    st = pc__hca_cut(&model.grid, &model.graph, r->dendrogram, params->clusters, params->threshold, min_size,
                     params->noise, cluster_of_cell, &k);
    double t4 = pc__now();
    if (st == PC_OK && host_bytes)
        st = pc__hca_bytes_fit(k);
    if (st == PC_OK) {
        sums = (double *)pc__calloc(k * (s->dim + 1) + 1, sizeof(double), "cluster sums");
        st = sums ? label(*s, src, n, cluster_of_cell, cells, k, device_labels, host_labels{r->labels, host_bytes},
                          sums, pass, &copy_back)
                  : PC_OUT_OF_MEMORY;
    }
    if (st == PC_OK && params->refine_borders) st = pc__hca_cuda_refine(s, points, device_input, device_labels, r->labels, params, &model.grid, cluster_of_cell, k, sums, r); // HCA-MS: cuda_refine.cu
    if (st == PC_OK)
        st = pc__hca_finish(r, &model.grid, &model.graph, sums, k);
    free(cluster_of_cell);
    free(sums);
    if (st != PC_OK)
        return st;
    double t5 = pc__now();
    // The copies, made inside the grid and label stages (pieces), are reported on their own.
    double copy_in_label = src.copy_seconds - copy_in_grid;
    pc__result_add_stage(r, "copy to GPU", src.copy_seconds);
    pc__result_add_stage(r, "grid", t1 - t0 - copy_in_grid);
    pc__result_add_stage(r, "components", t2 - t1);
    pc__result_add_stage(r, "dendrogram", t3 - t2);
    pc__result_add_stage(r, "cut", t4 - t3);
    pc__result_add_stage(r, "label", t5 - t4 - copy_in_label - copy_back);
    pc__result_add_stage(r, "copy to host", copy_back);
    return PC_OK;
}
