// The HCA passes over the cells on the GPU (ALGORITHMS.md section 3 steps 1-5): the non-empty cells in
// key order, links to the densest neighbour, chains to representatives, components numbered by their
// representative's key (as on the CPU), the distances between adjacent components (an atomic max per
// component pair in a hash), and the minimum spanning forest of the component graph by Boruvka in one
// block, under the CPU's Kruskal order (height, then the pair), so that its edges are Kruskal's.
#include "cuda_compact.cuh"

namespace {

using namespace pc__hca_cells;

constexpr int THREADS = 256;

size_t blocks_for(size_t n) { return (n + THREADS - 1) / THREADS; }

// ---------------------------------------------------------------- cells

struct dense_nonempty {
    const int32_t *slot;
    __device__ bool operator()(size_t i) const { return slot[i] > 0; }
};
struct dense_emit {
    int32_t *slot;
    uint64_t *key;
    int32_t *density;
    __device__ void operator()(size_t i, bool kept, int at) const
    {
        if (kept) {
            key[at] = i;
            density[at] = slot[i];
        }
        slot[i] = at; // the count becomes the cell number (or -1)
    }
};
struct hash_used {
    const uint64_t *hash_key;
    __device__ bool operator()(size_t i) const { return hash_key[i] != PC__HCA_EMPTY_KEY; }
};
struct hash_emit {
    const uint64_t *hash_key;
    const int32_t *hash_val;
    uint64_t *key;
    int32_t *density;
    __device__ void operator()(size_t i, bool kept, int at) const
    {
        if (kept) {
            key[at] = hash_key[i];
            density[at] = hash_val[i];
        }
    }
};

// Sparse grid: once the cells are sorted, the hash maps a key to its cell number.
__global__ void hash_cells_kernel(pc__hca_dgrid g, const uint64_t *key, size_t cells)
{
    size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cells)
        return;
    uint64_t s = pc__hca_mix(key[c]) & g.hash_mask;
    while (g.hash_key[s] != key[c])
        s = (s + 1) & g.hash_mask;
    g.hash_val[s] = (int32_t)c;
}

// Step 2: the densest cell of the closed neighbourhood by (density, key).
__global__ void link_kernel(pc__hca_dgrid g, pc__hca_binning b, const uint64_t *key, const int32_t *density,
                            size_t cells, int32_t *link)
{
    size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cells)
        return;
    int32_t best = (int32_t)c, best_density = density[c];
    uint64_t best_key = key[c];
    for_neighbours(key[c], b, false, [&](uint64_t k) {
        int32_t x = pc__hca_find_cell(g, k);
        if (x >= 0 && (density[x] > best_density || (density[x] == best_density && k > best_key))) {
            best = x;
            best_density = density[x];
            best_key = k;
        }
    });
    link[c] = best;
}

// HCA-MS (ALGORITHMS.md section 3b): a cell is a border cell when a non-empty neighbour (corners
// included, as refine.c's pc__hca_border_cells) is of another cluster; its points are counted.
__global__ void border_kernel(pc__hca_dgrid g, pc__hca_binning b, const uint64_t *key, const int32_t *density,
                              const int32_t *cluster, size_t cells, uint8_t *is_border, unsigned long long *points)
{
    size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cells)
        return;
    int32_t own = cluster[c];
    bool border = false;
    for_neighbours(key[c], b, false, [&](uint64_t k) {
        int32_t x = border ? -1 : pc__hca_find_cell(g, k);
        border |= x >= 0 && cluster[x] != own;
    });
    is_border[c] = border;
    if (border)
        atomicAdd(points, (unsigned long long)density[c]);
}

// Step 3: links point to strictly denser (or equally dense, larger) cells, so chains end. Pointer
// jumping halves every chain a pass (equal densities along a lattice make chains m cells long, too
// long to walk cell by cell); a root only ever moves up its chain, so reading an entry another
// thread is rewriting is harmless.
__global__ void jump_kernel(int32_t *root, size_t cells, unsigned long long *moved)
{
    size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cells)
        return;
    int32_t r = root[c], rr = ((volatile int32_t *)root)[r];
    if (r != rr) {
        root[c] = rr;
        *moved = 1;
    }
}

