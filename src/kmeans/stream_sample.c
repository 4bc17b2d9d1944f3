/* The k-means stream's sample for the initialisation: of all the points, the `cap` whose indices hash
 * to the smallest keys. A point's key is a fixed function of the seed and its index, so the sample does
 * not depend on how the points were cut into blocks, the blocks' order, the threads, or which stream
 * scanned which block: two samples merge into the one a single stream would have drawn (bottom-k
 * sampling; with a hash of the index, it is a uniform sample without replacement). */
#include "stream_internal.h"

#include <stdlib.h>

uint64_t pc__km_sample_key(uint64_t seed, uint64_t index)
{
    /* splitmix64's finaliser of index + a seed-dependent offset: one-to-one in the index, so that keys
     * never tie. */
    uint64_t z = index + (seed ^ 0x5851F42D4C957F2Dull) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

pc_status pc__km_sample_init(pc__km_sample *s, size_t cap, size_t dim)
{
    memset(s, 0, sizeof *s);
    s->cap = cap;
    s->dim = dim;
    if (cap == 0)
        return PC_OK;
    s->key = pc__alloc(cap, sizeof *s->key, "k-means sample");
    s->index = pc__alloc(cap, sizeof *s->index, "k-means sample");
    s->heap = pc__alloc(cap, sizeof *s->heap, "k-means sample");
    s->rows = dim ? pc__alloc(cap, dim * sizeof *s->rows, "k-means sample") : NULL;
    if (!s->key || !s->index || !s->heap || (dim && !s->rows)) {
        pc__km_sample_free(s);
        return PC_OUT_OF_MEMORY;
    }
    return PC_OK;
}

void pc__km_sample_free(pc__km_sample *s)
{
    free(s->key);
    free(s->index);
    free(s->heap);
    free(s->rows);
    memset(s, 0, sizeof *s);
}

uint64_t pc__km_sample_ceiling(const pc__km_sample *s)
{
    if (s->cap == 0)
        return 0; /* no sample (given centres) */
    return s->count < s->cap ? UINT64_MAX : s->key[s->heap[0]];
}

static void sift_down(pc__km_sample *s, size_t i, size_t count)
{
    size_t *h = s->heap;
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < count && s->key[h[l]] > s->key[h[m]])
            m = l;
        if (l + 1 < count && s->key[h[l + 1]] > s->key[h[m]])
            m = l + 1;
        if (m == i)
            return;
        size_t t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

void pc__km_sample_offer(pc__km_sample *s, uint64_t key, uint64_t index, const float *row)
{
    size_t slot;
    if (s->count < s->cap) {
        slot = s->count;
        s->heap[s->count] = slot;
    } else if (s->cap > 0 && key < s->key[s->heap[0]])
        slot = s->heap[0]; /* replaces the largest key kept */
    else
        return;
    s->key[slot] = key;
    s->index[slot] = index;
    if (s->dim)
        memcpy(s->rows + slot * s->dim, row, s->dim * sizeof *row);
    if (s->count < s->cap) { /* a new leaf, sifted up */
        size_t i = s->count++;
        while (i > 0) {
            size_t p = (i - 1) / 2;
            if (s->key[s->heap[p]] >= s->key[s->heap[i]])
                break;
            size_t t = s->heap[p];
            s->heap[p] = s->heap[i];
            s->heap[i] = t;
            i = p;
        }
    } else
        sift_down(s, 0, s->count);
}

void pc__km_sample_merge(pc__km_sample *into, const pc__km_sample *from)
{
    for (size_t i = 0; i < from->count; i++) {
        size_t slot = from->heap[i];
        const float *row = from->rows ? from->rows + slot * from->dim : NULL;
        pc__km_sample_offer(into, from->key[slot], from->index[slot], row);
    }
}

static int by_index(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

pc_status pc__km_sample_rows(const pc__km_sample *s, float *out)
{
    /* In index order: when the sample holds every point, they are the points in their own order, and
     * the initialisation draws what pc_kmeans draws from them. */
    uint64_t *order = pc__alloc(s->count, 2 * sizeof *order, "k-means sample order");
    if (!order)
        return PC_OUT_OF_MEMORY;
    for (size_t i = 0; i < s->count; i++) {
        order[2 * i] = s->index[i];
        order[2 * i + 1] = i;
    }
    qsort(order, s->count, 2 * sizeof *order, by_index);
    for (size_t i = 0; i < s->count; i++)
        memcpy(out + i * s->dim, s->rows + order[2 * i + 1] * s->dim, s->dim * sizeof *out);
    free(order);
    return PC_OK;
}
