/* HECA (ALGORITHMS.md section 3a): HCA members on grids of several m over one box, prototypes (the
 * reference grid's non-empty cells and their means), the members' join heights averaged over adjacent
 * prototypes, and single linkage over that graph, cut as HCA's. Each member is HCA's own stages 1-5;
 * only the averaging is new, and it touches prototypes and edges, never points. */
#include "../hca/internal_hca.h"
#include "../core/union_find.h"
#include "heca_gpu.h"
#include "join_height.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

void pc_heca_params_init(pc_heca_params *p)
{
    memset(p, 0, sizeof *p);
    p->members = 0;
    p->shifts = 0;
    p->reference = -1;
    pc_hca_params_init(&p->hca);
}

size_t pc_result_member_count(const pc_result *r) { return r ? r->members : 0; }
int pc_result_member_m(const pc_result *r, size_t i) { return r && i < r->members ? r->member_m[i] : 0; }
size_t pc_result_member_components(const pc_result *r, size_t i)
{
    return r && i < r->members ? r->member_components[i] : 0;
}

/* A member: its grid, components and dendrogram, and the dendrogram as a union-by-rank forest whose
 * links carry the height of the merge that made them. Two components join at the largest link height
 * on the path between them: the link made by their merge is on it, every other one is older (lower),
 * and the forest is O(log n) deep. */
typedef struct {
    int m;          /* nominal m (the grid has m + 1 cells per dimension when shifted) */
    int shifted;
    pc__hca_grid g;
    pc__hca_graph gr;
    double *z;
    int32_t *up;    /* components: parent in the forest, or -1 */
    double *up_h;   /* components: the height of the link to the parent */
} member;

static pc_status member_forest(member *mb)
{
    size_t n = mb->gr.components;
    mb->up = pc__alloc(n ? n : 1, sizeof *mb->up, "HECA member forest");
    mb->up_h = pc__alloc(n ? n : 1, sizeof *mb->up_h, "HECA member forest");
    uint8_t *rank = pc__calloc(n ? n : 1, 1, "HECA member forest");
    size_t *leaf = pc__alloc(n ? 2 * n : 1, sizeof *leaf, "HECA member forest");
    if (!mb->up || !mb->up_h || !rank || !leaf) {
        free(rank);
        free(leaf);
        return PC_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < n; i++) {
        mb->up[i] = -1;
        leaf[i] = i;
    }
    for (size_t r = 0; r + 1 < n; r++) {
        size_t a = leaf[(size_t)mb->z[4 * r]], b = leaf[(size_t)mb->z[4 * r + 1]];
        while (mb->up[a] >= 0)
            a = (size_t)mb->up[a];
        while (mb->up[b] >= 0)
            b = (size_t)mb->up[b];
        if (rank[a] < rank[b]) {
            size_t t = a;
            a = b;
            b = t;
        }
        mb->up[b] = (int32_t)a;
        mb->up_h[b] = mb->z[4 * r + 2];
        rank[a] += rank[a] == rank[b];
        leaf[n + r] = a;
    }
    free(rank);
    free(leaf);
    return PC_OK;
}

/* The member's component holding position x: that of the cell holding x, or where that cell is empty,
 * of the largest (density, index) non-empty cell around it (a prototype's points lie within one cell
 * width of its mean when the reference grid is the finest), or of the nearest cell centre. */
static int32_t component_at(const member *mb, const double *x)
{
    const pc__hca_grid *g = &mb->g;
    size_t dim = g->dim;
    int c[PC__HCA_MAX_DIM], off[PC__HCA_MAX_DIM];
    uint64_t key = 0;
    for (size_t j = 0; j < dim; j++) {
        c[j] = pc__hca_cell_coordinate(x[j], g->lo[j], g->hi[j], g->m);
        key += (uint64_t)c[j] * g->stride[j];
        off[j] = -1;
    }
    long cell = pc__hca_find(g, key);
    if (cell >= 0)
        return mb->gr.component_of_cell[cell];
    long best = -1;
    for (;;) {
        int inside = 1;
        uint64_t k = 0;
        for (size_t j = 0; j < dim; j++) {
            int cj = c[j] + off[j];
            inside &= cj >= 0 && cj < g->m;
            k += (uint64_t)(cj < 0 ? 0 : cj) * g->stride[j];
        }
        long b = inside ? pc__hca_find(g, k) : -1;
        if (b >= 0 && (best < 0 || g->density[b] > g->density[best] ||
                       (g->density[b] == g->density[best] && g->key[b] > g->key[best])))
            best = b;
        size_t j = 0;
        while (j < dim && off[j] == 1)
            off[j++] = -1;
        if (j == dim)
            break;
        off[j]++;
    }
    if (best < 0) {
        double best_d2 = INFINITY;
        for (size_t q = 0; q < g->cells; q++) {
            double d2 = 0;
            for (size_t j = 0; j < dim; j++) {
                int cj = (int)((g->key[q] / g->stride[j]) % (uint64_t)g->m);
                double centre = g->hi[j] > g->lo[j] ? g->lo[j] + (cj + 0.5) * (g->hi[j] - g->lo[j]) / g->m : g->lo[j];
                d2 += (centre - x[j]) * (centre - x[j]);
            }
            if (d2 < best_d2) {
                best_d2 = d2;
                best = (long)q;
            }
        }
    }
    return mb->gr.component_of_cell[best];
}

typedef struct {
    int32_t a, b; /* prototypes, a < b */
} pair;

typedef struct {
    pair *list;
    size_t count, cap;
    int failed;
} pair_ctx;

static void add_pair(void *ctx, size_t cell, size_t nb)
{
    pair_ctx *t = ctx;
    if (t->failed)
        return;
    if (t->count == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        pair *grown = realloc(t->list, cap * sizeof *grown);
        if (!grown) {
            t->failed = 1;
            return;
        }
        t->list = grown;
        t->cap = cap;
    }
    pair p = {(int32_t)cell, (int32_t)nb};
    t->list[t->count++] = p;
}

/* The adjacent prototype pairs of the reference grid, each once (a < b): each thread's share of the
 * cells in turn, so the order is fixed for a given team. No order is needed beyond that: every pair's
 * averaged distance is its own, and group_graph's groups and edges do not depend on the pairs' order
 * (it sorts the edges it keeps). Sorting the 550,000 pairs of a 4-band image took 30 ms on 2 cores. */
static pc_status prototype_pairs(const pc__hca_grid *g, pair **out, size_t *count)
{
    int threads = g->threads;
    pair_ctx *part = pc__calloc((size_t)threads, sizeof *part, "HECA adjacent prototypes");
    if (!part)
        return PC_OUT_OF_MEMORY;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        size_t t = 0, team = 1;
#ifdef _OPENMP
        t = (size_t)omp_get_thread_num();
        team = (size_t)omp_get_num_threads();
#endif
        for (size_t c = g->cells * t / team; c < g->cells * (t + 1) / team; c++)
            pc__hca_neighbours(g, c, 1, add_pair, &part[t]);
    }
    size_t total = 0;
    int failed = 0;
    for (int t = 0; t < threads; t++) {
        total += part[t].count;
        failed |= part[t].failed;
    }
    pair *all = failed ? NULL : pc__alloc(total ? total : 1, sizeof *all, "HECA adjacent prototypes");
    size_t at = 0;
    for (int t = 0; t < threads; t++) {
        if (all && part[t].count)
            memcpy(all + at, part[t].list, part[t].count * sizeof *all);
        at += part[t].count;
        free(part[t].list);
    }
    free(part);
    if (!all)
        return pc__fail(PC_OUT_OF_MEMORY, "HECA: cannot hold the adjacent prototypes");
    for (size_t i = 0; i < total; i++)
        if (all[i].a > all[i].b) {
            int32_t t = all[i].a;
            all[i].a = all[i].b;
            all[i].b = t;
        }
    *out = all;
    *count = total;
    return PC_OK;
}

