// The HCA passes over the points on the GPU: bounding box, histogram of cells, labelling with the
// clusters' sums. Each block takes one contiguous stretch of rows (image regions keep neighbouring
// pixels in one cell, one cluster); each warp reads 32 consecutive rows at a time, finds the runs of
// equal cells or clusters among them with a ballot, and one lane per run does the atomic, so that a
// uniform region costs one atomic per warp instead of 32 on the same counter.
#include "cuda_hca.cuh"

#include <math.h>
#include <type_traits>

namespace {

constexpr unsigned FULL = 0xffffffffu;
constexpr int BLOCK = 1024;
constexpr int TABLE_BYTES = PC__HCA_MAX_DIM * 256 * 2; // uint8 coordinate tables, in shared memory
constexpr uint32_t SMEM_DIRECT_BINS = 32768;           // m^d up to this: one shared counter per cell
constexpr uint32_t SMEM_HASH_SLOTS = 16384;            // beyond: a shared hash, spilling to global
constexpr uint32_t EMPTY32 = 0xffffffffu;
constexpr size_t SUMS_SMEM_LIMIT = 64 << 10;
constexpr int GROUPS = 4; // groups of 32 rows a warp reads before it counts or sums them

template <typename T> struct integer_band { static constexpr int values = 0; };
template <> struct integer_band<uint8_t> { static constexpr int values = 256; };
template <> struct integer_band<uint16_t> { static constexpr int values = 65536; };

template <typename T, int DIM>
__device__ __forceinline__ uint64_t row_key(const unsigned char *row, const pc__hca_binning &bin, const uint16_t *table,
                                            int dim)
{
    const T *v = reinterpret_cast<const T *>(row);
    uint64_t key = 0;
#pragma unroll
    for (int j = 0; j < (DIM ? DIM : PC__HCA_MAX_DIM); j++) {
        if (!DIM && j >= dim)
            break;
        int c;
        if constexpr (integer_band<T>::values != 0)
            c = table[j * integer_band<T>::values + v[j]];
        else
            c = pc__hca_coordinate((double)v[j], bin.lo[j], bin.hi[j], bin.m);
        key += (uint64_t)c * bin.stride[j];
    }
    return key;
}

// uint8 tables go to shared memory (at most 4 KiB); uint16 ones stay in global memory (1 MiB).
template <typename T> __device__ const uint16_t *stage_table(const pc__hca_binning &bin, uint16_t *shared)
{
    if constexpr (integer_band<T>::values != 256) {
        return bin.table;
    } else {
        for (int i = threadIdx.x; i < bin.dim * 256; i += blockDim.x)
            shared[i] = bin.table[i];
        return shared;
    }
}

// The stretch of rows of this block, a multiple of 32 long.
__device__ __forceinline__ void block_stretch(size_t rows, size_t *start, size_t *end)
{
    size_t per_block = ((rows + gridDim.x - 1) / gridDim.x + 31) & ~(size_t)31;
    *start = (size_t)blockIdx.x * per_block;
    *end = *start + per_block < rows ? *start + per_block : rows;
}

// Where the run of lane `lane` ends (the next head, or the end of the valid lanes).
__device__ __forceinline__ int run_end(unsigned heads, int lane, int valid_lanes)
{
    unsigned later = heads & ~((2u << lane) - 1u);
    return later ? __ffs(later) - 1 : valid_lanes;
}

template <typename T, int DIM>
__global__ void __launch_bounds__(BLOCK) bounds_kernel(pc__hca_rows rows, unsigned long long *lo_bits,
                                                       unsigned long long *hi_bits, unsigned long long *non_finite)
{
    // Integers and float32 are exact in float; the values stay in registers (a loop over a run-time
    // dimension count would keep them in local memory).
    using A = typename std::conditional<std::is_same<T, double>::value, double, float>::type;
    constexpr int D = DIM ? DIM : PC__HCA_MAX_DIM;
    __shared__ unsigned long long lo_s[PC__HCA_MAX_DIM], hi_s[PC__HCA_MAX_DIM];
    __shared__ unsigned long long bad_s;
    if (threadIdx.x < PC__HCA_MAX_DIM) {
        lo_s[threadIdx.x] = ~0ull;
        hi_s[threadIdx.x] = 0;
    }
    if (threadIdx.x == 0)
        bad_s = 0;
    __syncthreads();
    A lo[D], hi[D];
#pragma unroll
    for (int j = 0; j < D; j++) {
        lo[j] = INFINITY;
        hi[j] = -INFINITY;
    }
    unsigned long long bad = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < rows.rows; i += (size_t)gridDim.x * blockDim.x) {
        const T *v = reinterpret_cast<const T *>(rows.data + i * rows.stride);
#pragma unroll
        for (int j = 0; j < D; j++) {
            if (!DIM && j >= rows.dim)
                break;
            A x = (A)v[j];
            if constexpr (integer_band<T>::values == 0) {
                // As pc_points_check: float64 values beyond float's range are refused too.
                if (!isfinite(x) || (sizeof(T) == 8 && fabs((double)x) > 3.4e38)) {
                    bad++;
                    continue;
                }
            }
            lo[j] = lo[j] < x ? lo[j] : x;
            hi[j] = hi[j] > x ? hi[j] : x;
        }
    }
#pragma unroll
    for (int j = 0; j < D; j++) {
        if (!DIM && j >= rows.dim)
            break;
        if (lo[j] <= hi[j]) {
            atomicMin(&lo_s[j], pc__hca_order_bits((unsigned long long)__double_as_longlong((double)lo[j])));
            atomicMax(&hi_s[j], pc__hca_order_bits((unsigned long long)__double_as_longlong((double)hi[j])));
        }
    }
    if (bad)
        atomicAdd(&bad_s, bad);
    __syncthreads();
    if (threadIdx.x < rows.dim) {
        atomicMin(&lo_bits[threadIdx.x], lo_s[threadIdx.x]);
        atomicMax(&hi_bits[threadIdx.x], hi_s[threadIdx.x]);
    }
    if (threadIdx.x == 0 && bad_s)
        atomicAdd(non_finite, bad_s);
}

