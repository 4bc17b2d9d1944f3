/* pc_hca: checks, the stages in order with their timings, and the final labelling of every point. */
#include "internal_hca.h"
#include "../core/cpu_path.h"

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
    p->refine_bandwidth = -1;
    p->refine_eps = -1;
    p->refine_max_iter = 100;
}

static pc_status check(const pc_points *points, const pc_hca_params *p)
{
    if (points->n > (size_t)INT32_MAX)
        return pc__fail(PC_INVALID_ARGUMENT, "HCA handles up to %d points at once, got %zu (pc_hca_stream takes "
                        "more, in blocks)", INT32_MAX, points->n);
    pc_hca_params q = *p;
    if (q.m == 0) /* auto: resolved from n and dim by the plan */
        q.m = 2;
    return pc__hca_check_params(&q, points->dim);
}

pc_status pc__hca_check_params(const pc_hca_params *p, size_t dim)
{
    if (dim < 1 || dim > PC__HCA_MAX_DIM)
        return pc__fail(PC_INVALID_ARGUMENT, "HCA handles 1 to %d dimensions, got %zu", PC__HCA_MAX_DIM, dim);
    if (p->m < 2 || p->m > 65536)
        return pc__fail(PC_INVALID_ARGUMENT, "m (cells per dimension) must be between 2 and 65536, got %d", p->m);
    if (p->clusters == 0 && !(p->threshold >= 0 && p->threshold <= 1))
        return pc__fail(PC_INVALID_ARGUMENT, "threshold must be in [0, 1], got %g", p->threshold);
    if (p->threads < 0)
        return pc__fail(PC_INVALID_ARGUMENT, "threads must be >= 0 (0 = OpenMP's default), got %d", p->threads);
    if (p->refine_borders && (isnan(p->refine_bandwidth) || isinf(p->refine_bandwidth) || isnan(p->refine_eps) ||
                              p->refine_max_iter < 1))
        return pc__fail(PC_INVALID_ARGUMENT, "border refinement: bandwidth and eps must be finite numbers and "
                        "max-iter >= 1, got %g, %g, %d", p->refine_bandwidth, p->refine_eps, p->refine_max_iter);
    return PC_OK;
}

__thread struct pc__hca_tick *pc__hca_grid_tick;

pc_status pc__hca_progress(const pc_hca_params *p, double fraction)
{
    if (p->progress && p->progress(p->progress_user, fraction))
        return pc__fail(PC_CANCELLED, "HCA cancelled by the progress callback at %.0f%%", 100 * fraction);
    return PC_OK;
}

int pc__hca_tick_report(struct pc__hca_tick *tick, size_t done, size_t total)
{
#ifdef _OPENMP
    if (omp_get_thread_num() != 0) /* the callback runs on the calling thread only */
        return 0;
#endif
    /* A report every 10 ms at most: a Python callback takes the GIL each time. */
    double now = pc__now();
    if (now - tick->last_time < 0.01)
        return 0;
    tick->last_time = now;
    double f = tick->from + (tick->to - tick->from) * (total ? (double)done / (double)total : 1);
    if (!tick->params->progress(tick->params->progress_user, f))
        return 0;
    __atomic_store_n(&tick->cancelled, 1, __ATOMIC_RELAXED);
    return 1;
}

pc_status pc__hca_tick_status(const struct pc__hca_tick *tick)
{
    if (!tick || !__atomic_load_n(&tick->cancelled, __ATOMIC_RELAXED))
        return PC_OK;
    return pc__fail(PC_CANCELLED, "HCA cancelled by the progress callback between %.0f%% and %.0f%%", 100 * tick->from,
                    100 * tick->to);
}

/* The cluster of a cell: from the byte-a-cell map where there is one (255 = none), else the int32 map. */
static inline int32_t cell_cluster(const uint8_t *small, const int32_t *map, int32_t cell)
{
    return small ? (small[cell] == 255 ? -1 : small[cell]) : map[cell];
}

/* The labels and integer sums of packed uint8 points [begin, end): each pixel's cell index becomes its
 * cluster (small: a byte a cell, 255 = none), and the running sums of the current cluster's run grow in
 * registers. Inlined with dim a constant for 3 and 4 bands (the images' cases), so that the per-pixel
 * loops unroll. */
