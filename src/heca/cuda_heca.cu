// HECA over points in GPU memory (heca_gpu.h): the box, each member's counts and HCA stages, the
// reference grid's cells and sums, the prototypes' components, averaged distances and groups, the
// clusters. HCA's point kernels (cuda_points.cu) and cell passes (cuda_cells.cu) do the members' work on
// the caller's rows in place; this file keeps the buffers they share (every member's counters, then its
// cells' map, the cell tables, the sums), does what only HECA does (section 3a steps 2-4) and moves
// the small results to and from the host.
#include "../hca/cuda_compact.cuh"

extern "C" {
#include "heca_gpu.h"
}
#include "join_height.h"

#include <math.h>
#include <new>
#include <stdlib.h>
#include <string.h>

struct pc__heca_gpu {
    // stream, device, SM count; the counting passes, tables, scalars, sums, and lane 0 of the members'
    // cell passes (slot: a member's counters, then its cells' map; key and density: its cells)
    pc__hca_gpu g;
    pc__hca_gpu lanes[PC__HECA_LANES - 1]; // lanes 1 ..: each its own stream and buffers, opened on first use
    cudaEvent_t counted = nullptr;         // the counting passes done, on g's stream
    pc__device_buffer<int32_t> counts; // every member's counters, side by side
    pc__hca_rows rows;
    double lo[PC__HCA_MAX_DIM], hi[PC__HCA_MAX_DIM];
    pc__device_buffer<int32_t> scratch_labels;
    pc__device_buffer<int32_t> clusters;
    // Each member's cells' map (in counts, from map_at[l]; pc__heca_gpu_count places it) and its cells'
    // densities and keys (from cells_at[l]; pc__heca_gpu_member keeps them), and their components
    // (pc__heca_gpu_groups uploads them), for pc__heca_gpu_groups.
    size_t members, map_at[2 * PC__HCA_GRIDS_AT_ONCE], cells_at[2 * PC__HCA_GRIDS_AT_ONCE];
    pc__hca_grid *member[2 * PC__HCA_GRIDS_AT_ONCE];
    uint64_t member_total[2 * PC__HCA_GRIDS_AT_ONCE];
    pc__hca_binning member_bin[2 * PC__HCA_GRIDS_AT_ONCE];
    pc__device_buffer<int32_t> member_density, member_comp;
    pc__device_buffer<uint64_t> member_key;
    // pc__heca_gpu_groups: the members as its kernels see them, the prototypes' means and components,
    // the members' forests, the adjacent pairs, the groups' union-find, the groups' edges' hash values.
    pc__device_buffer<unsigned char> views;
    pc__device_buffer<double> mean, up_h, pair_u;
    pc__device_buffer<int32_t> up, proto_comp, pair_at, parent, group_of_head;
    pc__device_buffer<uint64_t> pair_ab;
    pc__device_buffer<uint8_t> pair_same;
    pc__device_buffer<unsigned long long> densest, edge_u;
};