struct is_root {
    const int32_t *link;
    __device__ bool operator()(size_t c) const { return link[c] == (int32_t)c; }
};
struct root_emit {
    int32_t *representative, *comp_of_root;
    __device__ void operator()(size_t c, bool kept, int at) const
    {
        if (kept) {
            representative[at] = (int32_t)c;
            comp_of_root[c] = at;
        }
    }
};

__global__ void component_kernel(const int32_t *root, const int32_t *comp_of_root, const int32_t *density,
                                 size_t cells, int32_t *comp, unsigned long long *size)
{
    size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cells)
        return;
    int32_t k = comp_of_root[root[c]];
    comp[c] = k;
    atomicAdd(&size[k], (unsigned long long)density[c]);
}

// Step 4: every touching pair of cells in different components, each unordered pair once (upper
// neighbours). Counting first sizes the hash; inserting keeps the largest min(D(a), D(b)) per pair.
template <bool INSERT>
__global__ void touch_kernel(pc__hca_dgrid g, pc__hca_binning b, const uint64_t *key, const int32_t *density,
                             const int32_t *comp, size_t cells, unsigned long long *count, uint64_t *edge_key,
                             int32_t *edge_value, uint64_t edge_mask)
{
    using reduce = cub::BlockReduce<unsigned long long, THREADS>;
    __shared__ typename reduce::TempStorage temp;
    size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long touches = 0;
    if (c < cells) {
        int32_t ca = comp[c], dc = density[c];
        for_neighbours(key[c], b, true, [&](uint64_t k) {
            int32_t x = pc__hca_find_cell(g, k);
            if (x < 0 || comp[x] == ca)
                return;
            touches++;
            if (INSERT) {
                int32_t cb = comp[x], v = density[x] < dc ? density[x] : dc;
                uint64_t pair = ca < cb ? ((uint64_t)ca << 32 | (uint32_t)cb) : ((uint64_t)cb << 32 | (uint32_t)ca);
                atomicMax(&edge_value[edge_slot(edge_key, pair, edge_mask)], v);
            }
        });
    }
    if (!INSERT) {
        unsigned long long total = reduce(temp).Sum(touches);
        if (threadIdx.x == 0 && total)
            atomicAdd(count, total);
    }
}

// h = 1 - v / min(D(Ya), D(Yb)), the same double expression as src/hca/graph.c.
struct edge_emit {
    const uint64_t *edge_key;
    const int32_t *edge_value, *representative, *density;
    uint64_t *ab;
    double *h;
    __device__ void operator()(size_t i, bool kept, int at) const
    {
        if (!kept)
            return;
        uint64_t pair = edge_key[i];
        int32_t ya = density[representative[pair >> 32]], yb = density[representative[pair & 0xffffffffu]];
        ab[at] = pair;
        h[at] = 1.0 - (double)edge_value[i] / (double)(ya < yb ? ya : yb);
    }
};