enum { DIRECT = 0, SHARED_HASH = 1, GLOBAL_HASH = 2, GLOBAL_DENSE = 3 };

template <int MODE>
__device__ __forceinline__ void count_run(uint64_t key, uint32_t len, uint32_t *shared, const pc__hca_dgrid &grid)
{
    if (MODE == DIRECT) {
        atomicAdd(&shared[key], len);
    } else if (MODE == SHARED_HASH) {
        uint32_t *keys = shared, *counts = shared + SMEM_HASH_SLOTS;
        uint32_t k32 = (uint32_t)key, s = (uint32_t)pc__hca_mix(key) & (SMEM_HASH_SLOTS - 1);
        for (int probe = 0; probe < 32; probe++) {
            uint32_t old = atomicCAS(&keys[s], EMPTY32, k32);
            if (old == EMPTY32 || old == k32) {
                atomicAdd(&counts[s], len);
                return;
            }
            s = (s + 1) & (SMEM_HASH_SLOTS - 1);
        }
        atomicAdd(&grid.slot[key], (int32_t)len); // this block has met too many cells: count in place
    } else if (MODE == GLOBAL_DENSE) {
        atomicAdd(&grid.slot[key], (int32_t)len);
    } else {
        uint64_t s = pc__hca_mix(key) & grid.hash_mask;
        for (;;) {
            unsigned long long old = atomicCAS((unsigned long long *)&grid.hash_key[s], PC__HCA_EMPTY_KEY, key);
            if (old == PC__HCA_EMPTY_KEY || old == key) {
                atomicAdd(&grid.hash_val[s], (int32_t)len);
                return;
            }
            s = (s + 1) & grid.hash_mask;
        }
    }
}