namespace {

constexpr int THREADS = 256;

pc__hca_point_pass pass_of(const pc__heca_gpu &s) { return {s.g.sms, s.g.stream, (size_t)s.g.shared_optin}; }

// The values a band of integer rows takes (the cell tables' length), 0 for floats.
size_t values_of(pc_dtype dtype) { return dtype == PC_U8 ? 256 : dtype == PC_U16 ? 65536 : 0; }

// Blocks of a kernel of a thread an item.
unsigned blocks_of(size_t n) { return (unsigned)((n + THREADS - 1) / THREADS); }

// Blocks of a grid-stride kernel over n items: enough to fill the GPU, no more.
unsigned blocks_over(size_t n, int sms)
{
    size_t blocks = (n + THREADS - 1) / THREADS, most = 8 * (size_t)sms;
    return (unsigned)(blocks < most ? blocks : most);
}

// The binnings of grids g[0 .. count) on the device, grid l's integer tables (the CPU's own cell rule)
// at place l of the state's tables: all of them made on the host, then one copy. host_table (or NULL):
// the host's copy, the caller's to free (NULL for float rows).
pc_status binnings_of(pc__heca_gpu &s, const pc__hca_grid *const *g, size_t count, pc__hca_binning *bin,
                      uint16_t **host_table = nullptr)
{
    if (host_table)
        *host_table = nullptr;
    size_t dim = s.g.dim, values = values_of(s.rows.dtype);
    size_t words = dim * values;
    uint16_t *table = nullptr;
    if (values && s.g.table.count < count * words)
        return pc__fail(PC_INTERNAL_ERROR, "HECA: no room for the members' cell tables");
    if (values && !(table = (uint16_t *)pc__alloc(count * words, sizeof *table, "HECA cell tables")))
        return PC_OUT_OF_MEMORY;
    for (size_t l = 0; l < count; l++) {
        memset(&bin[l], 0, sizeof bin[l]);
        bin[l].dim = (int)dim;
        bin[l].m = g[l]->m;
        for (size_t j = 0; j < dim; j++) {
            bin[l].lo[j] = g[l]->lo[j];
            bin[l].hi[j] = g[l]->hi[j];
            bin[l].stride[j] = g[l]->stride[j];
            for (size_t v = 0; v < values; v++)
                table[l * words + j * values + v] =
                    (uint16_t)pc__hca_cell_coordinate((double)v, g[l]->lo[j], g[l]->hi[j], g[l]->m);
        }
        bin[l].table = values ? s.g.table.ptr + l * words : nullptr;
    }
    if (!values)
        return PC_OK;
    pc_status st = pc__cuda_status(cudaMemcpyAsync(s.g.table.ptr, table, count * words * sizeof *table,
                                                   cudaMemcpyHostToDevice, s.g.stream),
                                   "HECA cell tables");
    if (st == PC_OK) // the host tables are freed or handed over next
        st = pc__cuda_status(cudaStreamSynchronize(s.g.stream), "HECA cell tables");
    if (st == PC_OK && host_table)
        *host_table = table;
    else
        free(table);
    return st;
}

// Whether grid c's cells are unions of grid f's, from their integer tables (values a band, words a
// grid): every value's coordinate in c is its coordinate in f divided by m_f / m_c (m 16 in m 32 over
// one box), so that c's counts follow from f's without a pass over the points.
bool nested(const uint16_t *table, size_t words, size_t values, size_t dim, const pc__hca_binning &f,
            const pc__hca_binning &c, size_t fi, size_t ci)
{
    if (!table || f.m <= c.m || f.m % c.m != 0)
        return false;
    int ratio = f.m / c.m;
    for (size_t j = 0; j < dim; j++)
        for (size_t v = 0; v < values; v++)
            if (table[ci * words + j * values + v] != table[fi * words + j * values + v] / ratio)
                return false;
    return true;
}

// Grid c's counts from grid f's, c nested in f (ratio m_f / m_c).
__global__ void nested_counts_kernel(const int32_t *fine, uint64_t fine_total, pc__hca_binning f, pc__hca_binning c,
                                     int ratio, int32_t *coarse)
{
    for (uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; k < fine_total;
         k += (uint64_t)gridDim.x * blockDim.x) {
        int32_t count = fine[k];
        if (!count)
            continue;
        uint64_t key = 0;
        for (int j = 0; j < f.dim; j++)
            key += (uint64_t)((int)((k / f.stride[j]) % (uint64_t)f.m) / ratio) * c.stride[j];
        atomicAdd(&coarse[key], count);
    }
}

pc_status grow_tables(pc__heca_gpu &s, size_t grids)
{
    size_t values = values_of(s.rows.dtype);
    return pc__hca_grow(s.g.table, grids * s.g.dim * values + 1, "HECA cell tables");
}

// Grid g's non-empty cells from a copy of its counters on `lane` (HCA's own compaction, in key order; the
// copy becomes the cells' map, which keep_cells puts back over the counters) into g's key, density and
// cells (new host arrays).
pc_status cells_of(pc__hca_gpu &lane, pc__hca_grid *g, const int32_t *counters, uint64_t total)
{
    pc_status st = pc__hca_grow(lane.slot, (size_t)total, "HECA member cells");
    if (st != PC_OK)
        return st;
    PC_CUDA_TRY(cudaMemcpyAsync(lane.slot.ptr, counters, total * sizeof(int32_t), cudaMemcpyDeviceToDevice, lane.stream),
                "HECA member cells");
    lane.total = total;
    size_t n = 0;
    if ((st = pc__hca_cuda_cells(lane, &n)) != PC_OK)
        return st;
    uint64_t *k = (uint64_t *)pc__alloc(n ? n : 1, sizeof *k, "HECA member cells");
    int64_t *d = (int64_t *)pc__alloc(n ? n : 1, sizeof *d, "HECA member cells");
    int32_t *d32 = (int32_t *)pc__alloc(n ? n : 1, sizeof *d32, "HECA member cells");
    st = k && d && d32 ? PC_OK : PC_OUT_OF_MEMORY;
    if (st == PC_OK && n)
        st = pc__cuda_status(cudaMemcpyAsync(k, lane.key.ptr, n * sizeof *k, cudaMemcpyDeviceToHost, lane.stream),
                             "HECA member cells");
    if (st == PC_OK && n)
        st = pc__cuda_status(cudaMemcpyAsync(d32, lane.density.ptr, n * sizeof *d32, cudaMemcpyDeviceToHost, lane.stream),
                             "HECA member cells");
    if (st == PC_OK)
        st = pc__cuda_status(cudaStreamSynchronize(lane.stream), "HECA member cells");
    for (size_t c = 0; st == PC_OK && c < n; c++)
        d[c] = d32[c];
    free(d32);
    if (st != PC_OK) {
        free(k);
        free(d);
        return st;
    }
    g->cells = n;
    g->key = k;
    g->density = d;
    return PC_OK;
}

// The member whose cells cells_of just found on `lane`: its map (into the counters it came from) and its
// cells' densities and keys kept, from cells_at on, for pc__heca_gpu_groups.
pc_status keep_cells(pc__heca_gpu &s, pc__hca_gpu &lane, int32_t *counters, uint64_t total, size_t cells,
                     size_t cells_at)
{
    PC_CUDA_TRY(cudaMemcpyAsync(counters, lane.slot.ptr, total * sizeof(int32_t), cudaMemcpyDeviceToDevice, lane.stream),
                "HECA member map");
    if (cells) {
        PC_CUDA_TRY(cudaMemcpyAsync(s.member_density.ptr + cells_at, lane.density.ptr, cells * sizeof(int32_t),
                                    cudaMemcpyDeviceToDevice, lane.stream),
                    "HECA member cells");
        PC_CUDA_TRY(cudaMemcpyAsync(s.member_key.ptr + cells_at, lane.key.ptr, cells * sizeof(uint64_t),
                                    cudaMemcpyDeviceToDevice, lane.stream),
                    "HECA member cells");
    }
    return PC_OK;
}

// HCA's stages 2-5 on the member whose cells cells_of just found on `lane` (bin: its grid): components,
// edges and spanning forest by the plan's passes, fetched into gr.
pc_status device_stages(pc__hca_gpu &lane, const pc__hca_binning &bin, size_t cells, pc__hca_graph *gr)
{
    lane.bin = bin;
    lane.bin.table = nullptr; // the cell passes need the grid's shape only
    lane.m = bin.m;
    size_t components = 0, edges = 0, forest = 0;
    pc_status st;
    if ((st = pc__hca_cuda_components(lane, cells, &components)) != PC_OK ||
        (st = pc__hca_cuda_edges(lane, cells, components, &edges)) != PC_OK ||
        (st = pc__hca_cuda_spanning_forest(lane, components, edges, &forest)) != PC_OK)
        return st;
    return pc__hca_fetch_graph(lane, cells, components, forest, gr);
}

pc__hca_gpu &lane_of(pc__heca_gpu &s, int lane) { return lane == 0 ? s.g : s.lanes[lane - 1]; }

// A lane's stream and scalars, made on first use on the state's GPU.
pc_status open_lane(pc__heca_gpu &s, pc__hca_gpu &lane)
{
    if (lane.stream && lane.scalars.ptr)
        return PC_OK;
    lane.dim = s.g.dim;
    lane.dtype = s.g.dtype;
    lane.dense = 1;
    pc_status st = lane.stream ? PC_OK : pc__hca_gpu_open(lane);
    if (st == PC_OK) // the counter of HCA's cell passes (cuda_cells.cu) is the last
        st = lane.scalars.alloc(2 * PC__HCA_MAX_DIM + 2, "HECA lane");
    return st;
}

pc__hca_dgrid dense_view(int32_t *slot)
{
    pc__hca_dgrid d;
    memset(&d, 0, sizeof d);
    d.dense = 1;
    d.slot = slot;
    return d;
}

__global__ void clusters_kernel(int32_t *labels, const int32_t *cluster_of_cell, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int32_t c = labels[i];
        labels[i] = c < 0 ? -1 : cluster_of_cell[c];
    }
}


