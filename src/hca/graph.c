/* The component graph of HCA (ALGORITHMS.md section 3 steps 2-4): every non-empty cell links to the
 * densest cell of its closed neighbourhood (ties to the larger index, so chains strictly increase),
 * components are the cells reaching one representative, and adjacent components are at distance
 * h = 1 - max over touching cells of min(D(a), D(b)) / min(D(Yi), D(Yj)). */
#include "internal_hca.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const pc__hca_grid *g;
    size_t best;
} link_ctx;

static void consider(void *ctx, size_t cell, size_t nb)
{
    (void)cell;
    link_ctx *c = ctx;
    if (pc__hca_denser(c->g, nb, c->best))
        c->best = nb;
}

void pc__hca_touches_add(pc__hca_touches *t, int32_t ca, int32_t cb, int64_t v)
{
    if (t->failed)
        return;
    if (t->count == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        pc__hca_touch *grown = realloc(t->list, cap * sizeof *grown);
        if (!grown) {
            t->failed = 1;
            return;
        }
        t->list = grown;
        t->cap = cap;
    }
    pc__hca_touch e = {ca < cb ? ca : cb, ca < cb ? cb : ca, v};
    t->list[t->count++] = e;
}

int pc__hca_touches_merge(pc__hca_touches *all, const pc__hca_touches *mine)
{
    if (!mine->count)
        return 0;
    pc__hca_touch *grown = realloc(all->list, (all->count + mine->count) * sizeof *grown);
    if (!grown)
        return -1;
    all->list = grown;
    memcpy(all->list + all->count, mine->list, mine->count * sizeof *grown);
    all->count += mine->count;
    return 0;
}

typedef struct {
    const pc__hca_grid *g;
    const int32_t *comp;
    pc__hca_touches touches;
} touch_ctx;

static void record(void *ctx, size_t cell, size_t nb)
{
    touch_ctx *t = ctx;
    int32_t ca = t->comp[cell], cb = t->comp[nb];
    if (ca == cb)
        return;
    int64_t da = t->g->density[cell], db = t->g->density[nb];
    pc__hca_touches_add(&t->touches, ca, cb, da < db ? da : db);
}

/* Probing: each cell looks up its 3^d - 1 neighbours. */
static void links_by_probes(const pc__hca_grid *g, int32_t *link)
{
    int threads = g->threads;
    (void)threads;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 256)
    for (long c = 0; c < (long)g->cells; c++) {
        link_ctx ctx = {g, (size_t)c};
        pc__hca_neighbours(g, (size_t)c, 0, consider, &ctx);
        link[c] = (int32_t)ctx.best;
    }
}

/* Touching pairs across components, each unordered pair of cells once, collected per thread. */
static pc_status touches_by_probes(const pc__hca_grid *g, const int32_t *comp, pc__hca_touches *all)
{
    int threads = g->threads, failed = 0;
    (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1) reduction(| : failed)
    {
        touch_ctx mine = {g, comp, {NULL, 0, 0, 0}};
#pragma omp for schedule(dynamic, 256)
        for (long c = 0; c < (long)g->cells; c++)
            pc__hca_neighbours(g, (size_t)c, 1, record, &mine);
        failed |= mine.touches.failed;
#pragma omp critical(pc__hca_touch)
        failed |= !failed && pc__hca_touches_merge(all, &mine.touches);
        free(mine.touches.list);
    }
    return failed ? PC_OUT_OF_MEMORY : PC_OK;
}

static int by_pair(const void *x, const void *y)
{
    const pc__hca_touch *a = x, *b = y;
    if (a->a != b->a)
        return a->a < b->a ? -1 : 1;
    if (a->b != b->b)
        return a->b < b->b ? -1 : 1;
    return (a->v < b->v) - (a->v > b->v); /* largest v first */
}

void pc__hca_graph_free(pc__hca_graph *gr)
{
    free(gr->component_of_cell);
    free(gr->representative);
    free(gr->size);
    free(gr->edge_a);
    free(gr->edge_b);
    free(gr->edge_h);
    memset(gr, 0, sizeof *gr);
}

