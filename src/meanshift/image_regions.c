/* From filtered pixels to regions: adjacent pixels with close modes are fused (union-find, so the
 * regions do not depend on the order pixels are visited), small regions are merged into their most
 * similar neighbour, and the regions are numbered by size. Pruning and numbering work on the graph of
 * regions (sizes, sums, who touches whom), which pc_meanshift_image_rows builds strip by strip. */
#include "image_internal.h"

#include "../core/union_find.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The 8-neighbourhood: diagonal contact keeps one-pixel-wide diagonal structures in one piece, as
 * EDISON's region labelling does. The first four are the "forward" ones, enough to visit each
 * pixel pair once. */
static const int NEIGHBOUR_DR[8] = {0, 1, 1, 1, 0, -1, -1, -1};
static const int NEIGHBOUR_DC[8] = {1, -1, 0, 1, -1, 1, 0, -1};

static double dist2_d(const double *a, const double *b, size_t bands)
{
    double d2 = 0;
    for (size_t k = 0; k < bands; k++) {
        double d = a[k] - b[k];
        d2 += d * d;
    }
    return d2;
}

/* Joins pixels whose modes lie within hr; writes each valid pixel's region (0 .. *count - 1, in the
 * order of the regions' first pixels) or -1 into region. */
static pc_status fuse(const pc__msi_image *im, const float *modes, double hr, int32_t *region, size_t *count)
{
    size_t w = im->width, h = im->height, n = w * h, bands = im->bands;
    pc__union_find uf;
    if (pc__uf_init(&uf, n) != 0)
        return PC_OUT_OF_MEMORY;
    double hr2 = hr * hr;
    for (size_t r = 0; r < h; r++) {
        for (size_t c = 0; c < w; c++) {
            size_t p = r * w + c;
            if (!im->ok[p])
                continue;
            for (int k = 0; k < 4; k++) {
                long rr = (long)r + NEIGHBOUR_DR[k], cc = (long)c + NEIGHBOUR_DC[k];
                if (rr >= (long)h || cc < 0 || cc >= (long)w)
                    continue;
                size_t q = (size_t)rr * w + (size_t)cc;
                if (im->ok[q] && pc__msi_dist2_f(modes + p * bands, modes + q * bands, bands) <= hr2)
                    pc__uf_union(&uf, p, q);
            }
        }
    }
    /* A set's root is its smallest member, its first pixel in raster order: the root gets its number
     * before any other member is reached. */
    size_t next = 0;
    for (size_t p = 0; p < n; p++) {
        if (!im->ok[p]) {
            region[p] = -1;
            continue;
        }
        size_t root = pc__uf_find(&uf, p);
        region[p] = root == p ? (int32_t)next++ : region[root];
    }
    pc__uf_free(&uf);
    *count = next;
    return PC_OK;
}

/* The smallest root with its size and index: the ordering of the final numbering. */
typedef struct {
    int64_t size;
    size_t root;
} ranked;

static int by_size_then_first(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return x->root < y->root ? -1 : x->root > y->root;
}

/* What pruning visits: units (the pixels of the small regions, or the small regions themselves),
 * each in one region to begin with and touching some regions. visit() gives a unit's region and its
 * neighbouring regions (*list, the count returned; buf: room for 8 it may use; list NULL: the region
 * only). */
typedef struct {
    const void *ctx;
    size_t (*visit)(const void *ctx, size_t unit, size_t *owner, size_t buf[8], const size_t **list);
    size_t *units; /* those in small regions; the list shrinks as they grow */
    size_t count;
} prune_units;

/* Rounds: every region smaller than min_size picks its neighbour of closest mean (ties: the lower
 * index, i.e. the one whose first pixel comes first), then all picks are joined at once and the means
 * updated. Picks depend only on the state at the start of a round, so the outcome is the same
 * whatever order units and neighbours are visited in, and whether the units are pixels or regions.
 * A round grows every small region that has a neighbour, so there are fewer than min_size rounds. */
