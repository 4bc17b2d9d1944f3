// HCA-MS on the GPU (ALGORITHMS.md section 3b), after the CUDA backend's labelling: one pass over the
// points sums every cell in fixed point (the CPU's integers, so the means are the CPU's bit for bit) and
// gathers the border points with their rows; the host makes the means and the references by block
// (refine.c, as the CPU does); every distinct start climbs in a group of 16 threads by refine_climb.h's
// arithmetic (the CPU's operations in the CPU's order, each rounded once); the points that change
// cluster move their labels and the clusters' sums. Integer rows of at most 8 bytes climb once per
// distinct value (sorted on the device); other rows climb each. A climb that ends in an empty cell
// (rare) is finished on the host, whose climb from the same start ends at the same position.
#include "cuda_hca.cuh"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <utility>
#include <math.h>
#include <stdlib.h>
#include <string.h>

namespace {

constexpr int THREADS = 256;
// The climb kernel's blocks an SM (its registers' bound: 64). 3 blocks (80 registers) were 2% slower on
// both images in doubles (H200, alternated, RESULTS.md session 22), and 7% slower on 4 bands in floats,
// though 4 blocks spill some (session 27).
constexpr int CLIMB_BLOCKS = 4;

__device__ __forceinline__ double row_value(const unsigned char *row, pc_dtype t, int j)
{
    switch (t) {
    case PC_F32: return (double)reinterpret_cast<const float *>(row)[j];
    case PC_F64: return reinterpret_cast<const double *>(row)[j];
    case PC_U16: return (double)reinterpret_cast<const uint16_t *>(row)[j];
    default: return (double)row[j];
    }
}

// The cell key of a row, as the backend's passes compute it (tables for integer bands).
__device__ __forceinline__ uint64_t key_of_row(const unsigned char *row, pc_dtype t, const pc__hca_binning &bin)
{
    uint64_t key = 0;
    for (int j = 0; j < bin.dim; j++) {
        int c;
        if (t == PC_U8)
            c = bin.table[j * 256 + row[j]];
        else if (t == PC_U16)
            c = bin.table[j * 65536 + reinterpret_cast<const uint16_t *>(row)[j]];
        else
            c = pc__hca_coordinate(row_value(row, t, j), bin.lo[j], bin.hi[j], bin.m);
        key += (uint64_t)c * bin.stride[j];
    }
    return key;
}

struct fixed_scale {
    double factor[PC__HCA_MAX_DIM];
};

// A row's value j as an integer: itself (integer bands) or refine_climb.h's fixed point.
__device__ __forceinline__ long long fixed_value(const unsigned char *row, pc_dtype t, int j,
                                                 const pc__hca_binning &bin, const fixed_scale &sc)
{
    double v = row_value(row, t, j);
    if (t == PC_U8 || t == PC_U16)
        return (long long)v;
    return (long long)pc__climb_fixed(v, bin.lo[j], sc.factor[j]);
}

// A block's own sums of the cells it meets, in shared memory: open addressing over SUM_SLOTS cells of
// at most SUM_MAX_DIM values. Rows of noisy images fall into many cells a warp, and the same few
// hundred cells a block: summed in global memory they were 345 M contended 64-bit atomics for 115 Mpix
// x 3 (10.8 ms on an H200), here shared ones (3.1 ms), flushed once a block. A cell not placed within
// SUM_PROBES slots is summed in global memory as before (PC_HCA_REFINE_TABLE_PROBES, for tests: fewer
// probes, more cells left to global memory).
constexpr int SUM_SLOTS = 2048, SUM_MAX_DIM = 4, SUM_PROBES = 32;
constexpr uint32_t SUM_EMPTY = 0xffffffffu;
constexpr size_t SUM_SHARED_BYTES = SUM_SLOTS * (sizeof(uint32_t) + SUM_MAX_DIM * sizeof(unsigned long long));

__device__ __forceinline__ int sum_slot(uint32_t *key, uint32_t cell, int probes)
{
    uint32_t s = (cell * 2654435761u) >> (32 - 11);
    for (int probe = 0; probe < probes; probe++, s = (s + 1) & (SUM_SLOTS - 1)) {
        uint32_t k = key[s];
        if (k == SUM_EMPTY)
            k = atomicCAS(&key[s], SUM_EMPTY, cell);
        if (k == SUM_EMPTY || k == cell)
            return (int)s;
    }
    return -1;
}

// A row's values added to its cell's sums (one lane of a warp whose rows share the cell adds them all).
__device__ __forceinline__ void add_to_cell(const unsigned char *row, pc_dtype t, int32_t cell, int lane, int dim,
                                            const pc__hca_binning &bin, const fixed_scale &sc, uint32_t *table_key,
                                            unsigned long long *table_sum, unsigned long long *cell_sums, int probes,
                                            bool table)
{
    // Images come in regions: a warp whose rows share one cell adds once.
    unsigned same = __match_any_sync(0xffffffffu, cell);
    bool whole = same == 0xffffffffu && cell >= 0;
    bool adds = cell >= 0 && (!whole || lane == 0);
    unsigned long long *sum = nullptr;
    if (adds) {
        int slot = table ? sum_slot(table_key, (uint32_t)cell, probes) : -1;
        sum = slot >= 0 ? table_sum + (size_t)slot * SUM_MAX_DIM : cell_sums + (size_t)cell * dim;
    }
    for (int j = 0; j < dim; j++) {
        long long v = cell >= 0 ? fixed_value(row, t, j, bin, sc) : 0;
        if (whole)
            for (int o = 16; o > 0; o >>= 1)
                v += __shfl_xor_sync(0xffffffffu, v, o);
        if (adds)
            atomicAdd(sum + j, (unsigned long long)v);
    }
}

// Every row's cell summed; the rows of border cells gathered (pc__hca_gather_row).
// SUMS: in global memory (SUMS_GLOBAL) or through the block's table above (SUMS_TABLE: dim <= SUM_MAX_DIM,
// SUM_SHARED_BYTES of dynamic shared memory). Integers, so the order of the adds does not matter. (Integer
// rows are summed and gathered by HCA's cell sums pass instead, in dense shared arrays.)
enum { SUMS_GLOBAL = 0, SUMS_TABLE = 1 };
template <int SUMS>
__global__ void sum_and_gather(const unsigned char *data, size_t count, size_t stride, pc_dtype t, pc__hca_binning bin,
                               pc__hca_dgrid grid, fixed_scale sc, unsigned long long *cell_sums,
                               pc__hca_gather gather, int probes)
{
    constexpr bool TABLE = SUMS == SUMS_TABLE;
    extern __shared__ __align__(16) unsigned char smem[];
    unsigned long long *table_sum = reinterpret_cast<unsigned long long *>(smem);
    uint32_t *table_key = reinterpret_cast<uint32_t *>(smem + SUM_SLOTS * SUM_MAX_DIM * sizeof(unsigned long long));
    if (TABLE) {
        for (int i = threadIdx.x; i < SUM_SLOTS; i += blockDim.x) {
            table_key[i] = SUM_EMPTY;
            for (int j = 0; j < SUM_MAX_DIM; j++)
                table_sum[i * SUM_MAX_DIM + j] = 0;
        }
        __syncthreads();
    }
    int lane = threadIdx.x & 31, dim = bin.dim;
    size_t warp = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32, warps = (gridDim.x * (size_t)blockDim.x) / 32;
    for (size_t i0 = warp * 32; i0 < count; i0 += warps * 32) {
        size_t i = i0 + lane;
        bool valid = i < count;
        const unsigned char *row = data + (valid ? i : i0) * stride;
        int32_t cell = valid ? pc__hca_find_cell(grid, key_of_row(row, t, bin)) : -1;
        add_to_cell(row, t, cell, lane, dim, bin, sc, table_key, table_sum, cell_sums, probes, TABLE);
        pc__hca_gather_row(gather, row, i, cell);
    }
    if (TABLE) {
        __syncthreads();
        for (int i = threadIdx.x; i < SUM_SLOTS; i += blockDim.x)
            if (table_key[i] != SUM_EMPTY)
                for (int j = 0; j < dim; j++)
                    atomicAdd(&cell_sums[(size_t)table_key[i] * dim + j], table_sum[i * SUM_MAX_DIM + j]);
    }
}

__global__ void mark_heads(const uint64_t *keys, size_t count, int32_t *head)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += gridDim.x * (size_t)blockDim.x)
        head[i] = i == 0 || keys[i] != keys[i - 1];
}

