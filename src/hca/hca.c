/* pc_hca: checks, the stages in order with their timings, and the final labelling of every point. */
#include "internal_hca.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

void pc_hca_params_init(pc_hca_params *p)
{
    memset(p, 0, sizeof *p);
    p->m = 32;
    p->clusters = 0;
    p->threshold = 0.5;
    p->min_cluster_size = -1;
    p->memory_budget = (size_t)512 << 20;
    p->backend = PC_BACKEND_AUTO;
}

static pc_status check(const pc_points *points, const pc_hca_params *p)
{
    if (points->dim > PC__HCA_MAX_DIM)
        return pc__fail(PC_INVALID_ARGUMENT, "HCA handles 1 to %d dimensions, got %zu", PC__HCA_MAX_DIM, points->dim);
    if (points->n > (size_t)INT32_MAX)
        return pc__fail(PC_INVALID_ARGUMENT, "HCA handles up to %d points, got %zu", INT32_MAX, points->n);
    if (p->m < 2 || p->m > 65536)
        return pc__fail(PC_INVALID_ARGUMENT, "m (cells per dimension) must be between 2 and 65536, got %d", p->m);
    if (p->clusters == 0 && !(p->threshold >= 0 && p->threshold <= 1))
        return pc__fail(PC_INVALID_ARGUMENT, "threshold must be in [0, 1], got %g", p->threshold);
    if (p->threads < 0)
        return pc__fail(PC_INVALID_ARGUMENT, "threads must be >= 0 (0 = OpenMP's default), got %d", p->threads);
    return PC_OK;
}

/* Every point takes its cell's cluster (the cell is in labels[] since the grid was built), and the
 * clusters' exact means are summed on the way: integer sums for uint8 pixels, doubles otherwise. The
 * grid's cell map is turned into a cluster map in place: its last use. */
static pc_status label_points(pc__hca_grid *g, const pc_points *points, const int32_t *cluster_of_cell, size_t k,
                              int32_t *labels, double *sums)
{
    int failed = 0;
    size_t dim = g->dim, stride = points->stride ? points->stride : 0;
    if (!stride)
        stride = dim * (points->dtype == PC_F64 ? 8 : points->dtype == PC_F32 ? 4 : points->dtype == PC_U16 ? 2 : 1);
    int threads = g->threads;
    int32_t *map = g->dense ? g->slot : g->first_seen_to_cell;
    long entries = g->dense ? (long)(g->stride[0] * (uint64_t)g->m) : (long)g->cells;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
    for (long c = 0; c < entries; c++)
        map[c] = map[c] >= 0 ? cluster_of_cell[map[c]] : -1;
    /* With fewer than 255 clusters a byte per grid index keeps the map 4x smaller in cache. */
    uint8_t *small = k < 255 ? malloc((size_t)entries) : NULL;
    if (small)
        for (long c = 0; c < entries; c++)
            small[c] = map[c] < 0 ? 255 : (uint8_t)map[c];
    int packed_u8 = points->dtype == PC_U8 && stride == dim;
    memset(sums, 0, k * (dim + 1) * sizeof *sums);
#pragma omp parallel num_threads(threads) if (threads > 1) reduction(| : failed)
    {
        double *mine = calloc(k * (dim + 1), sizeof *mine);
        uint64_t *isum = packed_u8 ? calloc(k * (dim + 1), sizeof *isum) : NULL;
        failed |= !mine || (packed_u8 && !isum);
        float row[PC__HCA_MAX_DIM];
        const uint8_t *u8 = points->data;
        /* Images come in regions: sums run in registers while the cluster stays the same, and go to
         * memory when it changes (a read-modify-write per pixel would chain through memory). */
        uint64_t run[PC__HCA_MAX_DIM + 1] = {0};
        int32_t run_cluster = -1;
#pragma omp for schedule(static)
        for (long i = 0; i < (long)g->n; i++) {
            int32_t c = small ? (small[labels[i]] == 255 ? -1 : small[labels[i]]) : map[labels[i]];
            labels[i] = c;
            if (c < 0)
                continue;
            if (isum) {
                if (c != run_cluster) {
                    if (run_cluster >= 0)
                        for (size_t j = 0; j <= dim; j++)
                            isum[(size_t)run_cluster * (dim + 1) + j] += run[j];
                    memset(run, 0, sizeof run);
                    run_cluster = c;
                }
                for (size_t j = 0; j < dim; j++)
                    run[j] += u8[(size_t)i * dim + j];
                run[dim]++;
            } else if (mine) {
                pc__points_row_f32(points, (size_t)i, row);
                double *s = mine + (size_t)c * (dim + 1);
                for (size_t j = 0; j < dim; j++)
                    s[j] += row[j];
                s[dim] += 1;
            }
        }
        if (isum && run_cluster >= 0)
            for (size_t j = 0; j <= dim; j++)
                isum[(size_t)run_cluster * (dim + 1) + j] += run[j];
        if (isum && mine)
            for (size_t q = 0; q < k * (dim + 1); q++)
                mine[q] = (double)isum[q];
        pc__team_add_ordered(sums, mine, k * (dim + 1));
        free(mine);
        free(isum);
    }
    free(small);
    return failed ? pc__fail(PC_OUT_OF_MEMORY, "HCA: cannot allocate per-thread cluster sums") : PC_OK;
}

