/* Merging converged modes into clusters: connected components of "closer than merge_radius",
 * found with a grid hash and union-find so that the result does not depend on point order. */
#include "internal_ms.h"

#include "../core/grid.h"
#include "../core/union_find.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Stops as soon as the partial sum exceeds r2 (its terms are >= 0, so it only grows): unconverged
 * modes in many dimensions are compared pairwise, and most pairs are decided in a few coordinates. */
_Thread_local size_t pc__merge_distances;

static int within(const float *a, const float *b, size_t dim, double r2)
{
    pc__merge_distances++;
    double d2 = 0;
    for (size_t k = 0; k < dim; k++) {
        double d = (double)a[k] - b[k];
        d2 += d * d;
        if (d2 > r2)
            return 0;
    }
    return 1;
}

/* 1 when no point of cell a can be within sqrt(r2) of a point of cell b: the gap between the cells'
 * boxes (whole cells apart in a coordinate leave a gap of one side less than their difference) is
 * already longer. Gaps are shrunk by 1e-6 of a side (and of themselves) so that the rounding of a
 * point's cell never rules out a close pair. */
static int cells_apart(const pc__grid *g, size_t a, size_t b, double r2)
{
    double gap2 = 0;
    for (size_t k = 0; k < g->dim; k++) {
        long long d = llabs((long long)g->coords[a * g->dim + k] - g->coords[b * g->dim + k]);
        if (d > 1) {
            double gap = ((double)(d - 1) - 1e-6) * g->side;
            gap2 += gap * gap;
            if (gap2 > r2)
                return 1;
        }
    }
    return 0;
}

/* 1 when point x is farther than sqrt(r2) from every position of cell c's box (with the same margin). */
static int far_from_cell(const pc__grid *g, const float *x, size_t c, double r2)
{
    double gap2 = 0;
    for (size_t k = 0; k < g->dim; k++) {
        double lo = g->origin[k] + (double)g->coords[c * g->dim + k] * g->side, hi = lo + g->side;
        double v = x[k], gap = v < lo ? lo - v : v > hi ? v - hi : 0;
        gap = gap * (1 - 1e-6) - 1e-6 * g->side;
        if (gap <= 0)
            continue;
        gap2 += gap * gap;
        if (gap2 > r2)
            return 1;
    }
    return 0;
}

/* Joins the cells of one grid: a cell's side is merge_radius / sqrt(dim), so all points of a cell are
 * within merge_radius of each other and join at once; neighbouring cells are compared point by point
 * only until one close pair joins them. */
static pc_status join_by_grid(const float *modes, size_t n, size_t dim, double radius, int threads, pc__union_find *uf)
{
    pc__grid g;
    pc_status st = pc__grid_build(&g, modes, n, dim, radius / sqrt((double)dim), threads);
    if (st != PC_OK)
        return st;
    int reach = (int)ceil(sqrt((double)dim));
    size_t *near = pc__alloc(pc__grid_neighbour_capacity(&g, reach), sizeof *near, "merge neighbours");
    int32_t *scratch = pc__alloc(dim, sizeof *scratch, "merge scratch");
    if (!near || !scratch) {
        st = PC_OUT_OF_MEMORY;
        goto done;
    }
    for (size_t c = 0; c < g.cells; c++)
        for (size_t i = g.start[c] + 1; i < g.start[c + 1]; i++)
            pc__uf_union(uf, g.order[g.start[c]], g.order[i]);
    double r2 = radius * radius;
    /* In many dimensions every cell is within reach of every other (pc__grid_neighbours would scan
     * them all, testing each one's coordinates): the pairs of cells are then taken directly. Either
     * way two cells are compared point by point only when their boxes come within the radius, and a
     * point only when it comes within the radius of the other cell's box: converged modes crowd into
     * few cells, and two crowds of 10^5 modes each in cells just out of reach of each other would
     * otherwise cost 10^10 distances. */
    int every_cell = pc__grid_neighbour_capacity(&g, reach) >= g.cells;
    for (size_t c = 0; c < g.cells; c++) {
        size_t count = every_cell ? g.cells : pc__grid_neighbours(&g, g.coords + c * dim, reach, scratch, near);
        for (size_t t = 0; t < count; t++) {
            size_t other = every_cell ? t : near[t];
            if (other <= c)
                continue;
            if (pc__uf_find(uf, g.order[g.start[c]]) == pc__uf_find(uf, g.order[g.start[other]]))
                continue;
            if (cells_apart(&g, c, other, r2))
                continue;
            int joined = 0;
            for (size_t i = g.start[c]; i < g.start[c + 1] && !joined; i++) {
                if (far_from_cell(&g, modes + g.order[i] * dim, other, r2))
                    continue;
                for (size_t j = g.start[other]; j < g.start[other + 1] && !joined; j++)
                    if (within(modes + g.order[i] * dim, modes + g.order[j] * dim, dim, r2))
                        joined = pc__uf_union(uf, g.order[i], g.order[j]);
            }
        }
    }
done:
    free(near);
    free(scratch);
    pc__grid_free(&g);
    return st;
}

