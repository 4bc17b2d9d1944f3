// What the HCA CUDA files share: the grid as the device sees it (a dense slot array or a hash of the
// non-empty cells), how a row becomes a cell key exactly as on the CPU, and the launchers of the passes
// over the points (cuda_points.cu) and over the cells (cuda_cells.cu) that cuda.cu puts in order.
#ifndef PC_HCA_CUDA_HCA_CUH
#define PC_HCA_CUDA_HCA_CUH

#include "../cuda/common.cuh"

extern "C" {
#include "internal_hca.h"
}

#include <stdint.h>
#include <string.h>

#define PC__HCA_EMPTY_KEY 0xffffffffffffffffull

// Bytes of one value of a type.
__host__ __device__ inline size_t pc__hca_element_size(pc_dtype t)
{
    return t == PC_F64 ? 8 : t == PC_F32 ? 4 : t == PC_U16 ? 2 : 1;
}

// Rows as the kernels read them: `rows` rows of `dim` values of `dtype`, `stride` bytes apart, in device
// memory (aligned to the element size).
struct pc__hca_rows {
    const unsigned char *data;
    size_t rows, stride;
    int dim;
    pc_dtype dtype;
};

// Row -> cell key. Integer bands go through a table of the cell coordinate of every value (dim x 256
// or dim x 65536, filled on the host by the CPU's own rule); floats use the rule itself in double.
struct pc__hca_binning {
    int dim, m;
    double lo[PC__HCA_MAX_DIM], hi[PC__HCA_MAX_DIM];
    uint64_t stride[PC__HCA_MAX_DIM];
    const uint16_t *table; // integer types: coordinate of value v in band j at [j * values + v]
};

// The grid: dense (slot[key], m^dim entries) or sparse (open-addressing hash of the keys).
struct pc__hca_dgrid {
    int dense;
    int32_t *slot;      // dense: counts while the histogram runs, then the cell of a key or -1
    uint64_t *hash_key; // sparse: PC__HCA_EMPTY_KEY where free
    int32_t *hash_val;  // sparse: counts while the histogram runs, then the cell of the key
    uint64_t hash_mask;
};

__device__ __forceinline__ uint64_t pc__hca_mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

// The non-empty cell of a key, or -1.
__device__ __forceinline__ int32_t pc__hca_find_cell(const pc__hca_dgrid &g, uint64_t key)
{
    if (g.dense)
        return g.slot[key];
    uint64_t s = pc__hca_mix(key) & g.hash_mask;
    for (;;) {
        uint64_t k = g.hash_key[s];
        if (k == key)
            return g.hash_val[s];
        if (k == PC__HCA_EMPTY_KEY)
            return -1;
        s = (s + 1) & g.hash_mask;
    }
}

// ALGORITHMS.md section 3 step 1, the same double arithmetic as src/hca/grid.c.
__device__ __forceinline__ int pc__hca_coordinate(double x, double lo, double hi, int m)
{
    if (hi <= lo)
        return 0;
    double c = floor((x - lo) / (hi - lo) * m);
    return c >= m - 1 ? m - 1 : c < 0 ? 0 : (int)c;
}

// Passes over the points (cuda_points.cu). Every launcher returns a status (launch errors included).
struct pc__hca_point_pass {
    int sms;
    cudaStream_t stream;
    size_t shared_optin; // shared memory a block may have (cudaDevAttrMaxSharedMemoryPerBlockOptin)
};

// Float inputs are summed exactly (and so in any order alike) as integers: (x - origin) x factor,
// rounded, with origin and factor = 2^30 / (hi - origin) from a box that holds the rows (a plan: the
// grid's; a stream: the piece's own, as labelled blocks may lie outside the grid's box), which keeps
// 2^31 rows within 64 bits.
struct pc__hca_scale {
    double origin[PC__HCA_MAX_DIM];
    double factor[PC__HCA_MAX_DIM];
};

// Bounding box: per dimension the order-preserving bits of min and max (folded in with atomics, so
// pieces accumulate), and a count of non-finite values.
pc_status pc__hca_cuda_bounds(const pc__hca_rows &rows, unsigned long long *lo_bits, unsigned long long *hi_bits,
                              unsigned long long *non_finite, const pc__hca_point_pass &pass);
// Adds the rows' points to the cell counts (dense slot[] or the sparse hash).
pc_status pc__hca_cuda_histogram(const pc__hca_rows &rows, const pc__hca_binning &bin, const pc__hca_dgrid &grid,
                                 uint64_t total_cells, const pc__hca_point_pass &pass);
