/* pc_meanshift_image_rows' regions: each strip is fused as pc_meanshift_image fuses the whole image
 * (8-connected valid pixels whose modes lie within hr), into strip regions numbered in the order of
 * their first pixels; a union-find over all strip regions then joins them across the seams (the last
 * row of a strip and the first of the next: the same pairs of pixels the whole image's fusion tests)
 * and through the tests that had to wait for a stopped climb's mode. Regions are connected components
 * of one graph of pixel pairs, so however the strips cut it, the components are the same; numbered by
 * their smallest strip region, which holds their first pixel, they are numbered as pc_meanshift_image
 * numbers them. Only the strip regions are kept (size, sums, touching pairs), never the pixels. */
#include "image_rows_internal.h"

#include "../core/union_find.h"

#include <stdlib.h>
#include <string.h>

/* The 8-neighbourhood's forward half, as image_regions.c visits it: each pair of pixels once. */
static const int FORWARD_DR[4] = {0, 1, 1, 1};
static const int FORWARD_DC[4] = {1, -1, 0, 1};

static size_t find(size_t *parent, size_t x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

/* Union by index: the root of a set is its smallest member, whatever the order of unions. */
static void join(size_t *parent, size_t a, size_t b)
{
    a = find(parent, a);
    b = find(parent, b);
    if (a < b)
        parent[b] = a;
    else if (b < a)
        parent[a] = b;
}

/* Makes room for `need` elements of `size` bytes in *p (capacity *cap, doubling). */
static pc_status grow(void **p, size_t *cap, size_t need, size_t size, const char *what)
{
    if (need <= *cap)
        return PC_OK;
    size_t c = *cap ? *cap : 256;
    while (c < need)
        c *= 2;
    if (c > SIZE_MAX / size)
        return pc__fail(PC_OUT_OF_MEMORY, "cannot grow %s to %zu entries", what, need);
    void *q = realloc(*p, c * size);
    if (!q)
        return pc__fail(PC_OUT_OF_MEMORY, "cannot grow %s to %zu entries (%zu bytes)", what, need, c * size);
    *p = q;
    *cap = c;
    return PC_OK;
}

static size_t graph_bytes(const rows_run *run)
{
    const rows_graph *g = &run->graph;
    size_t b = g->cap * (2 * sizeof(size_t) + (g->sums ? g->bands * sizeof(double) : 0)) +
               g->cap_pairs * sizeof(rows_pair) + g->cap_waits * sizeof(rows_wait) +
               g->cap_saved * g->bands * sizeof(float) +
               run->climbs.cap * (sizeof(pc__msi_climb) + run->bands * sizeof(float) + sizeof(size_t) + 1) +
               (run->strips + 1) * (sizeof(size_t) + sizeof(rows_bucket));
    return b;
}

static void note_peak(rows_run *run)
{
    size_t b = graph_bytes(run);
    if (b > run->graph.peak_bytes)
        run->graph.peak_bytes = b;
}

void pc__rows_graph_free(rows_graph *g)
{
    free(g->parent);
    free(g->size);
    free(g->sum);
    free(g->pairs);
    free(g->waits);
    free(g->saved);
    memset(g, 0, sizeof *g);
}

static pc_status add_pair(rows_graph *g, size_t a, size_t b, size_t from)
{
    rows_pair p = {a < b ? a : b, a < b ? b : a};
    /* Along a boundary the same two regions meet pixel after pixel: skip repeats of the last few. */
    for (size_t t = g->npairs; t > from && t + 4 > g->npairs; t--)
        if (g->pairs[t - 1].a == p.a && g->pairs[t - 1].b == p.b)
            return PC_OK;
    pc_status st = grow((void **)&g->pairs, &g->cap_pairs, g->npairs + 1, sizeof *g->pairs, "touching regions");
    if (st == PC_OK)
        g->pairs[g->npairs++] = p;
    return st;
}

/* A mode for a waiting test: a copy. */
static pc_status save_mode(rows_graph *g, const float *mode, size_t *ref)
{
    pc_status st = grow((void **)&g->saved, &g->cap_saved, g->nsaved + 1, g->bands * sizeof *g->saved,
                        "modes of waiting fusion tests");
    if (st != PC_OK)
        return st;
    memcpy(g->saved + g->nsaved * g->bands, mode, g->bands * sizeof *mode);
    *ref = g->nsaved++;
    return PC_OK;
}

static pc_status add_wait(rows_graph *g, size_t a, size_t b, size_t ma, size_t mb)
{
    pc_status st = grow((void **)&g->waits, &g->cap_waits, g->nwaits + 1, sizeof *g->waits, "waiting fusion tests");
    if (st == PC_OK)
        g->waits[g->nwaits++] = (rows_wait){a, b, ma, mb};
    return st;
}

/* The id of the stopped climb of pixel `pixel` (whole-image index) among this strip's, which are
 * sorted by pixel. */
static size_t climb_id(const rows_run *run, size_t first, size_t pixel)
{
    size_t lo = first, hi = run->climbs.count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (run->climbs.climb[mid].pixel < pixel)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The reference to pixel p's mode for a waiting test: its climb, or a copy of its mode. */
static pc_status mode_ref(rows_run *run, size_t first_climb, size_t whole, int stopped, const float *mode, size_t *ref)
{
    if (stopped) {
        *ref = PC__ROWS_CLIMB | climb_id(run, first_climb, whole);
        return PC_OK;
    }
    return save_mode(&run->graph, mode, ref);
}

static int cmp_pair(const void *x, const void *y)
{
    const rows_pair *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return p->b < q->b ? -1 : p->b > q->b;
}

pc_status pc__rows_fuse_strip(rows_run *run, size_t s, size_t first_climb)
{
    rows_graph *g = &run->graph;
    size_t w = run->width, bands = run->bands, S = run->strip_rows;
    size_t y0 = s * S, rows = run->height - y0 < S ? run->height - y0 : S, n = rows * w;
    size_t off = (y0 - run->held0) * w;
    const uint8_t *ok = run->ok + off;
    const float *modes = run->modes;
    const uint8_t *stop = run->stopped;
    int32_t *region = run->region;
    double hr2 = run->hr * run->hr;
    int small_on = run->min_size > 1;
    pc_status st;

    /* 1. Within the strip, as image_regions.c's fuse; a stopped climb's pixel stays alone for now. */
    pc__union_find uf = {n, run->uf};
    for (size_t p = 0; p < n; p++)
        uf.parent[p] = p;
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < w; c++) {
            size_t p = r * w + c;
            if (!ok[p] || stop[p])
                continue;
            for (int k = 0; k < 4; k++) {
                long rr = (long)r + FORWARD_DR[k], cc = (long)c + FORWARD_DC[k];
                if (rr >= (long)rows || cc < 0 || cc >= (long)w)
                    continue;
                size_t q = (size_t)rr * w + (size_t)cc;
                if (ok[q] && !stop[q] && pc__msi_dist2_f(modes + p * bands, modes + q * bands, bands) <= hr2)
                    pc__uf_union(&uf, p, q);
            }
        }
    }
    size_t next = 0;
    for (size_t p = 0; p < n; p++) {
        if (!ok[p]) {
            region[p] = -1;
            continue;
        }
        size_t root = pc__uf_find(&uf, p);
        region[p] = root == p ? (int32_t)next++ : region[root];
    }

    /* 2. The strip's regions join the run's: ids from base on, sizes and (integer pixels) sums. */
    size_t base = g->count, cap = g->cap;
    if (base + next > cap) {
        size_t c2 = cap;
        if ((st = grow((void **)&g->parent, &c2, base + next, sizeof *g->parent, "strip regions")) != PC_OK)
            return st;
        c2 = cap;
        if ((st = grow((void **)&g->size, &c2, base + next, sizeof *g->size, "strip regions")) != PC_OK)
            return st;
        if (g->sums) {
            c2 = cap;
            if ((st = grow((void **)&g->sum, &c2, base + next, bands * sizeof *g->sum, "strip regions")) != PC_OK)
                return st;
        }
        g->cap = c2;
    }
    for (size_t i = base; i < base + next; i++) {
        g->parent[i] = i;
        g->size[i] = 0;
    }
    if (g->sums && next > 0)
        memset(g->sum + base * bands, 0, next * bands * sizeof *g->sum);
    g->count = base + next;
    run->strip_base[s] = base;
    run->strip_base[s + 1] = base + next;
    for (size_t p = 0; p < n; p++) {
        if (region[p] < 0)
            continue;
        size_t id = base + (size_t)region[p];
        g->size[id]++;
        run->valid_count++;
        if (g->sums)
            for (size_t b = 0; b < bands; b++)
                g->sum[id * bands + b] += run->planes[b * run->plane_stride + off + p];
    }

    /* 3. Pairs of touching strip regions (for pruning: those with a side small within its strip; a
     *    region small in the whole image is small in every strip it crosses), and the tests that
     *    wait for a stopped climb. */
    size_t pairs_from = g->npairs;
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < w; c++) {
            size_t p = r * w + c;
            if (!ok[p])
                continue;
            for (int k = 0; k < 4; k++) {
                long rr = (long)r + FORWARD_DR[k], cc = (long)c + FORWARD_DC[k];
                if (rr >= (long)rows || cc < 0 || cc >= (long)w)
                    continue;
                size_t q = (size_t)rr * w + (size_t)cc;
                if (!ok[q] || region[q] == region[p])
                    continue;
                size_t a = base + (size_t)region[p], b = base + (size_t)region[q];
                if (small_on && (g->size[a] < run->min_size || g->size[b] < run->min_size) &&
                    (st = add_pair(g, a, b, pairs_from)) != PC_OK)
                    return st;
                if (stop[p] || stop[q]) {
                    size_t ma, mb;
                    if ((st = mode_ref(run, first_climb, y0 * w + p, stop[p], modes + p * bands, &ma)) != PC_OK ||
                        (st = mode_ref(run, first_climb, y0 * w + q, stop[q], modes + q * bands, &mb)) != PC_OK ||
                        (st = add_wait(g, a, b, ma, mb)) != PC_OK)
                        return st;
                }
            }
        }
    }

    /* 4. The seam: the last row of the strip before and this strip's first, the pairs (row above,
     *    column c) - (row below, c - 1 .. c + 1) that the whole image's fusion tests there. */
    if (s > 0) {
        for (size_t c = 0; c < w; c++) {
            size_t a = run->seam_region[c];
            if (a == PC__ROWS_NONE)
                continue;
            for (int dc = -1; dc <= 1; dc++) {
                long cc = (long)c + dc;
                if (cc < 0 || cc >= (long)w || !ok[cc])
                    continue;
                size_t q = (size_t)cc, b = base + (size_t)region[q];
                const float *mode_a = run->seam_modes + c * bands;
                int a_stopped = (run->seam_mode[c] & PC__ROWS_CLIMB) != 0;
                if (!a_stopped && !stop[q]) {
                    if (pc__msi_dist2_f(mode_a, modes + q * bands, bands) <= hr2)
                        join(g->parent, a, b);
                } else {
                    size_t ma = run->seam_mode[c], mb;
                    if ((!a_stopped && (st = save_mode(g, mode_a, &ma)) != PC_OK) ||
                        (st = mode_ref(run, first_climb, y0 * w + q, stop[q], modes + q * bands, &mb)) != PC_OK ||
                        (st = add_wait(g, a, b, ma, mb)) != PC_OK)
                        return st;
                }
                if (small_on && (g->size[a] < run->min_size || g->size[b] < run->min_size) &&
                    (st = add_pair(g, a, b, pairs_from)) != PC_OK)
                    return st;
            }
        }
    }
    /* This strip's pairs without repeats (pairs of two strips meet only here). */
    size_t np = g->npairs - pairs_from;
    if (np > 1) {
        rows_pair *v = g->pairs + pairs_from;
        qsort(v, np, sizeof *v, cmp_pair);
        size_t u = 1;
        for (size_t t = 1; t < np; t++)
            if (v[t].a != v[u - 1].a || v[t].b != v[u - 1].b)
                v[u++] = v[t];
        g->npairs = pairs_from + u;
    }

    /* 5. The last row, for the next seam. */
    for (size_t c = 0; c < w; c++) {
        size_t p = (rows - 1) * w + c;
        run->seam_region[c] = ok[p] ? base + (size_t)region[p] : PC__ROWS_NONE;
        run->seam_mode[c] = ok[p] && stop[p] ? PC__ROWS_CLIMB | climb_id(run, first_climb, y0 * w + p) : 0;
        memcpy(run->seam_modes + c * bands, modes + p * bands, bands * sizeof *modes);
    }
    note_peak(run);
    return PC_OK;
}