// Each run's key and where it begins among the sorted points.
__global__ void scatter_heads(const uint64_t *keys, const int32_t *run, size_t count, uint64_t *unique,
                              int32_t *run_start)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += gridDim.x * (size_t)blockDim.x)
        if (i == 0 || keys[i] != keys[i - 1]) {
            unique[run[i] - 1] = keys[i];
            run_start[run[i] - 1] = (int32_t)i;
        }
}

// One climb a group of PC__CLIMB_LANES threads of a warp, a lane each (refine_climb.h's step): the
// cluster reached, or -2 with the start's number listed for the host, and the cluster of the start's own
// cell (left: apply compares the two without finding a cell a point). The group's threads take the
// same steps (their sums are the same after the shuffles), so they stay together. DIM is c.dim, a
// constant so that the loops over the dimensions unroll and the position, the sums and the walk over
// the blocks stay in registers; c is read where the launch put it (__grid_constant__), not copied to
// each thread's stack. With a runtime dim and a copied c, 4 bands took ~600 instructions a reference
// and lane (a 1 KiB stack; Nsight Compute: issue-bound, L1 81% busy with the stack's loads).
template <int DIM>
__global__ void __launch_bounds__(THREADS, CLIMB_BLOCKS)
    climb(const unsigned char *starts, size_t count, size_t record, pc_dtype t, const __grid_constant__ pc__hca_climb c,
          const __grid_constant__ pc__hca_binning bin, const __grid_constant__ pc__hca_dgrid grid,
          const int32_t *cluster_of_cell, int32_t *reached, int32_t *left, unsigned long long *unresolved,
          int32_t *unresolved_list)
{
    size_t first = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / PC__CLIMB_LANES;
    size_t groups = gridDim.x * (size_t)blockDim.x / PC__CLIMB_LANES;
    for (size_t r = first; r < count; r += groups) {
        const unsigned char *row = starts + r * record;
        double x[DIM];
#pragma unroll
        for (int j = 0; j < DIM; j++)
            x[j] = row_value(row, t, j);
        pc__climb_run(&c, DIM, x);
        if (threadIdx.x % PC__CLIMB_LANES)
            continue;
        left[r] = cluster_of_cell[pc__hca_find_cell(grid, key_of_row(row, t, bin))];
        int32_t cell = pc__hca_find_cell(grid, pc__climb_key(&c, DIM, x));
        if (cell >= 0) {
            reached[r] = cluster_of_cell[cell];
        } else {
            reached[r] = -2;
            unresolved_list[atomicAdd(unresolved, 1ull)] = (int32_t)r;
        }
    }
}