template <typename T, int DIM, int MODE>
__global__ void __launch_bounds__(BLOCK) histogram_kernel(pc__hca_rows rows, pc__hca_binning bin, pc__hca_dgrid grid,
                                                          uint32_t direct_bins)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const uint16_t *table = stage_table<T>(bin, reinterpret_cast<uint16_t *>(smem));
    uint32_t *shared = reinterpret_cast<uint32_t *>(smem + TABLE_BYTES);
    uint32_t shared_words = MODE == DIRECT ? direct_bins : MODE == SHARED_HASH ? 2 * SMEM_HASH_SLOTS : 0;
    for (uint32_t i = threadIdx.x; i < shared_words; i += blockDim.x)
        shared[i] = MODE == SHARED_HASH && i < SMEM_HASH_SLOTS ? EMPTY32 : 0;
    __syncthreads();
    size_t start, end;
    block_stretch(rows.rows, &start, &end);
    int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    for (size_t first = start + (threadIdx.x >> 5) * 32 * GROUPS; first < end; first += (size_t)warps * 32 * GROUPS) {
        uint64_t keys[GROUPS]; // all loads first: GROUPS independent latencies in flight
#pragma unroll
        for (int u = 0; u < GROUPS; u++) {
            size_t i = first + 32 * u + lane;
            keys[u] = i < end ? row_key<T, DIM>(rows.data + i * rows.stride, bin, table, rows.dim) : PC__HCA_EMPTY_KEY;
        }
#pragma unroll
        for (int u = 0; u < GROUPS; u++) {
            size_t base = first + 32 * u;
            int valid_lanes = base >= end ? 0 : end - base < 32 ? (int)(end - base) : 32;
            uint64_t prev = __shfl_up_sync(FULL, keys[u], 1);
            bool head = lane < valid_lanes && (lane == 0 || prev != keys[u]);
            unsigned heads = __ballot_sync(FULL, head);
            if (head)
                count_run<MODE>(keys[u], (uint32_t)(run_end(heads, lane, valid_lanes) - lane), shared, grid);
        }
    }
    __syncthreads();
    if (MODE == DIRECT) {
        for (uint32_t c = threadIdx.x; c < direct_bins; c += blockDim.x)
            if (shared[c])
                atomicAdd(&grid.slot[c], (int32_t)shared[c]);
    } else if (MODE == SHARED_HASH) {
        for (uint32_t s = threadIdx.x; s < SMEM_HASH_SLOTS; s += blockDim.x)
            if (shared[s] != EMPTY32)
                atomicAdd(&grid.slot[shared[s]], (int32_t)shared[SMEM_HASH_SLOTS + s]);
    }
}

// Several dense grids over the same rows (HECA's members) counted in one pass, all their counters in
// shared memory (uint8 rows' tables too), each row's value read once for all of them.
template <typename T, int DIM>
__global__ void __launch_bounds__(BLOCK) histograms_kernel(pc__hca_rows rows, pc__hca_grids grids, int32_t *counts)
{
    extern __shared__ __align__(16) unsigned char smem[];
    constexpr bool bytes = integer_band<T>::values == 256;
    constexpr int D = DIM ? DIM : PC__HCA_MAX_DIM;
    uint16_t *tables = reinterpret_cast<uint16_t *>(smem);
    uint32_t table_words = bytes ? (uint32_t)grids.count * PC__HCA_MAX_DIM * 256 : 0;
    for (int g = 0; bytes && g < grids.count; g++)
        for (int i = threadIdx.x; i < rows.dim * 256; i += blockDim.x)
            tables[g * PC__HCA_MAX_DIM * 256 + i] = grids.bin[g].table[i];
    uint32_t *shared = reinterpret_cast<uint32_t *>(smem + 2 * table_words), words = grids.first[grids.count];
    for (uint32_t q = threadIdx.x; q < words; q += blockDim.x)
        shared[q] = 0;
    __syncthreads();
    size_t start, end;
    block_stretch(rows.rows, &start, &end);
    for (size_t i = start + threadIdx.x; i < end; i += blockDim.x) {
        T v[D]; // the row in registers, for every grid
#pragma unroll
        for (int j = 0; j < D; j++)
            v[j] = DIM || j < rows.dim ? reinterpret_cast<const T *>(rows.data + i * rows.stride)[j] : T(0);
        for (int g = 0; g < grids.count; g++) {
            const uint16_t *table = bytes ? tables + g * PC__HCA_MAX_DIM * 256 : grids.bin[g].table;
            uint64_t key = row_key<T, DIM>(reinterpret_cast<const unsigned char *>(v), grids.bin[g], table, rows.dim);
            atomicAdd(&shared[grids.first[g] + (uint32_t)key], 1u);
        }
    }
    __syncthreads();
    for (uint32_t q = threadIdx.x; q < words; q += blockDim.x)
        if (shared[q])
            atomicAdd(&counts[q], (int32_t)shared[q]);
}