// Step 5: Boruvka over edges already in Kruskal's order (rank = position), in one block: each tree
// takes its lightest edge; under a strict order these are minimum spanning forest edges and the only
// cycles are two trees choosing the same edge (the smaller root stays root).
constexpr int FOREST_THREADS = 1024;
__global__ void __launch_bounds__(FOREST_THREADS)
    boruvka_kernel(const uint64_t *ab, int edges, int vertices, int32_t *parent, int32_t *best, int32_t *hook,
                   uint8_t *in_forest)
{
    for (int v = threadIdx.x; v < vertices; v += blockDim.x)
        parent[v] = v;
    for (int e = threadIdx.x; e < edges; e += blockDim.x)
        in_forest[e] = 0;
    __syncthreads();
    for (;;) {
        for (int v = threadIdx.x; v < vertices; v += blockDim.x)
            best[v] = INT32_MAX;
        __syncthreads();
        for (int e = threadIdx.x; e < edges; e += blockDim.x) {
            int32_t ra = parent[ab[e] >> 32], rb = parent[ab[e] & 0xffffffffu];
            if (ra != rb) {
                atomicMin(&best[ra], e);
                atomicMin(&best[rb], e);
            }
        }
        __syncthreads();
        int joined = 0;
        for (int v = threadIdx.x; v < vertices; v += blockDim.x) {
            int32_t to = parent[v];
            if (to == v && best[v] != INT32_MAX) {
                int e = best[v];
                int32_t ra = parent[ab[e] >> 32], rb = parent[ab[e] & 0xffffffffu];
                int32_t other = ra == v ? rb : ra;
                in_forest[e] = 1;
                joined = 1;
                to = best[other] == e && v < other ? v : other;
            }
            hook[v] = to;
        }
        if (!__syncthreads_or(joined))
            break;
        for (int v = threadIdx.x; v < vertices; v += blockDim.x)
            parent[v] = hook[v];
        __syncthreads();
        // Pointer jumping until every vertex points at its root. Values only move up their tree,
        // so reading a neighbour's entry while it changes is harmless.
        for (;;) {
            int moved = 0;
            for (int v = threadIdx.x; v < vertices; v += blockDim.x) {
                int32_t p = ((volatile int32_t *)parent)[v], pp = ((volatile int32_t *)parent)[p];
                if (p != pp) {
                    parent[v] = pp;
                    moved = 1;
                }
            }
            if (!__syncthreads_or(moved))
                break;
        }
    }
}

struct in_forest_pred {
    const uint8_t *in_forest;
    __device__ bool operator()(size_t e) const { return in_forest[e] != 0; }
};
struct forest_emit {
    const uint64_t *ab;
    const double *h;
    uint64_t *forest_ab;
    double *forest_h;
    __device__ void operator()(size_t e, bool kept, int at) const
    {
        if (kept) {
            forest_ab[at] = ab[e];
            forest_h[at] = h[e];
        }
    }
};

} // namespace

pc_status pc__hca_cuda_cells(pc__hca_gpu &s, size_t *cells)
{
    pc__hca_dgrid g = pc__hca_view(s);
    size_t bound = s.dense ? (size_t)s.total : (size_t)s.hash_mask + 1, kept = 0;
    size_t most = s.dense ? (s.total < s.n ? (size_t)s.total : s.n) : s.n;
    pc_status st;
    if ((st = pc__hca_grow(s.key, most, "HCA cells")) != PC_OK ||
        (st = pc__hca_grow(s.density, most, "HCA cells")) != PC_OK)
        return st;
    if (s.dense) {
        st = compact(s, bound, dense_nonempty{s.slot.ptr}, dense_emit{s.slot.ptr, s.key.ptr, s.density.ptr}, &kept);
        *cells = kept;
        return st;
    }
    if ((st = pc__hca_grow(s.key_unsorted, most, "HCA cells")) != PC_OK ||
        (st = pc__hca_grow(s.density_unsorted, most, "HCA cells")) != PC_OK)
        return st;
    st = compact(s, bound, hash_used{s.hash_key.ptr},
                 hash_emit{s.hash_key.ptr, s.hash_val.ptr, s.key_unsorted.ptr, s.density_unsorted.ptr}, &kept);
    if (st != PC_OK ||
        (st = sort_pairs(s, s.key_unsorted.ptr, s.key.ptr, s.density_unsorted.ptr, s.density.ptr, kept)) != PC_OK)
        return st;
    hash_cells_kernel<<<(unsigned)blocks_for(kept), THREADS, 0, s.stream>>>(g, s.key.ptr, kept);
    PC_CUDA_LAUNCHED("HCA cell numbering");
    *cells = kept;
    return PC_OK;
}