// The climb kernel for dim dimensions (1 to PC__CLIMB_MAX_DIM).
using climb_kernel = void (*)(const unsigned char *, size_t, size_t, pc_dtype, const pc__hca_climb, const pc__hca_binning,
                              const pc__hca_dgrid, const int32_t *, int32_t *, int32_t *, unsigned long long *,
                              int32_t *);
template <int... D> climb_kernel climb_for(int dim, std::integer_sequence<int, D...>)
{
    climb_kernel kernels[] = {climb<D + 1>...};
    return kernels[dim - 1];
}

// Each climb's points that change cluster (all of its run, or its one row: run_start NULL): counted, and
// the clusters' sums moved, once a run (its points share the value): a run of many points once, where
// the points one by one were 8 atomic adds each onto the same 32 words of the RGB image's clusters.
__global__ void apply_runs(size_t climbs, const int32_t *run_start, size_t count, const unsigned char *starts,
                           size_t record, const int32_t *reached, const int32_t *left, pc_dtype t,
                           pc__hca_binning bin, fixed_scale sc, unsigned long long *changed, unsigned long long *delta)
{
    int dim = bin.dim;
    for (size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x; r < climbs; r += gridDim.x * (size_t)blockDim.x) {
        int32_t to = reached[r], from = left[r];
        if (to == from)
            continue;
        long long points = run_start ? (r + 1 < climbs ? run_start[r + 1] : (long long)count) - run_start[r] : 1;
        const unsigned char *row = starts + r * record;
        atomicAdd(changed, (unsigned long long)points);
        // Modulo 2^64 as the point by point adds were: the same sums.
        for (int j = 0; j < dim; j++) {
            unsigned long long v = (unsigned long long)fixed_value(row, t, j, bin, sc) * (unsigned long long)points;
            if (from >= 0)
                atomicAdd(&delta[(size_t)from * (dim + 1) + j], 0ull - v);
            if (to >= 0)
                atomicAdd(&delta[(size_t)to * (dim + 1) + j], v);
        }
        if (from >= 0)
            atomicAdd(&delta[(size_t)from * (dim + 1) + dim], 0ull - (unsigned long long)points);
        if (to >= 0)
            atomicAdd(&delta[(size_t)to * (dim + 1) + dim], (unsigned long long)points);
    }
}