// labels[i] = cluster of the row's cell; sums (k x (dim + 1), integers: band values, or for floats
// fixed-point offsets scaled by `scale`, then the count) accumulated with atomics. cluster_of_cell:
// the cluster of every cell, or NULL where the grid maps keys to clusters itself (a stream's map). A
// key of no cell (a stream labels points that were never counted) gets -1.
pc_status pc__hca_cuda_label(const pc__hca_rows &rows, const pc__hca_binning &bin, const pc__hca_dgrid &grid,
                             const int32_t *cluster_of_cell, int32_t *labels, size_t k, unsigned long long *sums,
                             const pc__hca_scale &scale, const pc__hca_point_pass &pass);

// Dense grids over the same rows counted together (HECA's members): grid g's counters are
// counts[first[g] .. first[g + 1]), indexed by its keys; all of them (and uint8 tables) must fit one
// block's shared memory (pc__hca_grids_shared_bytes <= shared_optin, else PC_UNSUPPORTED).
#define PC__HCA_GRIDS_AT_ONCE 8
struct pc__hca_grids {
    int count;
    pc__hca_binning bin[PC__HCA_GRIDS_AT_ONCE];
    uint32_t first[PC__HCA_GRIDS_AT_ONCE + 1];
};
size_t pc__hca_grids_shared_bytes(const pc__hca_grids &grids, pc_dtype dtype);
pc_status pc__hca_cuda_histograms(const pc__hca_rows &rows, const pc__hca_grids &grids, int32_t *counts,
                                  const pc__hca_point_pass &pass);
// Integer rows (uint8, uint16; PC_UNSUPPORTED for floats): cell_of_row[i] = the row's cell (the grid maps
// keys to cells 0 .. cells - 1; cell_of_row may be NULL), and sums (cells x dim, added to) of each cell's
// band values, exact. Each range of cells that one block's shared memory holds (19k cells of 3 bands on
// an H100) takes a pass over the rows: beyond PC__HCA_CELL_SUM_RANGES of them, PC_UNSUPPORTED (nothing
// done) and the caller sums another way.
#define PC__HCA_CELL_SUM_RANGES 8
bool pc__hca_cell_sums_apply(size_t cells, size_t dim, pc_dtype dtype, size_t shared_optin); // it would not decline
// HCA-MS's border points, gathered by the same pass (gather not NULL): each row of a flagged cell gets a
// place (*count, on the device, counts them), its number plus `offset` in index[place], and its bytes as
// a little-endian key in keys[place] (rows of at most 8 bytes) or in rows[place * rowbytes ...]. The
// places' order is free (HCA-MS sorts the keys, or climbs each row).
struct pc__hca_gather {
    const uint8_t *flagged;
    unsigned long long *count;
    int32_t *index;
    uint64_t *keys;
    unsigned char *rows;
    size_t rowbytes, offset;
};
// Consecutive places, counted by *count, for the lanes of a warp whose `flag` is set (one atomic a
// warp; every lane of the warp calls it): this lane's place, meaningful where its flag is set.
__device__ __forceinline__ unsigned long long pc__hca_warp_place(unsigned long long *count, bool flag)
{
    unsigned mask = __ballot_sync(0xffffffffu, flag);
    int lane = threadIdx.x & 31;
    unsigned long long base = 0;
    if (lane == 0 && mask)
        base = atomicAdd(count, (unsigned long long)__popc(mask));
    base = __shfl_sync(0xffffffffu, base, 0);
    return base + __popc(mask & ((1u << lane) - 1));
}
// Row i (its bytes at `row`) gathered where its cell is flagged; every lane of the warp calls it.
__device__ __forceinline__ void pc__hca_gather_row(const pc__hca_gather &g, const unsigned char *row, size_t i,
                                                   int32_t cell)
{
    bool flagged = cell >= 0 && g.flagged[cell];
    unsigned long long place = pc__hca_warp_place(g.count, flagged);
    if (!flagged)
        return;
    g.index[place] = (int32_t)(g.offset + i);
    if (g.keys) {
        uint64_t k = 0;
        for (size_t b = 0; b < g.rowbytes; b++)
            k |= (uint64_t)row[b] << (8 * b);
        g.keys[place] = k;
    } else {
        for (size_t b = 0; b < g.rowbytes; b++)
            g.rows[place * g.rowbytes + b] = row[b];
    }
}
pc_status pc__hca_cuda_cell_sums(const pc__hca_rows &rows, const pc__hca_binning &bin, const pc__hca_dgrid &grid,
                                 size_t cells, int32_t *cell_of_row, unsigned long long *sums,
                                 const pc__hca_gather *gather, const pc__hca_point_pass &pass);

