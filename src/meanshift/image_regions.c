/* From filtered pixels to regions: adjacent pixels with close modes are fused (union-find, so the
 * regions do not depend on the order pixels are visited), small regions are merged into their most
 * similar neighbour, and the regions are numbered by size. */
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

static double dist2_f(const float *a, const float *b, size_t bands)
{
    double d2 = 0;
    for (size_t k = 0; k < bands; k++) {
        double d = (double)a[k] - b[k];
        d2 += d * d;
    }
    return d2;
}

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
                if (im->ok[q] && dist2_f(modes + p * bands, modes + q * bands, bands) <= hr2)
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

typedef struct {
    size_t regions, bands;
    int64_t *size;  /* per region; meaningful for roots */
    double *sum;    /* regions x bands sums of the original values */
    double *mean;   /* regions x bands, refreshed for the roots each round */
    pc__union_find uf;
} region_set;

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

/* Rounds: every region smaller than min_size picks its neighbour of closest mean (ties: the lower
 * index), then all picks are joined at once and the means updated. Picks depend only on the state at
 * the start of a round, so the outcome is the same whatever order pixels are scanned in. A round
 * grows every small region that has a neighbour, so there are fewer than min_size rounds. */
static pc_status prune(const pc__msi_image *im, const int32_t *region, region_set *rs, int64_t min_size)
{
    size_t w = im->width, h = im->height, n = w * h, bands = rs->bands, R = rs->regions;
    pc_status st = PC_OK;
    size_t small = 0;
    for (size_t p = 0; p < n; p++)
        small += region[p] >= 0 && rs->size[region[p]] < min_size;
    if (small == 0)
        return PC_OK;
    size_t *pixels = pc__alloc(small, sizeof *pixels, "small-region pixel list");
    size_t *roots = pc__alloc(R, sizeof *roots, "region list");
    size_t *best = pc__alloc(R, sizeof *best, "closest neighbours");
    double *best_d2 = pc__alloc(R, sizeof *best_d2, "closest neighbour distances");
    if (!pixels || !roots || !best || !best_d2) {
        st = PC_OUT_OF_MEMORY;
        goto done;
    }
    size_t npix = 0, nroots = R;
    for (size_t p = 0; p < n; p++)
        if (region[p] >= 0 && rs->size[region[p]] < min_size)
            pixels[npix++] = p;
    for (size_t g = 0; g < R; g++)
        roots[g] = g;
    while (npix > 0) {
        for (size_t t = 0; t < nroots; t++) {
            size_t g = roots[t];
            best[g] = SIZE_MAX;
            best_d2[g] = INFINITY;
            for (size_t k = 0; k < bands; k++)
                rs->mean[g * bands + k] = rs->sum[g * bands + k] / (double)rs->size[g];
        }
        for (size_t t = 0; t < npix; t++) {
            size_t p = pixels[t], r = p / w, c = p % w;
            size_t a = pc__uf_find(&rs->uf, (size_t)region[p]);
            for (int k = 0; k < 8; k++) {
                long rr = (long)r + NEIGHBOUR_DR[k], cc = (long)c + NEIGHBOUR_DC[k];
                if (rr < 0 || rr >= (long)h || cc < 0 || cc >= (long)w)
                    continue;
                int32_t lq = region[(size_t)rr * w + (size_t)cc];
                if (lq < 0)
                    continue;
                size_t b = pc__uf_find(&rs->uf, (size_t)lq);
                if (b == a)
                    continue;
                double d2 = dist2_d(rs->mean + a * bands, rs->mean + b * bands, bands);
                if (d2 < best_d2[a] || (d2 == best_d2[a] && b < best[a])) {
                    best_d2[a] = d2;
                    best[a] = b;
                }
            }
        }
        size_t joined = 0;
        for (size_t t = 0; t < nroots; t++) {
            size_t g = roots[t];
            if (best[g] != SIZE_MAX && rs->size[g] < min_size)
                joined += (size_t)pc__uf_union(&rs->uf, g, best[g]);
        }
        if (joined == 0)
            break; /* the small regions left have no neighbour */
        /* Old roots that stopped being roots hand their pixels and sums to their new root, in index
         * order. */
        size_t kept = 0;
        for (size_t t = 0; t < nroots; t++) {
            size_t g = roots[t], top = pc__uf_find(&rs->uf, g);
            if (top == g) {
                roots[kept++] = g;
                continue;
            }
            rs->size[top] += rs->size[g];
            for (size_t k = 0; k < bands; k++)
                rs->sum[top * bands + k] += rs->sum[g * bands + k];
        }
        nroots = kept;
        size_t left = 0;
        for (size_t t = 0; t < npix; t++) {
            size_t p = pixels[t];
            if (rs->size[pc__uf_find(&rs->uf, (size_t)region[p])] < min_size)
                pixels[left++] = p;
        }
        npix = left;
    }
done:
    free(pixels);
    free(roots);
    free(best);
    free(best_d2);
    return st;
}