typedef struct {
    int32_t a, b;
    double h;
} group_edge;

static int by_groups(const void *x, const void *y)
{
    const group_edge *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    if (p->b != q->b)
        return p->b < q->b ? -1 : 1;
    return (p->h > q->h) - (p->h < q->h); /* smallest first */
}

typedef struct {
    uint64_t key;
    int32_t root;
} group_order;

static int by_key(const void *x, const void *y)
{
    uint64_t a = ((const group_order *)x)->key, b = ((const group_order *)y)->key;
    return (a > b) - (a < b);
}

/* Groups (adjacent prototypes every member puts in one component), numbered as HCA numbers components (by their densest cell's
 * linear index), and the graph between them with the smallest U of their adjacent pairs. */
static pc_status group_graph(const pc__hca_grid *ref, const pair *pairs, const double *U, const uint8_t *same,
                             size_t count, pc__hca_graph *gr)
{
    size_t cells = ref->cells;
    memset(gr, 0, sizeof *gr);
    pc__union_find uf = {0, NULL};
    size_t *densest = pc__alloc(cells, sizeof *densest, "HECA groups");
    group_order *order = pc__alloc(cells, sizeof *order, "HECA groups");
    int32_t *id = pc__alloc(cells, sizeof *id, "HECA groups");
    group_edge *e = NULL;
    pc_status st = PC_OUT_OF_MEMORY;
    gr->component_of_cell = pc__alloc(cells, sizeof(int32_t), "HECA groups");
    if (!densest || !order || !id || !gr->component_of_cell || pc__uf_init(&uf, cells) != 0)
        goto done;
    for (size_t i = 0; i < count; i++)
        if (same[i])
            pc__uf_union(&uf, (size_t)pairs[i].a, (size_t)pairs[i].b);
    for (size_t c = 0; c < cells; c++)
        densest[c] = c;
    for (size_t c = 0; c < cells; c++) {
        size_t r = pc__uf_find(&uf, c), d = densest[r];
        if (ref->density[c] > ref->density[d] || (ref->density[c] == ref->density[d] && ref->key[c] > ref->key[d]))
            densest[r] = c;
    }
    size_t groups = 0;
    for (size_t c = 0; c < cells; c++)
        if (pc__uf_find(&uf, c) == c) {
            order[groups].key = ref->key[densest[c]];
            order[groups].root = (int32_t)c;
            groups++;
        }
    qsort(order, groups, sizeof *order, by_key);
    gr->components = groups;
    gr->representative = pc__alloc(groups, sizeof *gr->representative, "HECA groups");
    gr->size = pc__calloc(groups, sizeof *gr->size, "HECA groups");
    if (!gr->representative || !gr->size)
        goto done;
    for (size_t q = 0; q < groups; q++) {
        id[order[q].root] = (int32_t)q;
        gr->representative[q] = densest[order[q].root];
    }
    for (size_t c = 0; c < cells; c++) {
        gr->component_of_cell[c] = id[pc__uf_find(&uf, c)];
        gr->size[gr->component_of_cell[c]] += ref->density[c];
    }
    size_t cross = 0;
    e = pc__alloc(count ? count : 1, sizeof *e, "HECA edges");
    if (!e)
        goto done;
    for (size_t i = 0; i < count; i++) {
        int32_t ga = gr->component_of_cell[pairs[i].a], gb = gr->component_of_cell[pairs[i].b];
        if (ga == gb)
            continue;
        group_edge x = {ga < gb ? ga : gb, ga < gb ? gb : ga, U[i]};
        e[cross++] = x;
    }
    if (cross)
        qsort(e, cross, sizeof *e, by_groups);
    size_t edges = 0;
    for (size_t i = 0; i < cross; i++)
        edges += i == 0 || e[i].a != e[i - 1].a || e[i].b != e[i - 1].b;
    gr->edge_a = pc__alloc(edges ? edges : 1, sizeof *gr->edge_a, "HECA edges");
    gr->edge_b = pc__alloc(edges ? edges : 1, sizeof *gr->edge_b, "HECA edges");
    gr->edge_h = pc__alloc(edges ? edges : 1, sizeof *gr->edge_h, "HECA edges");
    if (!gr->edge_a || !gr->edge_b || !gr->edge_h)
        goto done;
    size_t q = 0;
    for (size_t i = 0; i < cross; i++) {
        if (i > 0 && e[i].a == e[i - 1].a && e[i].b == e[i - 1].b)
            continue; /* the first of a pair holds its smallest U */
        gr->edge_a[q] = e[i].a;
        gr->edge_b[q] = e[i].b;
        gr->edge_h[q] = e[i].h;
        q++;
    }
    gr->edges = edges;
    st = PC_OK;
done:
    free(densest);
    free(order);
    free(id);
    free(e);
    pc__uf_free(&uf);
    if (st != PC_OK)
        pc__hca_graph_free(gr);
    return st;
}

/* The members' m: the user's, or the default series. */
static size_t member_list(const pc_heca_params *p, size_t n, size_t dim, int *m)
{
    if (p->members) {
        memcpy(m, p->m, p->members * sizeof *m);
        return p->members;
    }
    int top = pc_hca_auto_m(n, dim);
    for (int i = 0; i < 5; i++) {
        m[i] = (int)lround(top * pow(2.0, (i - 4) / 4.0));
        if (m[i] < 2)
            m[i] = 2;
    }
    return 5;
}

static pc_status check(const pc_points *points, const pc_heca_params *p)
{
    if (points->n > (size_t)INT32_MAX)
        return pc__fail(PC_INVALID_ARGUMENT, "HECA handles up to %d points, got %zu", INT32_MAX, points->n);
    if (p->members > PC_HECA_MAX_MEMBERS)
        return pc__fail(PC_INVALID_ARGUMENT, "HECA takes 1 to %d members, got %zu", PC_HECA_MAX_MEMBERS, p->members);
    for (size_t i = 0; i < p->members; i++)
        if (p->m[i] < 2 || p->m[i] > 65535)
            return pc__fail(PC_INVALID_ARGUMENT, "member %zu: m must be between 2 and 65535, got %d", i, p->m[i]);
    size_t members = p->members ? p->members : 5;
    if (p->reference >= (int)members)
        return pc__fail(PC_INVALID_ARGUMENT, "reference member %d: there are %zu members", p->reference, members);
    pc_hca_params h = p->hca;
    h.m = 2;
    h.refine_borders = 0;
    return pc__hca_check_params(&h, points->dim);
}

/* The prototypes' means: the points' sums per reference cell over their counts. Integer pixels are
 * summed exactly on all cores; float values in point order on one, so that the means (and the member
 * cells they fall in) never depend on the thread count. */
