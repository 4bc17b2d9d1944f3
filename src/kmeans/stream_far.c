/* The points farthest from their centres, for scikit-learn's empty-cluster rule: a bounded list that
 * any order of offers, and any merging of lists, leaves holding the same points (internal_km.h). */
#include "internal_km.h"

#include <stdlib.h>

pc_status pc__km_far_init(pc__km_far *f, size_t cap, size_t dim)
{
    memset(f, 0, sizeof *f);
    f->cap = cap;
    f->dim = dim;
    if (cap == 0)
        return PC_OK;
    f->dist = pc__alloc(cap, sizeof *f->dist, "farthest points");
    f->label = pc__alloc(cap, sizeof *f->label, "farthest points");
    f->x = pc__alloc(cap, dim * sizeof *f->x, "farthest points");
    f->heap = pc__alloc(cap, sizeof *f->heap, "farthest points");
    if (!f->dist || !f->label || !f->x || !f->heap) {
        pc__km_far_free(f);
        return PC_OUT_OF_MEMORY;
    }
    return PC_OK;
}

void pc__km_far_free(pc__km_far *f)
{
    free(f->dist);
    free(f->label);
    free(f->x);
    free(f->heap);
    memset(f, 0, sizeof *f);
}

void pc__km_far_clear(pc__km_far *f)
{
    f->count = 0;
    f->floor = 0;
}

/* Slot a is farther than slot b: a larger distance, or the same and smaller coordinates. */
static int farther(const pc__km_far *f, size_t a, size_t b)
{
    if (f->dist[a] != f->dist[b])
        return f->dist[a] > f->dist[b];
    const float *xa = f->x + a * f->dim, *xb = f->x + b * f->dim;
    for (size_t d = 0; d < f->dim; d++)
        if (xa[d] != xb[d])
            return xa[d] < xb[d];
    return 0;
}

static void sift_down(pc__km_far *f, size_t i, size_t count)
{
    size_t *h = f->heap;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < count && farther(f, h[m], h[l]))
            m = l;
        if (l + 1 < count && farther(f, h[m], h[l + 1]))
            m = l + 1;
        if (m == i)
            return;
        size_t t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

void pc__km_far_push(pc__km_far *f, double dist, int32_t label, const float *x)
{
    if (f->cap == 0)
        return;
    size_t slot;
    if (f->count < f->cap) {
        slot = f->count;
        f->heap[f->count] = slot;
    } else {
        /* Full: the new point replaces the top (the nearest kept) if it is farther than it. The spare
         * comparison goes through the top's own slot after a copy would lose it, so compare first. */
        size_t top = f->heap[0];
        if (dist == f->dist[top]) {
            const float *xt = f->x + top * f->dim;
            size_t d = 0;
            while (d < f->dim && x[d] == xt[d])
                d++;
            if (d == f->dim || !(x[d] < xt[d]))
                return; /* not farther */
        } else if (dist < f->dist[top])
            return;
        slot = top;
    }
    f->dist[slot] = dist;
    f->label[slot] = label;
    memcpy(f->x + slot * f->dim, x, f->dim * sizeof *x);
    if (f->count < f->cap) { /* sift the new leaf up */
        size_t i = f->count++;
        while (i > 0) {
            size_t p = (i - 1) / 2;
            if (!farther(f, f->heap[p], f->heap[i]))
                break;
            size_t t = f->heap[p];
            f->heap[p] = f->heap[i];
            f->heap[i] = t;
            i = p;
        }
    } else
        sift_down(f, 0, f->count);
    f->floor = f->count == f->cap ? f->dist[f->heap[0]] : 0;
}

void pc__km_far_merge(pc__km_far *into, const pc__km_far *from)
{
    for (size_t i = 0; i < from->count; i++) {
        size_t s = from->heap[i];
        pc__km_far_offer(into, from->dist[s], from->label[s], from->x + s * from->dim);
    }
}

void pc__km_far_sort(pc__km_far *f)
{
    /* Heap sort: the nearest goes to the end, and so on; equal points are interchangeable. */
    for (size_t n = f->count; n > 1; n--) {
        size_t t = f->heap[0];
        f->heap[0] = f->heap[n - 1];
        f->heap[n - 1] = t;
        sift_down(f, 0, n - 1);
    }
}

void pc__km_relocate_fixed(const pc__km_far *sorted, size_t k, size_t dim, float scale, int64_t *sums,
                           int64_t *counts)
{
    /* The clusters empty before any point moves, as scikit-learn lists them (marked -1): a cluster
     * that a move empties stays so, and the choice does not depend on how many points the list holds. */
    for (size_t c = 0; c < k; c++)
        counts[c] = counts[c] == 0 ? -1 : counts[c];
    size_t next = 0;
    for (size_t c = 0; c < k; c++) {
        if (counts[c] != -1)
            continue;
        if (next == sorted->count) { /* cannot happen: the list holds min(k - 1, n) >= empty points */
            counts[c] = 0;
            continue;
        }
        size_t s = sorted->heap[next++];
        const float *x = sorted->x + s * dim;
        size_t from = (size_t)sorted->label[s]; /* a cluster that had points: never marked */
        for (size_t d = 0; d < dim; d++) {
            int64_t q = pc__km_fixed(x[d], scale);
            sums[from * dim + d] -= q;
            sums[c * dim + d] = q;
        }
        counts[from]--;
        counts[c] = 1;
    }
}
