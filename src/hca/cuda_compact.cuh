// What HCA's and HECA's passes over cells share (cuda_cells.cu, src/heca/cuda_heca.cu): an
// order-preserving compaction, a radix sort of pairs with the state's scratch, and the walk over a
// cell's neighbours.
#ifndef PC_HCA_CUDA_COMPACT_CUH
#define PC_HCA_CUDA_COMPACT_CUH

#include "cuda_hca.cuh"

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

namespace pc__hca_cells {

constexpr int COMPACT_THREADS = 256;
constexpr int ITEMS = 8; // a compaction tile: COMPACT_THREADS x ITEMS consecutive entries
constexpr int TILE = COMPACT_THREADS * ITEMS;

// ---------------------------------------------------------------- order-preserving compaction

template <class Pred> __global__ void tile_count_kernel(size_t n, Pred pred, int32_t *tile_counts)
{
    using reduce = cub::BlockReduce<int, COMPACT_THREADS>;
    __shared__ typename reduce::TempStorage temp;
    size_t base = (size_t)blockIdx.x * TILE + (size_t)threadIdx.x * ITEMS;
    int count = 0;
    for (int q = 0; q < ITEMS; q++)
        count += base + q < n && pred(base + q);
    int total = reduce(temp).Sum(count);
    if (threadIdx.x == 0)
        tile_counts[blockIdx.x] = total;
}

template <class Pred, class Emit>
__global__ void tile_write_kernel(size_t n, Pred pred, Emit emit, const int32_t *tile_offsets)
{
    using scan = cub::BlockScan<int, COMPACT_THREADS>;
    __shared__ typename scan::TempStorage temp;
    size_t base = (size_t)blockIdx.x * TILE + (size_t)threadIdx.x * ITEMS;
    bool keep[ITEMS];
    int count = 0;
    for (int q = 0; q < ITEMS; q++) {
        keep[q] = base + q < n && pred(base + q);
        count += keep[q];
    }
    int out;
    scan(temp).ExclusiveSum(count, out);
    out += tile_offsets[blockIdx.x];
    for (int q = 0; q < ITEMS; q++)
        if (base + q < n)
            emit(base + q, keep[q], keep[q] ? out++ : -1);
}

// Calls emit(i, kept, position) for every i < n, positions numbering the kept entries in order of i;
// the number kept comes back to the host.
template <class Pred, class Emit> inline pc_status compact(pc__hca_gpu &s, size_t n, Pred pred, Emit emit, size_t *kept)
{
    *kept = 0;
    if (n == 0)
        return PC_OK;
    size_t tiles = (n + TILE - 1) / TILE;
    pc_status st = pc__hca_grow(s.tiles, 2 * (tiles + 1), "HCA compaction");
    if (st != PC_OK)
        return st;
    int32_t *counts = s.tiles.ptr, *offsets = s.tiles.ptr + tiles + 1;
    tile_count_kernel<<<(unsigned)tiles, COMPACT_THREADS, 0, s.stream>>>(n, pred, counts);
    PC_CUDA_TRY(cudaMemsetAsync(counts + tiles, 0, sizeof *counts, s.stream), "HCA compaction");
    size_t bytes = 0;
    PC_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, bytes, counts, offsets, (int)(tiles + 1), s.stream),
                "HCA compaction");
    if ((st = pc__hca_grow(s.temp, bytes, "HCA scan scratch")) != PC_OK)
        return st;
    PC_CUDA_TRY(cub::DeviceScan::ExclusiveSum(s.temp.ptr, bytes, counts, offsets, (int)(tiles + 1), s.stream),
                "HCA compaction");
    tile_write_kernel<<<(unsigned)tiles, COMPACT_THREADS, 0, s.stream>>>(n, pred, emit, offsets);
    PC_CUDA_LAUNCHED("HCA compaction kernels");
    int32_t total = 0;
    PC_CUDA_TRY(cudaMemcpyAsync(&total, offsets + tiles, sizeof total, cudaMemcpyDeviceToHost, s.stream),
                "HCA compaction count");
    PC_CUDA_TRY(cudaStreamSynchronize(s.stream), "HCA compaction");
    *kept = (size_t)total;
    return PC_OK;
}

template <typename K, typename V>
inline pc_status sort_pairs(pc__hca_gpu &s, const K *keys_in, K *keys_out, const V *values_in, V *values_out, size_t n)
{
    size_t bytes = 0;
    PC_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys_in, keys_out, values_in, values_out, (int)n, 0,
                                                (int)(sizeof(K) * 8), s.stream),
                "HCA sort");
    pc_status st = pc__hca_grow(s.temp, bytes, "HCA sort scratch");
    if (st != PC_OK)
        return st;
    PC_CUDA_TRY(cub::DeviceRadixSort::SortPairs(s.temp.ptr, bytes, keys_in, keys_out, values_in, values_out, (int)n,
                                                0, (int)(sizeof(K) * 8), s.stream),
                "HCA sort");
    return PC_OK;
}

// Visits the keys of the cells touching `key` (corners included, not the cell itself), only those of
// larger keys when `upper`.
template <class Visit>
__device__ __forceinline__ void for_neighbours(uint64_t key, const pc__hca_binning &b, bool upper, Visit &&visit)
{
    int c[PC__HCA_MAX_DIM], off[PC__HCA_MAX_DIM];
    for (int j = 0; j < b.dim; j++) {
        c[j] = (int)((key / b.stride[j]) % (uint64_t)b.m);
        off[j] = -1;
    }
    for (;;) {
        bool inside = true, zero = true;
        int64_t delta = 0;
        for (int j = 0; j < b.dim; j++) {
            int cj = c[j] + off[j];
            inside &= cj >= 0 && cj < b.m;
            zero &= off[j] == 0;
            delta += (int64_t)off[j] * (int64_t)b.stride[j];
        }
        if (inside && !zero && (!upper || delta > 0))
            visit((uint64_t)((int64_t)key + delta));
        int j = 0;
        while (j < b.dim && off[j] == 1)
            off[j++] = -1;
        if (j == b.dim)
            return;
        off[j]++;
    }
}

// The slot of component pair `pair` in an open-addressing hash of pairs (PC__HCA_EMPTY_KEY where free),
// claimed for it where free; the hash has room for every pair.
__device__ __forceinline__ uint64_t edge_slot(uint64_t *edge_key, uint64_t pair, uint64_t edge_mask)
{
    uint64_t s = pc__hca_mix(pair) & edge_mask;
    for (;;) {
        unsigned long long old = atomicCAS((unsigned long long *)&edge_key[s], PC__HCA_EMPTY_KEY, (unsigned long long)pair);
        if (old == PC__HCA_EMPTY_KEY || old == pair)
            return s;
        s = (s + 1) & edge_mask;
    }
}

struct edge_used {
    const uint64_t *edge_key;
    __device__ bool operator()(size_t i) const { return edge_key[i] != PC__HCA_EMPTY_KEY; }
};

} // namespace pc__hca_cells

#endif