static pc_status prototype_means(const pc__hca_grid *g, const pc_points *points, const int32_t *scratch,
                                 double *mean)
{
    size_t dim = g->dim, cells = g->cells, stride = pc__hca_row_bytes(points);
    const unsigned char *base = points->data;
    int threads = points->dtype == PC_U8 || points->dtype == PC_U16 ? g->threads : 1, failed = 0;
    if (points->dtype == PC_U8 && stride == dim)
        return pc__hca_cell_means_u8(g, points, scratch, threads, mean, NULL);
    (void)threads;
    memset(mean, 0, cells * dim * sizeof *mean);
#pragma omp parallel num_threads(threads) if (threads > 1) reduction(| : failed)
    {
        double *mine = calloc(cells * dim, sizeof *mine);
        failed |= !mine;
#pragma omp for schedule(static)
        for (long i = 0; i < (long)g->n; i++) {
            if (!mine)
                continue;
            double *s = mine + (size_t)pc__hca_cell_of(g, scratch, (size_t)i) * dim;
            const unsigned char *row = base + (size_t)i * stride;
            for (size_t j = 0; j < dim; j++)
                s[j] += pc__hca_value(row, points->dtype, j);
        }
        pc__team_add_ordered(mean, mine, cells * dim);
        free(mine);
    }
    if (failed)
        return pc__fail(PC_OUT_OF_MEMORY, "HECA: cannot allocate per-thread prototype sums");
    for (size_t c = 0; c < cells; c++)
        for (size_t j = 0; j < dim; j++)
            mean[c * dim + j] /= (double)g->density[c];
    return PC_OK;
}

/* The GPU's histogram of a member, as (key, count) pairs in fold order (keys may repeat across folds). */
typedef struct {
    uint64_t *key;
    int64_t *count;
    size_t n, cap;
} hist_sink;

static pc_status sink_reserve(void *ctx, size_t cells)
{
    hist_sink *h = ctx;
    return pc__hca_grow_cells(&h->key, &h->count, &h->cap, h->n + cells)
               ? PC_OK
               : pc__fail(PC_OUT_OF_MEMORY, "HECA: cannot hold a member's histogram of %zu cells", h->n + cells);
}

static void sink_add(void *ctx, uint64_t first, const uint64_t *keys, const int32_t *counts, size_t n)
{
    hist_sink *h = ctx;
    for (size_t i = 0; i < n; i++)
        if (counts[i]) {
            h->key[h->n] = keys ? keys[i] : first + i;
            h->count[h->n++] = counts[i];
        }
}

typedef struct {
    uint64_t key;
    int64_t count;
} key_count;

static int by_cell_key(const void *x, const void *y)
{
    uint64_t a = ((const key_count *)x)->key, b = ((const key_count *)y)->key;
    return (a > b) - (a < b);
}

/* A member's grid over the box lo..hi without its points' cells (those come from counts): the fields the
 * histogram does not give. */
static pc_status member_setup(pc__hca_grid *g, const pc_points *points, int m, const double *lo, const double *hi,
                              int threads, size_t budget, uint64_t *total, int *dense)
{
    memset(g, 0, sizeof *g);
    g->n = points->n;
    g->dim = points->dim;
    g->m = m;
    g->threads = threads;
    memcpy(g->lo, lo, g->dim * sizeof *lo);
    memcpy(g->hi, hi, g->dim * sizeof *hi);
    pc_status st = pc__hca_grid_strides(g, total);
    *dense = st == PC_OK && *total <= (uint64_t)INT32_MAX && *total * sizeof(int32_t) <= budget;
    return st;
}

/* HCA's stages 2-5 on the member's cells (keys increasing and densities set): the dense grid's slots
 * where there is one, the links, components and edges, the dendrogram and its forest. */
static pc_status member_stages(member *mb, uint64_t total, int dense)
{
    pc__hca_grid *g = &mb->g;
    g->dense = dense;
    if (dense) {
        if (!(g->slot = pc__alloc((size_t)total, sizeof *g->slot, "HCA dense grid")))
            return PC_OUT_OF_MEMORY;
        memset(g->slot, 0xff, (size_t)total * sizeof *g->slot);
        for (size_t c = 0; c < g->cells; c++)
            g->slot[g->key[c]] = (int32_t)c;
    }
    pc__hca_grid_deltas(g);
    pc_status st;
    if ((st = pc__hca_graph_build(g, &mb->gr)) != PC_OK || (st = pc__hca_dendrogram(&mb->gr, &mb->z)) != PC_OK)
        return st;
    return member_forest(mb);
}

/* The member's grid from (key, count) pairs (keys may repeat: they are added), then HCA's stages 2-5 on
 * the cells. list is sorted in place. */
static pc_status member_from_counts(member *mb, key_count *list, size_t n, uint64_t total, int dense)
{
    pc__hca_grid *g = &mb->g;
    qsort(list, n, sizeof *list, by_cell_key);
    size_t cells = 0;
    for (size_t i = 0; i < n; i++) {
        if (cells && list[cells - 1].key == list[i].key)
            list[cells - 1].count += list[i].count;
        else
            list[cells++] = list[i];
    }
    g->key = pc__alloc(cells ? cells : 1, sizeof *g->key, "HCA cells");
    g->density = pc__alloc(cells ? cells : 1, sizeof *g->density, "HCA densities");
    if (!g->key || !g->density)
        return PC_OUT_OF_MEMORY;
    for (size_t c = 0; c < cells; c++) {
        g->key[c] = list[c].key;
        g->density[c] = list[c].count;
    }
    g->cells = cells;
    return member_stages(mb, total, dense);
}

/* A member on the GPU: the device counts the points into its grid over the given box (the HCA stream's
 * GPU state), the host builds the grid of non-empty cells from the histogram, then HCA's stages 2-5 on
 * the cells as the CPU path. The state is kept in *gpu when asked (the reference member labels with it). */
static pc_status member_gpu(member *mb, const pc_points *points, const pc_hca_params *hca, int m, const double *lo,
                            const double *hi, int threads, pc__hca_stream_gpu **keep)
{
    uint64_t total;
    int dense;
    pc_status st = member_setup(&mb->g, points, m, lo, hi, threads, hca->memory_budget, &total, &dense);
    if (st != PC_OK)
        return st;
    pc_hca_params q = *hca;
    q.m = m;
    pc__hca_stream_gpu *gpu = NULL;
    hist_sink h = {NULL, NULL, 0, 0};
    key_count *list = NULL;
    pc__hca_fold_sink sink = {sink_reserve, sink_add, &h};
    if ((st = pc__hca_stream_gpu_new(&q, points->dim, dense, &gpu)) != PC_OK ||
        (st = pc__hca_stream_gpu_start(gpu, lo, hi)) != PC_OK || (st = pc__hca_stream_gpu_add(gpu, points, &sink)) != PC_OK ||
        (st = pc__hca_stream_gpu_fold(gpu, &sink)) != PC_OK)
        goto done;
    st = PC_OUT_OF_MEMORY;
    if (!(list = pc__alloc(h.n ? h.n : 1, sizeof *list, "HECA member histogram")))
        goto done;
    for (size_t i = 0; i < h.n; i++) {
        list[i].key = h.key[i];
        list[i].count = h.count[i];
    }
    if ((st = member_from_counts(mb, list, h.n, total, dense)) != PC_OK)
        goto done;
    if (keep) {
        *keep = gpu;
        gpu = NULL;
    }
done:
    pc__hca_stream_gpu_free(gpu);
    free(h.key);
    free(h.count);
    free(list);
    return st;
}