static inline __attribute__((always_inline)) void label_u8_block(const uint8_t *u8, size_t dim, const uint8_t *small,
                                                                 const int32_t *map, int32_t *labels, size_t begin,
                                                                 size_t end, uint64_t *run, int32_t *run_cluster,
                                                                 uint64_t *isum)
{
    for (size_t i = begin; i < end; i++) {
        int32_t c = cell_cluster(small, map, labels[i]);
        labels[i] = c;
        if (c < 0)
            continue;
        if (c != *run_cluster) {
            if (*run_cluster >= 0)
                for (size_t j = 0; j <= dim; j++)
                    isum[(size_t)*run_cluster * (dim + 1) + j] += run[j];
            for (size_t j = 0; j <= dim; j++)
                run[j] = 0;
            *run_cluster = c;
        }
        for (size_t j = 0; j < dim; j++)
            run[j] += u8[i * dim + j];
        run[dim]++;
    }
}

/* The grid's cell map turned into a cluster map in place, and the same as a byte a linear index (255:
 * none; 3 bytes of padding after for the vector paths) where k < 255, else NULL (or no memory). With
 * marked (HCA-MS's border cells, listed by the label pass, k < PC__HCA_MARKED_NONE): the cell map stays
 * (the climbs that follow look cells up in it), and the bytes carry the marks as
 * pc__hca_label_u8_avx512 reads them. */
static uint8_t *cluster_map(pc__hca_grid *g, const int32_t *cluster_of_cell, size_t k, const uint8_t *marked)
{
    int threads = g->threads;
    (void)threads; /* used only by the OpenMP pragma */
    int32_t *map = g->dense ? g->slot : g->first_seen_to_cell;
    long entries = g->dense ? (long)(g->stride[0] * (uint64_t)g->m) : (long)g->cells;
    uint8_t *small = k < 255 ? malloc((size_t)entries + 3) : NULL; /* (+ 3: the vector paths read 4 bytes) */
    if (marked) {
        if (small) {
            for (long c = 0; c < entries; c++) {
                int32_t cluster = map[c] >= 0 ? cluster_of_cell[map[c]] : -1;
                small[c] = (uint8_t)((cluster < 0 ? PC__HCA_MARKED_NONE : cluster) |
                                     (map[c] >= 0 && marked[map[c]] ? PC__HCA_MARK : 0));
            }
            memset(small + entries, PC__HCA_MARKED_NONE, 3);
        }
        return small;
    }
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
    for (long c = 0; c < entries; c++)
        map[c] = map[c] >= 0 ? cluster_of_cell[map[c]] : -1;
    if (small) {
        for (long c = 0; c < entries; c++)
            small[c] = map[c] < 0 ? 255 : (uint8_t)map[c];
        memset(small + entries, 255, 3);
    }
    return small;
}

int pc__hca_labels_list(const pc__hca_grid *g, const pc_points *points, size_t k)
{
#if PC__HAVE_CPU_PATHS
    return g->dense && points->dtype == PC_U8 && pc__hca_row_bytes(points) == g->dim && (g->dim == 3 || g->dim == 4) &&
           k < PC__HCA_MARKED_NONE && pc__cpu_path() == PC__CPU_AVX512;
#else
    (void)g, (void)points, (void)k;
    return 0;
#endif
}

/* HCA-MS's 3-band pixels whose value another thread was climbing when the label pass met them
 * (listed): they took their cell's cluster, and now take their value's, moving between the clusters'
 * sums (isum, dim + 1 = 4 a cluster). Returns 1 where the list could not hold them all. */
static int settle_deferred(const pc__hca_values *values, pc__hca_point_list *list, const uint8_t *u8,
                           int32_t *labels, uint64_t *isum, int64_t *moved)
{
    for (size_t q = 0; q < list->count; q++) {
        size_t i = (size_t)list->index[q];
        const uint8_t *px = u8 + 3 * i;
        int32_t to = values->by_value[px[0] | (uint32_t)px[1] << 8 | (uint32_t)px[2] << 16] - 1, from = labels[i];
        to = to == PC__HCA_MARKED_NONE ? -1 : to;
        if (to == from)
            continue;
        ++*moved;
        labels[i] = to;
        for (size_t j = 0; j < 3; j++) {
            if (from >= 0)
                isum[(size_t)from * 4 + j] -= px[j];
            if (to >= 0)
                isum[(size_t)to * 4 + j] += px[j];
        }
        if (from >= 0)
            isum[(size_t)from * 4 + 3]--;
        if (to >= 0)
            isum[(size_t)to * 4 + 3]++;
    }
    list->count = 0;
    return list->failed;
}