pc_status pc__msi_regions(const pc__msi_image *im, const float *modes, double hr, int64_t min_size, pc_result *res)
{
    size_t n = im->width * im->height, bands = im->bands;
    region_set rs;
    memset(&rs, 0, sizeof rs);
    ranked *order = NULL;
    int32_t *number = NULL;
    pc_status st;
    double t0 = pc__now();
    int32_t *region = pc__alloc(n, sizeof *region, "region labels");
    if (!region)
        return PC_OUT_OF_MEMORY;
    size_t R = 0;
    if ((st = fuse(im, modes, hr, region, &R)) != PC_OK)
        goto fail;
    rs.regions = R;
    rs.bands = bands;
    rs.size = pc__calloc(R, sizeof *rs.size, "region sizes");
    rs.sum = pc__calloc(R, bands * sizeof *rs.sum, "region sums");
    rs.mean = pc__alloc(R, bands * sizeof *rs.mean, "region means");
    if (!rs.size || !rs.sum || !rs.mean || pc__uf_init(&rs.uf, R) != 0) {
        st = PC_OUT_OF_MEMORY;
        goto fail;
    }
    for (size_t p = 0; p < n; p++) {
        if (region[p] < 0)
            continue;
        size_t g = (size_t)region[p];
        rs.size[g]++;
        for (size_t k = 0; k < bands; k++)
            rs.sum[g * bands + k] += im->planes[k * im->plane_stride + p];
    }
    double t1 = pc__now();
    pc__result_add_stage(res, "fuse", t1 - t0);
    if (min_size > 1 && (st = prune(im, region, &rs, min_size)) != PC_OK)
        goto fail;

    /* Number the surviving regions by size, largest first. */
    order = pc__alloc(R, sizeof *order, "region order");
    number = pc__alloc(R, sizeof *number, "region numbers");
    if (!order || !number) {
        st = PC_OUT_OF_MEMORY;
        goto fail;
    }
    size_t k = 0;
    for (size_t g = 0; g < R; g++)
        if (pc__uf_find(&rs.uf, g) == g)
            order[k++] = (ranked){rs.size[g], g};
    qsort(order, k, sizeof *order, by_size_then_first);
    for (size_t t = 0; t < k; t++)
        number[order[t].root] = (int32_t)t;
    res->centers = pc__alloc(k, bands * sizeof *res->centers, "region centres");
    res->sizes = pc__alloc(k, sizeof *res->sizes, "region sizes");
    if (!res->centers || !res->sizes) {
        st = PC_OUT_OF_MEMORY;
        goto fail;
    }
    for (size_t t = 0; t < k; t++) {
        size_t g = order[t].root;
        res->sizes[t] = order[t].size;
        for (size_t b = 0; b < bands; b++)
            res->centers[t * bands + b] = (float)(rs.sum[g * bands + b] / (double)order[t].size);
    }
    for (size_t p = 0; p < n; p++)
        if (region[p] >= 0)
            region[p] = number[pc__uf_find(&rs.uf, (size_t)region[p])];
    res->labels = region;
    region = NULL;
    res->k = k;
    pc__result_add_stage(res, "prune", pc__now() - t1);
    st = PC_OK;
fail:
    free(region);
    free(order);
    free(number);
    free(rs.size);
    free(rs.sum);
    free(rs.mean);
    pc__uf_free(&rs.uf);
    return st;
}