// HCA-MS's device buffers (cuda_refine.cu), kept from one run of a plan to the next: allocating them
// anew took 0.3-0.5 ms of the RGB image's ~5.7 ms refinement.
struct pc__hca_refine_buffers {
    pc__device_buffer<uint8_t> border;
    pc__device_buffer<int32_t> index, index_sorted, run, run_start, reached, left, unresolved;
    pc__device_buffer<unsigned long long> cell_sums, scalars, delta;
    pc__device_buffer<unsigned char> rows, temp;
    pc__device_buffer<uint64_t> keys, keys_sorted, block_key;
    pc__device_buffer<float> ref, weight;
    pc__device_buffer<uint32_t> block_start;
    pc__device_buffer<int2> changed;
    // The cells' sums go to the host on a stream of their own while the plan's sorts the border
    // values; made on first use (none: the plan's stream, one step after the other).
    cudaStream_t side = nullptr;
    cudaEvent_t sums_ready = nullptr;
    bool side_tried = false;
};
// Waits for and destroys the side stream and its event.
void pc__hca_refine_close(pc__hca_refine_buffers &b);

// The device state of one plan: buffers grow to the largest run seen and are kept.
struct pc__hca_gpu {
    size_t n, dim, rowbytes, elem;
    pc_dtype dtype;
    int m, sms, device, shared_optin;
    cudaStream_t stream;
    size_t piece_rows;     // rows the device holds at once (n when the input fits)
    int dense;
    uint64_t total;        // m^dim
    pc__hca_binning bin;
    pc__device_buffer<unsigned char> data;
    pc__device_buffer<int32_t> labels;
    pc__device_buffer<int32_t> slot, hash_val;
    pc__device_buffer<uint64_t> hash_key;
    uint64_t hash_mask;    // hash capacity - 1 (a power of two)
    pc__device_buffer<uint16_t> table;
    pc__device_buffer<unsigned long long> scalars; // bounds (2 x 8), non-finite count, edge count
    // Cells (non-empty, by increasing key) and components.
    pc__device_buffer<uint64_t> key, key_unsorted;
    pc__device_buffer<int32_t> density, density_unsorted, link, root, comp, comp_of_root, representative, cluster;
    pc__device_buffer<unsigned long long> component_size;
    // Edges between adjacent components, the minimum spanning forest.
    pc__device_buffer<uint64_t> edge_key, edge_ab, edge_ab_sorted, mst_ab;
    pc__device_buffer<int32_t> edge_value, parent, best, hook;
    pc__device_buffer<double> edge_h, edge_h_sorted, mst_h;
    pc__device_buffer<uint8_t> in_mst;
    uint64_t edge_mask;
    // Scratch of the compactions and sorts; the clusters' sums.
    pc__device_buffer<int32_t> tiles;
    pc__device_buffer<unsigned char> temp;
    pc__device_buffer<unsigned long long> sums;
    pc__hca_refine_buffers refine;
    // Two pinned buffers that large copies between pageable memory and the GPU go through, the host
    // copying one while the bus moves the other; made on first use.
    unsigned char *staging[2];
    cudaEvent_t staged[2];
    // Host to host with the copies overlapped (issue 17, cuda.cu): a ring of pinned buffers, their
    // copies on a stream of their own while the kernels run on `stream`; made on first use.
    unsigned char *ring[4] = {nullptr, nullptr, nullptr, nullptr};
    cudaEvent_t ring_done[4] = {nullptr, nullptr, nullptr, nullptr};
    cudaEvent_t piece_done[4] = {nullptr, nullptr, nullptr, nullptr};
    cudaStream_t copy = nullptr;
};

// Each of the two pinned staging buffers; copies of fewer bytes go the driver's way.
#define PC__HCA_STAGE_BYTES ((size_t)8 << 20)

// What cuda.cu's plan and cuda_stream.cu's stream share (cuda.cu).
// The stream, device, SM count and shared memory limit of the current GPU into s.
pc_status pc__hca_gpu_open(pc__hca_gpu &s);
// Rows in GPU memory as a caller gives them (plans' device input, pc_heca_device, a stream's block held
// on the device and its labels): a stride of at least a row, points and labels aligned to their element
// size, and both GPU memory (cudaMalloc'd or managed) of the current device: a host pointer or another
// GPU's memory would fault inside a kernel and take the CUDA context down. device_labels may be NULL.
pc_status pc__hca_check_device_rows(const pc_points *points, const int32_t *device_labels);
// Waits for and destroys the stream, the staging buffers and their events (the device buffers free
// themselves with s).
void pc__hca_gpu_close(pc__hca_gpu &s);
// 1 when the pinned staging buffers are there (made on first use); 0 when pinned memory cannot be had.
bool pc__hca_have_staging(pc__hca_gpu &s);
// count host rows of rowbytes bytes, `stride` bytes apart, packed into s.data (the stream's order: a
// kernel queued before still reads its piece first); returns once they are there.
pc_status pc__hca_load_rows(pc__hca_gpu &s, const unsigned char *src, size_t stride, size_t rowbytes, size_t count);
// bytes of pageable host memory to the device at dst through the pinned buffers; returns once there.
pc_status pc__hca_stage_to_device(pc__hca_gpu &s, unsigned char *dst, const unsigned char *src, size_t bytes);
// The labels of a piece (s.labels, count rows) to host; with k < 255 as bytes through s.data.
pc_status pc__hca_labels_to_host(pc__hca_gpu &s, size_t count, size_t k, int32_t *host);