// ---------------------------------------------------------------- section 3a steps 2-4

// A member as the prototype kernels see it: its grid, cells' map (every linear index to its cell, or
// -1), cells (densities, keys increasing, components) and its dendrogram's forest.
struct member_view {
    pc__hca_binning bin;
    const int32_t *map, *density, *comp, *up;
    const uint64_t *key;
    const double *up_h;
    size_t cells;
};

// heca.c's component_at, the same operations in the same order: the component of the cell holding x,
// or where it is empty of the largest (density, key) non-empty cell around it, or of the nearest cell
// centre (rounded operations, so that no multiply-add is fused where the CPU rounds twice).
__device__ int32_t component_at(const member_view &v, const double *x)
{
    const pc__hca_binning &b = v.bin;
    int dim = b.dim, c[PC__HCA_MAX_DIM], off[PC__HCA_MAX_DIM];
    uint64_t key = 0;
    for (int j = 0; j < dim; j++) {
        c[j] = pc__hca_coordinate(x[j], b.lo[j], b.hi[j], b.m);
        key += (uint64_t)c[j] * b.stride[j];
        off[j] = -1;
    }
    int32_t cell = v.map[key];
    if (cell >= 0)
        return v.comp[cell];
    int32_t best = -1;
    for (;;) {
        bool inside = true;
        uint64_t k = 0;
        for (int j = 0; j < dim; j++) {
            int cj = c[j] + off[j];
            inside &= cj >= 0 && cj < b.m;
            k += (uint64_t)(cj < 0 ? 0 : cj) * b.stride[j];
        }
        int32_t x2 = inside ? v.map[k] : -1;
        if (x2 >= 0 && (best < 0 || v.density[x2] > v.density[best] ||
                        (v.density[x2] == v.density[best] && v.key[x2] > v.key[best])))
            best = x2;
        int j = 0;
        while (j < dim && off[j] == 1)
            off[j++] = -1;
        if (j == dim)
            break;
        off[j]++;
    }
    if (best < 0) {
        double best_d2 = INFINITY;
        for (size_t q = 0; q < v.cells; q++) {
            double d2 = 0;
            for (int j = 0; j < dim; j++) {
                int cj = (int)((v.key[q] / b.stride[j]) % (uint64_t)b.m);
                double centre = b.hi[j] > b.lo[j]
                                    ? __dadd_rn(b.lo[j], __ddiv_rn(__dmul_rn(cj + 0.5, __dsub_rn(b.hi[j], b.lo[j])),
                                                                   (double)b.m))
                                    : b.lo[j];
                double d = __dsub_rn(centre, x[j]);
                d2 = __dadd_rn(d2, __dmul_rn(d, d));
            }
            if (d2 < best_d2) {
                best_d2 = d2;
                best = (int32_t)q;
            }
        }
    }
    return v.comp[best];
}

// proto_comp[l * P + q]: prototype q's component in member l (the reference member's own cells').
__global__ void prototype_components_kernel(const member_view *views, int L, int ref, size_t P, int dim,
                                            const double *mean, int32_t *proto_comp)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)L * P)
        return;
    int l = (int)(i / P);
    size_t q = i % P;
    proto_comp[i] = l == ref ? views[l].comp[q] : component_at(views[l], mean + q * dim);
}

// Every adjacent pair of prototypes (c, x), c < x, once: first each prototype's count of them, then
// (WRITE) the pairs from their places, with U (the members' join heights added in member order, then
// divided, as on the CPU) and whether every member puts both in one component.
template <bool WRITE>
__global__ void pairs_kernel(const member_view *views, int L, int ref, size_t P, const int32_t *proto_comp,
                             int32_t *pair_at, uint64_t *ab, double *u, uint8_t *same)
{
    size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= P)
        return;
    const member_view &r = views[ref];
    int32_t count = 0, at = WRITE ? pair_at[c] : 0;
    pc__hca_cells::for_neighbours(r.key[c], r.bin, true, [&](uint64_t k) {
        int32_t x = r.map[k];
        if (x < 0)
            return;
        count++;
        if (!WRITE)
            return;
        double sum = 0;
        bool one = true;
        for (int l = 0; l < L; l++) {
            int32_t a = proto_comp[(size_t)l * P + c], b = proto_comp[(size_t)l * P + x];
            one &= a == b;
            sum += pc__heca_join_height(views[l].up, views[l].up_h, a, b);
        }
        ab[at] = (uint64_t)c << 32 | (uint32_t)x;
        u[at] = sum / (double)L;
        same[at] = one;
        at++;
    });
    if (!WRITE)
        pair_at[c] = count;
}

__global__ void identity_kernel(int32_t *parent, size_t P)
{
    size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c < P)
        parent[c] = (int32_t)c;
}

__device__ int32_t root_of(const int32_t *parent, int32_t x)
{
    for (;;) {
        int32_t p = ((const volatile int32_t *)parent)[x];
        if (p == x)
            return x;
        x = p;
    }
}

