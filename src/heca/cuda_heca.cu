// HECA's passes over points in GPU memory (heca_gpu.h): the box, each member's counts, the reference
// grid's cells and sums, the clusters. HCA's point kernels (cuda_points.cu) do the work on the caller's
// rows in place; this file keeps the few buffers they share (one grid of counters, reused by every
// member, the cell tables, the sums) and moves the small results to and from the host.
#include "../hca/cuda_hca.cuh"

extern "C" {
#include "heca_gpu.h"
}

#include <math.h>
#include <new>
#include <stdlib.h>
#include <string.h>

struct pc__heca_gpu {
    // stream, device, SM count; slot (a member's counters, then its cells' map), key and density (its
    // cells), table, scalars, sums
    pc__hca_gpu g;
    const pc__hca_grid *mapped; // the grid whose cells' map slot holds (the last one counted)
    pc__device_buffer<int32_t> counts; // every member's counters, side by side
    pc__hca_rows rows;
    double lo[PC__HCA_MAX_DIM], hi[PC__HCA_MAX_DIM];
    pc__device_buffer<int32_t> scratch_labels;
    pc__device_buffer<int32_t> clusters;
};

namespace {

constexpr int THREADS = 256;

pc__hca_point_pass pass_of(const pc__heca_gpu &s) { return {s.g.sms, s.g.stream, (size_t)s.g.shared_optin}; }

// The binnings of grids g[0 .. count) on the device, grid l's integer tables (the CPU's own cell rule)
// at place l of the state's tables: all of them made on the host, then one copy.
pc_status binnings_of(pc__heca_gpu &s, const pc__hca_grid *const *g, size_t count, pc__hca_binning *bin)
{
    size_t dim = s.g.dim, values = s.rows.dtype == PC_U8 ? 256 : s.rows.dtype == PC_U16 ? 65536 : 0;
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
    if (st == PC_OK) // the host tables are freed next
        st = pc__cuda_status(cudaStreamSynchronize(s.g.stream), "HECA cell tables");
    free(table);
    return st;
}

pc_status grow_tables(pc__heca_gpu &s, size_t grids)
{
    size_t values = s.rows.dtype == PC_U8 ? 256 : s.rows.dtype == PC_U16 ? 65536 : 0;
    return pc__hca_grow(s.g.table, grids * s.g.dim * values + 1, "HECA cell tables");
}

// Grid g's non-empty cells from its counters (HCA's own compaction, in key order; the counters become
// the cells' map) into g's key, density and cells (new host arrays).
pc_status cells_of(pc__heca_gpu &s, pc__hca_grid *g, const int32_t *counters, uint64_t total)
{
    pc_status st = pc__hca_grow(s.g.slot, (size_t)total, "HECA member cells");
    if (st != PC_OK)
        return st;
    PC_CUDA_TRY(cudaMemcpyAsync(s.g.slot.ptr, counters, total * sizeof(int32_t), cudaMemcpyDeviceToDevice, s.g.stream),
                "HECA member cells");
    s.g.total = total;
    size_t n = 0;
    if ((st = pc__hca_cuda_cells(s.g, &n)) != PC_OK)
        return st;
    uint64_t *k = (uint64_t *)pc__alloc(n ? n : 1, sizeof *k, "HECA member cells");
    int64_t *d = (int64_t *)pc__alloc(n ? n : 1, sizeof *d, "HECA member cells");
    int32_t *d32 = (int32_t *)pc__alloc(n ? n : 1, sizeof *d32, "HECA member cells");
    st = k && d && d32 ? PC_OK : PC_OUT_OF_MEMORY;
    if (st == PC_OK && n)
        st = pc__cuda_status(cudaMemcpyAsync(k, s.g.key.ptr, n * sizeof *k, cudaMemcpyDeviceToHost, s.g.stream),
                             "HECA member cells");
    if (st == PC_OK && n)
        st = pc__cuda_status(cudaMemcpyAsync(d32, s.g.density.ptr, n * sizeof *d32, cudaMemcpyDeviceToHost, s.g.stream),
                             "HECA member cells");
    if (st == PC_OK)
        st = pc__cuda_status(cudaStreamSynchronize(s.g.stream), "HECA member cells");
    for (size_t c = 0; st == PC_OK && c < n; c++)
        d[c] = d32[c];
    free(d32);
    if (st != PC_OK) {
        free(k);
        free(d);
        return st;
    }
    s.mapped = g;
    g->cells = n;
    g->key = k;
    g->density = d;
    return PC_OK;
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

} // namespace

pc_status pc__heca_gpu_new(const pc_points *points, const int32_t *device_labels, pc__heca_gpu **out, double *lo,
                           double *hi)
{
    *out = nullptr;
    pc_status st = pc__hca_check_device_rows(points, device_labels);
    if (st != PC_OK)
        return st;
    pc__heca_gpu *s = new (std::nothrow) pc__heca_gpu();
    if (!s)
        return pc__fail(PC_OUT_OF_MEMORY, "HECA: cannot allocate the GPU state");
    s->rows = {(const unsigned char *)points->data, points->n, pc__hca_row_bytes(points), (int)points->dim,
               points->dtype};
    s->g.dim = points->dim;
    s->g.dtype = points->dtype;
    s->g.n = points->n;
    s->g.dense = 1; // every member's grid, and so HCA's compaction of its counters
    st = pc__hca_gpu_open(s->g);
    const size_t NON_FINITE = 2 * PC__HCA_MAX_DIM;
    unsigned long long host[NON_FINITE + 1];
    if (st == PC_OK)
        st = s->g.scalars.alloc(NON_FINITE + 1, "HECA box");
    if (st == PC_OK) {
        unsigned long long *w = s->g.scalars.ptr;
        st = pc__cuda_status(cudaMemsetAsync(w, 0xff, PC__HCA_MAX_DIM * sizeof *w, s->g.stream), "HECA box");
        if (st == PC_OK)
            st = pc__cuda_status(cudaMemsetAsync(w + PC__HCA_MAX_DIM, 0, (PC__HCA_MAX_DIM + 1) * sizeof *w, s->g.stream),
                                 "HECA box");
        if (st == PC_OK)
            st = pc__hca_cuda_bounds(s->rows, w, w + PC__HCA_MAX_DIM, w + NON_FINITE, pass_of(*s));
        if (st == PC_OK)
            st = pc__cuda_status(cudaMemcpyAsync(host, w, sizeof host, cudaMemcpyDeviceToHost, s->g.stream), "HECA box");
        if (st == PC_OK)
            st = pc__cuda_status(cudaStreamSynchronize(s->g.stream), "HECA box");
    }
    if (st == PC_OK && host[NON_FINITE])
        st = pc__fail(PC_INVALID_ARGUMENT,
                      "pc_heca_device: %llu non-finite value(s) (NaN or infinity, or float64 beyond float range) in "
                      "the points", host[NON_FINITE]);
    if (st != PC_OK) {
        pc__heca_gpu_free(s);
        return st;
    }
    for (size_t j = 0; j < points->dim; j++) {
        s->lo[j] = lo[j] = pc__hca_from_order_bits(host[j]);
        s->hi[j] = hi[j] = pc__hca_from_order_bits(host[PC__HCA_MAX_DIM + j]);
    }
    *out = s;
    return PC_OK;
}

void pc__heca_gpu_free(pc__heca_gpu *s) { pc__hca_free_state(s); }

pc_status pc__heca_gpu_count(pc__heca_gpu *s, pc__hca_grid *const *grids, const uint64_t *total, size_t L, size_t last)
{
    pc__hca_device_scope on(s->g.device);
    s->mapped = nullptr;
    // The grids by size; their counters side by side in that order, so that a group is one stretch.
    size_t order[PC__HCA_GRIDS_AT_ONCE * 2], at[PC__HCA_GRIDS_AT_ONCE * 2], words = 0;
    if (L > sizeof order / sizeof *order)
        return pc__fail(PC_INTERNAL_ERROR, "HECA: %zu members to count", L);
    for (size_t l = 0; l < L; l++) {
        size_t i = l;
        for (; i > 0 && total[order[i - 1]] > total[l]; i--)
            order[i] = order[i - 1];
        order[i] = l;
    }
    for (size_t i = 0; i < L; i++) {
        at[order[i]] = words;
        words += (size_t)total[order[i]];
    }
    pc__hca_binning bins[PC__HCA_GRIDS_AT_ONCE * 2];
    pc_status st = grow_tables(*s, L);
    if (st == PC_OK)
        st = binnings_of(*s, grids, L, bins);
    if (st == PC_OK)
        st = pc__hca_grow(s->counts, words, "HECA member counts");
    if (st != PC_OK)
        return st;
    PC_CUDA_TRY(cudaMemsetAsync(s->counts.ptr, 0, words * sizeof(int32_t), s->g.stream), "HECA member counts");
    pc__hca_point_pass pass = pass_of(*s);
    // Groups of consecutive grids whose counters fit one block's shared memory count in one pass; a grid
    // alone goes through HCA's own histogram.
    for (size_t i = 0; i < L;) {
        pc__hca_grids group;
        memset(&group, 0, sizeof group);
        size_t first = i;
        while (i < L && group.count < PC__HCA_GRIDS_AT_ONCE) {
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
    // Each grid's cells, `last` at the end (its map stays in s->g.slot).
    for (size_t l = 0; l < L; l++)
        if (l != last && (st = cells_of(*s, grids[l], s->counts.ptr + at[l], total[l])) != PC_OK)
            return st;
    return cells_of(*s, grids[last], s->counts.ptr + at[last], total[last]);
}

pc_status pc__heca_gpu_cells(pc__heca_gpu *s, const pc__hca_grid *g, int32_t *cell_of_point, double *sums)
{
    pc__hca_device_scope on(s->g.device);
    size_t dim = g->dim, words = g->cells * (dim + 1);
    bool integer = s->rows.dtype == PC_U8 || s->rows.dtype == PC_U16;
    // The grid's cells' map (every linear index to its cell, or -1) is where its count left it, the
    // reference member being counted last.
    if (s->mapped != g)
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
    pc__hca_dgrid grid = dense_view(s->g.slot.ptr);
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
    size_t n = s->rows.rows, blocks = (n + THREADS - 1) / THREADS, most = 8 * (size_t)s->g.sms;
    PC_CUDA_TRY(cudaMemcpyAsync(s->clusters.ptr, cluster_of_cell, cells * sizeof *cluster_of_cell,
                                cudaMemcpyHostToDevice, s->g.stream),
                "HECA cell clusters");
    clusters_kernel<<<(unsigned)(blocks < most ? blocks : most), THREADS, 0, s->g.stream>>>(labels, s->clusters.ptr, n);
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
