/* Pieces of NumPy's .npy format that every writer shares: the version 1.0 header, and the integer
 * type labels are stored in. Depends on libc only. */
#ifndef PCLI_NPY_FORMAT_H
#define PCLI_NPY_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* The longest header pcli_npy_header writes for up to 3 dimensions. */
#define PCLI_NPY_HEADER_MAX 256

/* Writes the header of a C-order array of `descr` ("<f4", "|i1", ...) and shape[0 .. ndim) (ndim 1 to
 * 3) into out (PCLI_NPY_HEADER_MAX bytes), padded with spaces and ended by '\n' so that the data
 * start at a multiple of 64 bytes, as numpy.save lays it out. Returns its length. */
size_t pcli_npy_header(unsigned char out[PCLI_NPY_HEADER_MAX], const char *descr, const size_t *shape, int ndim);

/* Labels are stored in the smallest signed type that holds -1 (noise, nodata) and 0 .. clusters - 1:
 * int8 up to 128 clusters, int16 up to 32768, int32 beyond. A quarter of int32's bytes for the
 * common case, which is what bounds writing a label file (issue 12). */
typedef struct {
    const char *descr; /* "|i1", "<i2" or "<i4" */
    size_t size;       /* 1, 2 or 4 bytes */
} pcli_npy_label_type;
pcli_npy_label_type pcli_npy_label_type_for(size_t clusters);

/* labels[0 .. n) as little-endian signed values of `size` bytes (1, 2 or 4) at out. Returns n, or
 * the index of the first label the type cannot hold (out is then incomplete): a caller's cluster
 * count that was too small must not become labels cut short. */
size_t pcli_npy_labels_pack(const int32_t *labels, size_t n, size_t size, void *out);

#endif