// The groups: the pairs every member keeps together, joined. A root is only ever hooked under a smaller
// one, so the forest has no cycle; a hook that lost its race looks for the roots again.
__global__ void union_kernel(const uint64_t *ab, const uint8_t *same, size_t pairs, int32_t *parent)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= pairs || !same[i])
        return;
    int32_t a = root_of(parent, (int32_t)(ab[i] >> 32)), b = root_of(parent, (int32_t)(ab[i] & 0xffffffffu));
    while (a != b) {
        if (a > b) {
            int32_t t = a;
            a = b;
            b = t;
        }
        int32_t old = atomicCAS(&parent[b], b, a);
        if (old == b)
            return;
        a = root_of(parent, a);
        b = root_of(parent, old);
    }
}

// Each prototype's root, and each root's densest prototype by (density, key): cells are in key order,
// so (density, cell) compares alike.
__global__ void densest_kernel(int32_t *parent, const int32_t *density, size_t P, unsigned long long *densest)
{
    size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= P)
        return;
    int32_t r = root_of(parent, (int32_t)c);
    parent[c] = r;
    atomicMax(&densest[r], (unsigned long long)density[c] << 32 | c);
}

// A group's head is its densest prototype: numbering the heads in cell order numbers the groups by
// their densest cell's key, as group_graph does.
struct is_head {
    const int32_t *parent;
    const unsigned long long *densest;
    __device__ bool operator()(size_t c) const { return (densest[parent[c]] & 0xffffffffu) == c; }
};
struct head_emit {
    int32_t *representative, *group_of_head;
    __device__ void operator()(size_t c, bool kept, int at) const
    {
        if (kept) {
            representative[at] = (int32_t)c;
            group_of_head[c] = at;
        }
    }
};

__global__ void group_kernel(const int32_t *parent, const unsigned long long *densest, const int32_t *group_of_head,
                             const int32_t *density, size_t P, int32_t *comp, unsigned long long *size)
{
    size_t c = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= P)
        return;
    int32_t g = group_of_head[densest[parent[c]] & 0xffffffffu];
    comp[c] = g;
    atomicAdd(&size[g], (unsigned long long)density[c]);
}

// The edges between groups: the smallest U of their adjacent pairs, an atomic minimum on U's bits (U >=
// 0, so the bits order as the values).
__global__ void cross_kernel(const uint64_t *ab, const double *u, size_t pairs, const int32_t *comp,
                             uint64_t *edge_key, unsigned long long *edge_u, uint64_t edge_mask)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= pairs)
        return;
    int32_t ga = comp[ab[i] >> 32], gb = comp[ab[i] & 0xffffffffu];
    if (ga == gb)
        return;
    uint64_t pair = ga < gb ? ((uint64_t)ga << 32 | (uint32_t)gb) : ((uint64_t)gb << 32 | (uint32_t)ga);
    atomicMin(&edge_u[pc__hca_cells::edge_slot(edge_key, pair, edge_mask)],
              (unsigned long long)__double_as_longlong(u[i]));
}

struct edge_emit {
    const uint64_t *edge_key;
    const unsigned long long *edge_u;
    uint64_t *ab;
    double *h;
    __device__ void operator()(size_t i, bool kept, int at) const
    {
        if (kept) {
            ab[at] = edge_key[i];
            h[at] = __longlong_as_double((long long)edge_u[i]);
        }
    }
};

} // namespace

pc_status pc__heca_gpu_new(size_t dim, pc_dtype dtype, pc__heca_gpu **out)
{
    *out = nullptr;
    pc__heca_gpu *s = new (std::nothrow) pc__heca_gpu();
    if (!s)
        return pc__fail(PC_OUT_OF_MEMORY, "HECA: cannot allocate the GPU state");
    s->g.dim = dim;
    s->g.dtype = dtype;
    s->g.dense = 1; // every member's grid, and so HCA's compaction of its counters
    pc_status st = pc__hca_gpu_open(s->g);
    if (st == PC_OK) // the box's words, then the counter of HCA's cell passes (cuda_cells.cu)
        st = s->g.scalars.alloc(2 * PC__HCA_MAX_DIM + 2, "HECA box");
    if (st == PC_OK)
        st = pc__cuda_status(cudaEventCreateWithFlags(&s->counted, cudaEventDisableTiming), "HECA state");
    if (st != PC_OK) {
        pc__heca_gpu_free(s);
        return st;
    }
    *out = s;
    return PC_OK;
}

pc_status pc__heca_gpu_start(pc__heca_gpu *s, const pc_points *points, const int32_t *device_labels, double *lo,
                             double *hi)
{
    pc__hca_device_scope on(s->g.device);
    if (points->dim != s->g.dim || points->dtype != s->g.dtype)
        return pc__fail(PC_INVALID_ARGUMENT, "HECA on the GPU: the points are %zu values of type %d a row, the state's "
                        "%zu of type %d", points->dim, (int)points->dtype, s->g.dim, (int)s->g.dtype);
    pc_status st = pc__hca_check_device_rows(points, device_labels);
    if (st != PC_OK)
        return st;
    s->rows = {(const unsigned char *)points->data, points->n, pc__hca_row_bytes(points), (int)points->dim,
               points->dtype};
    s->g.n = points->n;
    s->members = 0;
    const size_t NON_FINITE = 2 * PC__HCA_MAX_DIM;
    unsigned long long host[NON_FINITE + 1], *w = s->g.scalars.ptr;
    PC_CUDA_TRY(cudaMemsetAsync(w, 0xff, PC__HCA_MAX_DIM * sizeof *w, s->g.stream), "HECA box");
    PC_CUDA_TRY(cudaMemsetAsync(w + PC__HCA_MAX_DIM, 0, (PC__HCA_MAX_DIM + 1) * sizeof *w, s->g.stream), "HECA box");
    if ((st = pc__hca_cuda_bounds(s->rows, w, w + PC__HCA_MAX_DIM, w + NON_FINITE, pass_of(*s))) != PC_OK)
        return st;
    PC_CUDA_TRY(cudaMemcpyAsync(host, w, sizeof host, cudaMemcpyDeviceToHost, s->g.stream), "HECA box");
    PC_CUDA_TRY(cudaStreamSynchronize(s->g.stream), "HECA box");
    if (host[NON_FINITE])
        return pc__fail(PC_INVALID_ARGUMENT,
                        "pc_heca_device: %llu non-finite value(s) (NaN or infinity, or float64 beyond float range) "
                        "in the points", host[NON_FINITE]);
    for (size_t j = 0; j < points->dim; j++) {
        s->lo[j] = lo[j] = pc__hca_from_order_bits(host[j]);
        s->hi[j] = hi[j] = pc__hca_from_order_bits(host[PC__HCA_MAX_DIM + j]);
    }
    return PC_OK;
}

