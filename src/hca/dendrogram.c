/* The HCA dendrogram and its cut (ALGORITHMS.md section 3 steps 5-6): single linkage over the
 * component graph by Kruskal on the sparse edges (the same ultrametric as SLINK on the full matrix),
 * separate parts joined at height 1, written in SciPy's linkage format; then a cut to k clusters or at
 * a height, with the minimum cluster size. */
#include "internal_hca.h"

#include "../core/union_find.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double h;
    int32_t a, b;
} edge;

static int by_height(const void *x, const void *y)
{
    const edge *p = x, *q = y;
    if (p->h != q->h)
        return p->h < q->h ? -1 : 1;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return (p->b > q->b) - (p->b < q->b);
}

pc_status pc__hca_dendrogram(const pc__hca_graph *gr, double **linkage)
{
    size_t n = gr->components;
    *linkage = NULL;
    if (n < 2)
        return PC_OK;
    double *z = pc__alloc(n - 1, 4 * sizeof *z, "dendrogram");
    edge *edges = pc__alloc(gr->edges, sizeof *edges, "dendrogram edges");
    size_t *node = pc__alloc(n, sizeof *node, "dendrogram nodes");
    double *leaves = pc__alloc(n, sizeof *leaves, "dendrogram nodes");
    pc__union_find uf = {0, NULL};
    if (!z || !edges || !node || !leaves || pc__uf_init(&uf, n) != 0) {
        free(z);
        free(edges);
        free(node);
        free(leaves);
        pc__uf_free(&uf);
        return PC_OUT_OF_MEMORY;
    }
    for (size_t e = 0; e < gr->edges; e++) {
        edge x = {gr->edge_h[e], gr->edge_a[e], gr->edge_b[e]};
        edges[e] = x;
    }
    qsort(edges, gr->edges, sizeof *edges, by_height);
    for (size_t i = 0; i < n; i++) {
        node[i] = i; /* the dendrogram node standing for the set whose root is i */
        leaves[i] = 1;
    }
    size_t rows = 0;
    for (size_t e = 0; e < gr->edges && rows < n - 1; e++) {
        size_t ra = pc__uf_find(&uf, (size_t)edges[e].a), rb = pc__uf_find(&uf, (size_t)edges[e].b);
        if (ra == rb)
            continue;
        size_t na = node[ra], nb = node[rb];
        double count = leaves[ra] + leaves[rb];
        double *row = z + 4 * rows;
        row[0] = (double)(na < nb ? na : nb);
        row[1] = (double)(na < nb ? nb : na);
        row[2] = edges[e].h;
        row[3] = count;
        pc__uf_union(&uf, ra, rb);
        size_t r = pc__uf_find(&uf, ra);
        node[r] = n + rows;
        leaves[r] = count;
        rows++;
    }
    /* Parts the edges never joined meet at height 1, in order of their smallest component. */
    size_t first = pc__uf_find(&uf, 0);
    for (size_t i = 1; i < n && rows < n - 1; i++) {
        size_t ri = pc__uf_find(&uf, i);
        if (ri != i)
            continue; /* not the root (smallest member) of its part */
        size_t na = node[first], nb = node[ri];
        double count = leaves[first] + leaves[ri];
        double *row = z + 4 * rows;
        row[0] = (double)(na < nb ? na : nb);
        row[1] = (double)(na < nb ? nb : na);
        row[2] = 1.0;
        row[3] = count;
        pc__uf_union(&uf, first, ri);
        first = pc__uf_find(&uf, first);
        node[first] = n + rows;
        leaves[first] = count;
        rows++;
    }
    free(edges);
    free(node);
    free(leaves);
    pc__uf_free(&uf);
    *linkage = z;
    return PC_OK;
}