/* Points in GPU memory (pc_heca_device): their state, box, and the device labels that hold each point's
 * reference cell, then its cluster; host_labels: the labels copied to the result's too. */
typedef struct {
    pc__heca_gpu *gpu;
    const double *lo, *hi;
    int32_t *labels;
    int host_labels;
} on_device;

/* Members over points in GPU memory: the device counts them into their dense grids; then each member on a
 * thread and a device lane of its own finds its non-empty cells (their maps stay on the device, for the
 * labels and the prototypes) and runs HCA's stages 2-5, on the device for members of many cells (a dozen
 * round trips, ~0.8 ms, overlapping across lanes), on the host for the others (1,000 cells of 3 bands
 * take less on one core), and makes its dendrogram and forest. PC_HECA_DEVICE_STAGES_FROM (cell-
 * neighbour pairs) moves the line, for measuring it: on the H200 host, RGB HECA took 1.65x HCA from 2^15
 * (and from 0), 1.85-1.90x from 2^18; 4 bands alike within 0.1x. */
#ifndef PC__HECA_DEVICE_STAGES_FROM
#define PC__HECA_DEVICE_STAGES_FROM ((size_t)1 << 15)
#endif
static pc_status members_device(member *mb, size_t L, const on_device *dev, const pc_points *points,
                                const int *cells_a_side, const double (*blos)[PC__HCA_MAX_DIM],
                                const double (*bhis)[PC__HCA_MAX_DIM], int threads, size_t budget)
{
    uint64_t total[PC_HECA_MAX_MEMBERS];
    pc__hca_grid *grids[PC_HECA_MAX_MEMBERS];
    int dense;
    pc_status st;
    for (size_t l = 0; l < L; l++) {
        grids[l] = &mb[l].g;
        if ((st = member_setup(grids[l], points, cells_a_side[l], blos[l], bhis[l], 1, budget, &total[l], &dense)) !=
            PC_OK)
            return st;
        if (!dense)
            return pc__fail(PC_UNSUPPORTED,
                            "pc_heca_device: a member of %d cells a side has %llu cells in %zu dimensions, more than "
                            "memory_budget (%zu MiB) holds as a dense grid; copy the points to the host for pc_heca",
                            cells_a_side[l], (unsigned long long)total[l], points->dim, budget >> 20);
    }
    if ((st = pc__heca_gpu_count(dev->gpu, grids, total, L)) != PC_OK)
        return st;
    const char *env = getenv("PC_HECA_DEVICE_STAGES_FROM");
    size_t from = env ? (size_t)strtoull(env, NULL, 10) : PC__HECA_DEVICE_STAGES_FROM;
    /* The smallest first: the members likeliest to have their stages on the host start first. */
    size_t order[PC_HECA_MAX_MEMBERS];
    for (size_t l = 0; l < L; l++) {
        size_t at = l;
        for (; at > 0 && total[order[at - 1]] > total[l]; at--)
            order[at] = order[at - 1];
        order[at] = l;
    }
    pc_status status[PC_HECA_MAX_MEMBERS];
    char message[PC_HECA_MAX_MEMBERS][512];
    int team = threads < (int)L ? threads : (int)L;
    team = team < PC__HECA_LANES ? team : PC__HECA_LANES;
    (void)team; /* without OpenMP */
    /* Members go to threads, and so to lanes, the same way every run: a lane's buffers, sized by its
     * members, are not made anew (a device-wide wait) when a larger one comes its way. */
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static, 1)
    for (long i = 0; i < (long)L; i++) {
        size_t l = order[i];
        member *m = &mb[l];
        int lane = 0;
#ifdef _OPENMP
        lane = omp_get_thread_num();
#endif
        pc__hca_graph gr;
        memset(&gr, 0, sizeof gr);
        pc_status done = pc__heca_gpu_member(dev->gpu, l, lane, from, &gr);
        m->gr = gr; /* freed with the members, on failure too */
        int on_host = gr.component_of_cell == NULL;
        if (done == PC_OK)
            done = on_host ? member_stages(m, total[l], 1) : pc__hca_dendrogram(&m->gr, &m->z);
        if (done == PC_OK && !on_host)
            done = member_forest(m);
        if ((status[l] = done) != PC_OK)
            snprintf(message[l], sizeof message[l], "%s", pc_last_error());
    }
    for (size_t l = 0; l < L; l++) {
        mb[l].g.threads = threads; /* the reference grid's later passes over cells use all cores */
        if (status[l] != PC_OK)
            return pc__fail(status[l], "%s", message[l]);
    }
    return PC_OK;
}

/* Packed uint8 rows of 1 or 2 bands: the points' distinct values and their counts, from one pass into
 * a table of the 2^(8 dim) values (per-thread copies where they fit the budget, else atomics). Every
 * member's histogram, the prototypes' sums and the clusters' sums then come from the distinct values,
 * exactly (integer counts and sums), and only the labelling passes over the points again. Not for 3
 * bands: a 2^24-entry table is missed in cache at nearly every pixel (5 Mpix RGB on this machine's
 * cores: 0.6 s on 1 thread, 1.7 s on 2, against 0.5 s for the five members' grid passes). */
typedef struct {
    size_t count;
    uint32_t *value; /* v = band 0 << 16 | band 1 << 8 | band 2 (fewer bands: fewer bytes) */
    int64_t *n;
} distinct_values;

static uint32_t packed_value(const uint8_t *row, size_t dim)
{
    uint32_t v = 0;
    for (size_t j = 0; j < dim; j++)
        v = v << 8 | row[j];
    return v;
}

static pc_status count_values(const pc_points *points, int threads, size_t budget, distinct_values *d)
{
    size_t dim = points->dim, V = (size_t)1 << (8 * dim);
    const uint8_t *u8 = points->data;
    memset(d, 0, sizeof *d);
    int32_t *count = pc__calloc(V, sizeof *count, "HECA value table");
    if (!count)
        return PC_OUT_OF_MEMORY;
    int32_t *copies = NULL;
    if (threads > 1 && V * sizeof(int32_t) * (size_t)threads <= budget)
        copies = calloc(V * (size_t)(threads - 1), sizeof *copies);
    (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        int t = 0;
#ifdef _OPENMP
        t = omp_get_thread_num();
#endif
        int32_t *mine = threads == 1 ? count : !copies ? NULL : t == 0 ? count : copies + (size_t)(t - 1) * V;
        uint32_t run_v = 0;
        int32_t run = 0;
#pragma omp for schedule(static)
        for (long i = 0; i < (long)points->n; i++) {
            uint32_t v = packed_value(u8 + (size_t)i * dim, dim);
            if (!mine) {
#pragma omp atomic
                count[v]++;
            } else if (v == run_v) {
                run++;
            } else {
                mine[run_v] += run;
                run_v = v;
                run = 1;
            }
        }
        if (mine)
            mine[run_v] += run;
#pragma omp barrier
        if (copies) {
#pragma omp for schedule(static)
            for (long c = 0; c < (long)V; c++)
                for (int u = 0; u < threads - 1; u++)
                    count[c] += copies[(size_t)u * V + (size_t)c];
        }
    }
    free(copies);
    size_t distinct = 0;
    for (size_t v = 0; v < V; v++)
        distinct += count[v] > 0;
    d->value = pc__alloc(distinct ? distinct : 1, sizeof *d->value, "HECA distinct values");
    d->n = pc__alloc(distinct ? distinct : 1, sizeof *d->n, "HECA distinct values");
    if (!d->value || !d->n) {
        free(count);
        return PC_OUT_OF_MEMORY;
    }
    for (size_t v = 0; v < V; v++)
        if (count[v] > 0) {
            d->value[d->count] = (uint32_t)v;
            d->n[d->count++] = count[v];
        }
    free(count);
    return PC_OK;
}