void pc__heca_gpu_free(pc__heca_gpu *s)
{
    if (!s)
        return;
    {
        pc__hca_device_scope on(s->g.device);
        for (pc__hca_gpu &lane : s->lanes)
            pc__hca_gpu_close(lane);
        if (s->counted)
            cudaEventDestroy(s->counted);
    }
    pc__hca_free_state(s);
}

pc_status pc__heca_gpu_count(pc__heca_gpu *s, pc__hca_grid *const *grids, const uint64_t *total, size_t L)
{
    pc__hca_device_scope on(s->g.device);
    s->members = 0;
    if (L > PC__HCA_GRIDS_AT_ONCE * 2)
        return pc__fail(PC_INTERNAL_ERROR, "HECA: %zu members to count", L);
    pc__hca_binning bins[PC__HCA_GRIDS_AT_ONCE * 2];
    uint16_t *table = nullptr;
    pc_status st = grow_tables(*s, L);
    if (st == PC_OK)
        st = binnings_of(*s, grids, L, bins, &table);
    if (st != PC_OK)
        return st;
    // Grids nested in a larger one that is counted are not counted themselves (from[l], the finer grid);
    // the finest first, so that a grid derives from one counted.
    size_t by_size[PC__HCA_GRIDS_AT_ONCE * 2], from[PC__HCA_GRIDS_AT_ONCE * 2];
    for (size_t l = 0; l < L; l++) {
        size_t i = l;
        for (; i > 0 && total[by_size[i - 1]] < total[l]; i--)
            by_size[i] = by_size[i - 1];
        by_size[i] = l;
    }
    size_t values = values_of(s->rows.dtype), dim = s->g.dim;
    for (size_t i = 0; i < L; i++) {
        size_t c = by_size[i];
        from[c] = L;
        for (size_t k = i; k-- > 0;) { // the smallest counted grid it nests in
            size_t f = by_size[k];
            if (from[f] == L && nested(table, dim * values, values, dim, bins[f], bins[c], f, c)) {
                from[c] = f;
                break;
            }
        }
    }
    free(table);
    // The counted grids by size, then the nested ones; their counters side by side in that order, so
    // that a group is one stretch.
    size_t order[PC__HCA_GRIDS_AT_ONCE * 2], at[PC__HCA_GRIDS_AT_ONCE * 2], words = 0, placed = 0, counted = 0;
    for (int nested_ones = 0; nested_ones < 2; nested_ones++)
        for (size_t i = L; i-- > 0;)
            if ((from[by_size[i]] < L) == (nested_ones == 1))
                order[placed++] = by_size[i];
    for (size_t l = 0; l < L; l++)
        counted += from[l] == L;
    for (size_t i = 0; i < L; i++) {
        at[order[i]] = words;
        words += (size_t)total[order[i]];
    }
    if ((st = pc__hca_grow(s->counts, words, "HECA member counts")) != PC_OK)
        return st;
    PC_CUDA_TRY(cudaMemsetAsync(s->counts.ptr, 0, words * sizeof(int32_t), s->g.stream), "HECA member counts");
    pc__hca_point_pass pass = pass_of(*s);
    // Groups of consecutive grids whose counters fit one block's shared memory count in one pass; a grid
    // alone goes through HCA's own histogram.
    for (size_t i = 0; i < counted;) {
        pc__hca_grids group;
        memset(&group, 0, sizeof group);
        size_t first = i;
        while (i < counted && group.count < PC__HCA_GRIDS_AT_ONCE) {
            pc__hca_grids more = group;
            size_t l = order[i];
            more.bin[more.count] = bins[l];
            more.first[more.count + 1] = more.first[more.count] + (uint32_t)total[l];
            more.count++;
            if (total[l] > UINT32_MAX / 2 || pc__hca_grids_shared_bytes(more, s->rows.dtype) > pass.shared_optin)
                break;
            group = more;
            i++;
        }
        if (group.count <= 1) { // alone (none fitted: too large to share)
            size_t l = order[first];
            i = first + 1;
            st = pc__hca_cuda_histogram(s->rows, bins[l], dense_view(s->counts.ptr + at[l]), total[l], pass);
        } else {
            st = pc__hca_cuda_histograms(s->rows, group, s->counts.ptr + at[order[first]], pass);
        }
        if (st != PC_OK)
            return st;
    }
    for (size_t l = 0; l < L; l++)
        if (from[l] < L) {
            size_t f = from[l];
            nested_counts_kernel<<<blocks_over((size_t)total[f], s->g.sms), THREADS, 0, s->g.stream>>>(
                s->counts.ptr + at[f], total[f], bins[f], bins[l], bins[f].m / bins[l].m, s->counts.ptr + at[l]);
            PC_CUDA_LAUNCHED("HECA nested counts");
        }
    // Where each member's cells will be kept (a bound on their number apiece), and what
    // pc__heca_gpu_member needs of it.
    size_t most = 0;
    for (size_t l = 0; l < L; l++) {
        s->map_at[l] = at[l];
        s->cells_at[l] = most;
        s->member[l] = grids[l];
        s->member_total[l] = total[l];
        s->member_bin[l] = bins[l];
        most += total[l] < s->rows.rows ? (size_t)total[l] : s->rows.rows;
    }
    if ((st = pc__hca_grow(s->member_density, most, "HECA member cells")) != PC_OK ||
        (st = pc__hca_grow(s->member_key, most, "HECA member cells")) != PC_OK ||
        (st = pc__hca_grow(s->member_comp, most, "HECA member cells")) != PC_OK)
        return st;
    PC_CUDA_TRY(cudaEventRecord(s->counted, s->g.stream), "HECA member counts");
    for (pc__hca_gpu &lane : s->lanes) // here, before the members' threads use them
        lane.n = s->g.n;
    s->members = L;
    return PC_OK;
}

