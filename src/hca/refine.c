/* HCA-MS (ALGORITHMS.md section 3b): after HCA's cut, the points of border cells climb the density of
 * the non-empty cells' means (weighted by their points) by Gaussian mean shift, and take the cluster of
 * the cell they reach. Interior points keep their label, so the work grows with the border points times
 * the cells within 3 h, never with all pairs of points. Also the auto rule for m and the result getters
 * these additions bring. */
#include "internal_hca.h"
#include "refine_climb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

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

void pc__hca_reach_free(pc__hca_reach *r)
{
    free((void *)r->climb.block_key);
    free((void *)r->climb.ref);
    free((void *)r->climb.weight);
    free((void *)r->climb.block_start);
    free((void *)r->climb.ref_dim);
    r->climb.block_start = NULL;
    r->climb.block_key = NULL;
    r->climb.ref = r->climb.weight = r->climb.ref_dim = NULL;
}

/* Cell q's block coordinate in dimension j. */
static int block_of(const pc__hca_grid *g, const pc__hca_climb *c, size_t q, size_t j)
{
    return (int)((g->key[q] / g->stride[j]) % (uint64_t)g->m) / c->span[j];
}

pc_status pc__hca_reach_setup(pc__hca_reach *r, const pc__hca_grid *g, const double *mean,
                              const int32_t *cluster_of_cell, const pc_hca_params *params)
{
    size_t dim = g->dim, cells = g->cells;
    memset(r, 0, sizeof *r);
    r->g = g;
    r->mean = mean;
    r->cluster_of_cell = cluster_of_cell;
    pc__hca_climb *c = &r->climb;
    c->dim = (int)dim;
    c->m = g->m;
    double widest = 0, width[PC__HCA_MAX_DIM];
    r->wmin = INFINITY;
    for (size_t j = 0; j < dim; j++) {
        c->width[j] = (g->hi[j] - g->lo[j]) / g->m;
        c->lo[j] = g->lo[j];
        c->hi[j] = g->hi[j];
        c->stride[j] = g->stride[j];
        width[j] = (g->hi[j] - g->lo[j]) / g->m;
        widest = width[j] > widest ? width[j] : widest;
        if (width[j] > 0 && width[j] < r->wmin)
            r->wmin = width[j];
    }
    /* Default: one cell width of the finer of this grid and the auto rule's (docs/heca.md): a coarse
     * grid's cell is wider than the classes' spread (hca8 at m = 16: 6.25 against sigma 3), and a
     * bandwidth that wide climbs overlapping classes into one mode (accuracy 95.5% -> 80.0%). */
    int finer = pc_hca_auto_m(g->n, dim) > g->m ? pc_hca_auto_m(g->n, dim) : g->m;
    c->h = params->refine_bandwidth < 0 ? widest * g->m / finer : params->refine_bandwidth;
    c->eps = params->refine_eps < 0 ? 1e-3 * c->h : params->refine_eps;
    c->cutoff2 = 9 * c->h * c->h;
    c->max_iter = params->refine_max_iter;
    if (!(c->h > 0))
        return PC_OK;
    c->inv_h = 1.0 / c->h;
    double eps_h = c->eps / c->h; /* a step's shift is in h (refine_climb.h) */
    /* (never 0 for a positive eps: a climb whose shift is exactly 0 stops, as in doubles) */
    c->eps2 = eps_h < 1e18 ? fmaxf((float)(eps_h * eps_h), eps_h > 0 ? 0x1p-149f : 0) : INFINITY;
    /* Blocks of span cells a side, at least 3 h wide; the references sorted by block (then cell). */
    uint64_t total = 1;
    for (size_t j = dim; j-- > 0;) {
        double span = width[j] > 0 ? ceil(3 * c->h / width[j]) : g->m;
        c->span[j] = span >= g->m ? g->m : span < 1 ? 1 : (int)span;
        c->blocks[j] = (g->m + c->span[j] - 1) / c->span[j];
        c->block_stride[j] = total;
        total *= (uint64_t)c->blocks[j]; /* <= m^dim, which fits */
    }
    keyed *k = pc__alloc(cells, sizeof *k, "HCA-MS blocks");
    uint64_t *block_key = pc__alloc(cells, sizeof *block_key, "HCA-MS blocks");
    float *ref = pc__alloc(cells * dim, sizeof *ref, "HCA-MS references");
    float *weight = pc__alloc(cells, sizeof *weight, "HCA-MS references");
    c->block_key = block_key;
    c->ref = ref;
    c->weight = weight;
    if (!k || !block_key || !ref || !weight) {
        free(k);
        pc__hca_reach_free(r);
        return PC_OUT_OF_MEMORY;
    }
    for (size_t q = 0; q < cells; q++) {
        uint64_t key = 0;
        for (size_t j = 0; j < dim; j++)
            key += (uint64_t)block_of(g, c, q, j) * c->block_stride[j];
        k[q].key = key;
        k[q].cell = (int32_t)q;
    }
    qsort(k, cells, sizeof *k, by_block);
    for (size_t q = 0; q < cells; q++) {
        block_key[q] = k[q].key;
        for (size_t j = 0; j < dim; j++)
            ref[q * dim + j] = pc__climb_offset(c, (int)j, block_of(g, c, (size_t)k[q].cell, j),
                                                mean[(size_t)k[q].cell * dim + j]);
        weight[q] = (float)g->density[k[q].cell];
    }
    c->refs = cells;
    free(k);
    /* Few blocks: where each starts, so that a step finds its blocks without a search. */
    if (total <= ((uint64_t)1 << 24)) {
        uint32_t *start = pc__alloc((size_t)total + 1, sizeof *start, "HCA-MS blocks");
        if (start) {
            size_t q = 0;
            for (uint64_t b = 0; b <= total; b++) {
                while (q < cells && block_key[q] < b)
                    q++;
                start[b] = (uint32_t)q;
            }
            c->block_start = start;
            c->block_count = total;
        }
    }
    return PC_OK;
}