/* Every point takes its cell's cluster: the cell is in labels[] since the grid was built, or (refind)
 * is found again from the pixel's bands (label_u8.c), the cluster going into labels[] or, with bytes,
 * into bytes[]; the clusters' exact means are summed on the way: integer sums for uint8 pixels,
 * doubles otherwise. The grid's cell map is turned into a cluster map in place (its last use), except
 * where the pass lists or gives border points their clusters for HCA-MS (listing). */
pc_status pc__hca_label_points(pc__hca_grid *g, const pc_points *points, const int32_t *cluster_of_cell, size_t k,
                               int refind, int32_t *labels, uint8_t *bytes, double *sums, const pc__hca_listing *listing)
{
    int failed = 0;
    size_t dim = g->dim, stride = pc__hca_row_bytes(points);
    int threads = g->threads;
    (void)threads; /* used only by the OpenMP pragmas */
    int32_t *map = g->dense ? g->slot : g->first_seen_to_cell;
    /* With fewer than 255 clusters a byte per grid index keeps the map 4x smaller in cache. */
    uint8_t *small = cluster_map(g, cluster_of_cell, k, listing ? listing->in : NULL);
    if ((bytes || listing) && !small)
        return pc__fail(PC_OUT_OF_MEMORY, "HCA: cannot allocate the cells' cluster map");
    int packed_u8 = points->dtype == PC_U8 && stride == dim;
    int vector = 0; /* 16 pixels a step: packed 3- or 4-band uint8 with a byte map, on the AVX-512 path */
#if PC__HAVE_CPU_PATHS
    vector = packed_u8 && (dim == 3 || dim == 4) && small && pc__cpu_path() == PC__CPU_AVX512;
    pc__hca_u8_grid cells; /* refind: the cells found again */
    if (refind)
        pc__hca_u8_grid_of(g, &cells);
#else
    (void)refind; /* only on the AVX-512 path */
#endif
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
        int64_t moved = 0; /* listing->values: the thread's pixels whose cluster their value's changed */
        int thread = 0; /* its list in listing->lists */
#ifdef _OPENMP
        thread = omp_get_thread_num();
#endif
        /* Blocks of points, so that a cancelled run stops within one block on every thread. */
        const size_t block = 65536;
        /* HCA-MS's 3-band values, climbed where the label pass first meets them: a block's climbs
         * depend on the image (where the border values first come), so the blocks go to whichever
         * thread is free (an image whose first half is noise and second half one colour took twice the
         * time on a static schedule), and the pass reports progress between climbs as well. The
         * deferred pixels' lists are settled in any order. */
        int by_values = vector && listing && listing->values;
#pragma omp for schedule(dynamic, 1)
        for (long b = 0; b < (by_values ? (long)((g->n + block - 1) / block) : 0); b++) {
#if PC__HAVE_CPU_PATHS /* (else vector, and so by_values, is 0) */
            if (pc__hca_tick_at(g->tick, (size_t)b * block, g->n) || !mine || !isum)
                continue;
            size_t end = (size_t)(b + 1) * block < g->n ? (size_t)(b + 1) * block : g->n;
            pc__hca_label_u8_avx512(u8, dim, small, labels, (size_t)b * block, end, isum, listing->lists + thread, 0,
                                    listing->values, &moved, g->tick, g->n);
#endif
        }
#pragma omp for schedule(static)
        for (long b = 0; b < (by_values ? 0 : (long)((g->n + block - 1) / block)); b++) {
            /* cancelled, or this thread's sums missing (the run fails): nothing more to do */
            if (pc__hca_tick_at(g->tick, (size_t)b * block, g->n) || !mine || (packed_u8 && !isum))
                continue;
            size_t end = (size_t)(b + 1) * block < g->n ? (size_t)(b + 1) * block : g->n;
#if PC__HAVE_CPU_PATHS
            if (refind && small && isum) {
                pc__hca_label_u8_cells_avx512(u8, dim, &cells, small, bytes, labels, (size_t)b * block, end, isum);
                continue;
            }
            if (refind) /* k >= 255: the block's cells first, then the int32 map below */
                pc__hca_u8_cells_of(u8, dim, &cells, NULL, (size_t)b * block, end, labels + (size_t)b * block);
            if (vector && isum) {
                /* the blocks of a static schedule: each thread's in order, the threads in order */
                pc__hca_point_list *list = listing ? listing->lists + thread : NULL;
                pc__hca_label_u8_avx512(u8, dim, small, labels, (size_t)b * block, end, isum, list,
                                        listing ? listing->value_bytes : 0, NULL, &moved, NULL, 0);
                continue;
            }
#endif
            if (isum) {
                if (dim == 4)
                    label_u8_block(u8, 4, small, map, labels, (size_t)b * block, end, run, &run_cluster, isum);
                else if (dim == 3)
                    label_u8_block(u8, 3, small, map, labels, (size_t)b * block, end, run, &run_cluster, isum);
                else
                    label_u8_block(u8, dim, small, map, labels, (size_t)b * block, end, run, &run_cluster, isum);
                continue;
            }
            for (long i = (long)((size_t)b * block); i < (long)end; i++) {
                int32_t c = cell_cluster(small, map, labels[i]);
                labels[i] = c;
                if (c < 0)
                    continue;
                if (mine) {
                    pc__points_row_f32(points, (size_t)i, row);
                    double *s = mine + (size_t)c * (dim + 1);
                    for (size_t j = 0; j < dim; j++)
                        s[j] += row[j];
                    s[dim] += 1;
                }
            }
        }
        if (isum && run_cluster >= 0)
            for (size_t j = 0; j <= dim; j++)
                isum[(size_t)run_cluster * (dim + 1) + j] += run[j];
        /* After the loop's barrier every climb is done: the pixels that waited on another thread's take
         * its cluster now (pc__hca_label_u8_avx512). */
        if (listing && listing->values && isum)
            failed |= settle_deferred(listing->values, listing->lists + thread, u8, labels, isum, &moved);
        if (listing && listing->changed) {
#pragma omp atomic
            *listing->changed += moved;
        }
        if (isum && mine)
            for (size_t q = 0; q < k * (dim + 1); q++)
                mine[q] = (double)isum[q];
        pc__team_add_ordered(sums, mine, k * (dim + 1));
        free(mine);
        free(isum);
    }
    free(small);
    if (failed)
        return pc__fail(PC_OUT_OF_MEMORY, "HCA: cannot allocate per-thread cluster sums or HCA-MS's lists");
    return pc__hca_tick_status(g->tick);
}

