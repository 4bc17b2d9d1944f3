/* What the HCA stream tests share: points of every type from float blobs, views of rows, and uneven
 * blocks in a shuffled order. */
#ifndef PC_TEST_HCA_STREAM_BLOCKS_H
#define PC_TEST_HCA_STREAM_BLOCKS_H

#include "parclust.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t type_size(pc_dtype t) { return t == PC_F64 ? 8 : t == PC_F32 ? 4 : t == PC_U16 ? 2 : 1; }

/* Points of `dtype` from float blobs: integers (rounded, clamped) for the integer types. */
static void *convert(const float *x, size_t count, pc_dtype t, double offset)
{
    unsigned char *out = malloc(count * type_size(t));
    for (size_t i = 0; i < count; i++) {
        double v = x[i] + offset;
        double r = nearbyint(v * (t == PC_U16 ? 97.0 : 4.0));
        if (t == PC_F32) {
            float f = (float)v;
            memcpy(out + 4 * i, &f, 4);
        } else if (t == PC_F64) {
            memcpy(out + 8 * i, &v, 8);
        } else if (t == PC_U16) {
            uint16_t u = (uint16_t)(r < 0 ? 0 : r > 65535 ? 65535 : r);
            memcpy(out + 2 * i, &u, 2);
        } else
            out[i] = (uint8_t)(r < 0 ? 0 : r > 255 ? 255 : r);
    }
    return out;
}

static pc_points view(const void *data, size_t n, size_t dim, pc_dtype t)
{
    pc_points p = {data, n, dim, 0, t};
    return p;
}

static pc_points rows_of(const pc_points *all, size_t from, size_t to)
{
    size_t stride = all->stride ? all->stride : all->dim * type_size(all->dtype);
    pc_points p = *all;
    p.data = (const unsigned char *)all->data + from * stride;
    p.n = to - from;
    return p;
}

/* Uneven blocks, visited in a shuffled order: block b covers rows start[b] .. start[b + 1] - 1. */
static size_t make_blocks(size_t n, uint64_t *rng, size_t *start, size_t *order, size_t max_blocks)
{
    size_t blocks = 0;
    start[0] = 0;
    while (start[blocks] < n && blocks + 1 < max_blocks) {
        *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
        size_t len = 1 + (size_t)((*rng >> 33) % (2 * n / (max_blocks / 2) + 1));
        start[blocks + 1] = start[blocks] + len < n ? start[blocks] + len : n;
        blocks++;
    }
    if (start[blocks] < n)
        start[++blocks] = n;
    for (size_t b = 0; b < blocks; b++)
        order[b] = b;
    for (size_t b = blocks; b > 1; b--) {
        *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
        size_t j = (size_t)((*rng >> 33) % b), tmp = order[b - 1];
        order[b - 1] = order[j];
        order[j] = tmp;
    }
    return blocks;
}

#endif