/* The cell key of packed value v in grid g: per-band tables of the 256 values' cell offsets. */
typedef struct {
    uint64_t offset[3][256];
} value_keys;

static void value_keys_of(const pc__hca_grid *g, value_keys *t)
{
    for (size_t j = 0; j < g->dim; j++)
        for (int v = 0; v < 256; v++)
            t->offset[j][v] = (uint64_t)pc__hca_cell_coordinate((double)v, g->lo[j], g->hi[j], g->m) * g->stride[j];
}

static uint64_t value_key(const value_keys *t, uint32_t v, size_t dim)
{
    uint64_t key = 0;
    for (size_t j = 0; j < dim; j++)
        key += t->offset[j][(v >> (8 * (dim - 1 - j))) & 255];
    return key;
}

/* A member from the distinct values (dense grids only: counts per linear index, then the cells). */
static pc_status member_values(member *mb, const pc_points *points, const distinct_values *d, int m, const double *lo,
                               const double *hi, int threads, size_t budget)
{
    uint64_t total;
    int dense;
    pc_status st = member_setup(&mb->g, points, m, lo, hi, threads, budget, &total, &dense);
    if (st != PC_OK)
        return st;
    if (!dense)
        return pc__fail(PC_INTERNAL_ERROR, "HECA: a member's grid is not dense on the values' path");
    value_keys t;
    value_keys_of(&mb->g, &t);
    int64_t *count = pc__calloc((size_t)total, sizeof *count, "HECA member histogram");
    if (!count)
        return PC_OUT_OF_MEMORY;
    size_t cells = 0;
    for (size_t u = 0; u < d->count; u++) {
        uint64_t key = value_key(&t, d->value[u], points->dim);
        cells += count[key] == 0;
        count[key] += d->n[u];
    }
    key_count *list = pc__alloc(cells ? cells : 1, sizeof *list, "HECA member histogram");
    if (!list) {
        free(count);
        return PC_OUT_OF_MEMORY;
    }
    size_t q = 0;
    for (uint64_t c = 0; c < total; c++)
        if (count[c]) {
            list[q].key = c;
            list[q++].count = count[c];
        }
    free(count);
    st = member_from_counts(mb, list, q, total, dense);
    free(list);
    return st;
}

/* Whether the distinct values' path applies: packed uint8 rows of 1 or 2 bands, enough points for the
 * value table to pay (at least 1/8 of its entries), every member's grid dense within the budget. */
static int use_values(const pc_points *points, const pc_heca_params *p, const int *ms, size_t L)
{
    size_t dim = points->dim, V = (size_t)1 << (8 * (dim < 3 ? dim : 3)), budget = p->hca.memory_budget;
    if (points->dtype != PC_U8 || pc__hca_row_bytes(points) != dim || dim > 2 || V * sizeof(int32_t) > budget ||
        points->n < V / 8)
        return 0;
    for (size_t l = 0; l < L; l++) {
        double total = pow((double)(ms[l] + (p->shifts && l % 2 == 1)), (double)dim);
        if (total > (double)INT32_MAX || total * sizeof(int64_t) > (double)budget)
            return 0;
    }
    return 1;
}

/* gpu: the members counted and the points labelled on the GPU, from host points or, with dev, from the
 * GPU's own. */