pc_status pc__hca_bytes_fit(size_t k)
{
    if (k < 255)
        return PC_OK;
    return pc__fail(PC_UNSUPPORTED, "HCA found %zu clusters: labels as bytes hold at most 254 (255 marks no cluster)",
                    k);
}

pc_status pc__hca_result_components(pc_result *r, const pc__hca_grid *g, const pc__hca_graph *gr)
{
    r->components = gr->components;
    r->cells = g->cells;
    r->component_cells = pc__alloc(gr->components, sizeof(int64_t), "components");
    r->component_densities = pc__alloc(gr->components, sizeof(int64_t), "components");
    r->component_sizes = pc__alloc(gr->components, sizeof(int64_t), "components");
    if (!r->component_cells || !r->component_densities || !r->component_sizes)
        return PC_OUT_OF_MEMORY;
    for (size_t c = 0; c < gr->components; c++) {
        r->component_cells[c] = (int64_t)g->key[gr->representative[c]];
        r->component_densities[c] = g->density[gr->representative[c]];
        r->component_sizes[c] = gr->size[c];
    }
    return PC_OK;
}

pc_status pc__hca_finish(pc_result *r, const pc__hca_grid *g, const pc__hca_graph *gr, const double *sums, size_t k)
{
    size_t dim = g->dim;
    r->centers = pc__alloc(k, dim * sizeof *r->centers, "cluster centres");
    r->sizes = pc__alloc(k, sizeof *r->sizes, "cluster sizes");
    if (!r->centers || !r->sizes || pc__hca_result_components(r, g, gr) != PC_OK)
        return PC_OUT_OF_MEMORY;
    r->k = k;
    for (size_t c = 0; c < k; c++) {
        double count = sums[c * (dim + 1) + dim];
        r->sizes[c] = (int64_t)count;
        for (size_t j = 0; j < dim; j++)
            r->centers[c * dim + j] = count > 0 ? (float)(sums[c * (dim + 1) + j] / count) : 0.0f;
    }
    return PC_OK;
}