/* The non-empty cell whose mean is nearest x (rare: only where a climb ends in an empty cell). The cube
 * of cells around x grows until the nearest mean found is closer than any cell outside it can be. */
static long nearest_cell(const pc__hca_reach *r, const double *x)
{
    const pc__hca_grid *g = r->g;
    size_t dim = g->dim;
    for (int radius = 1;; radius *= 2) {
        int from[PC__HCA_MAX_DIM], to[PC__HCA_MAX_DIM], at[PC__HCA_MAX_DIM];
        int all = radius >= g->m;
        for (size_t j = 0; j < dim; j++) {
            int cj = pc__climb_coordinate(x[j], g->lo[j], g->hi[j], g->m);
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
                const double *mu = r->mean + (size_t)cell * dim;
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
        if (all || (best >= 0 && sqrt(best_d2) <= radius * r->wmin))
            return best;
    }
}

int32_t pc__hca_reach_end(const pc__hca_reach *r, const double *x)
{
    long cell = pc__hca_find(r->g, pc__climb_key(&r->climb, r->climb.dim, x));
    if (cell < 0)
        cell = nearest_cell(r, x);
    return r->cluster_of_cell[cell];
}

int32_t pc__hca_reach_climb(const pc__hca_reach *r, double *x)
{
    if (r->climb.h > 0)
        pc__climb_run(&r->climb, r->climb.dim, x);
    return pc__hca_reach_end(r, x);
}

/* The distinct values of the border points, numbered as they first come: an open-addressing table
 * that grows with them (2 x 2^k slots for up to 2^k values), so that it stays in cache. Sized for every
 * border point at once (a 96 MB table for the 2.7 M border pixels of bench_hca's RGB image, which hold
 * 27,000 values), each lookup missed the cache: 225 ms of a 1.1 s refinement on 2 cores. */
typedef struct {
    uint64_t *keys;
    int32_t *ids;
    size_t cap, count;
} value_table;

static size_t value_slot(const value_table *t, uint64_t key)
{
    uint64_t h = key * 0x9e3779b97f4a7c15ull;
    size_t s = (size_t)(h ^ (h >> 29)) & (t->cap - 1);
    while (t->ids[s] >= 0 && t->keys[s] != key)
        s = (s + 1) & (t->cap - 1);
    return s;
}

static int value_table_grow(value_table *t)
{
    value_table bigger = {malloc(2 * t->cap * sizeof(uint64_t)), malloc(2 * t->cap * sizeof(int32_t)), 2 * t->cap,
                          t->count};
    if (!bigger.keys || !bigger.ids) {
        free(bigger.keys);
        free(bigger.ids);
        return 0;
    }
    memset(bigger.ids, 0xff, bigger.cap * sizeof *bigger.ids);
    for (size_t s = 0; s < t->cap; s++)
        if (t->ids[s] >= 0) {
            size_t at = value_slot(&bigger, t->keys[s]);
            bigger.keys[at] = t->keys[s];
            bigger.ids[at] = t->ids[s];
        }
    free(t->keys);
    free(t->ids);
    *t = bigger;
    return 1;
}

/* Integer pixels of at most 8 bytes: the border points' distinct values (keys: each point's, from
 * border_points; a 3-band uint8 image of 10^8 pixels has ~10^5) each climb once, in parallel; equal
 * values reach equal clusters. */
static pc_status climb_distinct(const pc__hca_reach *cl, const pc_points *points, const uint64_t *keys, int threads,
                                pc__hca_border *out)
{
    size_t count = out->count, stride = pc__hca_row_bytes(points), dim = points->dim;
    const unsigned char *base = points->data;
    value_table t = {malloc(4096 * sizeof(uint64_t)), malloc(4096 * sizeof(int32_t)), 4096, 0};
    int32_t *first = pc__alloc(count, sizeof *first, "HCA-MS distinct values");
    int32_t *reached = NULL;
    pc_status st = PC_OUT_OF_MEMORY;
    if (!t.keys || !t.ids || !first)
        goto done;
    memset(t.ids, 0xff, t.cap * sizeof *t.ids);
    for (size_t q = 0; q < count; q++) {
        uint64_t key = keys[q];
        size_t s = value_slot(&t, key);
        if (t.ids[s] < 0) {
            if (2 * (t.count + 1) > t.cap) {
                if (!value_table_grow(&t))
                    goto done;
                s = value_slot(&t, key);
            }
            t.keys[s] = key;
            t.ids[s] = (int32_t)t.count;
            first[t.count++] = out->index[q];
        }
        out->cluster[q] = t.ids[s]; /* the value's number for now */
    }
    size_t distinct = t.count;
    if (!(reached = pc__alloc(distinct, sizeof *reached, "HCA-MS distinct values")))
        goto done;
    (void)threads;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 64)
    for (long u = 0; u < (long)distinct; u++) {
        if (pc__hca_tick_at(cl->g->tick, (size_t)u, distinct)) continue; /* cancelled (hca.c: progress) */
        double x[PC__HCA_MAX_DIM];
        for (size_t j = 0; j < dim; j++)
            x[j] = pc__hca_value(base + (size_t)first[u] * stride, points->dtype, j);
        reached[u] = pc__hca_reach_climb(cl, x);
    }
    for (size_t q = 0; q < count; q++)
        out->cluster[q] = reached[out->cluster[q]];
    st = PC_OK;
done:
    if (st != PC_OK)
        pc__fail(PC_OUT_OF_MEMORY, "HCA-MS: cannot hold the border points' distinct values");
    free(t.keys);
    free(t.ids);
    free(first);
    free(reached);
    return st;
}

