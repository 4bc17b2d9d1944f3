/* HCA-MS (ALGORITHMS.md section 3b): after HCA's cut, the points of border cells climb the density of
 * the non-empty cells' means (weighted by their points) by Gaussian mean shift, and take the cluster of
 * the cell they reach. Interior points keep their label, so the work grows with the border points times
 * the cells within 3 h, never with all pairs of points. Also the auto rule for m and the result getters
 * these additions bring. */
#include "internal_hca.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int pc_hca_auto_m(uint64_t n, size_t dim)
{
    /* The largest m <= 32 with n / m^dim >= 4 (docs/heca.md): a cell of the box then expects 4 points
     * where the data fill the box, and more where they fill part of it, as clusters do. */
    if (dim < 1)
        dim = 1;
    int m = 32;
    while (m > 4 && (double)n / pow((double)m, (double)dim) < 4.0)
        m--;
    return m;
}

int pc_result_grid_m(const pc_result *r) { return r ? r->grid_m : 0; }
int64_t pc_result_border_points(const pc_result *r) { return r ? r->border_points : 0; }
int64_t pc_result_changed_points(const pc_result *r) { return r ? r->changed_points : 0; }

typedef struct {
    const pc__hca_grid *g;
    const double *mean;   /* cells x dim */
    const int32_t *cluster_of_cell;
    double width[PC__HCA_MAX_DIM];
    double h, eps, cutoff2;
    int max_iter;
    /* The cell means by blocks of `span` cells a side (a block at least 3 h wide): the references
     * within 3 h of a point lie in the 3^d blocks around its own. order: the cells sorted by block
     * key, block_key[q] the key of order[q]'s block. */
    int span[PC__HCA_MAX_DIM], blocks[PC__HCA_MAX_DIM];
    uint64_t block_stride[PC__HCA_MAX_DIM];
    uint64_t *block_key;
    int32_t *order;
} climb;

/* The block of cell coordinates c. */
static uint64_t block_of(const climb *c, const int *cell)
{
    uint64_t key = 0;
    for (size_t j = 0; j < c->g->dim; j++)
        key += (uint64_t)(cell[j] / c->span[j]) * c->block_stride[j];
    return key;
}

typedef struct {
    uint64_t key;
    int32_t cell;
} keyed;

static int by_block(const void *x, const void *y)
{
    const keyed *a = x, *b = y;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return (a->cell > b->cell) - (a->cell < b->cell);
}

/* The blocks: spans from the bandwidth, cells sorted by block. 0, or -1 without memory. */
static int make_blocks(climb *c)
{
    const pc__hca_grid *g = c->g;
    size_t dim = g->dim;
    uint64_t total = 1;
    for (size_t j = dim; j-- > 0;) {
        double cells = c->width[j] > 0 ? ceil(3 * c->h / c->width[j]) : g->m;
        c->span[j] = cells >= g->m ? g->m : cells < 1 ? 1 : (int)cells;
        c->blocks[j] = (g->m + c->span[j] - 1) / c->span[j];
        c->block_stride[j] = total;
        total *= (uint64_t)c->blocks[j]; /* <= m^dim, which fits */
    }
    keyed *k = pc__alloc(g->cells, sizeof *k, "HCA-MS blocks");
    c->block_key = pc__alloc(g->cells, sizeof *c->block_key, "HCA-MS blocks");
    c->order = pc__alloc(g->cells, sizeof *c->order, "HCA-MS blocks");
    if (!k || !c->block_key || !c->order) {
        free(k);
        return -1;
    }
    for (size_t q = 0; q < g->cells; q++) {
        int cell[PC__HCA_MAX_DIM];
        for (size_t j = 0; j < dim; j++)
            cell[j] = (int)((g->key[q] / g->stride[j]) % (uint64_t)g->m);
        k[q].key = block_of(c, cell);
        k[q].cell = (int32_t)q;
    }
    qsort(k, g->cells, sizeof *k, by_block);
    for (size_t q = 0; q < g->cells; q++) {
        c->block_key[q] = k[q].key;
        c->order[q] = k[q].cell;
    }
    free(k);
    return 0;
}