// The sum of v over a run of lanes, at the run's head (lane i holds the sum over [i, stop) of its run).
// A warp that is one run (heads == 1: the common case inside image regions) sums in one reduction;
// otherwise a segmented sum: after the step of width w, lane i holds the sum over [i, min(i + 2w, stop)).
template <typename S> __device__ __forceinline__ S run_sum(S v, int lane, int stop, bool one_run)
{
    if (one_run) {
        if constexpr (sizeof(S) == 4) {
            return __reduce_add_sync(FULL, v);
        } else {
            for (int w = 16; w > 0; w >>= 1)
                v += __shfl_xor_sync(FULL, v, w);
            return v;
        }
    }
    for (int w = 1; w < 32; w <<= 1) {
        S other = __shfl_down_sync(FULL, v, w);
        if (lane + w < stop)
            v += other;
    }
    return v;
}

template <typename T, int DIM>
__global__ void __launch_bounds__(BLOCK) label_kernel(pc__hca_rows rows, pc__hca_binning bin, pc__hca_dgrid grid,
                                                      const int32_t *cluster_of_cell, int32_t *labels, int k,
                                                      unsigned long long *sums, int shared_sums, pc__hca_scale scale)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const uint16_t *table = stage_table<T>(bin, reinterpret_cast<uint16_t *>(smem));
    const int dim = DIM ? DIM : rows.dim;
    unsigned long long *acc = sums;
    if (shared_sums) {
        acc = reinterpret_cast<unsigned long long *>(smem + TABLE_BYTES);
        for (int q = threadIdx.x; q < k * (dim + 1); q += blockDim.x)
            acc[q] = 0;
    }
    __syncthreads();
    size_t start, end;
    block_stretch(rows.rows, &start, &end);
    int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
    for (size_t first = start + (threadIdx.x >> 5) * 32 * GROUPS; first < end; first += (size_t)warps * 32 * GROUPS) {
        int32_t clusters[GROUPS]; // the dependent lookups of GROUPS rows in flight together
#pragma unroll
        for (int u = 0; u < GROUPS; u++) {
            size_t i = first + 32 * u + lane;
            int32_t cell =
                i < end ? pc__hca_find_cell(grid, row_key<T, DIM>(rows.data + i * rows.stride, bin, table, rows.dim))
                        : -1;
            clusters[u] = cell < 0 || !cluster_of_cell ? cell : cluster_of_cell[cell];
        }
#pragma unroll 1
        for (int u = 0; u < GROUPS; u++) {
            size_t base = first + 32 * u, i = base + lane;
            if (base >= end)
                break;
            bool valid = i < end;
            int32_t cluster = clusters[u];
            if (valid)
                labels[i] = cluster;
            int prev = __shfl_up_sync(FULL, cluster, 1);
            bool head = valid && (lane == 0 || prev != cluster);
            unsigned heads = __ballot_sync(FULL, head);
            int valid_lanes = end - base < 32 ? (int)(end - base) : 32;
            int stop = run_end(heads, lane, valid_lanes);
            const T *v = reinterpret_cast<const T *>(rows.data + i * rows.stride);
            unsigned long long *s = acc + (size_t)(cluster < 0 ? 0 : cluster) * (dim + 1);
#pragma unroll
            for (int j = 0; j < (DIM ? DIM : PC__HCA_MAX_DIM); j++) {
                if (!DIM && j >= dim)
                    break;
                if constexpr (integer_band<T>::values != 0) {
                    uint32_t sum = run_sum<uint32_t>(valid ? v[j] : 0u, lane, stop, heads == 1u);
                    if (head && cluster >= 0)
                        atomicAdd(&s[j], (unsigned long long)sum);
                } else {
                    unsigned long long q =
                        valid ? (unsigned long long)llrint(((double)v[j] - scale.origin[j]) * scale.factor[j]) : 0ull;
                    q = run_sum<unsigned long long>(q, lane, stop, heads == 1u);
                    if (head && cluster >= 0)
                        atomicAdd(&s[j], q);
                }
            }
            if (head && cluster >= 0)
                atomicAdd(&s[dim], (unsigned long long)(stop - lane));
        }
    }
    if (shared_sums) {
        __syncthreads();
        for (int q = threadIdx.x; q < k * (dim + 1); q += blockDim.x)
            if (acc[q])
                atomicAdd(&sums[q], acc[q]);
    }
}

