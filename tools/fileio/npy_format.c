/* The .npy header and label packing of npy_format.h. */
#include "npy_format.h"

#include <stdio.h>
#include <string.h>

size_t pcli_npy_header(unsigned char out[PCLI_NPY_HEADER_MAX], const char *descr, const size_t *shape, int ndim)
{
    char dims[96];
    if (ndim == 1)
        snprintf(dims, sizeof dims, "(%zu,)", shape[0]);
    else if (ndim == 2)
        snprintf(dims, sizeof dims, "(%zu, %zu)", shape[0], shape[1]);
    else
        snprintf(dims, sizeof dims, "(%zu, %zu, %zu)", shape[0], shape[1], shape[2]);
    char dict[160];
    int len = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, dims);
    size_t pad = (64 - (10 + (size_t)len + 1) % 64) % 64, hlen = (size_t)len + pad + 1;
    const unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                                   (unsigned char)(hlen >> 8)};
    memcpy(out, pre, sizeof pre);
    memcpy(out + sizeof pre, dict, (size_t)len);
    memset(out + sizeof pre + len, ' ', pad);
    out[sizeof pre + hlen - 1] = '\n';
    return sizeof pre + hlen;
}

pcli_npy_label_type pcli_npy_label_type_for(size_t clusters)
{
    if (clusters <= 128)
        return (pcli_npy_label_type){"|i1", 1};
    if (clusters <= 32768)
        return (pcli_npy_label_type){"<i2", 2};
    return (pcli_npy_label_type){"<i4", 4};
}

/* A block at a time: the range check is a branch-free OR over the block (so the loop vectorises), and
 * the first offender is looked for only when there is one. */
#define PACK_BLOCK 4096

size_t pcli_npy_labels_pack(const int32_t *labels, size_t n, size_t size, void *out)
{
    unsigned char *o = out;
    int32_t lo = size == 1 ? INT8_MIN : size == 2 ? INT16_MIN : INT32_MIN;
    uint32_t span = size == 1 ? 0xffu : size == 2 ? 0xffffu : 0xffffffffu;
    for (size_t at = 0; at < n; at += PACK_BLOCK) {
        size_t m = n - at < PACK_BLOCK ? n - at : PACK_BLOCK;
        const int32_t *l = labels + at;
        uint32_t outside = 0;
        for (size_t i = 0; i < m; i++)
            outside |= (uint32_t)((uint32_t)l[i] - (uint32_t)lo) > span;
        if (outside)
            for (size_t i = 0; i < m; i++)
                if ((uint32_t)((uint32_t)l[i] - (uint32_t)lo) > span)
                    return at + i;
        unsigned char *d = o + at * size;
        if (size == 1) {
            for (size_t i = 0; i < m; i++)
                d[i] = (unsigned char)(uint32_t)l[i];
        } else if (size == 2) {
            for (size_t i = 0; i < m; i++) {
                uint32_t u = (uint32_t)l[i];
                d[2 * i] = (unsigned char)u;
                d[2 * i + 1] = (unsigned char)(u >> 8);
            }
        } else {
            for (size_t i = 0; i < m; i++) {
                uint32_t u = (uint32_t)l[i];
                d[4 * i] = (unsigned char)u;
                d[4 * i + 1] = (unsigned char)(u >> 8);
                d[4 * i + 2] = (unsigned char)(u >> 16);
                d[4 * i + 3] = (unsigned char)(u >> 24);
            }
        }
    }
    return n;
}