/* The sequential and OpenMP backends, stage by stage. bytes: where pc_hca_plan_run_u8 wants the
 * labels (else NULL); the result's labels are then left out where they go there directly. */
static pc_status run_cpu(const pc_points *points, const pc_hca_params *params, int threads, int64_t min_size,
                         uint8_t *bytes, pc_result *r)
{
    size_t n = points->n, dim = points->dim;
    pc__hca_grid g;
    pc__hca_graph gr;
    memset(&g, 0, sizeof g);
    memset(&gr, 0, sizeof gr);
    int32_t *cluster_of_cell = NULL;
    double *sums = NULL;
    size_t k = 0;
    pc__hca_refining rf; /* HCA-MS's border points, where the label pass lists them */
    memset(&rf, 0, sizeof rf);
    pc__hca_border border = {0, NULL, NULL}; /* their clusters (freed by the apply, or at done) */
    pc__hca_values values; /* HCA-MS on 3-band pixels: the clusters their values climb to */
    memset(&values, 0, sizeof values);
    int by_value = 0;
    int64_t changed_by_value = 0;
    pc_status st;
    double t0 = pc__now();
    /* The labels straight into bytes (pc_hca_plan_run_u8): where the label stage can find each pixel's
     * cell again from its bands (pc__hca_cells_found_again; not with border refinement, which needs
     * every point's cell): 1 + 4 bytes of memory traffic a pixel in place of 4 + 4 + 4 + 4 (cells
     * written into fresh labels, read back, labels written, then narrowed). */
    int straight = bytes && !params->refine_borders &&
                   pc__hca_cells_found_again(points, params->m, params->memory_budget);
    if (!straight && !(r->labels = pc__alloc_large(n, sizeof *r->labels, "labels"))) {
        st = PC_OUT_OF_MEMORY;
        goto done;
    }
    /* The box, then the grid over it (what pc__hca_grid_build does), with a progress report between;
     * the counting pass reports from within (the tick it takes from pc__hca_grid_tick). */
    struct pc__hca_tick tick = {params, 0.05, 0.35, 0, 0};
    double lo[PC__HCA_MAX_DIM], hi[PC__HCA_MAX_DIM];
    pc__hca_bounding_box(points, threads, lo, hi);
    if ((st = pc__hca_progress(params, 0.05)) != PC_OK)
        goto done;
    pc__hca_grid_tick = params->progress ? &tick : NULL;
    /* (straight to bytes: the counts alone, r->labels is NULL) */
    st = pc__hca_grid_build_box(&g, points, params->m, lo, hi, params->memory_budget, threads, r->labels,
                                params->refine_borders);
    pc__hca_grid_tick = NULL;
    g.tick = params->progress ? &tick : NULL;
    if (st != PC_OK || (st = pc__hca_tick_status(g.tick)) != PC_OK || (st = pc__hca_progress(params, 0.35)) != PC_OK)
        goto done;
    double t1 = pc__now();
    if ((st = pc__hca_graph_build(&g, &gr)) != PC_OK || (st = pc__hca_progress(params, 0.45)) != PC_OK)
        goto done;
    double t2 = pc__now();
    if ((st = pc__hca_dendrogram(&gr, &r->dendrogram)) != PC_OK || (st = pc__hca_progress(params, 0.5)) != PC_OK)
        goto done;
    double t3 = pc__now();
    cluster_of_cell = pc__alloc(g.cells, sizeof *cluster_of_cell, "HCA cell clusters");
    if (!cluster_of_cell) {
        st = PC_OUT_OF_MEMORY;
        goto done;
    }
    if ((st = pc__hca_cut(&g, &gr, r->dendrogram, params->clusters, params->threshold, min_size, params->noise,
                          cluster_of_cell, &k)) != PC_OK ||
        (st = pc__hca_progress(params, 0.55)) != PC_OK || (straight && (st = pc__hca_bytes_fit(k)) != PC_OK))
        goto done;
    double t4 = pc__now();
    tick.from = 0.55; /* each pass's first report comes at once */
    tick.to = 0.75;
    tick.last_time = 0;
    /* HCA-MS where the counting pass summed the cells: the label pass lists the border points, and
     * their climbs follow it (one pass over the pixels fewer). A zero bandwidth moves nothing and keeps
     * to pc__hca_refine, which reads the points' cells. */
    int lists = params->refine_borders && g.cell_sums && params->refine_bandwidth != 0 &&
                pc__hca_labels_list(&g, points, k);
    if (params->refine_borders && !lists &&
        (st = pc__hca_refine(&g, points, r->labels, cluster_of_cell, params, &border)) != PC_OK)
        goto done;
    if (lists && (st = pc__hca_refine_begin(&g, points, cluster_of_cell, &rf)) != PC_OK)
        goto done;
    /* 3 bands: the label pass gives each border pixel the cluster its value climbs to, climbing each
     * value where it first meets it (no apply after; only the pixels whose value another thread was
     * climbing are listed, and settled after the pass). */
    by_value = lists && rf.count && points->dim == 3;
    if (by_value) {
        if ((st = pc__hca_values_begin(&values, &g, cluster_of_cell, params)) != PC_OK)
            goto done;
        rf.listing.values = &values;
        rf.listing.changed = &changed_by_value;
    }
    if ((st = pc__hca_tick_status(g.tick)) != PC_OK || (st = pc__hca_progress(params, 0.75)) != PC_OK)
        goto done;
    double t4r = pc__now();
    int climbs_after = lists && !by_value; /* the label pass lists, the climbs follow it */
    tick.from = 0.75;
    tick.to = climbs_after ? 0.85 : 1;
    tick.last_time = 0;
    sums = pc__calloc(k * (dim + 1), sizeof *sums, "cluster sums");
    if (!sums) {
        st = PC_OUT_OF_MEMORY;
        goto done;
    }
    if ((st = pc__hca_label_points(&g, points, cluster_of_cell, k, straight, r->labels, straight ? bytes : NULL,
                                   sums, lists && rf.count ? &rf.listing : NULL)) != PC_OK)
        goto done;
    double t4c = pc__now();
    if (climbs_after) {
        tick.from = 0.85; /* the fraction goes on from the label pass's */
        tick.to = 1;
        tick.last_time = 0;
        if ((st = pc__hca_refine_climbs(&g, points, NULL, cluster_of_cell, params, &rf, &border)) != PC_OK ||
            (st = pc__hca_tick_status(g.tick)) != PC_OK) /* cancelled among the climbs */
            goto done;
        t4r += pc__now() - t4c; /* the climbs counted as the refine stage's, not the label stage's */
    }
    r->border_points = by_value ? (int64_t)rf.count : (int64_t)border.count;
    r->changed_points = by_value                 ? changed_by_value
                        : params->refine_borders ? pc__hca_refine_apply(&border, points, r->labels, sums)
                                                 : 0;
    if ((st = pc__hca_finish(r, &g, &gr, sums, k)) != PC_OK)
        goto done;
    double t5 = pc__now();
    pc__result_add_stage(r, "grid", t1 - t0);
    pc__result_add_stage(r, "components", t2 - t1);
    pc__result_add_stage(r, "dendrogram", t3 - t2);
    pc__result_add_stage(r, "cut", t4 - t3);
    if (params->refine_borders)
        pc__result_add_stage(r, "refine", t4r - t4);
    pc__result_add_stage(r, straight ? "label to bytes" : "label", t5 - t4r);
done:
    free(border.index); /* where a failure came before the apply */
    free(border.cluster);
    pc__hca_refine_end(&rf);
    pc__hca_values_free(&values);
    free(cluster_of_cell);
    free(sums);
    pc__hca_graph_free(&gr);
    pc__hca_grid_free(&g);
    return st;
}