typedef struct {
    const int32_t *cluster_of_cell;
    int border;
} border_ctx;

static void differs(void *ctx, size_t cell, size_t nb)
{
    border_ctx *b = ctx;
    b->border |= b->cluster_of_cell[cell] != b->cluster_of_cell[nb];
}

uint64_t pc__hca_border_cells(const pc__hca_grid *g, const int32_t *cluster_of_cell, uint8_t *is_border,
                              int threads)
{
    uint64_t count = 0;
    (void)threads;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(dynamic, 256) reduction(+ : count)
    for (long c = 0; c < (long)g->cells; c++) {
        border_ctx b = {cluster_of_cell, 0};
        pc__hca_neighbours(g, (size_t)c, 0, differs, &b);
        is_border[c] = (uint8_t)b.border;
        if (b.border)
            count += (uint64_t)g->density[c];
    }
    return count;
}

void pc__hca_means_from_sums(const pc__hca_grid *g, pc_dtype dtype, const int64_t *sums, double *mean)
{
    size_t dim = g->dim;
    int integer = dtype == PC_U8 || dtype == PC_U16;
    for (size_t c = 0; c < g->cells; c++)
        for (size_t j = 0; j < dim; j++)
            mean[c * dim + j] = pc__climb_mean(sums[c * dim + j], (double)g->density[c], integer, g->lo[j],
                                               pc__climb_factor(g->lo[j], g->hi[j]));
}

void pc__hca_point_list_grow(pc__hca_point_list *l, size_t value_bytes)
{
    size_t cap = l->cap ? 2 * l->cap : 4096;
    int32_t *index = l->failed ? NULL : realloc(l->index, cap * sizeof *index);
    l->index = index ? index : l->index;
    uint64_t *key = index && value_bytes ? realloc(l->key, cap * sizeof *key) : NULL;
    l->key = key ? key : l->key;
    if (!index || (value_bytes && !key))
        l->failed = 1;
    else
        l->cap = cap;
}