/* The cell holding position x (the box clamps, as step 1 does). */
static uint64_t key_of(const pc__hca_grid *g, const double *x)
{
    uint64_t key = 0;
    for (size_t j = 0; j < g->dim; j++)
        key += (uint64_t)pc__hca_cell_coordinate(x[j], g->lo[j], g->hi[j], g->m) * g->stride[j];
    return key;
}

/* One mean shift step from x over the cell means within the cut-off: 0 when no mean is that close.
 * The 3^d blocks around x's own hold every mean within 3 h. */
static int shift(const climb *c, const double *x, double *next)
{
    const pc__hca_grid *g = c->g;
    size_t dim = g->dim, cells = g->cells;
    int from[PC__HCA_MAX_DIM], to[PC__HCA_MAX_DIM], at[PC__HCA_MAX_DIM];
    for (size_t j = 0; j < dim; j++) {
        int b = (g->hi[j] > g->lo[j] ? pc__hca_cell_coordinate(x[j], g->lo[j], g->hi[j], g->m) : 0) / c->span[j];
        from[j] = b > 0 ? b - 1 : 0;
        to[j] = b + 1 < c->blocks[j] ? b + 1 : c->blocks[j] - 1;
    }
    double num[PC__HCA_MAX_DIM] = {0}, den = 0, inv = -1.0 / (2 * c->h * c->h);
    memcpy(at, from, dim * sizeof *at);
    for (;;) {
        uint64_t key = 0;
        for (size_t j = 0; j < dim; j++)
            key += (uint64_t)at[j] * c->block_stride[j];
        size_t lo = 0, hi = cells;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (c->block_key[mid] < key)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (size_t q = lo; q < cells && c->block_key[q] == key; q++) {
            int32_t cell = c->order[q];
            const double *mu = c->mean + (size_t)cell * dim;
            double d2 = 0;
            for (size_t j = 0; j < dim; j++)
                d2 += (mu[j] - x[j]) * (mu[j] - x[j]);
            if (d2 <= c->cutoff2) {
                double w = (double)g->density[cell] * exp(d2 * inv);
                for (size_t j = 0; j < dim; j++)
                    num[j] += w * mu[j];
                den += w;
            }
        }
        size_t j = dim;
        while (j-- > 0) {
            if (at[j] < to[j]) {
                at[j]++;
                break;
            }
            at[j] = from[j];
        }
        if (j == (size_t)-1)
            break;
    }
    if (!(den > 0))
        return 0;
    for (size_t j = 0; j < dim; j++)
        next[j] = num[j] / den;
    return 1;
}

/* The non-empty cell whose mean is nearest x (rare: only where a climb ends in an empty cell). The cube
 * of cells around x grows until the nearest mean found is closer than any cell outside it can be. */
static long nearest_cell(const climb *c, const double *x)
{
    const pc__hca_grid *g = c->g;
    size_t dim = g->dim;
    double wmin = INFINITY;
    for (size_t j = 0; j < dim; j++)
        if (c->width[j] > 0 && c->width[j] < wmin)
            wmin = c->width[j];
    for (int radius = 1;; radius *= 2) {
        int from[PC__HCA_MAX_DIM], to[PC__HCA_MAX_DIM], at[PC__HCA_MAX_DIM];
        int all = radius >= g->m;
        for (size_t j = 0; j < dim; j++) {
            int cj = g->hi[j] > g->lo[j] ? pc__hca_cell_coordinate(x[j], g->lo[j], g->hi[j], g->m) : 0;
            from[j] = all || cj - radius < 0 ? 0 : cj - radius;
            to[j] = all || cj + radius > g->m - 1 ? g->m - 1 : cj + radius;
            if (!(g->hi[j] > g->lo[j]))
                from[j] = to[j] = 0;
        }
        long best = -1;
        double best_d2 = INFINITY;
        memcpy(at, from, dim * sizeof *at);
        for (;;) {
            uint64_t key = 0;
            for (size_t j = 0; j < dim; j++)
                key += (uint64_t)at[j] * g->stride[j];
            long cell = pc__hca_find(g, key);
            if (cell >= 0) {
                const double *mu = c->mean + (size_t)cell * dim;
                double d2 = 0;
                for (size_t j = 0; j < dim; j++)
                    d2 += (mu[j] - x[j]) * (mu[j] - x[j]);
                if (d2 < best_d2 || (d2 == best_d2 && cell < best)) {
                    best_d2 = d2;
                    best = cell;
                }
            }
            size_t j = dim;
            while (j-- > 0) {
                if (at[j] < to[j]) {
                    at[j]++;
                    break;
                }
                at[j] = from[j];
            }
            if (j == (size_t)-1)
                break;
        }
        /* A cell beyond the cube lies at least radius cell widths away in some dimension. */
        if (all || (best >= 0 && sqrt(best_d2) <= radius * wmin))
            return best;
    }
}