int64_t pc__hca_min_size(const pc_hca_params *p, uint64_t n)
{
    if (p->min_cluster_size >= 0)
        return p->min_cluster_size;
    int64_t m = (int64_t)ceil(0.001 * (double)n);
    return m < 2 ? 2 : m;
}

struct pc_hca_plan {
    pc_hca_params params;
    size_t n, dim;
    pc_dtype dtype;
    pc_backend backend;
    int threads;
    pc__hca_gpu *gpu; /* CUDA: the device buffers kept between runs */
};

void pc_hca_plan_free(pc_hca_plan *plan)
{
    if (!plan)
        return;
    pc__hca_gpu_free(plan->gpu);
    free(plan);
}

pc_backend pc_hca_plan_backend(const pc_hca_plan *plan) { return plan ? plan->backend : PC_BACKEND_AUTO; }

pc_status pc_hca_plan_create(const pc_hca_params *params, size_t n, size_t dim, pc_dtype dtype, pc_hca_plan **plan)
{
    if (!plan)
        return pc__fail(PC_INVALID_ARGUMENT, "plan pointer is NULL");
    *plan = NULL;
    pc_points shape = {NULL, n, dim, 0, dtype};
    pc_status st = pc__begin_plan(params, n, dim, dtype, "an HCA plan");
    if (st != PC_OK || (st = check(&shape, params)) != PC_OK)
        return st;
    pc_hca_plan *p = pc__calloc(1, sizeof *p, "HCA plan");
    if (!p)
        return PC_OUT_OF_MEMORY;
    p->params = *params;
    if (p->params.m == 0)
        p->params.m = pc_hca_auto_m(n, dim);
    p->n = n;
    p->dim = dim;
    p->dtype = dtype;
    /* AUTO's measure of work: the GPU pays from about a megapixel on. */
    double work = n >= ((size_t)1 << 20) ? INFINITY : 0;
    if ((st = pc__choose_backend(params->backend, work, &p->backend)) != PC_OK) {
        free(p);
        return st;
    }
    p->threads = 1;
#ifdef _OPENMP
    if (p->backend == PC_BACKEND_OPENMP)
        p->threads = params->threads > 0 ? params->threads : omp_get_max_threads();
#endif
    if (p->backend == PC_BACKEND_CUDA && (st = pc__hca_gpu_new(&p->params, n, dim, dtype, &p->gpu)) != PC_OK) {
        /* AUTO does not fail for want of a GPU that is busy or full: the CPU does the work. */
        int device_trouble = st == PC_DEVICE_OUT_OF_MEMORY || st == PC_DEVICE_ERROR || st == PC_NO_DEVICE;
        if (params->backend != PC_BACKEND_AUTO || !device_trouble) {
            free(p);
            return st;
        }
        /* pc_last_error() keeps the GPU's reason: the CLI says why it ran on the CPU. */
        p->backend = pc_backend_available(PC_BACKEND_OPENMP) ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
#ifdef _OPENMP
        if (p->backend == PC_BACKEND_OPENMP)
            p->threads = params->threads > 0 ? params->threads : omp_get_max_threads();
#endif
    }
    *plan = p;
    return PC_OK;
}