// Each border point that changes cluster: its label in device_labels, or listed (index, cluster) for
// the host's labels, a warp's places claimed at once.
__global__ void apply_points(size_t count, const int32_t *index, const int32_t *run, const int32_t *reached,
                             const int32_t *left, int32_t *device_labels, unsigned long long *listed,
                             int2 *changed_list)
{
    int lane = threadIdx.x & 31;
    size_t warp = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32, warps = gridDim.x * (size_t)blockDim.x / 32;
    for (size_t q0 = warp * 32; q0 < count; q0 += warps * 32) {
        size_t q = q0 + lane, r = 0;
        bool moves = false;
        if (q < count) {
            r = run ? (size_t)run[q] - 1 : q;
            moves = reached[r] != left[r];
        }
        if (device_labels) {
            if (moves)
                device_labels[index[q]] = reached[r];
            continue;
        }
        unsigned long long place = pc__hca_warp_place(listed, moves);
        if (moves)
            changed_list[place] = make_int2(index[q], reached[r]);
    }
}

unsigned blocks_for(size_t count, int sms)
{
    size_t b = (count + THREADS - 1) / THREADS, cap = (size_t)sms * 32;
    return (unsigned)(b < 1 ? 1 : b > cap ? cap : b);
}

template <typename T> pc_status upload(pc__device_buffer<T> &d, const T *h, size_t n, cudaStream_t stream, const char *what)
{
    pc_status st = pc__hca_grow(d, n, what);
    if (st == PC_OK && n)
        st = pc__cuda_status(cudaMemcpyAsync(d.ptr, h, n * sizeof(T), cudaMemcpyHostToDevice, stream), what);
    return st;
}

template <typename T> pc_status download(T *h, const T *d, size_t n, cudaStream_t stream, const char *what)
{
    if (n)
        PC_CUDA_TRY(cudaMemcpyAsync(h, d, n * sizeof(T), cudaMemcpyDeviceToHost, stream), what);
    return pc__cuda_status(cudaStreamSynchronize(stream), what);
}

struct host_arrays {
    int64_t *sums = nullptr;
    double *mean = nullptr;
    int32_t *list = nullptr;
    int2 *changed = nullptr;
    pc__hca_reach reach;
    host_arrays() { memset(&reach, 0, sizeof reach); }
    ~host_arrays()
    {
        free(sums);
        free(mean);
        free(list);
        free(changed);
        pc__hca_reach_free(&reach);
    }
};

// The side stream and its event, made once a plan (false: none to be had, the plan's stream serves).
bool have_side(pc__hca_refine_buffers &b)
{
    if (!b.side_tried) {
        b.side_tried = true;
        if (cudaStreamCreateWithFlags(&b.side, cudaStreamNonBlocking) != cudaSuccess ||
            cudaEventCreateWithFlags(&b.sums_ready, cudaEventDisableTiming) != cudaSuccess) {
            pc__hca_refine_close(b);
            cudaGetLastError();
        }
    }
    return b.side && b.sums_ready;
}