/* The cluster a point at x reaches. */
static int32_t climb_point(const climb *c, double *x)
{
    const pc__hca_grid *g = c->g;
    size_t dim = g->dim;
    double next[PC__HCA_MAX_DIM];
    for (int it = 0; it < c->max_iter; it++) {
        if (!shift(c, x, next))
            break;
        double d2 = 0;
        for (size_t j = 0; j < dim; j++) {
            d2 += (next[j] - x[j]) * (next[j] - x[j]);
            x[j] = next[j];
        }
        if (sqrt(d2) < c->eps)
            break;
    }
    long cell = pc__hca_find(g, key_of(g, x));
    if (cell < 0)
        cell = nearest_cell(c, x);
    return c->cluster_of_cell[cell];
}

/* Integer pixels of at most 8 bytes: the border points' distinct values (a 3-band uint8 image of 10^8
 * pixels has ~10^5) each climb once, in parallel; equal values reach equal clusters. */
static pc_status climb_distinct(const climb *cl, const pc_points *points, size_t value_bytes, int threads,
                                pc__hca_border *out)
{
    size_t count = out->count, cap = 1024, stride = pc__hca_row_bytes(points), dim = points->dim;
    while (cap < 2 * count)
        cap *= 2;
    const unsigned char *base = points->data;
    uint64_t *keys = pc__alloc(cap, sizeof *keys, "HCA-MS distinct values");
    int32_t *ids = pc__alloc(cap, sizeof *ids, "HCA-MS distinct values");
    int32_t *first = pc__alloc(count, sizeof *first, "HCA-MS distinct values");
    int32_t *reached = NULL;
    pc_status st = PC_OUT_OF_MEMORY;
    if (!keys || !ids || !first)
        goto done;
    memset(ids, 0xff, cap * sizeof *ids);
    size_t distinct = 0, mask = cap - 1;
    for (size_t q = 0; q < count; q++) {
        uint64_t key = 0;
        memcpy(&key, base + (size_t)out->index[q] * stride, value_bytes);
        uint64_t h = key * 0x9e3779b97f4a7c15ull;
        size_t s = (size_t)(h ^ (h >> 29)) & mask;
        while (ids[s] >= 0 && keys[s] != key)
            s = (s + 1) & mask;
        if (ids[s] < 0) {
            keys[s] = key;
            ids[s] = (int32_t)distinct;
            first[distinct++] = out->index[q];
        }
        out->cluster[q] = ids[s]; /* the value's number for now */
    }
    if (!(reached = pc__alloc(distinct, sizeof *reached, "HCA-MS distinct values")))
        goto done;
    (void)threads;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 64)
    for (long u = 0; u < (long)distinct; u++) {
        if (pc__hca_tick_at(cl->g->tick, (size_t)u, distinct)) continue; /* cancelled (hca.c: progress) */
        double x[PC__HCA_MAX_DIM];
        for (size_t j = 0; j < dim; j++)
            x[j] = pc__hca_value(base + (size_t)first[u] * stride, points->dtype, j);
        reached[u] = climb_point(cl, x);
    }
    for (size_t q = 0; q < count; q++)
        out->cluster[q] = reached[out->cluster[q]];
    st = PC_OK;
