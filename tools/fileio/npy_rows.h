/* A .npy of labels written by several processes at once (parclust-mpi): one creates it with its
 * header and full length, each then writes its own rows at their offset. The file is byte for byte
 * what pcli_write_labels writes for the same labels and cluster count (shape (n,), the type of
 * npy_format.h). Errors as points_io.h's: 0, or -1 with one line naming the file in err. */
#ifndef PCLI_NPY_ROWS_H
#define PCLI_NPY_ROWS_H

#include <stddef.h>
#include <stdint.h>

/* Writes the header of n labels of `clusters` clusters into path (an existing, empty file: a staged
 * output) and extends it to its full length; *data_offset: where label 0 goes. */
int pcli_npy_labels_create(const char *path, size_t n, size_t clusters, size_t *data_offset, char *err,
                           size_t errsize);
/* Writes labels first .. first + count - 1 (in [0, clusters) or -1) into a file pcli_npy_labels_create
 * made for the same clusters. */
int pcli_npy_labels_put(const char *path, size_t data_offset, size_t clusters, size_t first, const int32_t *labels,
                        size_t count, char *err, size_t errsize);

#endif