// Integer rows: each row's cell into cell_of_row, and every cell's band values summed. A block keeps the
// sums of one range of `span` cells in shared 32-bit words (its rows few enough that none overflows) and
// adds them to the 64-bit sums once; with more cells than one block's shared memory holds, `ranges`
// blocks read the same rows, each summing its own range (range 0 writes the cells and gathers: HCA-MS's
// border points in the pass that sums their cells, where a pass of their own took 0.9 ms of the RGB
// image's refinement).
template <typename T, int DIM>
__global__ void __launch_bounds__(BLOCK) cell_sums_kernel(pc__hca_rows rows, pc__hca_binning bin, pc__hca_dgrid grid,
                                                          uint32_t cells, uint32_t span, uint32_t ranges,
                                                          size_t rows_per_block, int32_t *cell_of_row,
                                                          unsigned long long *sums, pc__hca_gather gather,
                                                          bool gathers)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const uint16_t *table = stage_table<T>(bin, reinterpret_cast<uint16_t *>(smem));
    const int dim = DIM ? DIM : rows.dim;
    uint32_t *acc = reinterpret_cast<uint32_t *>(smem + TABLE_BYTES);
    uint32_t range = blockIdx.x % ranges, first_cell = range * span, words = span * (uint32_t)dim;
    for (uint32_t q = threadIdx.x; q < words; q += blockDim.x)
        acc[q] = 0;
    __syncthreads();
    size_t start = (size_t)(blockIdx.x / ranges) * rows_per_block;
    size_t end = start + rows_per_block < rows.rows ? start + rows_per_block : rows.rows;
    bool gathering = gathers && range == 0;
    // Whole warps step together (the gather's ballots); a row past the end has no cell.
    for (size_t i0 = start; i0 < end; i0 += blockDim.x) {
        size_t i = i0 + threadIdx.x;
        const unsigned char *row = rows.data + (i < end ? i : start) * rows.stride;
        int32_t cell = i < end ? pc__hca_find_cell(grid, row_key<T, DIM>(row, bin, table, rows.dim)) : -1;
        if (gathering)
            pc__hca_gather_row(gather, row, i, cell);
        if (range == 0 && cell_of_row && i < end)
            cell_of_row[i] = cell;
        uint32_t local = (uint32_t)cell - first_cell;
        if (cell < 0 || local >= span)
            continue;
        const T *v = reinterpret_cast<const T *>(row);
#pragma unroll
        for (int j = 0; j < (DIM ? DIM : PC__HCA_MAX_DIM); j++) {
            if (!DIM && j >= dim)
                break;
            atomicAdd(&acc[local * dim + j], (uint32_t)v[j]);
        }
    }
    __syncthreads();
    for (uint32_t q = threadIdx.x; q < words; q += blockDim.x)
        if (acc[q] && first_cell + q / dim < cells)
            atomicAdd(&sums[(size_t)first_cell * dim + q], (unsigned long long)acc[q]);
}