done:
    free(keys);
    free(ids);
    free(first);
    free(reached);
    return st;
}

typedef struct {
    const pc__hca_grid *g;
    const int32_t *cluster_of_cell;
    int border;
} border_ctx;

static void differs(void *ctx, size_t cell, size_t nb)
{
    border_ctx *b = ctx;
    b->border |= b->cluster_of_cell[cell] != b->cluster_of_cell[nb];
}

pc_status pc__hca_refine(const pc__hca_grid *g, const pc_points *points, const int32_t *scratch,
                         const int32_t *cluster_of_cell, const pc_hca_params *params, pc__hca_border *out)
{
    size_t dim = g->dim, cells = g->cells, n = g->n;
    memset(out, 0, sizeof *out);
    climb cl;
    memset(&cl, 0, sizeof cl);
    uint8_t *is_border = pc__calloc(cells, 1, "HCA-MS border cells");
    double *mean = pc__calloc(cells * dim, sizeof *mean, "HCA-MS cell means");
    pc_status st = PC_OUT_OF_MEMORY;
    if (!is_border || !mean)
        goto done;
    int threads = g->threads;
    (void)threads;
    uint64_t count = 0;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 256) reduction(+ : count)
    for (long c = 0; c < (long)cells; c++) {
        border_ctx b = {g, cluster_of_cell, 0};
        pc__hca_neighbours(g, (size_t)c, 0, differs, &b);
        is_border[c] = (uint8_t)b.border;
        if (b.border)
            count += (uint64_t)g->density[c];
    }
    out->count = (size_t)count;
    if (count == 0) {
        st = PC_OK;
        goto done;
    }
    /* The cells' means: integer pixels summed exactly on all cores, float values in point order on one
     * (the sums then never depend on the thread count). */
    size_t stride = pc__hca_row_bytes(points);
    const unsigned char *base = points->data;
    int sum_threads = points->dtype == PC_U8 || points->dtype == PC_U16 ? threads : 1, failed = 0;
    (void)sum_threads;