pc_status pc__hca_point_lists_join(pc__hca_point_list *lists, int threads, size_t count, int32_t *index,
                                   uint64_t *keys)
{
    int failed = 0;
    size_t at = 0;
    for (int t = 0; t < threads; t++) {
        failed |= lists[t].failed;
        at += lists[t].count;
    }
    if (index && !failed && at != count) { /* the border cells' densities said otherwise */
        pc__hca_point_lists_join(lists, threads, 0, NULL, NULL);
        return pc__fail(PC_INTERNAL_ERROR, "HCA-MS: %zu border points listed, %zu expected", at, count);
    }
    at = 0;
    for (int t = 0; t < threads; t++) {
        if (!failed && index && lists[t].count) {
            memcpy(index + at, lists[t].index, lists[t].count * sizeof *index);
            if (keys)
                memcpy(keys + at, lists[t].key, lists[t].count * sizeof *keys);
        }
        at += lists[t].count;
        free(lists[t].index);
        free(lists[t].key);
        memset(&lists[t], 0, sizeof lists[t]);
    }
    return failed ? pc__fail(PC_OUT_OF_MEMORY, "HCA-MS: cannot list the border points") : PC_OK;
}

/* The cells' means from fixed-point sums (refine_climb.h): integer adds, so every thread count and the
 * GPU give the same means bit for bit. Packed uint8 rows: the same pass lists the border points
 * (listing; *listed set), where the general one leaves them to border_points; so does a grid whose
 * counting pass summed the cells (g->cell_sums). */
static pc_status cell_means(const pc__hca_grid *g, const pc_points *points, const int32_t *scratch, int threads,
                            double *mean, const pc__hca_listing *listing, int *listed)
{
    size_t dim = g->dim, cells = g->cells, stride = pc__hca_row_bytes(points);
    const unsigned char *base = points->data;
    int integer = points->dtype == PC_U8 || points->dtype == PC_U16, failed = 0;
    *listed = 0;
    if (g->cell_sums) { /* summed by the counting pass: the points are listed by border_points */
        pc__hca_means_from_sums(g, PC_U8, g->cell_sums, mean);
        return PC_OK;
    }
    if (points->dtype == PC_U8 && stride == dim) {
        *listed = 1;
        return pc__hca_cell_means_u8(g, points, scratch, threads, mean, listing);
    }
    double factor[PC__HCA_MAX_DIM];
    for (size_t j = 0; j < dim; j++)
        factor[j] = pc__climb_factor(g->lo[j], g->hi[j]);
    int64_t *sums = pc__calloc(cells * dim, sizeof *sums, "HCA-MS cell sums");
    if (!sums)
        return PC_OUT_OF_MEMORY;
    (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1) reduction(| : failed)
    {
        int64_t *mine = calloc(cells * dim, sizeof *mine);
        failed |= !mine;
#pragma omp for schedule(static)
        for (long i = 0; i < (long)g->n; i++) {
            if (!mine)
                continue;
            int64_t *s = mine + (size_t)pc__hca_cell_of(g, scratch, (size_t)i) * dim;
            const unsigned char *row = base + (size_t)i * stride;
            for (size_t j = 0; j < dim; j++) {
                double v = pc__hca_value(row, points->dtype, j);
                s[j] += integer ? (int64_t)v : pc__climb_fixed(v, g->lo[j], factor[j]);
            }
        }
        if (mine) {
#pragma omp critical(pc__hca_refine_sums)
            for (size_t q = 0; q < cells * dim; q++)
                sums[q] += mine[q];
        }
        free(mine);
    }
    if (!failed)
        pc__hca_means_from_sums(g, points->dtype, sums, mean);
    free(sums);
    return failed ? pc__fail(PC_OUT_OF_MEMORY, "HCA-MS: cannot allocate per-thread cell sums") : PC_OK;
}

/* The points of the cells marked in listing->in, on all cores: each thread lists those of its share of
 * the points (one thread took 150 ms over 115 Mpix). With value_bytes, each one's value too, read here
 * in the points' order rather than later at random (2.7 M misses, 70 ms on 2 cores). */