static pc_status prune(pc__msi_graph *g, pc__union_find *uf, prune_units *u, int64_t min_size)
{
    size_t bands = g->bands, R = g->regions;
    int64_t *size = g->size;
    double *sum = g->sum;
    pc_status st = PC_OK;
    size_t *roots = pc__alloc(R, sizeof *roots, "region list");
    size_t *best = pc__alloc(R, sizeof *best, "closest neighbours");
    double *best_d2 = pc__alloc(R, sizeof *best_d2, "closest neighbour distances");
    double *mean = pc__alloc(R, bands * sizeof *mean, "region means");
    if (!roots || !best || !best_d2 || !mean) {
        st = PC_OUT_OF_MEMORY;
        goto done;
    }
    size_t nroots = R, buf[8];
    for (size_t r = 0; r < R; r++)
        roots[r] = r;
    while (u->count > 0) {
        for (size_t t = 0; t < nroots; t++) {
            size_t r = roots[t];
            best[r] = SIZE_MAX;
            best_d2[r] = INFINITY;
            for (size_t k = 0; k < bands; k++)
                mean[r * bands + k] = sum[r * bands + k] / (double)size[r];
        }
        for (size_t t = 0; t < u->count; t++) {
            size_t owner;
            const size_t *list;
            size_t count = u->visit(u->ctx, u->units[t], &owner, buf, &list);
            size_t a = pc__uf_find(uf, owner);
            for (size_t j = 0; j < count; j++) {
                size_t b = pc__uf_find(uf, list[j]);
                if (b == a)
                    continue;
                double d2 = dist2_d(mean + a * bands, mean + b * bands, bands);
                if (d2 < best_d2[a] || (d2 == best_d2[a] && b < best[a])) {
                    best_d2[a] = d2;
                    best[a] = b;
                }
            }
        }
        size_t joined = 0;
        for (size_t t = 0; t < nroots; t++) {
            size_t r = roots[t];
            if (best[r] != SIZE_MAX && size[r] < min_size)
                joined += (size_t)pc__uf_union(uf, r, best[r]);
        }
        if (joined == 0)
            break; /* the small regions left have no neighbour */
        /* Old roots that stopped being roots hand their sizes and sums to their new root, in index
         * order. */
        size_t kept = 0;
        for (size_t t = 0; t < nroots; t++) {
            size_t r = roots[t], top = pc__uf_find(uf, r);
            if (top == r) {
                roots[kept++] = r;
                continue;
            }
            size[top] += size[r];
            for (size_t k = 0; k < bands; k++)
                sum[top * bands + k] += sum[r * bands + k];
        }
        nroots = kept;
        size_t left = 0;
        for (size_t t = 0; t < u->count; t++) {
            size_t owner;
            (void)u->visit(u->ctx, u->units[t], &owner, buf, NULL);
            if (size[pc__uf_find(uf, owner)] < min_size)
                u->units[left++] = u->units[t];
        }
        u->count = left;
    }
done:
    free(roots);
    free(best);
    free(best_d2);
    free(mean);
    return st;
}

/* Numbers the regions left after pruning (uf: who joined whom) by size, largest first. */
static pc_status number(pc__msi_graph *g, pc__union_find *uf, int32_t *label, pc_result *res)
{
    size_t R = g->regions, bands = g->bands;
    ranked *order = pc__alloc(R, sizeof *order, "region order");
    if (!order)
        return PC_OUT_OF_MEMORY;
    pc_status st = PC_OK;
    size_t k = 0;
    for (size_t r = 0; r < R; r++)
        if (pc__uf_find(uf, r) == r)
            order[k++] = (ranked){g->size[r], r};
    if (k > (size_t)INT32_MAX) {
        st = pc__fail(PC_INVALID_ARGUMENT, "%zu regions do not fit 32-bit labels", k);
        goto done;
    }
    qsort(order, k, sizeof *order, by_size_then_first);
    for (size_t t = 0; t < k; t++)
        label[order[t].root] = (int32_t)t;
    res->centers = pc__alloc(k, bands * sizeof *res->centers, "region centres");
    res->sizes = pc__alloc(k, sizeof *res->sizes, "region sizes");
    if (!res->centers || !res->sizes) {
        st = PC_OUT_OF_MEMORY;
        goto done;
    }
    for (size_t t = 0; t < k; t++) {
        size_t r = order[t].root;
        res->sizes[t] = order[t].size;
        for (size_t b = 0; b < bands; b++)
            res->centers[t * bands + b] = (float)(g->sum[r * bands + b] / (double)order[t].size);
    }
    for (size_t r = 0; r < R; r++) /* a root comes before its members: it is the smallest */
        label[r] = label[pc__uf_find(uf, r)];
    res->k = k;
done:
    free(order);
    return st;
}

/* Units that are regions, with neighbour lists. */
static size_t region_visit(const void *ctx, size_t unit, size_t *owner, size_t buf[8], const size_t **list)
{
    const pc__msi_graph *g = ctx;
    (void)buf;
    *owner = unit;
    if (!list)
        return 0;
    *list = g->next + g->start[unit];
    return g->start[unit + 1] - g->start[unit];
}