pc_status pc__hca_graph_build_by(const pc__hca_grid *g, pc__hca_graph *gr, pc__hca_neighbour_way way)
{
    memset(gr, 0, sizeof *gr);
    size_t cells = g->cells;
    int32_t *link = pc__alloc(cells, sizeof *link, "HCA links");
    gr->component_of_cell = pc__alloc(cells, sizeof(int32_t), "HCA components");
    if (!link || !gr->component_of_cell) {
        free(link);
        pc__hca_graph_free(gr);
        return PC_OUT_OF_MEMORY;
    }
    /* Probing costs 3^d - 1 lookups a cell, blocks 2^d hashings: blocks from 4 dimensions up. */
    int blocks = way == PC__HCA_NEIGHBOURS_BLOCKS || (way == PC__HCA_NEIGHBOURS_AUTO && cells > 1 && g->dim >= 4);
    pc_status st = PC_OK;
    if (blocks)
        st = pc__hca_links_by_blocks(g, link);
    else
        links_by_probes(g, link);
    if (st != PC_OK) {
        free(link);
        pc__hca_graph_free(gr);
        return st;
    }
    /* Representatives link to themselves; they are numbered by increasing linear index. */
    int32_t *comp = gr->component_of_cell;
    size_t k = 0;
    for (size_t c = 0; c < cells; c++)
        comp[c] = link[c] == (int32_t)c ? (int32_t)k++ : -1;
    gr->components = k;
    gr->representative = pc__alloc(k, sizeof *gr->representative, "HCA representatives");
    gr->size = pc__calloc(k, sizeof *gr->size, "HCA component sizes");
    if (!gr->representative || !gr->size) {
        free(link);
        pc__hca_graph_free(gr);
        return PC_OUT_OF_MEMORY;
    }
    for (size_t c = 0; c < cells; c++)
        if (comp[c] >= 0)
            gr->representative[comp[c]] = c;
    /* Follow each chain to a cell already resolved, then write the answer back along the chain
     * (links point to denser cells, so chains end). */
    for (size_t c = 0; c < cells; c++) {
        size_t x = c;
        while (comp[x] < 0)
            x = (size_t)link[x];
        int32_t id = comp[x];
        for (size_t y = c; comp[y] < 0; y = (size_t)link[y])
            comp[y] = id;
    }
    free(link);
    for (size_t c = 0; c < cells; c++)
        gr->size[comp[c]] += g->density[c];

    /* Touching pairs across components, merged and sorted so that the result does not depend on the
     * thread count or the way. */
    pc__hca_touches all = {NULL, 0, 0, 0};
    st = blocks ? pc__hca_touches_by_blocks(g, comp, &all) : touches_by_probes(g, comp, &all);
    if (st != PC_OK) {
        free(all.list);
        pc__hca_graph_free(gr);
        return pc__fail(st, "HCA: cannot hold the touching cells of adjacent components");
    }
    if (all.count) /* none when everything is one component */
        qsort(all.list, all.count, sizeof *all.list, by_pair);
    size_t edges = 0;
    for (size_t i = 0; i < all.count; i++)
        edges += i == 0 || all.list[i].a != all.list[i - 1].a || all.list[i].b != all.list[i - 1].b;
    gr->edge_a = pc__alloc(edges, sizeof *gr->edge_a, "HCA edges");
    gr->edge_b = pc__alloc(edges, sizeof *gr->edge_b, "HCA edges");
    gr->edge_h = pc__alloc(edges, sizeof *gr->edge_h, "HCA edges");
    if (!gr->edge_a || !gr->edge_b || !gr->edge_h) {
        free(all.list);
        pc__hca_graph_free(gr);
        return PC_OUT_OF_MEMORY;
    }
    size_t e = 0;
    for (size_t i = 0; i < all.count; i++) {
        if (i > 0 && all.list[i].a == all.list[i - 1].a && all.list[i].b == all.list[i - 1].b)
            continue; /* the first of a pair holds its largest v */
        int32_t a = all.list[i].a, b = all.list[i].b;
        int64_t ya = g->density[gr->representative[a]], yb = g->density[gr->representative[b]];
        gr->edge_a[e] = a;
        gr->edge_b[e] = b;
        gr->edge_h[e] = 1.0 - (double)all.list[i].v / (double)(ya < yb ? ya : yb);
        e++;
    }
    gr->edges = edges;
    free(all.list);
    return PC_OK;
}

pc_status pc__hca_graph_build(const pc__hca_grid *g, pc__hca_graph *gr)
{
    return pc__hca_graph_build_by(g, gr, PC__HCA_NEIGHBOURS_AUTO);
}