static void border_points(const pc__hca_grid *g, const int32_t *scratch, const pc_points *points, int threads,
                          const pc__hca_listing *listing)
{
    size_t n = g->n, stride = pc__hca_row_bytes(points);
    const unsigned char *base = points->data;
    (void)threads;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        size_t t = 0, team = 1;
#ifdef _OPENMP
        t = (size_t)omp_get_thread_num();
        team = (size_t)omp_get_num_threads();
#endif
        pc__hca_point_list *list = listing->lists + t;
        for (size_t i = n * t / team, end = n * (t + 1) / team; i < end && !list->failed; i++)
            pc__hca_list_if_marked(listing, list, pc__hca_cell_of(g, scratch, i), i, base + i * stride);
    }
}

/* Integer pixels of at most 8 bytes climb once a distinct value (climb_distinct); their listing keeps
 * each one's value (its value_bytes). */
static size_t distinct_value_bytes(const pc_points *points)
{
    size_t dim = points->dim;
    size_t value_bytes = points->dtype == PC_U16 ? 2 * dim : points->dtype == PC_U8 ? dim : 0;
    return value_bytes <= 8 ? value_bytes : 0;
}

pc_status pc__hca_refine_begin(const pc__hca_grid *g, const pc_points *points, const int32_t *cluster_of_cell,
                               pc__hca_refining *rf)
{
    memset(rf, 0, sizeof *rf);
    rf->is_border = pc__calloc(g->cells + 3, 1, "HCA-MS border cells"); /* 3 to spare: cell_sums.c's gather */
    if (!rf->is_border)
        return PC_OUT_OF_MEMORY;
    rf->count = (size_t)pc__hca_border_cells(g, cluster_of_cell, rf->is_border, g->threads);
    rf->listing.in = rf->is_border;
    rf->threads = g->threads;
    rf->listing.value_bytes = distinct_value_bytes(points);
    if (rf->count && !(rf->listing.lists = pc__calloc((size_t)g->threads, sizeof *rf->listing.lists,
                                                      "HCA-MS border points"))) {
        pc__hca_refine_end(rf);
        return PC_OUT_OF_MEMORY;
    }
    return PC_OK;
}

void pc__hca_refine_end(pc__hca_refining *rf)
{
    if (rf->listing.lists) /* lists left after a failure before the join */
        pc__hca_point_lists_join(rf->listing.lists, rf->threads, 0, NULL, NULL);
    free(rf->listing.lists);
    free(rf->is_border);
    memset(rf, 0, sizeof *rf);
}

pc_status pc__hca_refine(const pc__hca_grid *g, const pc_points *points, const int32_t *scratch,
                         const int32_t *cluster_of_cell, const pc_hca_params *params, pc__hca_border *out)
{
    pc__hca_refining rf;
    pc_status st = pc__hca_refine_begin(g, points, cluster_of_cell, &rf);
    if (st == PC_OK)
        st = pc__hca_refine_climbs(g, points, scratch, cluster_of_cell, params, &rf, out);
    pc__hca_refine_end(&rf);
    return st;
}

pc_status pc__hca_values_begin(pc__hca_values *v, const pc__hca_grid *g, const int32_t *cluster_of_cell,
                               const pc_hca_params *params)
{
    memset(v, 0, sizeof *v);
    v->mean = pc__alloc(g->cells * g->dim, sizeof *v->mean, "HCA-MS cell means");
    /* zero-filled pages, touched only at the values that climb (+ 3: the label pass reads 4 bytes) */
    v->by_value = pc__calloc(((size_t)1 << 24) + 3, 1, "HCA-MS clusters by value");
    if (!v->mean || !v->by_value) {
        pc__hca_values_free(v);
        return PC_OUT_OF_MEMORY;
    }
    pc__hca_means_from_sums(g, PC_U8, g->cell_sums, v->mean);
    pc_status st = pc__hca_reach_setup(&v->reach, g, v->mean, cluster_of_cell, params);
    if (st != PC_OK) {
        pc__hca_values_free(v);
        return st;
    }
    pc__climb_dimensions(&v->reach.climb);
    return PC_OK;
}

void pc__hca_values_free(pc__hca_values *v)
{
    pc__hca_reach_free(&v->reach);
    free(v->mean);
    free(v->by_value);
    memset(v, 0, sizeof *v);
}

int pc__hca_defer_first = 0;