/* Points under every node of the dendrogram: leaves are components, node n + r is row r. */
static int64_t *node_sizes(const pc__hca_graph *gr, const double *z)
{
    size_t n = gr->components;
    int64_t *size = pc__alloc(2 * n, sizeof *size, "dendrogram node sizes");
    if (!size)
        return NULL;
    memcpy(size, gr->size, n * sizeof *size);
    for (size_t r = 0; r + 1 < n; r++)
        size[n + r] = size[(size_t)z[4 * r]] + size[(size_t)z[4 * r + 1]];
    return size;
}

/* How many rows of the linkage to apply: for a height cut, those at or below it; for k clusters, the
 * highest level (fewest merges undone from the top) with exactly k clusters of at least min_size
 * points, or, if no level has k, the level with the most such clusters. */
static size_t merges_to_apply(size_t n, const double *z, const int64_t *size, size_t clusters, double threshold,
                              int64_t min_size)
{
    if (clusters == 0) {
        size_t j = 0;
        while (j + 1 < n && z[4 * j + 2] <= threshold)
            j++;
        return j;
    }
    /* Undo merges from the top: undoing row r splits node n + r into its two children. */
    long big = size[2 * n - 2 < n ? 0 : 2 * n - 2] >= min_size;
    if (n == 1)
        big = 1;
    size_t best_j = n - 1;
    long best_big = big;
    if ((size_t)big == clusters)
        return n - 1;
    for (size_t r = n - 1; r-- > 0;) {
        size_t l = (size_t)z[4 * r], rr = (size_t)z[4 * r + 1];
        big += (size[l] >= min_size) + (size[rr] >= min_size) - (size[n + r] >= min_size);
        if ((size_t)big == clusters)
            return r;
        if (big > best_big) {
            best_big = big;
            best_j = r;
        }
    }
    return best_j;
}

typedef struct {
    size_t root;
    int64_t size;
} keep_key;

static int by_size(const void *x, const void *y)
{
    const keep_key *a = x, *b = y;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    return (a->root > b->root) - (a->root < b->root);
}

/* The centre of cell c in data coordinates. */
static void cell_centre(const pc__hca_grid *g, size_t c, double *x)
{
    for (size_t j = 0; j < g->dim; j++) {
        int cj = (int)((g->key[c] / g->stride[j]) % (uint64_t)g->m);
        x[j] = g->hi[j] > g->lo[j] ? g->lo[j] + (cj + 0.5) * (g->hi[j] - g->lo[j]) / g->m : g->lo[j];
    }
}