pc_status pc__heca_gpu_member(pc__heca_gpu *s, size_t l, int lane_number, size_t device_from, pc__hca_graph *gr)
{
    pc__hca_device_scope on(s->g.device);
    if (l >= s->members || lane_number < 0 || lane_number >= PC__HECA_LANES)
        return pc__fail(PC_INTERNAL_ERROR, "HECA: member %zu on lane %d", l, lane_number);
    pc__hca_gpu &lane = lane_of(*s, lane_number);
    pc__hca_grid *g = s->member[l];
    int32_t *counters = s->counts.ptr + s->map_at[l];
    size_t around = 1;
    for (size_t j = 0; j < s->g.dim; j++)
        around *= 3;
    pc_status st = open_lane(*s, lane);
    if (st == PC_OK)
        st = pc__cuda_status(cudaStreamWaitEvent(lane.stream, s->counted, 0), "HECA member cells");
    if (st == PC_OK)
        st = cells_of(lane, g, counters, s->member_total[l]);
    if (st == PC_OK)
        st = keep_cells(*s, lane, counters, s->member_total[l], g->cells, s->cells_at[l]);
    if (st == PC_OK && g->cells * (around - 1) >= device_from)
        st = device_stages(lane, s->member_bin[l], g->cells, gr);
    // The kept cells there before the state's stream reads them; after a failure, nothing of this
    // member's still running when the next run's passes begin.
    pc_status synced = lane.stream ? pc__cuda_status(cudaStreamSynchronize(lane.stream), "HECA member cells") : PC_OK;
    return st != PC_OK ? st : synced;
}

pc_status pc__heca_gpu_cells(pc__heca_gpu *s, const pc__hca_grid *g, int32_t *cell_of_point, double *sums)
{
    pc__hca_device_scope on(s->g.device);
    size_t dim = g->dim, words = g->cells * (dim + 1);
    bool integer = s->rows.dtype == PC_U8 || s->rows.dtype == PC_U16;
    // The grid's cells' map (every linear index to its cell, or -1): where its count left it.
    size_t l = 0;
    while (l < s->members && s->member[l] != g)
        l++;
    if (l == s->members)
        return pc__fail(PC_INTERNAL_ERROR, "HECA: the reference grid's cells are not the ones on the GPU");
    pc__hca_binning bin;
    pc_status st = grow_tables(*s, 1);
    if (st == PC_OK)
        st = binnings_of(*s, &g, 1, &bin);
    if (st == PC_OK)
        st = pc__hca_grow(s->g.sums, words ? words : 1, "HECA cell sums");
    if (st != PC_OK)
        return st;
    PC_CUDA_TRY(cudaMemsetAsync(s->g.sums.ptr, 0, (words ? words : 1) * sizeof(unsigned long long), s->g.stream),
                "HECA cell sums");
    pc__hca_dgrid grid = dense_view(s->counts.ptr + s->map_at[l]);
    // Integer rows: HCA's cell sums pass (cells x dim); where it declines (too many cells for a few
    // passes of shared ranges), and for floats, the label pass with the cells as its clusters (cells x
    // (dim + 1): the values, floats in fixed point over the box, then the count).
    bool by_ranges = false;
    if (integer) {
        st = pc__hca_cuda_cell_sums(s->rows, bin, grid, g->cells, cell_of_point, s->g.sums.ptr, nullptr, pass_of(*s));
        if (st != PC_OK && st != PC_UNSUPPORTED)
            return st;
        by_ranges = st == PC_OK;
    }
    pc__hca_scale scale;
    memset(&scale, 0, sizeof scale);
    for (size_t j = 0; j < dim; j++) {
        double f = s->hi[j] > s->lo[j] ? ldexp(1.0, 30) / (s->hi[j] - s->lo[j]) : 0;
        scale.origin[j] = s->lo[j];
        scale.factor[j] = isfinite(f) ? f : 0;
    }
    if (!by_ranges &&
        (st = pc__hca_cuda_label(s->rows, bin, grid, nullptr, cell_of_point, g->cells, s->g.sums.ptr, scale,
                                 pass_of(*s))) != PC_OK)
        return st;
    size_t per = by_ranges ? dim : dim + 1;
    unsigned long long *raw = (unsigned long long *)pc__alloc(words ? words : 1, sizeof *raw, "HECA cell sums");
    if (!raw)
        return PC_OUT_OF_MEMORY;
    st = pc__cuda_status(cudaMemcpyAsync(raw, s->g.sums.ptr, g->cells * per * sizeof *raw, cudaMemcpyDeviceToHost,
                                         s->g.stream),
                         "HECA cell sums");
    if (st == PC_OK)
        st = pc__cuda_status(cudaStreamSynchronize(s->g.stream), "HECA cell sums");
    for (size_t c = 0; st == PC_OK && c < g->cells; c++) {
        double n = (double)g->density[c]; // the label pass's count of the cell, as the histogram's
        for (size_t j = 0; j < dim; j++) {
            double q = (double)raw[c * per + j];
            sums[c * (dim + 1) + j] = integer ? q : scale.origin[j] * n + (scale.factor[j] > 0 ? q / scale.factor[j] : 0);
        }
        sums[c * (dim + 1) + dim] = n;
    }
    free(raw);
    return st;
}

pc_status pc__heca_gpu_clusters(pc__heca_gpu *s, int32_t *labels, const int32_t *cluster_of_cell, size_t cells,
                                int32_t *host)
{
    pc__hca_device_scope on(s->g.device);
    pc_status st = pc__hca_grow(s->clusters, cells ? cells : 1, "HECA cell clusters");
    if (st != PC_OK)
        return st;
    size_t n = s->rows.rows;
    PC_CUDA_TRY(cudaMemcpyAsync(s->clusters.ptr, cluster_of_cell, cells * sizeof *cluster_of_cell,
                                cudaMemcpyHostToDevice, s->g.stream),
                "HECA cell clusters");
    clusters_kernel<<<blocks_over(n, s->g.sms), THREADS, 0, s->g.stream>>>(labels, s->clusters.ptr, n);
    PC_CUDA_LAUNCHED("HECA cluster labels");
    if (host)
        PC_CUDA_TRY(cudaMemcpyAsync(host, labels, n * sizeof *host, cudaMemcpyDeviceToHost, s->g.stream), "HECA labels");
    return pc__cuda_status(cudaStreamSynchronize(s->g.stream), "HECA labels");
}