pc_status pc__hca_cuda_components(pc__hca_gpu &s, size_t cells, size_t *components)
{
    pc_status st;
    if ((st = pc__hca_grow(s.link, cells, "HCA links")) != PC_OK ||
        (st = pc__hca_grow(s.root, cells, "HCA links")) != PC_OK ||
        (st = pc__hca_grow(s.comp, cells, "HCA components")) != PC_OK ||
        (st = pc__hca_grow(s.comp_of_root, cells, "HCA components")) != PC_OK ||
        (st = pc__hca_grow(s.representative, cells, "HCA components")) != PC_OK)
        return st;
    unsigned blocks = (unsigned)blocks_for(cells);
    link_kernel<<<blocks, THREADS, 0, s.stream>>>(pc__hca_view(s), s.bin, s.key.ptr, s.density.ptr, cells, s.link.ptr);
    PC_CUDA_LAUNCHED("HCA link kernel");
    PC_CUDA_TRY(cudaMemcpyAsync(s.root.ptr, s.link.ptr, cells * sizeof(int32_t), cudaMemcpyDeviceToDevice, s.stream),
                "HCA links");
    unsigned long long *moved = s.scalars.ptr + 2 * PC__HCA_MAX_DIM + 1, any = 1;
    while (any) {
        PC_CUDA_TRY(cudaMemsetAsync(moved, 0, sizeof *moved, s.stream), "HCA chains");
        jump_kernel<<<blocks, THREADS, 0, s.stream>>>(s.root.ptr, cells, moved);
        PC_CUDA_LAUNCHED("HCA chain kernel");
        PC_CUDA_TRY(cudaMemcpyAsync(&any, moved, sizeof any, cudaMemcpyDeviceToHost, s.stream), "HCA chains");
        PC_CUDA_TRY(cudaStreamSynchronize(s.stream), "HCA chains");
    }
    size_t k = 0;
    if ((st = compact(s, cells, is_root{s.link.ptr}, root_emit{s.representative.ptr, s.comp_of_root.ptr}, &k)) != PC_OK ||
        (st = pc__hca_grow(s.component_size, k, "HCA component sizes")) != PC_OK)
        return st;
    PC_CUDA_TRY(cudaMemsetAsync(s.component_size.ptr, 0, k * sizeof(unsigned long long), s.stream), "HCA sizes");
    component_kernel<<<blocks, THREADS, 0, s.stream>>>(s.root.ptr, s.comp_of_root.ptr, s.density.ptr, cells,
                                                        s.comp.ptr, s.component_size.ptr);
    PC_CUDA_LAUNCHED("HCA component kernel");
    *components = k;
    return PC_OK;
}

pc_status pc__hca_cuda_edges(pc__hca_gpu &s, size_t cells, size_t components, size_t *edges)
{
    *edges = 0;
    if (components < 2)
        return PC_OK;
    unsigned long long *count = s.scalars.ptr + 2 * PC__HCA_MAX_DIM + 1;
    unsigned blocks = (unsigned)blocks_for(cells);
    pc__hca_dgrid g = pc__hca_view(s);
    PC_CUDA_TRY(cudaMemsetAsync(count, 0, sizeof *count, s.stream), "HCA edges");
    touch_kernel<false><<<blocks, THREADS, 0, s.stream>>>(g, s.bin, s.key.ptr, s.density.ptr, s.comp.ptr, cells, count,
                                                          nullptr, nullptr, 0);
    PC_CUDA_LAUNCHED("HCA touch count kernel");
    unsigned long long touches = 0;
    PC_CUDA_TRY(cudaMemcpyAsync(&touches, count, sizeof touches, cudaMemcpyDeviceToHost, s.stream), "HCA edges");
    PC_CUDA_TRY(cudaStreamSynchronize(s.stream), "HCA edges");
    if (touches == 0)
        return PC_OK;
    if (touches > (unsigned long long)INT32_MAX / 2)
        return pc__fail(PC_UNSUPPORTED, "HCA on the GPU: %llu touching cells of different components exceed 2^30",
                        touches);
    uint64_t capacity = 1024;
    while (capacity < 2 * touches)
        capacity *= 2;
    pc_status st; // a larger hash than this run's is used in part (HECA's members differ in size)
    if ((st = pc__hca_grow(s.edge_key, capacity, "HCA edge hash")) != PC_OK ||
        (st = pc__hca_grow(s.edge_value, capacity, "HCA edge hash")) != PC_OK)
        return st;
    s.edge_mask = capacity - 1;
    PC_CUDA_TRY(cudaMemsetAsync(s.edge_key.ptr, 0xff, capacity * sizeof(uint64_t), s.stream), "HCA edges");
    PC_CUDA_TRY(cudaMemsetAsync(s.edge_value.ptr, 0, capacity * sizeof(int32_t), s.stream), "HCA edges");
    touch_kernel<true><<<blocks, THREADS, 0, s.stream>>>(g, s.bin, s.key.ptr, s.density.ptr, s.comp.ptr, cells, count,
                                                         s.edge_key.ptr, s.edge_value.ptr, s.edge_mask);
    PC_CUDA_LAUNCHED("HCA touch kernel");
    size_t most = touches < capacity ? (size_t)touches : (size_t)capacity;
    if ((st = pc__hca_grow(s.edge_ab, most, "HCA edges")) != PC_OK ||
        (st = pc__hca_grow(s.edge_h, most, "HCA edges")) != PC_OK)
        return st;
    size_t e = 0;
    st = compact(s, capacity, edge_used{s.edge_key.ptr},
                 edge_emit{s.edge_key.ptr, s.edge_value.ptr, s.representative.ptr, s.density.ptr, s.edge_ab.ptr,
                           s.edge_h.ptr},
                 &e);
    if (st != PC_OK || (st = pc__hca_cuda_kruskal_order(s, e)) != PC_OK)
        return st;
    *edges = e; // sorted: edge_ab, edge_h
    return PC_OK;
}