pc_status pc_hca(const pc_points *points, const pc_hca_params *params, pc_result **result)
{
    pc_status st = pc__begin(points, params, result);
    if (st != PC_OK || (st = check(points, params)) != PC_OK)
        return st;
    pc_backend backend;
    /* AUTO's measure of work: the points; the CPU backends are all there is for HCA today. */
    if ((st = pc__choose_backend(params->backend, 0, &backend)) != PC_OK)
        return st;
    if (backend == PC_BACKEND_CUDA)
        return pc__fail(PC_UNSUPPORTED, "HCA has no CUDA backend in this version");
    int threads = 1;
#ifdef _OPENMP
    if (backend == PC_BACKEND_OPENMP)
        threads = params->threads > 0 ? params->threads : omp_get_max_threads();
#endif
    size_t n = points->n, dim = points->dim;
    int64_t min_size = params->min_cluster_size;
    if (min_size < 0) {
        min_size = (int64_t)ceil(0.001 * (double)n);
        if (min_size < 2)
            min_size = 2;
    }
    pc_result *r = pc__result_new(n, dim);
    if (!r)
        return PC_OUT_OF_MEMORY;
    r->backend = backend;
    pc__hca_grid g;
    pc__hca_graph gr;
    memset(&g, 0, sizeof g);
    memset(&gr, 0, sizeof gr);
    int32_t *cluster_of_cell = NULL;
    double *sums = NULL;
    size_t k = 0;
    double t0 = pc__now();
    r->labels = pc__alloc_large(n, sizeof *r->labels, "labels");
    if (!r->labels) {
        st = PC_OUT_OF_MEMORY;
        goto fail;
    }
    if ((st = pc__hca_grid_build(&g, points, params->m, params->memory_budget, threads, r->labels)) != PC_OK)
        goto fail;
    double t1 = pc__now();
    if ((st = pc__hca_graph_build(&g, &gr)) != PC_OK)
        goto fail;
    double t2 = pc__now();
    if ((st = pc__hca_dendrogram(&gr, &r->dendrogram)) != PC_OK)
        goto fail;
    double t3 = pc__now();
    cluster_of_cell = pc__alloc(g.cells, sizeof *cluster_of_cell, "HCA cell clusters");
    if (!cluster_of_cell) {
        st = PC_OUT_OF_MEMORY;
        goto fail;
    }
    if ((st = pc__hca_cut(&g, &gr, r->dendrogram, params->clusters, params->threshold, min_size, params->noise,
                          cluster_of_cell, &k)) != PC_OK)
        goto fail;
    double t4 = pc__now();
    sums = pc__calloc(k * (dim + 1), sizeof *sums, "cluster sums");
    r->centers = pc__alloc(k, dim * sizeof *r->centers, "cluster centres");
    r->sizes = pc__alloc(k, sizeof *r->sizes, "cluster sizes");
    r->components = gr.components;
    r->cells = g.cells;
    r->component_cells = pc__alloc(gr.components, sizeof(int64_t), "components");
    r->component_densities = pc__alloc(gr.components, sizeof(int64_t), "components");
    r->component_sizes = pc__alloc(gr.components, sizeof(int64_t), "components");
    if (!sums || !r->centers || !r->sizes || !r->component_cells || !r->component_densities || !r->component_sizes) {
        st = PC_OUT_OF_MEMORY;
        goto fail;
    }
    for (size_t c = 0; c < gr.components; c++) {
        r->component_cells[c] = (int64_t)g.key[gr.representative[c]];
        r->component_densities[c] = g.density[gr.representative[c]];
        r->component_sizes[c] = gr.size[c];
    }
    if ((st = label_points(&g, points, cluster_of_cell, k, r->labels, sums)) != PC_OK)
        goto fail;
    r->k = k;
    for (size_t c = 0; c < k; c++) {
        double count = sums[c * (dim + 1) + dim];
        r->sizes[c] = (int64_t)count;
        for (size_t j = 0; j < dim; j++)
            r->centers[c * dim + j] = count > 0 ? (float)(sums[c * (dim + 1) + j] / count) : 0.0f;
    }
    double t5 = pc__now();
    pc__result_add_stage(r, "grid", t1 - t0);
    pc__result_add_stage(r, "components", t2 - t1);
    pc__result_add_stage(r, "dendrogram", t3 - t2);
    pc__result_add_stage(r, "cut", t4 - t3);
    pc__result_add_stage(r, "label", t5 - t4);
    free(cluster_of_cell);
    free(sums);
    pc__hca_graph_free(&gr);
    pc__hca_grid_free(&g);
    *result = r;
    return PC_OK;
fail:
    free(cluster_of_cell);
    free(sums);
    pc__hca_graph_free(&gr);
    pc__hca_grid_free(&g);
    pc_result_free(r);
    return st;
}