static const float *wait_mode(const rows_run *run, size_t ref)
{
    if (ref & PC__ROWS_CLIMB)
        return run->climbs.m + (ref & ~PC__ROWS_CLIMB) * run->bands;
    return run->graph.saved + ref * run->bands;
}

pc_status pc__rows_fuse_all(rows_run *run, size_t **fused_out, pc__msi_graph *fg)
{
    rows_graph *g = &run->graph;
    size_t bands = run->bands, R = g->count;
    double hr2 = run->hr * run->hr;
    for (size_t t = 0; t < g->nwaits; t++) {
        const rows_wait *wt = &g->waits[t];
        if (pc__msi_dist2_f(wait_mode(run, wt->ma), wait_mode(run, wt->mb), bands) <= hr2)
            join(g->parent, wt->a, wt->b);
    }
    free(g->waits);
    free(g->saved);
    g->waits = NULL;
    g->saved = NULL;
    g->nwaits = g->cap_waits = g->nsaved = g->cap_saved = 0;

    /* Roots in one pass up (a parent is never larger than its child), then fused numbers in place:
     * a root gets the next number, any other id its root's, already written since the root is
     * smaller. */
    size_t *parent = g->parent;
    for (size_t i = 0; i < R; i++)
        parent[i] = parent[parent[i]];
    size_t nf = 0;
    for (size_t i = 0; i < R; i++)
        parent[i] = parent[i] == i ? nf++ : parent[parent[i]];
    fg->regions = nf;
    fg->bands = bands;
    fg->size = pc__calloc(nf, sizeof *fg->size, "region sizes");
    fg->sum = pc__calloc(nf, bands * sizeof *fg->sum, "region sums");
    if (!fg->size || !fg->sum)
        return PC_OUT_OF_MEMORY;
    for (size_t i = 0; i < R; i++) {
        size_t f = parent[i];
        fg->size[f] += g->size[i];
        if (g->sums) /* integers: exact sums, in any order */
            for (size_t b = 0; b < bands; b++)
                fg->sum[f * bands + b] += g->sum[i * bands + b];
    }
    free(g->size);
    free(g->sum);
    g->size = NULL;
    g->sum = NULL;
    *fused_out = parent;
    g->parent = NULL;
    run->rep.strip_regions = R;
    run->rep.regions = nf;
    return PC_OK;
}