pc_status pc__msi_prune_number(pc__msi_graph *g, int64_t min_size, int32_t *label, pc_result *res)
{
    pc__union_find uf;
    prune_units u = {g, region_visit, NULL, 0};
    pc_status st = PC_OK;
    if (pc__uf_init(&uf, g->regions) != 0)
        return PC_OUT_OF_MEMORY;
    if (min_size > 1 && g->start) {
        for (size_t r = 0; r < g->regions; r++)
            u.count += g->size[r] < min_size;
        if (u.count > 0) {
            u.units = pc__alloc(u.count, sizeof *u.units, "small-region list");
            if (!u.units) {
                st = PC_OUT_OF_MEMORY;
                goto done;
            }
            u.count = 0;
            for (size_t r = 0; r < g->regions; r++)
                if (g->size[r] < min_size)
                    u.units[u.count++] = r;
            if ((st = prune(g, &uf, &u, min_size)) != PC_OK)
                goto done;
        }
    }
    st = number(g, &uf, label, res);
done:
    free(u.units);
    pc__uf_free(&uf);
    return st;
}

/* Units that are pixels (the in-memory image): a pixel's region and those of its 8 neighbours. */
typedef struct {
    const pc__msi_image *im;
    const int32_t *region;
} pixel_units;

static size_t pixel_visit(const void *ctx, size_t p, size_t *owner, size_t buf[8], const size_t **list)
{
    const pixel_units *pu = ctx;
    size_t w = pu->im->width, h = pu->im->height, r = p / w, c = p % w, count = 0;
    *owner = (size_t)pu->region[p];
    if (!list)
        return 0;
    for (int k = 0; k < 8; k++) {
        long rr = (long)r + NEIGHBOUR_DR[k], cc = (long)c + NEIGHBOUR_DC[k];
        if (rr < 0 || rr >= (long)h || cc < 0 || cc >= (long)w)
            continue;
        int32_t lq = pu->region[(size_t)rr * w + (size_t)cc];
        if (lq >= 0)
            buf[count++] = (size_t)lq;
    }
    *list = buf;
    return count;
}

pc_status pc__msi_regions(const pc__msi_image *im, const float *modes, double hr, int64_t min_size, pc_result *res)
{
    size_t n = im->width * im->height, bands = im->bands;
    pc__msi_graph g;
    memset(&g, 0, sizeof g);
    pc__union_find uf = {0, NULL};
    int32_t *label = NULL;
    pc_status st;
    double t0 = pc__now();
    int32_t *region = pc__alloc(n, sizeof *region, "region labels");
    if (!region)
        return PC_OUT_OF_MEMORY;
    size_t R = 0;
    if ((st = fuse(im, modes, hr, region, &R)) != PC_OK)
        goto fail;
    g.regions = R;
    g.bands = bands;
    g.size = pc__calloc(R, sizeof *g.size, "region sizes");
    g.sum = pc__calloc(R, bands * sizeof *g.sum, "region sums");
    label = pc__alloc(R, sizeof *label, "region numbers");
    if (!g.size || !g.sum || !label) {
        st = PC_OUT_OF_MEMORY;
        goto fail;
    }
    for (size_t p = 0; p < n; p++) {
        if (region[p] < 0)
            continue;
        size_t r = (size_t)region[p];
        g.size[r]++;
        for (size_t k = 0; k < bands; k++)
            g.sum[r * bands + k] += im->planes[k * im->plane_stride + p];
    }
    double t1 = pc__now();
    pc__result_add_stage(res, "fuse", t1 - t0);
    if (pc__uf_init(&uf, R) != 0) {
        st = PC_OUT_OF_MEMORY;
        goto fail;
    }
    if (min_size > 1) {
        pixel_units pu = {im, region};
        prune_units u = {&pu, pixel_visit, NULL, 0};
        for (size_t p = 0; p < n; p++)
            u.count += region[p] >= 0 && g.size[region[p]] < min_size;
        if (u.count > 0) {
            u.units = pc__alloc(u.count, sizeof *u.units, "small-region pixel list");
            if (!u.units) {
                st = PC_OUT_OF_MEMORY;
                goto fail;
            }
            u.count = 0;
            for (size_t p = 0; p < n; p++)
                if (region[p] >= 0 && g.size[region[p]] < min_size)
                    u.units[u.count++] = p;
            st = prune(&g, &uf, &u, min_size);
            free(u.units);
            if (st != PC_OK)
                goto fail;
        }
    }
    if ((st = number(&g, &uf, label, res)) != PC_OK)
        goto fail;
    for (size_t p = 0; p < n; p++)
        if (region[p] >= 0)
            region[p] = label[region[p]];
    res->labels = region;
    region = NULL;
    pc__result_add_stage(res, "prune", pc__now() - t1);
    st = PC_OK;
fail:
    free(region);
    free(label);
    free(g.size);
    free(g.sum);
    pc__uf_free(&uf);
    return st;
}