pc_status pc__hca_cuda_kruskal_order(pc__hca_gpu &s, size_t edges)
{
    // By height, ties by the pair (a, b): a stable sort by pair, then by height.
    if (edges == 0)
        return PC_OK;
    pc_status st;
    if ((st = pc__hca_grow(s.edge_ab_sorted, edges, "HCA edges")) != PC_OK ||
        (st = pc__hca_grow(s.edge_h_sorted, edges, "HCA edges")) != PC_OK ||
        (st = sort_pairs(s, s.edge_ab.ptr, s.edge_ab_sorted.ptr, s.edge_h.ptr, s.edge_h_sorted.ptr, edges)) != PC_OK)
        return st;
    return sort_pairs(s, s.edge_h_sorted.ptr, s.edge_h.ptr, s.edge_ab_sorted.ptr, s.edge_ab.ptr, edges);
}

pc_status pc__hca_cuda_border_cells(pc__hca_gpu &s, size_t cells, const int32_t *cluster, uint8_t *is_border,
                                    unsigned long long *points)
{
    if (cells)
        border_kernel<<<(unsigned)blocks_for(cells), THREADS, 0, s.stream>>>(pc__hca_view(s), s.bin, s.key.ptr,
                                                                             s.density.ptr, cluster, cells, is_border,
                                                                             points);
    PC_CUDA_LAUNCHED("HCA-MS border cells");
    return PC_OK;
}

pc_status pc__hca_cuda_spanning_forest(pc__hca_gpu &s, size_t components, size_t edges, size_t *forest_edges)
{
    *forest_edges = 0;
    if (edges == 0)
        return PC_OK;
    if (edges > (size_t)INT32_MAX)
        return pc__fail(PC_UNSUPPORTED, "HCA on the GPU: %zu component pairs exceed 2^31", edges);
    pc_status st;
    if ((st = pc__hca_grow(s.parent, components, "HCA forest")) != PC_OK ||
        (st = pc__hca_grow(s.best, components, "HCA forest")) != PC_OK ||
        (st = pc__hca_grow(s.hook, components, "HCA forest")) != PC_OK ||
        (st = pc__hca_grow(s.in_mst, edges, "HCA forest")) != PC_OK ||
        (st = pc__hca_grow(s.mst_ab, components, "HCA forest")) != PC_OK ||
        (st = pc__hca_grow(s.mst_h, components, "HCA forest")) != PC_OK)
        return st;
    boruvka_kernel<<<1, FOREST_THREADS, 0, s.stream>>>(s.edge_ab.ptr, (int)edges, (int)components, s.parent.ptr,
                                                       s.best.ptr, s.hook.ptr, s.in_mst.ptr);
    PC_CUDA_LAUNCHED("HCA spanning forest kernel");
    return compact(s, edges, in_forest_pred{s.in_mst.ptr},
                   forest_emit{s.edge_ab.ptr, s.edge_h.ptr, s.mst_ab.ptr, s.mst_h.ptr}, forest_edges);
}