__global__ void narrow_kernel(const int32_t *labels, uint8_t *bytes, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        bytes[i] = (uint8_t)labels[i];
}

// Blocks to launch: as many as fit on the GPU at once, given the shared memory.
template <typename K> pc_status fill_gpu(K kernel, size_t smem, const pc__hca_point_pass &pass, int *blocks)
{
    PC_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                "HCA shared memory");
    int per_sm = 0;
    PC_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, BLOCK, smem), "HCA occupancy");
    *blocks = (per_sm > 0 ? per_sm : 1) * pass.sms;
    return PC_OK;
}

// Calls f.template operator()<T, DIM>() for the rows' type, with DIM = 3 or 4 specialised (RGB and
// 4-band imagery) and 0 (any dimension) otherwise.
template <typename F> pc_status dispatch(const pc__hca_rows &rows, F &&f)
{
#define PC__HCA_DIMS(T)                                                                                        \
    return rows.dim == 3 ? f.template operator()<T, 3>() : rows.dim == 4 ? f.template operator()<T, 4>() \
                                                                          : f.template operator()<T, 0>()
    switch (rows.dtype) {
    case PC_U8: PC__HCA_DIMS(uint8_t);
    case PC_U16: PC__HCA_DIMS(uint16_t);
    case PC_F32: PC__HCA_DIMS(float);
    default: PC__HCA_DIMS(double);
    }
#undef PC__HCA_DIMS
}

struct bounds_launch {
    const pc__hca_rows &rows;
    unsigned long long *lo_bits, *hi_bits, *non_finite;
    const pc__hca_point_pass &pass;
    template <typename T, int DIM> pc_status operator()() const
    {
        bounds_kernel<T, DIM><<<2 * pass.sms, BLOCK, 0, pass.stream>>>(rows, lo_bits, hi_bits, non_finite);
        PC_CUDA_LAUNCHED("HCA bounding box kernel");
        return PC_OK;
    }
};

struct histogram_launch {
    const pc__hca_rows &rows;
    const pc__hca_binning &bin;
    const pc__hca_dgrid &grid;
    uint64_t total;
    const pc__hca_point_pass &pass;
    template <typename T, int DIM> pc_status operator()() const
    {
        int mode = !grid.dense ? GLOBAL_HASH : total <= SMEM_DIRECT_BINS ? DIRECT : SHARED_HASH;
        size_t smem = TABLE_BYTES + (mode == DIRECT        ? total * 4
                                     : mode == SHARED_HASH ? (size_t)SMEM_HASH_SLOTS * 8
                                                           : 0);
        if (smem > pass.shared_optin) {
            mode = GLOBAL_DENSE;
            smem = TABLE_BYTES;
        }
        auto kernel = mode == DIRECT        ? histogram_kernel<T, DIM, DIRECT>
                      : mode == SHARED_HASH ? histogram_kernel<T, DIM, SHARED_HASH>
                      : mode == GLOBAL_HASH ? histogram_kernel<T, DIM, GLOBAL_HASH>
                                            : histogram_kernel<T, DIM, GLOBAL_DENSE>;
        int blocks;
        pc_status st = fill_gpu(kernel, smem, pass, &blocks);
        if (st != PC_OK)
            return st;
        kernel<<<blocks, BLOCK, smem, pass.stream>>>(rows, bin, grid, (uint32_t)(mode == DIRECT ? total : 0));
        PC_CUDA_LAUNCHED("HCA histogram kernel");
        return PC_OK;
    }
};