/* A run's points against the plan's shape. */
static pc_status check_plan_fits(const pc_hca_plan *plan, const pc_points *points)
{
    if (points->dim != plan->dim || points->dtype != plan->dtype)
        return pc__fail(PC_INVALID_ARGUMENT, "the plan was made for rows of %zu values of type %d, got %zu of type %d",
                        plan->dim, (int)plan->dtype, points->dim, (int)points->dtype);
    if (points->n > plan->n)
        return pc__fail(PC_INVALID_ARGUMENT, "the plan was made for up to %zu rows, got %zu", plan->n, points->n);
    return PC_OK;
}

/* The result's labels as bytes (255: no cluster) into `bytes`, then dropped from the result. */
static pc_status labels_as_bytes(pc_result *r, uint8_t *bytes)
{
    pc_status st = pc__hca_bytes_fit(r->k);
    if (st != PC_OK)
        return st;
    pc__hca_narrow_labels(r->labels, r->n, bytes);
    free(r->labels);
    r->labels = NULL;
    return PC_OK;
}

static pc_status run_plan(pc_hca_plan *plan, const pc_points *points, int device_input, int32_t *device_labels,
                          uint8_t *host_bytes, pc_result **result)
{
    /* The GPU counts non-finite values while it reads them; the CPU backends look first. */
    pc_status st = PC_OK;
    if (plan->backend != PC_BACKEND_CUDA && (st = pc_points_check(points)) != PC_OK)
        return st;
    pc_result *r = pc__result_new(points->n, points->dim);
    if (!r)
        return PC_OUT_OF_MEMORY;
    r->backend = plan->backend;
    r->grid_m = plan->params.m;
    int64_t min_size = pc__hca_min_size(&plan->params, points->n);
    /* HCA-MS runs on the plan's backend too (the CUDA backend's in src/hca/cuda_refine.cu). Labels as
     * bytes come straight from the GPU, and from the CPU for packed 3- and 4-band uint8 on the AVX-512
     * path; HCA-MS and the other cases narrow theirs afterwards. */
    int gpu_bytes = host_bytes && plan->backend == PC_BACKEND_CUDA && !plan->params.refine_borders;
    st = plan->backend == PC_BACKEND_CUDA
             ? pc__hca_gpu_run(plan->gpu, points, device_input, device_labels, gpu_bytes ? host_bytes : NULL,
                               &plan->params, min_size, r)
             : run_cpu(points, &plan->params, plan->threads, min_size, host_bytes, r);
    if (st == PC_OK && host_bytes && r->labels) /* made as int32 (HCA-MS, other rows or paths) */
        st = labels_as_bytes(r, host_bytes);
    if (st == PC_OK) /* the last report: a stop asked for now still gives no result */
        st = pc__hca_progress(&plan->params, 1);
    if (st != PC_OK) {
        pc_result_free(r);
        return st;
    }
    *result = r;
    return PC_OK;
}