#pragma omp parallel num_threads(sum_threads) if (sum_threads > 1) reduction(| : failed)
    {
        double *mine = calloc(cells * dim, sizeof *mine);
        failed |= !mine;
#pragma omp for schedule(static)
        for (long i = 0; i < (long)n; i++) {
            if (!mine)
                continue;
            double *s = mine + (size_t)pc__hca_cell_of(g, scratch, (size_t)i) * dim;
            for (size_t j = 0; j < dim; j++)
                s[j] += pc__hca_value(base + (size_t)i * stride, points->dtype, j);
        }
        pc__team_add_ordered(mean, mine, cells * dim);
        free(mine);
    }
    if (failed) {
        st = pc__fail(PC_OUT_OF_MEMORY, "HCA-MS: cannot allocate per-thread cell sums");
        goto done;
    }
    for (size_t c = 0; c < cells; c++)
        for (size_t j = 0; j < dim; j++)
            mean[c * dim + j] /= (double)g->density[c];
    out->index = pc__alloc(out->count, sizeof *out->index, "HCA-MS border points");
    out->cluster = pc__alloc(out->count, sizeof *out->cluster, "HCA-MS border points");
    if (!out->index || !out->cluster)
        goto done;
    size_t b = 0;
    for (size_t i = 0; i < n; i++)
        if (is_border[pc__hca_cell_of(g, scratch, i)])
            out->index[b++] = (int32_t)i;
    cl.g = g;
    cl.mean = mean;
    cl.cluster_of_cell = cluster_of_cell;
    double widest = 0;
    for (size_t j = 0; j < dim; j++) {
        cl.width[j] = (g->hi[j] - g->lo[j]) / g->m;
        widest = cl.width[j] > widest ? cl.width[j] : widest;
    }
    /* Default: one cell width of the finer of this grid and the auto rule's (docs/heca.md): a coarse
     * grid's cell is wider than the classes' spread (hca8 at m = 16: 6.25 against sigma 3), and a
     * bandwidth that wide climbs overlapping classes into one mode (accuracy 95.5% -> 80.0%). */
    int finer = pc_hca_auto_m(n, dim) > g->m ? pc_hca_auto_m(n, dim) : g->m;
    cl.h = params->refine_bandwidth < 0 ? widest * g->m / finer : params->refine_bandwidth;
    cl.eps = params->refine_eps < 0 ? 1e-3 * cl.h : params->refine_eps;
    cl.cutoff2 = 9 * cl.h * cl.h;
    cl.max_iter = params->refine_max_iter;
    if (cl.h > 0 && make_blocks(&cl) != 0)
        goto done;
    size_t value_bytes = points->dtype == PC_F64 ? 8 * dim : points->dtype == PC_F32 ? 4 * dim
                       : points->dtype == PC_U16 ? 2 * dim : dim;
    if (cl.h > 0 && (points->dtype == PC_U8 || points->dtype == PC_U16) && value_bytes <= 8) {
        st = climb_distinct(&cl, points, value_bytes, threads, out);
        goto done;
    }
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        /* Pixels come in runs of equal values: a run climbs once. */
        const unsigned char *last = NULL;
        int32_t last_cluster = 0;
        size_t row_bytes = points->dtype == PC_F64 ? 8 * dim : points->dtype == PC_F32 ? 4 * dim
                  : points->dtype == PC_U16 ? 2 * dim : dim;
#pragma omp for schedule(dynamic, 1024)
        for (long q = 0; q < (long)out->count; q++) {
            if (pc__hca_tick_at(g->tick, (size_t)q, out->count)) continue; /* cancelled (hca.c: progress) */
            size_t i = (size_t)out->index[q];
            const unsigned char *row = base + i * stride;
            if (!(cl.h > 0)) { /* no bandwidth: nothing moves */
                out->cluster[q] = cluster_of_cell[pc__hca_cell_of(g, scratch, i)];
                continue;
            }
            if (last && memcmp(row, last, row_bytes) == 0) {
                out->cluster[q] = last_cluster;
                continue;
            }
            double x[PC__HCA_MAX_DIM];
            for (size_t j = 0; j < dim; j++)
                x[j] = pc__hca_value(row, points->dtype, j);
            out->cluster[q] = last_cluster = climb_point(&cl, x);
            last = row;
        }
    }
    st = PC_OK;
done:
    free(cl.block_key);
    free(cl.order);
    free(is_border);
    free(mean);
    if (st != PC_OK) {
        free(out->index);
        free(out->cluster);
        memset(out, 0, sizeof *out);
    }
    return st;
}

int64_t pc__hca_refine_apply(pc__hca_border *border, const pc_points *points, int32_t *labels, double *sums)
{
    size_t dim = points->dim;
    int64_t changed = 0;
    for (size_t q = 0; q < border->count; q++) {
        size_t i = (size_t)border->index[q];
        int32_t from = labels[i], to = border->cluster[q];
        if (from == to)
            continue;
        changed++;
        labels[i] = to;
        float row[PC__HCA_MAX_DIM];
        pc__points_row_f32(points, i, row);
        if (from >= 0) {
            for (size_t j = 0; j < dim; j++)
                sums[(size_t)from * (dim + 1) + j] -= row[j];
            sums[(size_t)from * (dim + 1) + dim] -= 1;
        }
        if (to >= 0) {
            for (size_t j = 0; j < dim; j++)
                sums[(size_t)to * (dim + 1) + j] += row[j];
            sums[(size_t)to * (dim + 1) + dim] += 1;
        }
    }
    free(border->index);
    free(border->cluster);
    memset(border, 0, sizeof *border);
    return changed;
}