uint8_t pc__hca_value_reach(const pc__hca_values *v, uint32_t value)
{
    uint8_t *at = &v->by_value[value], got = __atomic_load_n(at, __ATOMIC_RELAXED), none = 0;
    if (got == 0) {
        if (__atomic_compare_exchange_n(at, &none, PC__HCA_CLIMBING, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            double x[3] = {(double)(value & 255), (double)(value >> 8 & 255), (double)(value >> 16 & 255)};
            int32_t cluster = pc__hca_reach_climb(&v->reach, x);
            got = (uint8_t)(1 + (cluster < 0 ? PC__HCA_MARKED_NONE : cluster));
            __atomic_store_n(at, got, __ATOMIC_RELAXED);
            return pc__hca_defer_first ? 0 : got;
        }
        got = none; /* another thread's claim, or its result */
    }
    return got == PC__HCA_CLIMBING ? 0 : got;
}

pc_status pc__hca_refine_climbs(const pc__hca_grid *g, const pc_points *points, const int32_t *scratch,
                                const int32_t *cluster_of_cell, const pc_hca_params *params, pc__hca_refining *rf,
                                pc__hca_border *out)
{
    size_t dim = g->dim, cells = g->cells;
    int threads = g->threads;
    memset(out, 0, sizeof *out);
    out->count = rf->count;
    if (out->count == 0)
        return PC_OK;
    pc__hca_reach cl;
    memset(&cl, 0, sizeof cl);
    uint64_t *keys = NULL; /* the border points' values, for climb_distinct */
    double *mean = pc__calloc(cells * dim, sizeof *mean, "HCA-MS cell means");
    pc_status st = PC_OUT_OF_MEMORY;
    size_t stride = pc__hca_row_bytes(points), value_bytes = points->dtype == PC_F64 ? 8 * dim
                                                              : points->dtype == PC_F32 ? 4 * dim
                                                              : points->dtype == PC_U16 ? 2 * dim : dim;
    const unsigned char *base = points->data;
    int distinct = rf->listing.value_bytes > 0;
    int listed = scratch == NULL; /* the label pass listed the points (hca.c), and the grid summed the cells */
    out->index = pc__alloc(out->count, sizeof *out->index, "HCA-MS border points");
    out->cluster = pc__alloc(out->count, sizeof *out->cluster, "HCA-MS border points");
    if (!mean || !out->index || !out->cluster ||
        (distinct && !(keys = pc__alloc(out->count, sizeof *keys, "HCA-MS border values"))))
        goto done;
    if (listed)
        pc__hca_means_from_sums(g, PC_U8, g->cell_sums, mean);
    else if ((st = cell_means(g, points, scratch, threads, mean, &rf->listing, &listed)) != PC_OK)
        goto done;
    if (!listed)
        border_points(g, scratch, points, threads, &rf->listing);
    st = pc__hca_point_lists_join(rf->listing.lists, threads, out->count, out->index, keys);
    free(rf->listing.lists);
    rf->listing.lists = NULL;
    if (st != PC_OK)
        goto done;
    st = PC_OUT_OF_MEMORY;
    if (pc__hca_reach_setup(&cl, g, mean, cluster_of_cell, params) != PC_OK)
        goto done;
    if (!scratch && !(cl.climb.h > 0)) { /* no bandwidth reads the points' cells, which a listing label pass overwrote */
        st = pc__fail(PC_INTERNAL_ERROR, "HCA-MS: no bandwidth after the labels (hca.c refines before them then)");
        goto done;
    }
    pc__climb_dimensions(&cl.climb); /* the CPU's climbs (not the GPU's, cuda_refine.cu) */
    if (cl.climb.h > 0 && distinct) {
        st = climb_distinct(&cl, points, keys, threads, out);
        goto done;
    }
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        /* Pixels come in runs of equal values: a run climbs once. */
        const unsigned char *last = NULL;
        int32_t last_cluster = 0;
#pragma omp for schedule(dynamic, 1024)
        for (long q = 0; q < (long)out->count; q++) {
            if (pc__hca_tick_at(g->tick, (size_t)q, out->count)) continue; /* cancelled (hca.c: progress) */
            size_t i = (size_t)out->index[q];
            const unsigned char *row = base + i * stride;
            if (!(cl.climb.h > 0)) { /* no bandwidth: nothing moves */
                out->cluster[q] = cluster_of_cell[pc__hca_cell_of(g, scratch, i)];
                continue;
            }
            if (last && memcmp(row, last, value_bytes) == 0) {
                out->cluster[q] = last_cluster;
                continue;
            }
            double x[PC__HCA_MAX_DIM];
            for (size_t j = 0; j < dim; j++)
                x[j] = pc__hca_value(row, points->dtype, j);
            out->cluster[q] = last_cluster = pc__hca_reach_climb(&cl, x);
            last = row;
        }
    }
    st = PC_OK;
done:
    pc__hca_reach_free(&cl);
    free(keys);
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