pc_status pc__hca_cut(const pc__hca_grid *g, const pc__hca_graph *gr, const double *z, size_t clusters,
                      double threshold, int64_t min_size, int noise, int32_t *cluster_of_cell, size_t *k_out)
{
    size_t n = gr->components, dim = g->dim;
    int64_t *size = n > 1 ? node_sizes(gr, z) : NULL;
    pc__union_find uf = {0, NULL};
    keep_key *keys = pc__alloc(n, sizeof *keys, "HCA clusters");
    int32_t *cluster_of_root = pc__alloc(n, sizeof *cluster_of_root, "HCA clusters");
    int64_t *part_size = pc__calloc(n, sizeof *part_size, "HCA clusters");
    double *mean = NULL, *weight = NULL;
    pc_status st = PC_OUT_OF_MEMORY;
    if ((n > 1 && !size) || !keys || !cluster_of_root || !part_size || pc__uf_init(&uf, n) != 0)
        goto done;
    size_t apply = n > 1 ? merges_to_apply(n, z, size, clusters, threshold, min_size) : 0;
    /* Replay the applied merges on the components (leaf ids of a row's children are found through
     * the node -> representative-leaf map built as rows are applied). */
    size_t *leaf_of_node = pc__alloc(2 * n, sizeof *leaf_of_node, "HCA nodes");
    if (!leaf_of_node)
        goto done;
    for (size_t i = 0; i < n; i++)
        leaf_of_node[i] = i;
    for (size_t r = 0; r < apply; r++) {
        size_t a = leaf_of_node[(size_t)z[4 * r]], b = leaf_of_node[(size_t)z[4 * r + 1]];
        pc__uf_union(&uf, a, b);
        leaf_of_node[n + r] = a;
    }
    free(leaf_of_node);
    for (size_t i = 0; i < n; i++)
        part_size[pc__uf_find(&uf, i)] += gr->size[i];
    size_t kept = 0, parts = 0;
    for (size_t i = 0; i < n; i++) {
        if (pc__uf_find(&uf, i) != i)
            continue;
        parts++;
        if (part_size[i] >= min_size) {
            keys[kept].root = i;
            keys[kept].size = part_size[i];
            kept++;
        }
    }
    if (kept == 0) { /* nothing is large enough: keep the largest part rather than nothing */
        for (size_t i = 0; i < n; i++)
            if (pc__uf_find(&uf, i) == i && (kept == 0 || part_size[i] > keys[0].size)) {
                keys[0].root = i;
                keys[0].size = part_size[i];
                kept = 1;
            }
    }
    qsort(keys, kept, sizeof *keys, by_size);
    for (size_t i = 0; i < n; i++)
        cluster_of_root[i] = -1;
    for (size_t c = 0; c < kept; c++)
        cluster_of_root[keys[c].root] = (int32_t)c;
    /* Kept clusters' means (cells weighted by density) decide where small clusters' cells go. */
    mean = pc__calloc(kept * dim, sizeof *mean, "HCA cluster means");
    weight = pc__calloc(kept, sizeof *weight, "HCA cluster means");
    if (!mean || !weight)
        goto done;
    double x[PC__HCA_MAX_DIM];
    for (size_t c = 0; c < g->cells; c++) {
        int32_t cl = cluster_of_root[pc__uf_find(&uf, (size_t)gr->component_of_cell[c])];
        cluster_of_cell[c] = cl;
        if (cl < 0)
            continue;
        cell_centre(g, c, x);
        for (size_t j = 0; j < dim; j++)
            mean[cl * dim + j] += (double)g->density[c] * x[j];
        weight[cl] += (double)g->density[c];
    }
    for (size_t c = 0; c < kept; c++)
        for (size_t j = 0; j < dim; j++)
            mean[c * dim + j] /= weight[c];
    if (!noise && kept < parts) {
        for (size_t c = 0; c < g->cells; c++) {
            if (cluster_of_cell[c] >= 0)
                continue;
            cell_centre(g, c, x);
            double best = INFINITY;
            for (size_t q = 0; q < kept; q++) {
                double d2 = 0;
                for (size_t j = 0; j < dim; j++)
                    d2 += (x[j] - mean[q * dim + j]) * (x[j] - mean[q * dim + j]);
                if (d2 < best) {
                    best = d2;
                    cluster_of_cell[c] = (int32_t)q;
                }
            }
        }
    }
    /* Joined cells change the sizes: number the final clusters by their points, largest first. */
    for (size_t c = 0; c < kept; c++) {
        keys[c].root = c;
        keys[c].size = 0;
    }
    for (size_t c = 0; c < g->cells; c++)
        if (cluster_of_cell[c] >= 0)
            keys[cluster_of_cell[c]].size += g->density[c];
    qsort(keys, kept, sizeof *keys, by_size);
    for (size_t c = 0; c < kept; c++)
        cluster_of_root[keys[c].root] = (int32_t)c; /* old number -> new */
    for (size_t c = 0; c < g->cells; c++)
        if (cluster_of_cell[c] >= 0)
            cluster_of_cell[c] = cluster_of_root[cluster_of_cell[c]];
    *k_out = kept;
    st = PC_OK;
done:
    free(size);
    free(keys);
    free(cluster_of_root);
    free(part_size);
    free(mean);
    free(weight);
    pc__uf_free(&uf);
    return st;
}