static pc_status run(const pc_points *points, const pc_heca_params *p, int threads, int gpu, const on_device *dev,
                     pc_result *r)
{
    size_t n = points->n, dim = points->dim;
    int ms[PC_HECA_MAX_MEMBERS];
    size_t L = member_list(p, n, dim, ms);
    int ref = p->reference;
    if (ref < 0) {
        ref = 0;
        for (size_t l = 1; l < L; l++)
            if (ms[l] > ms[ref])
                ref = (int)l;
    }
    member *mb = pc__calloc(L, sizeof *mb, "HECA members");
    pc__hca_stream_gpu *ref_gpu = NULL;
    double *cell_sums = NULL;
    distinct_values dv;
    memset(&dv, 0, sizeof dv);
    int32_t *cmap = NULL;
    int values = !gpu && use_values(points, p, ms, L);
    int32_t **comp = NULL, *cluster_of_cell = NULL;
    double *mean = NULL, *U = NULL, *sums = NULL;
    uint8_t *same = NULL;
    pair *pairs = NULL;
    size_t npairs = 0, k = 0;
    pc__hca_graph groups;
    memset(&groups, 0, sizeof groups);
    pc_status st = PC_OUT_OF_MEMORY;
    double t0 = pc__now(), t1 = t0, t2 = t0, t3 = t0, t4 = t0;
    if (!dev || dev->host_labels)
        r->labels = pc__alloc_large(n, sizeof *r->labels, "labels");
    if (!mb || (!r->labels && (!dev || dev->host_labels)))
        goto done;
    double lo[PC__HCA_MAX_DIM], hi[PC__HCA_MAX_DIM];
    if (dev) {
        memcpy(lo, dev->lo, dim * sizeof *lo);
        memcpy(hi, dev->hi, dim * sizeof *hi);
    } else if (values) { /* the box from the distinct values: the points' box, without a pass */
        if ((st = count_values(points, threads, p->hca.memory_budget, &dv)) != PC_OK)
            goto done;
        for (size_t j = 0; j < dim; j++) {
            lo[j] = 255;
            hi[j] = 0;
            for (size_t u = 0; u < dv.count; u++) {
                double v = (dv.value[u] >> (8 * (dim - 1 - j))) & 255;
                lo[j] = v < lo[j] ? v : lo[j];
                hi[j] = v > hi[j] ? v : hi[j];
            }
        }
    } else {
        pc__hca_bounding_box(points, threads, lo, hi);
    }
    if ((st = pc__hca_progress(&p->hca, 0.02)) != PC_OK)
        goto done;
    /* Members: HCA's stages 1-5 each; the reference member's cells of the points go to the labels (but
     * see refind below). Their boxes: the points' box, widened by half a cell each side for shifted
     * members. */
    double blos[PC_HECA_MAX_MEMBERS][PC__HCA_MAX_DIM], bhis[PC_HECA_MAX_MEMBERS][PC__HCA_MAX_DIM];
    int cells_a_side[PC_HECA_MAX_MEMBERS];
    pc__hca_grid *grids[PC_HECA_MAX_MEMBERS];
    for (size_t l = 0; l < L; l++) {
        mb[l].m = ms[l];
        mb[l].shifted = p->shifts && (l % 2 == 1);
        cells_a_side[l] = ms[l] + mb[l].shifted;
        grids[l] = &mb[l].g;
        for (size_t j = 0; j < dim; j++) {
            double half = mb[l].shifted ? 0.5 * (hi[j] - lo[j]) / ms[l] : 0;
            blos[l][j] = lo[j] - half;
            bhis[l][j] = hi[j] + half;
        }
    }
    /* Packed 3- and 4-band uint8 pixels on the AVX-512 path: the reference member's cells of the points
     * are found again from the pixels where they are needed (the prototypes' sums, the labels) instead
     * of written by its counting pass and read back twice, and it is counted with the others. */
    int refind = !gpu && !values && pc__hca_cells_found_again(points, cells_a_side[ref], p->hca.memory_budget);
    /* Integer rows on the CPU: every member's cells counted in one pass over the points (not where
     * AVX-512 counts packed 3- and 4-band pixels one member at a time: grid_many.c says no). */
    int counted = 0;
    if (!gpu && !values) {
        struct pc__hca_tick tick = {&p->hca, 0.02, 0.02 + 0.58 / (double)L, 0, 0};
        pc__hca_grid_tick = p->hca.progress ? &tick : NULL;
        st = pc__hca_grids_count(grids, L, points, cells_a_side, (const double(*)[PC__HCA_MAX_DIM])blos,
                                 (const double(*)[PC__HCA_MAX_DIM])bhis, p->hca.memory_budget, threads, (size_t)ref,
                                 r->labels);
        pc__hca_grid_tick = NULL;
        for (size_t l = 0; l < L; l++)
            mb[l].g.tick = NULL; /* the pass's tick lives in this block */
        if (st == PC_OK && (st = pc__hca_tick_status(p->hca.progress ? &tick : NULL)) != PC_OK)
            goto done;
        if (st != PC_OK && st != PC_UNSUPPORTED)
            goto done;
        counted = st == PC_OK;
    }
    /* Packed 3- and 4-band uint8 pixels with AVX-512: the members counted several to a pass through the
     * common refinement of their grids (grid_refined.c); the passes' progress spans the first member's
     * share (if it is counted there). Without refind the reference member makes its own pass, which
     * gives the points' cells. */
    int refined[PC_HECA_MAX_MEMBERS] = {0};
    if (!gpu && !values && !counted) {
        struct pc__hca_tick tick = {&p->hca, 0.02, 0.02 + 0.58 / (double)L, 0, 0};
        st = pc__hca_grids_count_refined(grids, L, points, cells_a_side, (const double(*)[PC__HCA_MAX_DIM])blos,
                                         (const double(*)[PC__HCA_MAX_DIM])bhis, p->hca.memory_budget, threads,
                                         refind ? L : (size_t)ref, p->hca.progress ? &tick : NULL, refined);
        if (st == PC_OK && (st = pc__hca_tick_status(p->hca.progress ? &tick : NULL)) != PC_OK)
            goto done;
        if (st != PC_OK && st != PC_UNSUPPORTED)
            goto done;
    }
    if (dev && ((st = members_device(mb, L, dev, points, cells_a_side, (const double(*)[PC__HCA_MAX_DIM])blos,
                                     (const double(*)[PC__HCA_MAX_DIM])bhis, threads, p->hca.memory_budget)) != PC_OK ||
                (st = pc__hca_progress(&p->hca, 0.6)) != PC_OK))
        goto done;
    for (size_t l = 0; l < L && !dev; l++) {
        const double *blo = blos[l], *bhi = bhis[l];
        if (gpu) {
            if ((st = member_gpu(&mb[l], points, &p->hca, cells_a_side[l], blo, bhi, threads,
                                 (int)l == ref ? &ref_gpu : NULL)) != PC_OK ||
                (st = pc__hca_progress(&p->hca, 0.02 + 0.58 * (double)(l + 1) / (double)L)) != PC_OK)
                goto done;
            continue;
        }
        if (values) {
            if ((st = member_values(&mb[l], points, &dv, cells_a_side[l], blo, bhi, threads,
                                    p->hca.memory_budget)) != PC_OK ||
                (st = pc__hca_progress(&p->hca, 0.02 + 0.58 * (double)(l + 1) / (double)L)) != PC_OK)
                goto done;
            continue;
        }
        if (!counted && !refined[l]) {
            /* Only the reference member's cells of the points are used (for the labels): the others count. */
            int32_t *into = (int)l == ref && !refind ? r->labels : NULL;
            /* The member's counting pass reports its progress and stops when cancelled. */
            struct pc__hca_tick tick = {&p->hca, 0.02 + 0.58 * (double)l / (double)L,
                                        0.02 + 0.58 * (double)(l + 1) / (double)L, 0, 0};
            pc__hca_grid_tick = p->hca.progress ? &tick : NULL;
            st = pc__hca_grid_build_box(&mb[l].g, points, cells_a_side[l], blo, bhi, p->hca.memory_budget, threads,
                                        into, 0);
            pc__hca_grid_tick = NULL;
            mb[l].g.tick = NULL;
            if (st != PC_OK || (st = pc__hca_tick_status(p->hca.progress ? &tick : NULL)) != PC_OK)
                goto done;
        }
        if ((st = pc__hca_graph_build(&mb[l].g, &mb[l].gr)) != PC_OK ||
            (st = pc__hca_dendrogram(&mb[l].gr, &mb[l].z)) != PC_OK || (st = member_forest(&mb[l])) != PC_OK)
            goto done;
        if ((st = pc__hca_progress(&p->hca, 0.02 + 0.58 * (double)(l + 1) / (double)L)) != PC_OK)
            goto done;
    }
    t1 = pc__now();
    /* Prototypes and their component in every member. */
    const pc__hca_grid *g = &mb[ref].g;
    size_t P = g->cells;
    st = PC_OUT_OF_MEMORY;
    mean = pc__alloc(P * dim, sizeof *mean, "HECA prototypes");
    comp = pc__calloc(L, sizeof *comp, "HECA prototypes");
    if (!mean || !comp)
        goto done;
    if (gpu) {
        /* The device labels every point with its reference cell and sums the cells (host points: the
         * stream's label pass with the identity map). */
        if (!(cell_sums = pc__calloc(P * (dim + 1), sizeof *cell_sums, "HECA prototypes")))
            goto done;
        if (dev) {
            st = pc__heca_gpu_cells(dev->gpu, g, dev->labels, cell_sums);
        } else {
            int32_t *identity = pc__alloc(P, sizeof *identity, "HECA prototypes");
            if (!identity)
                goto done;
            for (size_t c = 0; c < P; c++)
                identity[c] = (int32_t)c;
            st = pc__hca_stream_gpu_label(ref_gpu, points, P, g->key, identity, P, r->labels, 0, cell_sums);
            free(identity);
        }
        if (st != PC_OK)
            goto done;
        for (size_t c = 0; c < P; c++)
            for (size_t j = 0; j < dim; j++)
                mean[c * dim + j] = cell_sums[c * (dim + 1) + j] / cell_sums[c * (dim + 1) + dim];
    } else if (values) { /* exact integer sums over the distinct values */
        value_keys t;
        value_keys_of(g, &t);
        memset(mean, 0, P * dim * sizeof *mean);
        for (size_t u = 0; u < dv.count; u++) {
            int32_t c = g->slot[value_key(&t, dv.value[u], dim)];
            for (size_t j = 0; j < dim; j++)
                mean[(size_t)c * dim + j] += (double)dv.n[u] * ((dv.value[u] >> (8 * (dim - 1 - j))) & 255);
        }
        for (size_t c = 0; c < P; c++)
            for (size_t j = 0; j < dim; j++)
                mean[c * dim + j] /= (double)g->density[c];
    } else if ((st = prototype_means(g, points, refind ? NULL : r->labels, mean)) != PC_OK)
        goto done;
    if (dev) {
        /* The prototypes' components, averaged distances and groups on the device. */
        pc__heca_member model[PC_HECA_MAX_MEMBERS];
        const pc__hca_grid *member_grid[PC_HECA_MAX_MEMBERS];
        for (size_t l = 0; l < L; l++) {
            pc__heca_member x = {mb[l].gr.components, mb[l].gr.component_of_cell, mb[l].up, mb[l].up_h};
            model[l] = x;
            member_grid[l] = &mb[l].g;
        }
        if ((st = pc__heca_gpu_groups(dev->gpu, member_grid, L, (size_t)ref, mean, model, &groups)) != PC_OK)
            goto done;
        t2 = pc__now();
        if ((st = pc__hca_progress(&p->hca, 0.7)) != PC_OK)
            goto done;
    } else {
        st = PC_OUT_OF_MEMORY;
        for (size_t l = 0; l < L; l++) {
            if (!(comp[l] = pc__alloc(P, sizeof **comp, "HECA prototypes")))
                goto done;
            if ((int)l == ref) {
                memcpy(comp[l], mb[l].gr.component_of_cell, P * sizeof **comp);
                continue;
            }
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
            for (long q = 0; q < (long)P; q++)
                comp[l][q] = component_at(&mb[l], mean + (size_t)q * dim);
        }
        /* The averaged distance of adjacent prototypes. */
        if ((st = prototype_pairs(g, &pairs, &npairs)) != PC_OK)
            goto done;
        st = PC_OUT_OF_MEMORY;
        if (!(U = pc__alloc(npairs ? npairs : 1, sizeof *U, "HECA distances")) ||
            !(same = pc__alloc(npairs ? npairs : 1, 1, "HECA distances")))
            goto done;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
        for (long i = 0; i < (long)npairs; i++) {
            double s = 0;
            int one = 1;
            for (size_t l = 0; l < L; l++) {
                int32_t a = comp[l][pairs[i].a], b = comp[l][pairs[i].b];
                one &= a == b;
                s += pc__heca_join_height(mb[l].up, mb[l].up_h, a, b);
            }
            U[i] = s / (double)L;
            same[i] = (uint8_t)one;
        }
        t2 = pc__now();
        if ((st = pc__hca_progress(&p->hca, 0.7)) != PC_OK ||
            (st = group_graph(g, pairs, U, same, npairs, &groups)) != PC_OK)
            goto done;
    }
    if (L == 1 && groups.components == mb[0].gr.components) {
        /* One member: its groups are its components, numbered alike, and single linkage over U is its
         * own dendrogram's ultrametric. Its own edges (HCA's h) give the merges in HCA's order where
         * heights tie, so that a cut to k clusters is HCA's too. */
        size_t e = mb[0].gr.edges;
        int32_t *a = pc__alloc(e ? e : 1, sizeof *a, "HECA edges"), *b = pc__alloc(e ? e : 1, sizeof *b, "HECA edges");
        double *h = pc__alloc(e ? e : 1, sizeof *h, "HECA edges");
        if (!a || !b || !h) {
            free(a);
            free(b);
            free(h);
            st = PC_OUT_OF_MEMORY;
            goto done;
        }
        memcpy(a, mb[0].gr.edge_a, e * sizeof *a);
        memcpy(b, mb[0].gr.edge_b, e * sizeof *b);
        memcpy(h, mb[0].gr.edge_h, e * sizeof *h);
        free(groups.edge_a);
        free(groups.edge_b);
        free(groups.edge_h);
        groups.edge_a = a;
        groups.edge_b = b;
        groups.edge_h = h;
        groups.edges = e;
    }
    if ((st = pc__hca_dendrogram(&groups, &r->dendrogram)) != PC_OK ||
        (st = pc__hca_progress(&p->hca, 0.75)) != PC_OK)
        goto done;
    t3 = pc__now();
    st = PC_OUT_OF_MEMORY;
    if (!(cluster_of_cell = pc__alloc(P, sizeof *cluster_of_cell, "HECA cell clusters")))
        goto done;
    if ((st = pc__hca_cut(g, &groups, r->dendrogram, p->hca.clusters, p->hca.threshold, pc__hca_min_size(&p->hca, n),
                          p->hca.noise, cluster_of_cell, &k)) != PC_OK ||
        (st = pc__hca_progress(&p->hca, 0.8)) != PC_OK)
        goto done;
    st = PC_OUT_OF_MEMORY;
    if (!(sums = pc__calloc(k * (dim + 1), sizeof *sums, "cluster sums")))
        goto done;
    if (gpu) {
        /* labels hold the points' reference cells: their clusters (on the device, or on all cores); the
         * clusters' sums from the cells' (in cell order). */
        if (dev) {
            if ((st = pc__heca_gpu_clusters(dev->gpu, dev->labels, cluster_of_cell, P, r->labels)) != PC_OK)
                goto done;
        } else {
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
            for (long i = 0; i < (long)n; i++)
                r->labels[i] = cluster_of_cell[r->labels[i]];
        }
        for (size_t c = 0; c < P; c++)
            if (cluster_of_cell[c] >= 0)
                for (size_t j = 0; j <= dim; j++)
                    sums[(size_t)cluster_of_cell[c] * (dim + 1) + j] += cell_sums[c * (dim + 1) + j];
    } else if (values) {
        /* Every linear index's cluster, then one pass over the points; the sums from the values. */
        const pc__hca_grid *rg = &mb[ref].g;
        size_t total = (size_t)(rg->stride[0] * (uint64_t)rg->m);
        value_keys t;
        value_keys_of(rg, &t);
        st = PC_OUT_OF_MEMORY;
        if (!(cmap = pc__alloc(total, sizeof *cmap, "HECA cluster map")))
            goto done;
        for (size_t c = 0; c < total; c++)
            cmap[c] = rg->slot[c] >= 0 ? cluster_of_cell[rg->slot[c]] : -1;
        const uint8_t *u8 = points->data;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
        for (long i = 0; i < (long)n; i++) {
            const uint8_t *row = u8 + (size_t)i * dim;
            uint64_t key = 0;
            for (size_t j = 0; j < dim; j++)
                key += t.offset[j][row[j]];
            r->labels[i] = cmap[key];
        }
        for (size_t u = 0; u < dv.count; u++) {
            int32_t c = cmap[value_key(&t, dv.value[u], dim)];
            if (c < 0)
                continue;
            for (size_t j = 0; j < dim; j++)
                sums[(size_t)c * (dim + 1) + j] += (double)dv.n[u] * ((dv.value[u] >> (8 * (dim - 1 - j))) & 255);
            sums[(size_t)c * (dim + 1) + dim] += (double)dv.n[u];
        }
    } else {
        /* The labelling pass reports its progress and stops when cancelled. */
        struct pc__hca_tick tick = {&p->hca, 0.8, 1, 0, 0};
        mb[ref].g.tick = p->hca.progress ? &tick : NULL;
        st = pc__hca_label_points(&mb[ref].g, points, cluster_of_cell, k, refind, r->labels, NULL, sums, NULL);
        mb[ref].g.tick = NULL;
        if (st != PC_OK)
            goto done;
    }
    if ((st = pc__hca_finish(r, &mb[ref].g, &groups, sums, k)) != PC_OK)
        goto done;
    t4 = pc__now();
    r->grid_m = mb[ref].m;
    r->members = L;
    for (size_t l = 0; l < L; l++) {
        r->member_m[l] = mb[l].m;
        r->member_components[l] = mb[l].gr.components;
    }
    pc__result_add_stage(r, "members", t1 - t0);
    pc__result_add_stage(r, "averaged distances", t2 - t1);
    pc__result_add_stage(r, "dendrogram", t3 - t2);
    pc__result_add_stage(r, "cut and label", t4 - t3);
    st = PC_OK;
done:
    if (mb)
        for (size_t l = 0; l < L; l++) {
            pc__hca_grid_free(&mb[l].g);
            pc__hca_graph_free(&mb[l].gr);
            free(mb[l].z);
            free(mb[l].up);
            free(mb[l].up_h);
            if (comp)
                free(comp[l]);
        }
    free(mb);
    pc__hca_stream_gpu_free(ref_gpu);
    free(cell_sums);
    free(dv.value);
    free(dv.n);
    free(cmap);
    free(comp);
    free(mean);
    free(U);
    free(same);
    free(pairs);
    free(sums);
    free(cluster_of_cell);
    pc__hca_graph_free(&groups);
    return st;
}