static int cmp_size(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    return a < b ? -1 : a > b;
}

pc_status pc__rows_neighbours(rows_run *run, const size_t *fused, pc__msi_graph *fg, size_t **start_out,
                              size_t **next_out)
{
    rows_graph *g = &run->graph;
    size_t R = fg->regions;
    int64_t min = run->min_size;
    size_t *start = pc__calloc(R + 1, sizeof *start, "region neighbour offsets");
    if (!start)
        return PC_OUT_OF_MEMORY;
    /* Count, then fill (start[r + 1] as region r's cursor), each small side listing the other. */
    for (size_t t = 0; t < g->npairs; t++) {
        size_t a = fused[g->pairs[t].a], b = fused[g->pairs[t].b];
        if (a == b)
            continue;
        start[a + 1] += fg->size[a] < min;
        start[b + 1] += fg->size[b] < min;
    }
    for (size_t r = 0; r < R; r++)
        start[r + 1] += start[r];
    size_t total = start[R];
    size_t *next = pc__alloc(total ? total : 1, sizeof *next, "region neighbours");
    if (!next) {
        free(start);
        return PC_OUT_OF_MEMORY;
    }
    for (size_t r = R; r > 0; r--)
        start[r] = start[r - 1];
    for (size_t t = 0; t < g->npairs; t++) {
        size_t a = fused[g->pairs[t].a], b = fused[g->pairs[t].b];
        if (a == b)
            continue;
        if (fg->size[a] < min)
            next[start[a + 1]++] = b;
        if (fg->size[b] < min)
            next[start[b + 1]++] = a;
    }
    size_t peak = total * sizeof *next + g->cap_pairs * sizeof(rows_pair);
    free(g->pairs);
    g->pairs = NULL;
    g->npairs = g->cap_pairs = 0;
    /* Each list sorted, without repeats, packed. */
    size_t out = 0, lo = 0;
    for (size_t r = 0; r < R; r++) {
        size_t hi = start[r + 1];
        qsort(next + lo, hi - lo, sizeof *next, cmp_size);
        start[r] = out;
        for (size_t j = lo; j < hi; j++)
            if (j == lo || next[j] != next[j - 1])
                next[out++] = next[j];
        lo = hi;
    }
    start[R] = out;
    run->rep.adjacencies = out;
    /* The prune's tables (image_regions.c): per region size, sums, means, union-find, roots, best,
     * its distance, order, label, offsets; per neighbour entry one index; the strip regions' map. */
    peak += R * (8 + 16 * fg->bands + 8 + 8 + 8 + 8 + 16 + 4 + 8 + 8) + run->rep.strip_regions * sizeof(size_t);
    if (peak > g->peak_bytes)
        g->peak_bytes = peak;
    *start_out = start;
    *next_out = next;
    return PC_OK;
}