/* Fallback when no grid fits (data spanning more cells than 32-bit coordinates hold), and the way for
 * at most PC__MERGE_PAIRWISE_MAX modes: all pairs, skipping pairs already joined. */
#define PC__MERGE_PAIRWISE_MAX 32
static void join_all_pairs(const float *modes, size_t n, size_t dim, double radius, pc__union_find *uf)
{
    double r2 = radius * radius;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (pc__uf_find(uf, i) != pc__uf_find(uf, j) && within(modes + i * dim, modes + j * dim, dim, r2))
                pc__uf_union(uf, i, j);
}

typedef struct {
    const float *row;
    size_t dim, index;
} mode_ref;

static int by_row(const void *a, const void *b)
{
    const mode_ref *x = a, *y = b;
    for (size_t k = 0; k < x->dim; k++)
        if (x->row[k] != y->row[k])
            return x->row[k] < y->row[k] ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* merge_radius 0: only identical modes join; sorting the rows finds them in O(n log n). */
static pc_status join_identical(const float *modes, size_t n, size_t dim, pc__union_find *uf)
{
    mode_ref *refs = pc__alloc(n, sizeof *refs, "mode order");
    if (!refs)
        return PC_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++) {
        refs[i].row = modes + i * dim;
        refs[i].dim = dim;
        refs[i].index = i;
    }
    qsort(refs, n, sizeof *refs, by_row);
    for (size_t i = 1; i < n; i++) {
        size_t k = 0;
        while (k < dim && refs[i].row[k] == refs[i - 1].row[k])
            k++;
        if (k == dim)
            pc__uf_union(uf, refs[i].index, refs[i - 1].index);
    }
    free(refs);
    return PC_OK;
}

typedef struct {
    size_t root;
    int64_t size;
} cluster_key;

static int by_size_then_first(const void *a, const void *b)
{
    const cluster_key *x = a, *y = b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return (x->root > y->root) - (x->root < y->root);
}

/* Each centre is the mean of its members' modes, summed in double in index order. The sums are taken
 * PC__CENTRE_SLICE coordinates at a time, so no k x dim array of doubles is needed (k can be n, dim
 * a million). */
#define PC__CENTRE_SLICE 256