pc_status pc_heca(const pc_points *points, const pc_heca_params *params, pc_result **result)
{
    pc_status st = pc__begin(points, params, result);
    if (st != PC_OK || (st = check(points, params)) != PC_OK)
        return st;
    pc_backend backend;
    double work = points->n >= ((size_t)1 << 20) ? INFINITY : 0;
    if ((st = pc__choose_backend(params->hca.backend, work, &backend)) != PC_OK)
        return st;
    int threads = 1;
#ifdef _OPENMP
    if (backend == PC_BACKEND_OPENMP || backend == PC_BACKEND_CUDA) /* CUDA: the cells' work on all cores */
        threads = params->hca.threads > 0 ? params->hca.threads : omp_get_max_threads();
#endif
    pc_result *r = pc__result_new(points->n, points->dim);
    if (!r)
        return PC_OUT_OF_MEMORY;
    r->backend = backend;
    st = run(points, params, threads, backend == PC_BACKEND_CUDA, NULL, r);
    if (st != PC_OK && backend == PC_BACKEND_CUDA && params->hca.backend == PC_BACKEND_AUTO &&
        (st == PC_DEVICE_OUT_OF_MEMORY || st == PC_DEVICE_ERROR || st == PC_NO_DEVICE)) {
        /* AUTO does not fail for want of a GPU that is busy or full: the CPU does the work. */
        pc__clear_error();
        pc_result_free(r);
        if (!(r = pc__result_new(points->n, points->dim)))
            return PC_OUT_OF_MEMORY;
        r->backend = PC_BACKEND_OPENMP;
        st = run(points, params, threads, 0, NULL, r);
    }
    if (st == PC_OK) /* the last report: a stop asked for now still gives no result */
        st = pc__hca_progress(&params->hca, 1);
    if (st != PC_OK) {
        pc_result_free(r);
        return st;
    }
    *result = r;
    return PC_OK;
}