pc_status pc__heca_gpu_scratch_labels(pc__heca_gpu *s, int32_t **labels)
{
    pc__hca_device_scope on(s->g.device);
    pc_status st = pc__hca_grow(s->scratch_labels, s->rows.rows, "HECA labels");
    *labels = st == PC_OK ? s->scratch_labels.ptr : nullptr;
    return st;
}

pc_status pc__heca_gpu_groups(pc__heca_gpu *s, const pc__hca_grid *const *g, size_t L, size_t ref, const double *mean,
                              const pc__heca_member *member, pc__hca_graph *groups)
{
    pc__hca_device_scope on(s->g.device);
    memset(groups, 0, sizeof *groups);
    size_t P = g[ref]->cells, dim = s->g.dim, links = 0, around = 1;
    bool same = L == s->members;
    for (size_t l = 0; l < L; l++) {
        links += member[l].components;
        same = same && g[l] == s->member[l];
    }
    if (!same)
        return pc__fail(PC_INTERNAL_ERROR, "HECA: the members are not the ones counted on the GPU");
    for (size_t j = 0; j < dim; j++)
        around *= 3;
    if (P * ((around - 1) / 2) > (size_t)INT32_MAX) // the pairs are counted and placed in int32
        return pc__fail(PC_UNSUPPORTED,
                        "pc_heca_device: %zu prototypes in %zu dimensions may have more adjacent pairs than the "
                        "GPU path counts (2^31); copy the points to the host for pc_heca", P, dim);
    pc_status st;
    if ((st = pc__hca_grow(s->views, L * sizeof(member_view), "HECA members")) != PC_OK ||
        (st = pc__hca_grow(s->mean, P * dim, "HECA prototypes")) != PC_OK ||
        (st = pc__hca_grow(s->up, links, "HECA member forests")) != PC_OK ||
        (st = pc__hca_grow(s->up_h, links, "HECA member forests")) != PC_OK ||
        (st = pc__hca_grow(s->proto_comp, L * P, "HECA prototypes")) != PC_OK ||
        (st = pc__hca_grow(s->pair_at, 2 * (P + 1), "HECA prototype pairs")) != PC_OK)
        return st;
    // The members' views and forests, one copy each, and their cells' components (the host arrays waited
    // for before they are freed).
    member_view *view = (member_view *)pc__calloc(L, sizeof *view, "HECA members");
    int32_t *up = (int32_t *)pc__alloc(links ? links : 1, sizeof *up, "HECA member forests");
    double *up_h = (double *)pc__alloc(links ? links : 1, sizeof *up_h, "HECA member forests");
    st = view && up && up_h ? PC_OK : PC_OUT_OF_MEMORY;
    for (size_t l = 0, at = 0; st == PC_OK && l < L; at += member[l].components, l++) {
        member_view &v = view[l];
        v.bin = s->member_bin[l]; // its shape (the cell tables are not read here)
        v.map = s->counts.ptr + s->map_at[l];
        v.density = s->member_density.ptr + s->cells_at[l];
        v.comp = s->member_comp.ptr + s->cells_at[l];
        v.key = s->member_key.ptr + s->cells_at[l];
        v.cells = g[l]->cells;
        v.up = s->up.ptr + at;
        v.up_h = s->up_h.ptr + at;
        memcpy(up + at, member[l].up, member[l].components * sizeof *up);
        memcpy(up_h + at, member[l].up_h, member[l].components * sizeof *up_h);
        if (g[l]->cells) // to where the member's cells are kept
            st = pc__cuda_status(cudaMemcpyAsync(s->member_comp.ptr + s->cells_at[l], member[l].component_of_cell,
                                                 g[l]->cells * sizeof(int32_t), cudaMemcpyHostToDevice, s->g.stream),
                                 "HECA member components");
    }
    if (st == PC_OK)
        st = pc__cuda_status(cudaMemcpyAsync(s->views.ptr, view, L * sizeof *view, cudaMemcpyHostToDevice, s->g.stream),
                             "HECA members");
    if (st == PC_OK && links)
        st = pc__cuda_status(cudaMemcpyAsync(s->up.ptr, up, links * sizeof *up, cudaMemcpyHostToDevice, s->g.stream),
                             "HECA member forests");
    if (st == PC_OK && links)
        st = pc__cuda_status(
            cudaMemcpyAsync(s->up_h.ptr, up_h, links * sizeof *up_h, cudaMemcpyHostToDevice, s->g.stream),
            "HECA member forests");
    if (st == PC_OK)
        st = pc__cuda_status(
            cudaMemcpyAsync(s->mean.ptr, mean, P * dim * sizeof *mean, cudaMemcpyHostToDevice, s->g.stream),
            "HECA prototypes");
    const member_view *views = (const member_view *)s->views.ptr;
    if (st == PC_OK) {
        prototype_components_kernel<<<blocks_of(L * P), THREADS, 0, s->g.stream>>>(views, (int)L, (int)ref, P, (int)dim,
                                                                                 s->mean.ptr, s->proto_comp.ptr);
        pairs_kernel<false><<<blocks_of(P), THREADS, 0, s->g.stream>>>(views, (int)L, (int)ref, P, s->proto_comp.ptr,
                                                                       s->pair_at.ptr, nullptr, nullptr, nullptr);
        st = pc__cuda_status(cudaGetLastError(), "HECA prototype pairs");
    }
    // Each prototype's first pair (pair_at from P + 1 on), and the count of all.
    int32_t *pair_count = s->pair_at.ptr, *pair_first = s->pair_at.ptr + P + 1;
    size_t bytes = 0;
    if (st == PC_OK)
        st = pc__cuda_status(cudaMemsetAsync(pair_count + P, 0, sizeof(int32_t), s->g.stream), "HECA pairs");
    if (st == PC_OK)
        st = pc__cuda_status(
            cub::DeviceScan::ExclusiveSum(nullptr, bytes, pair_count, pair_first, (int)(P + 1), s->g.stream),
            "HECA pairs");
    if (st == PC_OK)
        st = pc__hca_grow(s->g.temp, bytes, "HECA pairs");
    if (st == PC_OK)
        st = pc__cuda_status(
            cub::DeviceScan::ExclusiveSum(s->g.temp.ptr, bytes, pair_count, pair_first, (int)(P + 1), s->g.stream),
            "HECA pairs");
    int32_t pairs32 = 0;
    if (st == PC_OK)
        st = pc__cuda_status(
            cudaMemcpyAsync(&pairs32, pair_first + P, sizeof pairs32, cudaMemcpyDeviceToHost, s->g.stream),
            "HECA pairs");
    if (st == PC_OK)
        st = pc__cuda_status(cudaStreamSynchronize(s->g.stream), "HECA pairs");
    free(view);
    free(up);
    free(up_h);
    if (st != PC_OK)
        return st;
    size_t pairs = (size_t)pairs32;
    uint64_t capacity = 1024;
    while (capacity < 2 * pairs)
        capacity *= 2;
    if ((st = pc__hca_grow(s->pair_ab, pairs, "HECA prototype pairs")) != PC_OK ||
        (st = pc__hca_grow(s->pair_u, pairs, "HECA prototype pairs")) != PC_OK ||
        (st = pc__hca_grow(s->pair_same, pairs, "HECA prototype pairs")) != PC_OK ||
        (st = pc__hca_grow(s->parent, P, "HECA groups")) != PC_OK ||
        (st = pc__hca_grow(s->densest, P, "HECA groups")) != PC_OK ||
        (st = pc__hca_grow(s->group_of_head, P, "HECA groups")) != PC_OK ||
        (st = pc__hca_grow(s->g.comp, P, "HECA groups")) != PC_OK ||
        (st = pc__hca_grow(s->g.representative, P, "HECA groups")) != PC_OK ||
        (st = pc__hca_grow(s->g.component_size, P, "HECA groups")) != PC_OK ||
        (st = pc__hca_grow(s->g.edge_key, capacity, "HECA group edges")) != PC_OK ||
        (st = pc__hca_grow(s->edge_u, capacity, "HECA group edges")) != PC_OK)
        return st;
    cudaStream_t stream = s->g.stream;
    pairs_kernel<true><<<blocks_of(P), THREADS, 0, stream>>>(views, (int)L, (int)ref, P, s->proto_comp.ptr,
                                                             pair_first, s->pair_ab.ptr, s->pair_u.ptr,
                                                             s->pair_same.ptr);
    PC_CUDA_LAUNCHED("HECA prototype pairs");
    // The groups, numbered by their densest prototype's key, their sizes.
    identity_kernel<<<blocks_of(P), THREADS, 0, stream>>>(s->parent.ptr, P);
    if (pairs)
        union_kernel<<<blocks_of(pairs), THREADS, 0, stream>>>(s->pair_ab.ptr, s->pair_same.ptr, pairs, s->parent.ptr);
    PC_CUDA_TRY(cudaMemsetAsync(s->densest.ptr, 0, P * sizeof(unsigned long long), stream), "HECA groups");
    densest_kernel<<<blocks_of(P), THREADS, 0, stream>>>(s->parent.ptr, s->member_density.ptr + s->cells_at[ref], P,
                                                         s->densest.ptr);
    PC_CUDA_LAUNCHED("HECA groups");
    size_t G = 0;
    if ((st = pc__hca_cells::compact(s->g, P, is_head{s->parent.ptr, s->densest.ptr},
                                     head_emit{s->g.representative.ptr, s->group_of_head.ptr}, &G)) != PC_OK)
        return st;
    PC_CUDA_TRY(cudaMemsetAsync(s->g.component_size.ptr, 0, G * sizeof(unsigned long long), stream), "HECA groups");
    group_kernel<<<blocks_of(P), THREADS, 0, stream>>>(s->parent.ptr, s->densest.ptr, s->group_of_head.ptr,
                                                       s->member_density.ptr + s->cells_at[ref], P, s->g.comp.ptr,
                                                       s->g.component_size.ptr);
    PC_CUDA_LAUNCHED("HECA groups");
    // The graph between groups, in Kruskal's order, and its minimum spanning forest.
    s->g.edge_mask = capacity - 1;
    PC_CUDA_TRY(cudaMemsetAsync(s->g.edge_key.ptr, 0xff, capacity * sizeof(uint64_t), stream), "HECA group edges");
    PC_CUDA_TRY(cudaMemsetAsync(s->edge_u.ptr, 0xff, capacity * sizeof(unsigned long long), stream), "HECA group edges");
    if (pairs)
        cross_kernel<<<blocks_of(pairs), THREADS, 0, stream>>>(s->pair_ab.ptr, s->pair_u.ptr, pairs, s->g.comp.ptr,
                                                               s->g.edge_key.ptr, s->edge_u.ptr, s->g.edge_mask);
    PC_CUDA_LAUNCHED("HECA group edges");
    size_t edges = 0, forest_edges = 0;
    if ((st = pc__hca_grow(s->g.edge_ab, pairs, "HECA group edges")) != PC_OK ||
        (st = pc__hca_grow(s->g.edge_h, pairs, "HECA group edges")) != PC_OK ||
        (st = pc__hca_cells::compact(s->g, capacity, pc__hca_cells::edge_used{s->g.edge_key.ptr},
                                     edge_emit{s->g.edge_key.ptr, s->edge_u.ptr, s->g.edge_ab.ptr, s->g.edge_h.ptr},
                                     &edges)) != PC_OK ||
        (st = pc__hca_cuda_kruskal_order(s->g, edges)) != PC_OK ||
        (st = pc__hca_cuda_spanning_forest(s->g, G, edges, &forest_edges)) != PC_OK)
        return st;
    return pc__hca_fetch_graph(s->g, P, G, forest_edges, groups);
}
