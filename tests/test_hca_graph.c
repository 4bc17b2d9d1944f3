/* HCA's component graph found two ways (src/hca/graph.c probing each cell's 3^d - 1 neighbours,
 * src/hca/graph_blocks.c hashing the cells into 2^d shifted blocks): the same links, components,
 * sizes and edges (h bit for bit) in 1 to 8 dimensions, on dense and sparse grids, with 1 and 2
 * threads; and both against a direct reference on the smaller grids: each cell's densest neighbour and
 * each pair of touching components by comparing every two cells' coordinates. */
#include "check.h"

#include "../src/hca/internal_hca.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15u;
static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) * 0x1p-53;
}

/* Clumps of points around random centres, some far apart (many components), some overlapping. */
static float *clumps(size_t n, size_t d, int clumps_count)
{
    float *x = malloc(n * d * sizeof *x), centre[32][PC__HCA_MAX_DIM];
    for (int c = 0; c < clumps_count; c++)
        for (size_t j = 0; j < d; j++)
            centre[c][j] = (float)(100 * uniform());
    for (size_t i = 0; i < n; i++) {
        int c = (int)(uniform() * clumps_count);
        for (size_t j = 0; j < d; j++) {
            double u = uniform() + 1e-12, v = uniform();
            x[i * d + j] = centre[c][j] + (float)(6 * sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
        }
    }
    return x;
}

static int coord(const pc__hca_grid *g, size_t c, size_t j) { return (int)((g->key[c] / g->stride[j]) % (uint64_t)g->m); }

static int touching(const pc__hca_grid *g, size_t a, size_t b)
{
    for (size_t j = 0; j < g->dim; j++)
        if (abs(coord(g, a, j) - coord(g, b, j)) > 1)
            return 0;
    return 1;
}

/* The graph as the definition gives it, every two cells compared. */
static void check_against_definition(const pc__hca_grid *g, const pc__hca_graph *gr, const char *what)
{
    size_t cells = g->cells, bad = 0;
    for (size_t c = 0; c < cells; c++) { /* a cell's component is the one of its densest neighbour */
        size_t best = c;
        for (size_t b = 0; b < cells; b++)
            if (touching(g, c, b) && pc__hca_denser(g, b, best))
                best = b;
        bad += gr->component_of_cell[c] != gr->component_of_cell[best] ||
               (best == c && gr->representative[gr->component_of_cell[c]] != c);
    }
    CHECK_MSG(bad == 0, "%s: %zu cells not in their densest neighbour's component", what, bad);
    size_t k = gr->components;
    int64_t *most = calloc(k * k, sizeof *most); /* the largest min(D) of touching cells, per pair */
    for (size_t a = 0; a < cells; a++)
        for (size_t b = a + 1; b < cells; b++) {
            int32_t ca = gr->component_of_cell[a], cb = gr->component_of_cell[b];
            if (ca == cb || !touching(g, a, b))
                continue;
            int64_t v = g->density[a] < g->density[b] ? g->density[a] : g->density[b];
            size_t at = ca < cb ? (size_t)ca * k + (size_t)cb : (size_t)cb * k + (size_t)ca;
            most[at] = v > most[at] ? v : most[at];
        }
    size_t pairs = 0;
    for (size_t i = 0; i < k * k; i++)
        pairs += most[i] > 0;
    CHECK_MSG(gr->edges == pairs, "%s: %zu edges, the definition has %zu", what, gr->edges, pairs);
    for (size_t e = 0; e < gr->edges; e++) {
        int32_t a = gr->edge_a[e], b = gr->edge_b[e];
        int64_t ya = g->density[gr->representative[a]], yb = g->density[gr->representative[b]];
        double h = 1.0 - (double)most[(size_t)a * k + (size_t)b] / (double)(ya < yb ? ya : yb);
        CHECK_MSG(a < b && gr->edge_h[e] == h, "%s: edge %d-%d h %.17g, the definition's %.17g", what, a, b,
                  gr->edge_h[e], h);
    }
    free(most);
}

static void same_graph(const pc__hca_graph *x, const pc__hca_graph *y, size_t cells, const char *what)
{
    int same = x->components == y->components && x->edges == y->edges &&
               memcmp(x->component_of_cell, y->component_of_cell, cells * sizeof(int32_t)) == 0;
    for (size_t c = 0; same && c < x->components; c++)
        same = x->representative[c] == y->representative[c] && x->size[c] == y->size[c];
    for (size_t e = 0; same && e < x->edges; e++)
        same = x->edge_a[e] == y->edge_a[e] && x->edge_b[e] == y->edge_b[e] &&
               memcmp(&x->edge_h[e], &y->edge_h[e], sizeof(double)) == 0;
    CHECK_MSG(same, "%s: blocks and probing differ (%zu/%zu components, %zu/%zu edges)", what, x->components,
              y->components, x->edges, y->edges);
}

static void one_case(size_t d, int m, size_t n, int clumps_count, int dense)
{
    float *x = clumps(n, d, clumps_count);
    int32_t *scratch = malloc(n * sizeof *scratch);
    pc_points pts = pc_points_f32(x, n, d);
    for (int threads = 1; threads <= 2; threads++) {
        pc__hca_grid g;
        pc_status st = pc__hca_grid_build(&g, &pts, m, dense ? (size_t)1 << 30 : 0, threads, scratch);
        CHECK_MSG(st == PC_OK, "grid: %s", pc_last_error());
        if (st != PC_OK)
            continue;
        char what[128];
        snprintf(what, sizeof what, "d %zu, m %d, %zu cells, %s, %d thread%s", d, m, g.cells,
                 g.dense ? "dense" : "sparse", threads, threads > 1 ? "s" : "");
        pc__hca_graph probe, blocks;
        CHECK(pc__hca_graph_build_by(&g, &probe, PC__HCA_NEIGHBOURS_PROBE) == PC_OK);
        CHECK(pc__hca_graph_build_by(&g, &blocks, PC__HCA_NEIGHBOURS_BLOCKS) == PC_OK);
        same_graph(&blocks, &probe, g.cells, what);
        CHECK_MSG(probe.components > 1 && probe.edges > 0, "%s: a case with touching components (%zu, %zu edges)",
                  what, probe.components, probe.edges);
        if (threads == 1 && g.cells <= 3000)
            check_against_definition(&g, &blocks, what);
        pc__hca_graph_free(&probe);
        pc__hca_graph_free(&blocks);
        pc__hca_grid_free(&g);
    }
    free(scratch);
    free(x);
}

int main(void)
{
    for (size_t d = 1; d <= PC__HCA_MAX_DIM; d++) {
        int m = d <= 2 ? 64 : d <= 4 ? 12 : 6;
        one_case(d, m, 4000, 12, 1);
        one_case(d, m, 4000, 12, 0);
    }
    one_case(8, 16, 60000, 20, 0); /* many cells in 8-D: where blocks are the default */
    one_case(3, 255, 50000, 30, 0);
    return check_report("hca_graph");
}