pc_status pc_hca_plan_run(pc_hca_plan *plan, const pc_points *points, pc_result **result)
{
    if (!plan)
        return pc__fail(PC_INVALID_ARGUMENT, "plan is NULL");
    pc_status st = pc__begin_shape(points, &plan->params, result);
    if (st != PC_OK || (st = check_plan_fits(plan, points)) != PC_OK)
        return st;
    return run_plan(plan, points, 0, NULL, NULL, result);
}

pc_status pc_hca_plan_run_u8(pc_hca_plan *plan, const pc_points *points, uint8_t *labels, pc_result **result)
{
    if (!plan)
        return pc__fail(PC_INVALID_ARGUMENT, "plan is NULL");
    pc_status st = pc__begin_shape(points, &plan->params, result);
    if (st != PC_OK || (st = check_plan_fits(plan, points)) != PC_OK)
        return st;
    if (!labels)
        return pc__fail(PC_INVALID_ARGUMENT, "labels is NULL");
    return run_plan(plan, points, 0, NULL, labels, result);
}

pc_status pc_hca_plan_run_device(pc_hca_plan *plan, const pc_points *points, int32_t *device_labels,
                                 pc_result **result)
{
    if (!plan)
        return pc__fail(PC_INVALID_ARGUMENT, "plan is NULL");
    pc_status st = pc__begin_shape(points, &plan->params, result);
    if (st != PC_OK)
        return st;
    if (plan->backend != PC_BACKEND_CUDA)
        return pc__fail(PC_INVALID_ARGUMENT, "device input needs a CUDA plan, this one runs on %s",
                        pc_backend_name(plan->backend));
    if ((st = check_plan_fits(plan, points)) != PC_OK)
        return st;
    return run_plan(plan, points, 1, device_labels, NULL, result);
}

pc_status pc_hca(const pc_points *points, const pc_hca_params *params, pc_result **result)
{
    pc_status st = pc__begin_shape(points, params, result);
    if (st != PC_OK || (st = check(points, params)) != PC_OK)
        return st;
    pc_hca_plan *plan = NULL;
    if ((st = pc_hca_plan_create(params, points->n, points->dim, points->dtype, &plan)) != PC_OK)
        return st;
    st = run_plan(plan, points, 0, NULL, NULL, result);
    pc_hca_plan_free(plan);
    return st;
}