// A state's device made current for a call, the caller's restored after it.
struct pc__hca_device_scope {
    int previous = -1;
    explicit pc__hca_device_scope(int device)
    {
        if (cudaGetDevice(&previous) != cudaSuccess || previous == device)
            previous = -1;
        if (previous >= 0)
            cudaSetDevice(device);
        cudaGetLastError();
    }
    ~pc__hca_device_scope()
    {
        if (previous >= 0)
            cudaSetDevice(previous);
    }
    pc__hca_device_scope(const pc__hca_device_scope &) = delete;
    pc__hca_device_scope &operator=(const pc__hca_device_scope &) = delete;
};

// Grows a buffer to at least n elements (a quarter more, so slowly growing inputs do not reallocate
// every run); its contents are not kept.
template <typename T> pc_status pc__hca_grow(pc__device_buffer<T> &b, size_t n, const char *what)
{
    return b.count >= n && b.ptr ? PC_OK : b.alloc(n + n / 4, what);
}

__host__ __device__ inline pc__hca_dgrid pc__hca_view(const pc__hca_gpu &s)
{
    pc__hca_dgrid g;
    g.dense = s.dense;
    g.slot = s.slot.ptr;
    g.hash_key = s.hash_key.ptr;
    g.hash_val = s.hash_val.ptr;
    g.hash_mask = s.hash_mask;
    return g;
}

// Passes over the cells (cuda_cells.cu), in order; each leaves its counts on the host.
pc_status pc__hca_cuda_cells(pc__hca_gpu &s, size_t *cells);
pc_status pc__hca_cuda_components(pc__hca_gpu &s, size_t cells, size_t *components);
pc_status pc__hca_cuda_edges(pc__hca_gpu &s, size_t cells, size_t components, size_t *edges);
// The edges in s.edge_ab / s.edge_h (pairs a << 32 | b, heights) into Kruskal's order, height then pair.
pc_status pc__hca_cuda_kruskal_order(pc__hca_gpu &s, size_t edges);
pc_status pc__hca_cuda_spanning_forest(pc__hca_gpu &s, size_t components, size_t edges, size_t *forest_edges);
// The components and minimum spanning forest the passes above left in s (comp, representative,
// component_size, mst_ab, mst_h) into gr, new host arrays (its edges: the forest's); synchronises s's
// stream. On failure gr is empty.
pc_status pc__hca_fetch_graph(pc__hca_gpu &s, size_t cells, size_t components, size_t forest, pc__hca_graph *gr);
// HCA-MS's border cells (cluster: each cell's, on the device): is_border a byte a cell, the points they
// hold added to *points (device).
pc_status pc__hca_cuda_border_cells(pc__hca_gpu &s, size_t cells, const int32_t *cluster, uint8_t *is_border,
                                    unsigned long long *points);

// Labels of fewer than 255 clusters as bytes (-1 as 255).
pc_status pc__hca_cuda_narrow(const int32_t *labels, uint8_t *bytes, size_t n, cudaStream_t stream);

// Order-preserving bits of a double (and back), for atomicMin / atomicMax on unsigned 64-bit words.
__host__ __device__ __forceinline__ unsigned long long pc__hca_order_bits(unsigned long long u)
{
    return (u >> 63) ? ~u : (u | 0x8000000000000000ull);
}
__host__ __device__ __forceinline__ unsigned long long pc__hca_unorder_bits(unsigned long long u)
{
    return (u >> 63) ? (u & 0x7fffffffffffffffull) : ~u;
}
// The double of order-preserving bits (a bounds pass's minimum or maximum), on the host.
inline double pc__hca_from_order_bits(unsigned long long ordered)
{
    unsigned long long u = pc__hca_unorder_bits(ordered);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

// Frees a GPU state that holds a pc__hca_gpu `g` (a stream's, HECA's): waits for its stream, on its device.
template <typename State> void pc__hca_free_state(State *s)
{
    if (!s)
        return;
    {
        pc__hca_device_scope on(s->g.device);
        pc__hca_gpu_close(s->g);
        delete s;
    }
    cudaGetLastError();
}

#endif