struct label_launch {
    const pc__hca_rows &rows;
    const pc__hca_binning &bin;
    const pc__hca_dgrid &grid;
    const int32_t *cluster_of_cell;
    int32_t *labels;
    size_t k;
    unsigned long long *sums;
    const pc__hca_scale &scale;
    const pc__hca_point_pass &pass;
    template <typename T, int DIM> pc_status operator()() const
    {
        size_t sum_bytes = k * (size_t)(rows.dim + 1) * sizeof(unsigned long long);
        int shared_sums = sum_bytes <= SUMS_SMEM_LIMIT && TABLE_BYTES + sum_bytes <= pass.shared_optin;
        size_t smem = TABLE_BYTES + (shared_sums ? sum_bytes : 0);
        auto kernel = label_kernel<T, DIM>;
        int blocks;
        pc_status st = fill_gpu(kernel, smem, pass, &blocks);
        if (st != PC_OK)
            return st;
        kernel<<<blocks, BLOCK, smem, pass.stream>>>(rows, bin, grid, cluster_of_cell, labels, (int)k, sums,
                                                     shared_sums, scale);
        PC_CUDA_LAUNCHED("HCA label kernel");
        return PC_OK;
    }
};

struct histograms_launch {
    const pc__hca_rows &rows;
    const pc__hca_grids &grids;
    int32_t *counts;
    const pc__hca_point_pass &pass;
    template <typename T, int DIM> pc_status operator()() const
    {
        size_t smem = pc__hca_grids_shared_bytes(grids, rows.dtype);
        if (smem > pass.shared_optin)
            return PC_UNSUPPORTED;
        auto kernel = histograms_kernel<T, DIM>;
        int blocks;
        pc_status st = fill_gpu(kernel, smem, pass, &blocks);
        if (st != PC_OK)
            return st;
        kernel<<<blocks, BLOCK, smem, pass.stream>>>(rows, grids, counts);
        PC_CUDA_LAUNCHED("HCA histograms kernel");
        return PC_OK;
    }
};

// The ranges of cells the cell sums pass takes (a pass over the rows each), 0 where it declines.
size_t cell_sum_ranges(size_t cells, size_t dim, size_t shared_optin)
{
    size_t most = shared_optin > (size_t)TABLE_BYTES ? (shared_optin - TABLE_BYTES) / (dim * sizeof(uint32_t)) : 0;
    if (most == 0 || cells > (size_t)UINT32_MAX)
        return 0;
    size_t ranges = cells ? (cells + most - 1) / most : 1;
    return ranges <= PC__HCA_CELL_SUM_RANGES ? ranges : 0;
}

struct cell_sums_launch {
    const pc__hca_rows &rows;
    const pc__hca_binning &bin;
    const pc__hca_dgrid &grid;
    size_t cells;
    int32_t *cell_of_row;
    unsigned long long *sums;
    const pc__hca_gather *gather;
    const pc__hca_point_pass &pass;
    template <typename T, int DIM> pc_status operator()() const
    {
        if constexpr (integer_band<T>::values == 0) {
            return PC_UNSUPPORTED;
        } else {
            // The largest range of cells a block's shared memory holds, then ranges of equal spans.
            size_t dim = (size_t)rows.dim, ranges = cell_sum_ranges(cells, dim, pass.shared_optin);
            if (ranges == 0)
                return PC_UNSUPPORTED;
            size_t span = cells ? (cells + ranges - 1) / ranges : 1;
            size_t smem = TABLE_BYTES + span * dim * sizeof(uint32_t);
            auto kernel = cell_sums_kernel<T, DIM>;
            int resident;
            pc_status st = fill_gpu(kernel, smem, pass, &resident);
            if (st != PC_OK)
                return st;
            // A block's rows: at most 2^32 / the largest value, so that its 32-bit sums cannot overflow.
            size_t cap = integer_band<T>::values == 256 ? (size_t)1 << 24 : (size_t)1 << 16;
            size_t stretches = (size_t)resident / ranges, least = (rows.rows + cap - 1) / cap;
            stretches = stretches > least ? stretches : least;
            stretches = stretches ? stretches : 1;
            size_t per = (rows.rows + stretches - 1) / stretches;
            stretches = per ? (rows.rows + per - 1) / per : 1;
            kernel<<<(unsigned)(stretches * ranges), BLOCK, smem, pass.stream>>>(
                rows, bin, grid, (uint32_t)cells, (uint32_t)span, (uint32_t)ranges, per ? per : 1, cell_of_row, sums,
                gather ? *gather : pc__hca_gather{}, gather != nullptr);
            PC_CUDA_LAUNCHED("HCA cell sums kernel");
            return PC_OK;
        }
    }
};

} // namespace