pc_status refine(pc__hca_gpu &s, const pc_points *points, int device_input, int32_t *device_labels,
                 int32_t *host_labels, const pc_hca_params *params, pc__hca_grid *g, const int32_t *cluster_of_cell,
                 size_t k, double *sums, pc_result *r)
{
    size_t n = points->n, dim = s.dim, cells = g->cells, rowbytes = s.rowbytes;
    size_t stride = points->stride ? points->stride : rowbytes;
    pc_dtype t = s.dtype;
    int integer = t == PC_U8 || t == PC_U16;
    host_arrays h;
    pc_status st;
    cudaStream_t stream = s.stream;
    // The plan's buffers, grown as needed (every one is written before it is read, or zeroed here).
    // s.cluster holds each cell's cluster since the label stage.
    pc__hca_refine_buffers &b = s.refine;
    auto &d_border = b.border;
    auto &index = b.index, &index_sorted = b.index_sorted, &run = b.run, &run_start = b.run_start;
    auto &reached = b.reached, &left = b.left, &unresolved_list = b.unresolved;
    auto &cell_sums = b.cell_sums, &scalars = b.scalars, &delta = b.delta;
    auto &rows = b.rows, &temp = b.temp;
    auto &keys = b.keys, &keys_sorted = b.keys_sorted;
    auto &changed_list = b.changed;
    const int32_t *d_cluster = s.cluster.ptr;
    pc__hca_dgrid grid = pc__hca_view(s);
    int packed = integer && rowbytes <= 8;
    size_t record = packed ? 8 : rowbytes;
    // Integer rows' cells are summed, and their border points gathered, by HCA's cell sums pass (each
    // block a range of cells in dense shared 32-bit sums: 0.5 ms on the RGB image against the table's
    // 3.1; up to 8 ranges, a pass each). Other rows' sums go through each block's shared table (dim <=
    // SUM_MAX_DIM), as many blocks as are resident at once, each flushing its table once. For benchmarks
    // and tests: PC_HCA_REFINE_TABLE_SUMS=1 takes the table for integer rows too,
    // PC_HCA_REFINE_GLOBAL_SUMS=1 global memory only.
    bool dense_sums = pc__hca_cell_sums_apply(cells, dim, t, (size_t)s.shared_optin) &&
                      !getenv("PC_HCA_REFINE_GLOBAL_SUMS") && !getenv("PC_HCA_REFINE_TABLE_SUMS");
    // The border cells, on the device (0.04 ms for the RGB image's, 0.4 on the host), and their points.
    if ((st = pc__hca_grow(d_border, cells, "HCA-MS border cells")) != PC_OK ||
        (st = pc__hca_grow(scalars, 5, "HCA-MS counters")) != PC_OK)
        return st;
    PC_CUDA_TRY(cudaMemsetAsync(scalars.ptr, 0, 5 * sizeof(unsigned long long), stream), "HCA-MS counters");
    if ((st = pc__hca_cuda_border_cells(s, cells, d_cluster, d_border.ptr, scalars.ptr + 3)) != PC_OK)
        return st;
    unsigned long long count = 0;
    if ((st = download(&count, scalars.ptr + 3, 1, stream, "HCA-MS border cells")) != PC_OK)
        return st;
    r->border_points = (int64_t)count;
    r->changed_points = 0;
    if (count == 0)
        return PC_OK;
    fixed_scale sc;
    for (size_t j = 0; j < PC__HCA_MAX_DIM; j++)
        sc.factor[j] = j < dim ? pc__climb_factor(g->lo[j], g->hi[j]) : 0;
    if ((st = pc__hca_grow(cell_sums, cells * dim, "HCA-MS cell sums")) != PC_OK ||
        (st = pc__hca_grow(index, count, "HCA-MS border points")) != PC_OK ||
        (st = packed ? pc__hca_grow(keys, count, "HCA-MS border rows")
                     : pc__hca_grow(rows, count * rowbytes, "HCA-MS border rows")) != PC_OK)
        return st;
    PC_CUDA_TRY(cudaMemsetAsync(cell_sums.ptr, 0, cells * dim * sizeof(unsigned long long), stream), "HCA-MS cell sums");
    int resident = 0;
    if (!dense_sums && dim <= (size_t)SUM_MAX_DIM && cells < SUM_EMPTY && SUM_SHARED_BYTES <= (size_t)s.shared_optin &&
        !getenv("PC_HCA_REFINE_GLOBAL_SUMS")) {
        PC_CUDA_TRY(cudaFuncSetAttribute(sum_and_gather<SUMS_TABLE>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)SUM_SHARED_BYTES),
                    "HCA-MS cell sums");
        PC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, sum_and_gather<SUMS_TABLE>, THREADS,
                                                                  SUM_SHARED_BYTES),
                    "HCA-MS cell sums");
        resident *= s.sms;
    }
    const char *probes_env = getenv("PC_HCA_REFINE_TABLE_PROBES");
    int probes = probes_env ? std::max(1, std::min(SUM_SLOTS, atoi(probes_env))) : SUM_PROBES;
    bool side = have_side(b);
    // The pass over the points: the device's input, or the host's in the backend's pieces. Once the
    // cells' sums are made, their event lets the side stream take them to the host while this stream
    // sorts the border values.
    size_t piece = device_input ? n : s.piece_rows;
    for (size_t off = 0; off < n; off += piece) {
        size_t c = n - off < piece ? n - off : piece;
        const unsigned char *data = (const unsigned char *)points->data + off * stride;
        size_t row_stride = stride;
        if (!device_input) {
            if ((st = pc__hca_load_rows(s, data, stride, rowbytes, c)) != PC_OK)
                return st;
            data = s.data.ptr;
            row_stride = rowbytes;
        }
        pc__hca_gather gather = {d_border.ptr, scalars.ptr, index.ptr, packed ? keys.ptr : nullptr, rows.ptr, rowbytes,
                                 off};
        if (dense_sums) {
            pc__hca_rows piece_rows = {data, c, row_stride, (int)dim, t};
            st = pc__hca_cuda_cell_sums(piece_rows, s.bin, grid, cells, nullptr, cell_sums.ptr, &gather,
                                        {s.sms, stream, (size_t)s.shared_optin});
            if (st != PC_OK)
                return st == PC_UNSUPPORTED ? pc__fail(PC_INTERNAL_ERROR, "HCA-MS: no cell sums pass") : st;
            continue;
        }
        auto pass = resident > 0 ? sum_and_gather<SUMS_TABLE> : sum_and_gather<SUMS_GLOBAL>;
        unsigned blocks = resident > 0 ? std::min(blocks_for(c, s.sms), (unsigned)resident) : blocks_for(c, s.sms);
        pass<<<blocks, THREADS, resident > 0 ? SUM_SHARED_BYTES : 0, stream>>>(data, c, row_stride, t, s.bin, grid, sc,
                                                                               cell_sums.ptr, gather, probes);
        PC_CUDA_LAUNCHED("HCA-MS border points");
    }
    if (side)
        PC_CUDA_TRY(cudaEventRecord(b.sums_ready, stream), "HCA-MS cell sums");
    // The starts: distinct keys (sorted, runs numbered from 1), or the gathered rows.
    const unsigned char *starts = rows.ptr;
    const int32_t *point_index = index.ptr;
    size_t climbs = count;
    if (packed) {
        size_t bytes = 0, scan_bytes = 0;
        if ((st = pc__hca_grow(keys_sorted, count, "HCA-MS sorted keys")) != PC_OK ||
            (st = pc__hca_grow(index_sorted, count, "HCA-MS sorted keys")) != PC_OK ||
            (st = pc__hca_grow(run, count, "HCA-MS runs")) != PC_OK ||
            (st = pc__hca_grow(run_start, count, "HCA-MS runs")) != PC_OK)
            return st;
        int bits = (int)(8 * rowbytes);
        PC_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.ptr, keys_sorted.ptr, index.ptr,
                                                    index_sorted.ptr, (int)count, 0, bits, stream),
                    "HCA-MS sort");
        PC_CUDA_TRY(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, run.ptr, run.ptr, (int)count, stream), "HCA-MS scan");
        if ((st = pc__hca_grow(temp, bytes > scan_bytes ? bytes : scan_bytes, "HCA-MS sort scratch")) != PC_OK)
            return st;
        PC_CUDA_TRY(cub::DeviceRadixSort::SortPairs(temp.ptr, bytes, keys.ptr, keys_sorted.ptr, index.ptr,
                                                    index_sorted.ptr, (int)count, 0, bits, stream),
                    "HCA-MS sort");
        mark_heads<<<blocks_for(count, s.sms), THREADS, 0, stream>>>(keys_sorted.ptr, count, run.ptr);
        PC_CUDA_LAUNCHED("HCA-MS runs");
        scan_bytes = temp.count;
        PC_CUDA_TRY(cub::DeviceScan::InclusiveSum(temp.ptr, scan_bytes, run.ptr, run.ptr, (int)count, stream),
                    "HCA-MS scan");
        scatter_heads<<<blocks_for(count, s.sms), THREADS, 0, stream>>>(keys_sorted.ptr, run.ptr, count, keys.ptr,
                                                                       run_start.ptr);
        PC_CUDA_LAUNCHED("HCA-MS runs");
        starts = (const unsigned char *)keys.ptr; // the distinct keys, in place of the unsorted ones
        point_index = index_sorted.ptr;
    }
    // The means and the references, on the host as the CPU makes them, while the device sorts.
    h.sums = (int64_t *)pc__alloc(cells * dim, sizeof(int64_t), "HCA-MS cell sums");
    h.mean = (double *)pc__alloc(cells * dim, sizeof(double), "HCA-MS cell means");
    if (!h.sums || !h.mean)
        return PC_OUT_OF_MEMORY;
    if (side)
        PC_CUDA_TRY(cudaStreamWaitEvent(b.side, b.sums_ready, 0), "HCA-MS cell sums");
    if ((st = download((unsigned long long *)h.sums, cell_sums.ptr, cells * dim, side ? b.side : stream,
                       "HCA-MS cell sums")) != PC_OK)
        return st;
    pc__hca_means_from_sums(g, t, h.sums, h.mean);
    if ((st = pc__hca_reach_setup(&h.reach, g, h.mean, cluster_of_cell, params)) != PC_OK)
        return st;
    if (!(h.reach.climb.h > 0))
        return PC_OK; // a zero bandwidth moves nothing: every point keeps its cell's cluster
    auto &d_block_key = b.block_key;
    auto &d_ref = b.ref, &d_weight = b.weight;
    auto &d_block_start = b.block_start;
    pc__hca_climb dc = h.reach.climb;
    if ((st = upload(d_block_key, dc.block_key, dc.refs, stream, "HCA-MS references")) != PC_OK ||
        (st = upload(d_ref, dc.ref, dc.refs * dim, stream, "HCA-MS references")) != PC_OK ||
        (st = upload(d_weight, dc.weight, dc.refs, stream, "HCA-MS references")) != PC_OK)
        return st;
    if (dc.block_start &&
        (st = upload(d_block_start, dc.block_start, (size_t)dc.block_count + 1, stream, "HCA-MS blocks")) != PC_OK)
        return st;
    dc.block_start = dc.block_start ? d_block_start.ptr : nullptr;
    dc.block_key = d_block_key.ptr;
    dc.ref = d_ref.ptr;
    dc.ref_dim = nullptr; /* the CPU's */
    dc.weight = d_weight.ptr;
    if (packed) {
        int32_t runs = 0;
        if ((st = download(&runs, run.ptr + count - 1, 1, stream, "HCA-MS runs")) != PC_OK)
            return st;
        climbs = (size_t)runs;
    }
    if ((st = pc__hca_grow(reached, climbs, "HCA-MS climbs")) != PC_OK ||
        (st = pc__hca_grow(left, climbs, "HCA-MS climbs")) != PC_OK ||
        (st = pc__hca_grow(unresolved_list, climbs, "HCA-MS climbs")) != PC_OK)
        return st;
    if (dim < 1 || dim > PC__CLIMB_MAX_DIM) // pc__hca_check_params refuses these before any plan
        return pc__fail(PC_INTERNAL_ERROR, "HCA-MS climbs: %zu dimensions", (size_t)dim);
    climb_for(dim, std::make_integer_sequence<int, PC__CLIMB_MAX_DIM>())<<<blocks_for(climbs * PC__CLIMB_LANES, s.sms),
                                                                        THREADS, 0, stream>>>(
        starts, climbs, record, t, dc, s.bin, grid, d_cluster, reached.ptr, left.ptr, scalars.ptr + 1,
        unresolved_list.ptr);
    PC_CUDA_LAUNCHED("HCA-MS climbs");
    unsigned long long unresolved = 0;
    if ((st = download(&unresolved, scalars.ptr + 1, 1, stream, "HCA-MS climbs")) != PC_OK)
        return st;
    if (unresolved) {
        // Climbs that ended in an empty cell: the host climbs them again (to the same position) and
        // takes the nearest non-empty cell's cluster.
        h.list = (int32_t *)pc__alloc(unresolved, sizeof(int32_t), "HCA-MS unresolved climbs");
        if (!h.list)
            return PC_OUT_OF_MEMORY;
        if ((st = download(h.list, unresolved_list.ptr, unresolved, stream, "HCA-MS unresolved climbs")) != PC_OK)
            return st;
        for (size_t u = 0; u < unresolved; u++) {
            unsigned char row[64];
            if ((st = download(row, starts + (size_t)h.list[u] * record, record, stream, "HCA-MS unresolved climbs")) !=
                PC_OK)
                return st;
            double x[PC__HCA_MAX_DIM];
            for (size_t j = 0; j < dim; j++)
                x[j] = pc__hca_value(row, t, j);
            int32_t cluster = pc__hca_reach_climb(&h.reach, x);
            PC_CUDA_TRY(cudaMemcpyAsync(reached.ptr + h.list[u], &cluster, sizeof cluster, cudaMemcpyHostToDevice, stream),
                        "HCA-MS unresolved climbs");
            PC_CUDA_TRY(cudaStreamSynchronize(stream), "HCA-MS unresolved climbs");
        }
    }
    size_t words = k * (dim + 1);
    if ((st = pc__hca_grow(delta, words, "HCA-MS cluster sums")) != PC_OK ||
        (!device_labels && (st = pc__hca_grow(changed_list, count, "HCA-MS changed points")) != PC_OK))
        return st;
    PC_CUDA_TRY(cudaMemsetAsync(delta.ptr, 0, words * sizeof(unsigned long long), stream), "HCA-MS cluster sums");
    apply_runs<<<blocks_for(climbs, s.sms), THREADS, 0, stream>>>(climbs, packed ? run_start.ptr : nullptr, count,
                                                                starts, record, reached.ptr, left.ptr, t, s.bin, sc,
                                                                scalars.ptr + 2, delta.ptr);
    PC_CUDA_LAUNCHED("HCA-MS apply");
    apply_points<<<blocks_for(count, s.sms), THREADS, 0, stream>>>(count, point_index, packed ? run.ptr : nullptr,
                                                                   reached.ptr, left.ptr, device_labels,
                                                                   scalars.ptr + 4, changed_list.ptr);
    PC_CUDA_LAUNCHED("HCA-MS apply");
    unsigned long long changed = 0;
    if ((st = download(&changed, scalars.ptr + 2, 1, stream, "HCA-MS apply")) != PC_OK)
        return st;
    r->changed_points = (int64_t)changed;
    h.sums = (int64_t *)realloc(h.sums, (words ? words : 1) * sizeof(int64_t));
    if (!h.sums)
        return pc__fail(PC_OUT_OF_MEMORY, "HCA-MS: cannot allocate the clusters' sums");
    if ((st = download((unsigned long long *)h.sums, delta.ptr, words, stream, "HCA-MS cluster sums")) != PC_OK)
        return st;
    for (size_t c = 0; c < k; c++) {
        double moved = (double)h.sums[c * (dim + 1) + dim];
        sums[c * (dim + 1) + dim] += moved;
        for (size_t j = 0; j < dim; j++) {
            double q = (double)h.sums[c * (dim + 1) + j];
            sums[c * (dim + 1) + j] += integer ? q : (sc.factor[j] > 0 ? q / sc.factor[j] : 0) + g->lo[j] * moved;
        }
    }
    if (!device_labels && changed) {
        if (!(h.changed = (int2 *)pc__alloc(changed, sizeof(int2), "HCA-MS changed points")))
            return PC_OUT_OF_MEMORY;
        if ((st = download(h.changed, changed_list.ptr, changed, stream, "HCA-MS changed points")) != PC_OK)
            return st;
        for (size_t u = 0; u < changed; u++)
            host_labels[h.changed[u].x] = h.changed[u].y;
    }
    return PC_OK;
}

} // namespace

void pc__hca_refine_close(pc__hca_refine_buffers &b)
{
    if (b.side) {
        cudaStreamSynchronize(b.side);
        cudaStreamDestroy(b.side);
    }
    if (b.sums_ready)
        cudaEventDestroy(b.sums_ready);
    b.side = nullptr;
    b.sums_ready = nullptr;
}

pc_status pc__hca_cuda_refine(struct pc__hca_gpu *gpu, const pc_points *points, int device_input,
                              int32_t *device_labels, int32_t *host_labels, const pc_hca_params *params,
                              pc__hca_grid *g, const int32_t *cluster_of_cell, size_t k, double *sums, pc_result *r)
{
    double t0 = pc__now();
    pc_status st = refine(*gpu, points, device_input, device_labels, host_labels, params, g, cluster_of_cell, k, sums, r);
    if (st == PC_OK)
        pc__result_add_stage(r, "refine", pc__now() - t0);
    return st;
}