static pc_status centres_of(const float *modes, size_t n, size_t dim, int threads, pc_result *r)
{
    /* Members grouped by cluster, each group in index order (counting sort on the labels). */
    size_t *members = pc__alloc(n + r->k + 1, sizeof *members, "cluster members");
    if (!members)
        return PC_OUT_OF_MEMORY;
    size_t *start = members + n;
    for (size_t c = 0; c <= r->k; c++)
        start[c] = 0;
    for (size_t i = 0; i < n; i++)
        start[r->labels[i] + 1]++;
    for (size_t c = 0; c < r->k; c++)
        start[c + 1] += start[c];
    for (size_t i = 0; i < n; i++)
        members[start[r->labels[i]]++] = i;
    for (size_t c = r->k; c > 0; c--)
        start[c] = start[c - 1];
    start[0] = 0;
    int team = threads > 0 ? threads : pc_openmp_max_threads();
    (void)team;
    /* Clusters on the threads, each summed by one in its members' order: the same sums. */
#pragma omp parallel for num_threads(team) schedule(dynamic, 1) if (team > 1 && n >= 65536 && r->k > 1)
    for (size_t c = 0; c < r->k; c++) {
        double sum[PC__CENTRE_SLICE];
        for (size_t d0 = 0; d0 < dim; d0 += PC__CENTRE_SLICE) {
            size_t width = dim - d0 < PC__CENTRE_SLICE ? dim - d0 : PC__CENTRE_SLICE;
            for (size_t d = 0; d < width; d++)
                sum[d] = 0;
            for (size_t m = start[c]; m < start[c + 1]; m++)
                for (size_t d = 0; d < width; d++)
                    sum[d] += modes[members[m] * dim + d0 + d];
            for (size_t d = 0; d < width; d++)
                r->centers[c * dim + d0 + d] = (float)(sum[d] / (double)r->sizes[c]);
        }
    }
    free(members);
    return PC_OK;
}

pc_status pc__merge_modes(const float *modes, size_t n, size_t dim, double radius, int threads, pc_result *r)
{
    pc__union_find uf;
    pc__merge_distances = 0;
    if (pc__uf_init(&uf, n) != 0)
        return PC_OUT_OF_MEMORY;
    pc_status st = PC_OK;
    /* A few modes are compared pairwise: cheaper than a grid, whose arrays hold n x dim values. */
    int pairwise = radius > 0 && n <= PC__MERGE_PAIRWISE_MAX;
    if (!(radius > 0))
        st = join_identical(modes, n, dim, &uf);
    else if (!pairwise && (st = join_by_grid(modes, n, dim, radius, threads, &uf)) == PC_UNSUPPORTED) {
        pc__clear_error();
        st = PC_OK;
        pairwise = 1;
    }
    if (pairwise)
        join_all_pairs(modes, n, dim, radius, &uf);
    cluster_key *keys = NULL;
    size_t *cluster_of_root = NULL;
    if (st != PC_OK)
        goto done;
    keys = pc__alloc(n, sizeof *keys, "cluster keys");
    cluster_of_root = pc__alloc(n, sizeof *cluster_of_root, "cluster numbers");
    r->labels = pc__alloc(n, sizeof *r->labels, "labels");
    if (!keys || !cluster_of_root || !r->labels) {
        st = PC_OUT_OF_MEMORY;
        goto done;
    }
    /* The root of a set is its smallest member, so each cluster is keyed by its first point. */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t root = pc__uf_find(&uf, i);
        if (root == i) {
            cluster_of_root[i] = k;
            keys[k].root = i;
            keys[k].size = 0;
            k++;
        }
        keys[cluster_of_root[root]].size++;
    }
    qsort(keys, k, sizeof *keys, by_size_then_first);
    for (size_t c = 0; c < k; c++)
        cluster_of_root[keys[c].root] = c;
    r->k = k;
    r->sizes = pc__alloc(k, sizeof *r->sizes, "cluster sizes");
    r->centers = pc__alloc(k, dim * sizeof *r->centers, "cluster centres");
    if (!r->sizes || !r->centers) {
        st = PC_OUT_OF_MEMORY;
        goto done;
    }
    for (size_t c = 0; c < k; c++)
        r->sizes[c] = keys[c].size;
    for (size_t i = 0; i < n; i++)
        r->labels[i] = (int32_t)cluster_of_root[pc__uf_find(&uf, i)];
    st = centres_of(modes, n, dim, threads, r);
done:
    free(keys);
    free(cluster_of_root);
    pc__uf_free(&uf);
    return st;
}