pc_status pc__hca_cuda_bounds(const pc__hca_rows &rows, unsigned long long *lo_bits, unsigned long long *hi_bits,
                              unsigned long long *non_finite, const pc__hca_point_pass &pass)
{
    bounds_launch f{rows, lo_bits, hi_bits, non_finite, pass};
    return dispatch(rows, f);
}

pc_status pc__hca_cuda_histogram(const pc__hca_rows &rows, const pc__hca_binning &bin, const pc__hca_dgrid &grid,
                                 uint64_t total_cells, const pc__hca_point_pass &pass)
{
    histogram_launch f{rows, bin, grid, total_cells, pass};
    return dispatch(rows, f);
}

pc_status pc__hca_cuda_label(const pc__hca_rows &rows, const pc__hca_binning &bin, const pc__hca_dgrid &grid,
                             const int32_t *cluster_of_cell, int32_t *labels, size_t k, unsigned long long *sums,
                             const pc__hca_scale &scale, const pc__hca_point_pass &pass)
{
    label_launch f{rows, bin, grid, cluster_of_cell, labels, k, sums, scale, pass};
    return dispatch(rows, f);
}

pc_status pc__hca_cuda_narrow(const int32_t *labels, uint8_t *bytes, size_t n, cudaStream_t stream)
{
    size_t blocks = (n + 255) / 256;
    narrow_kernel<<<(unsigned)(blocks < 4096 ? blocks : 4096), 256, 0, stream>>>(labels, bytes, n);
    PC_CUDA_LAUNCHED("HCA label narrowing kernel");
    return PC_OK;
}

pc_status pc__hca_cuda_cell_sums(const pc__hca_rows &rows, const pc__hca_binning &bin, const pc__hca_dgrid &grid,
                                 size_t cells, int32_t *cell_of_row, unsigned long long *sums,
                                 const pc__hca_gather *gather, const pc__hca_point_pass &pass)
{
    cell_sums_launch f{rows, bin, grid, cells, cell_of_row, sums, gather, pass};
    return dispatch(rows, f);
}

size_t pc__hca_grids_shared_bytes(const pc__hca_grids &grids, pc_dtype dtype)
{
    size_t tables = dtype == PC_U8 ? (size_t)grids.count * PC__HCA_MAX_DIM * 256 * sizeof(uint16_t) : 0;
    return tables + (size_t)grids.first[grids.count] * sizeof(uint32_t);
}

pc_status pc__hca_cuda_histograms(const pc__hca_rows &rows, const pc__hca_grids &grids, int32_t *counts,
                                  const pc__hca_point_pass &pass)
{
    histograms_launch f{rows, grids, counts, pass};
    return dispatch(rows, f);
}

bool pc__hca_cell_sums_apply(size_t cells, size_t dim, pc_dtype dtype, size_t shared_optin)
{
    return (dtype == PC_U8 || dtype == PC_U16) && cell_sum_ranges(cells, dim, shared_optin) > 0;
}