/* The params of HECA on points in GPU memory: check's, and the CUDA backend. */
static pc_status check_device(const pc_points *points, const pc_heca_params *params)
{
    pc_status st = check(points, params);
    if (st == PC_OK && params->hca.backend != PC_BACKEND_AUTO && params->hca.backend != PC_BACKEND_CUDA)
        st = pc__fail(PC_INVALID_ARGUMENT, "HECA on points in GPU memory needs the CUDA backend, not %s",
                      pc_backend_name(params->hca.backend));
    return st;
}

/* A run over points in GPU memory with a GPU state (pc_heca_device's own, or a plan's). */
static pc_status run_device(pc__heca_gpu *gpu, const pc_points *points, const pc_heca_params *params,
                            int32_t *device_labels, pc_result **result)
{
    int threads = 1;
#ifdef _OPENMP
    threads = params->hca.threads > 0 ? params->hca.threads : omp_get_max_threads(); /* the cells' work */
#endif
    double lo[PC__HCA_MAX_DIM], hi[PC__HCA_MAX_DIM];
    pc_status st = pc__heca_gpu_start(gpu, points, device_labels, lo, hi);
    if (st != PC_OK)
        return st;
    on_device dev = {gpu, lo, hi, device_labels, device_labels == NULL};
    pc_result *r = NULL;
    if (!dev.labels)
        st = pc__heca_gpu_scratch_labels(gpu, &dev.labels);
    if (st == PC_OK && !(r = pc__result_new(points->n, points->dim)))
        st = PC_OUT_OF_MEMORY;
    if (st == PC_OK) {
        r->backend = PC_BACKEND_CUDA;
        st = run(points, params, threads, 1, &dev, r);
    }
    if (st == PC_OK)
        st = pc__hca_progress(&params->hca, 1);
    if (st != PC_OK) {
        pc_result_free(r);
        return st;
    }
    *result = r;
    return PC_OK;
}

pc_status pc_heca_device(const pc_points *points, const pc_heca_params *params, int32_t *device_labels,
                         pc_result **result)
{
    pc_status st = pc__begin_shape(points, params, result);
    if (st != PC_OK || (st = check_device(points, params)) != PC_OK)
        return st;
    pc__heca_gpu *gpu = NULL;
    if ((st = pc__heca_gpu_new(points->dim, points->dtype, &gpu)) == PC_OK)
        st = run_device(gpu, points, params, device_labels, result);
    pc__heca_gpu_free(gpu);
    return st;
}

struct pc_heca_plan {
    pc_heca_params params;
    size_t n, dim;
    pc_dtype dtype;
    pc__heca_gpu *gpu;
};

pc_status pc_heca_plan_create(const pc_heca_params *params, size_t n, size_t dim, pc_dtype dtype, pc_heca_plan **plan)
{
    if (!plan)
        return pc__fail(PC_INVALID_ARGUMENT, "plan pointer is NULL");
    *plan = NULL;
    pc_points shape = {NULL, n, dim, 0, dtype};
    pc_status st = pc__begin_plan(params, n, dim, dtype, "a HECA plan");
    if (st != PC_OK || (st = check_device(&shape, params)) != PC_OK)
        return st;
    pc_heca_plan *p = pc__calloc(1, sizeof *p, "HECA plan");
    if (!p)
        return PC_OUT_OF_MEMORY;
    p->params = *params;
    p->n = n;
    p->dim = dim;
    p->dtype = dtype;
    if ((st = pc__heca_gpu_new(dim, dtype, &p->gpu)) != PC_OK) {
        free(p);
        return st;
    }
    *plan = p;
    return PC_OK;
}

void pc_heca_plan_free(pc_heca_plan *plan)
{
    if (!plan)
        return;
    pc__heca_gpu_free(plan->gpu);
    free(plan);
}

pc_status pc_heca_plan_run_device(pc_heca_plan *plan, const pc_points *points, int32_t *device_labels,
                                  pc_result **result)
{
    if (!plan)
        return pc__fail(PC_INVALID_ARGUMENT, "plan is NULL");
    pc_status st = pc__begin_shape(points, &plan->params, result);
    if (st != PC_OK || (st = check_device(points, &plan->params)) != PC_OK)
        return st;
    if (points->dim != plan->dim || points->dtype != plan->dtype)
        return pc__fail(PC_INVALID_ARGUMENT, "the plan was made for rows of %zu values of type %d, got %zu of type %d",
                        plan->dim, (int)plan->dtype, points->dim, (int)points->dtype);
    if (points->n > plan->n)
        return pc__fail(PC_INVALID_ARGUMENT, "the plan was made for up to %zu rows, got %zu", plan->n, points->n);
    return run_device(plan->gpu, points, &plan->params, device_labels, result);
}
