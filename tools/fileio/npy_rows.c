/* Labels .npy written by rows at their offsets (npy_rows.h). */
#include "npy_rows.h"

#include "npy_format.h"
#include "points_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static int write_all(int fd, const void *data, size_t bytes, off_t at)
{
    const unsigned char *p = data;
    while (bytes) {
        ssize_t w = pwrite(fd, p, bytes, at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        bytes -= (size_t)w;
        at += w;
    }
    return 0;
}

int pcli_npy_labels_create(const char *path, size_t n, size_t clusters, size_t *data_offset, char *err,
                           size_t errsize)
{
    pcli_npy_label_type t = pcli_npy_label_type_for(clusters);
    unsigned char header[PCLI_NPY_HEADER_MAX];
    size_t len = pcli_npy_header(header, t.descr, &n, 1);
    if (n > ((size_t)INT64_MAX - len) / t.size)
        return pcli_fail(err, errsize, "%s: %zu labels are too many for one file", path, n);
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return pcli_fail(err, errsize, "%s: cannot open for writing: %s", path, strerror(errno));
    if (write_all(fd, header, len, 0) || ftruncate(fd, (off_t)(len + t.size * n))) {
        int e = errno;
        close(fd);
        return pcli_fail(err, errsize, "%s: cannot write: %s", path, strerror(e ? e : EIO));
    }
    if (close(fd))
        return pcli_fail(err, errsize, "%s: cannot write: %s", path, strerror(errno));
    *data_offset = len;
    return 0;
}

int pcli_npy_labels_put(const char *path, size_t data_offset, size_t clusters, size_t first, const int32_t *labels,
                        size_t count, char *err, size_t errsize)
{
    if (!count)
        return 0;
    pcli_npy_label_type t = pcli_npy_label_type_for(clusters);
    unsigned char *packed = malloc(count * t.size);
    if (!packed)
        return pcli_fail(err, errsize, "%s: out of memory", path);
    size_t fit = pcli_npy_labels_pack(labels, count, t.size, packed);
    int rc = 0, fd = -1;
    if (fit < count)
        rc = pcli_fail(err, errsize, "%s: label %d at [%zu] is neither -1 nor one of the %zu clusters (0..%zu)", path,
                       labels[fit], first + fit, clusters, clusters ? clusters - 1 : 0);
    else if ((fd = open(path, O_WRONLY)) < 0)
        rc = pcli_fail(err, errsize, "%s: cannot open for writing: %s", path, strerror(errno));
    else if (write_all(fd, packed, count * t.size, (off_t)(data_offset + t.size * first))) {
        rc = pcli_fail(err, errsize, "%s: cannot write labels %zu to %zu: %s", path, first, first + count - 1,
                       strerror(errno ? errno : EIO));
        close(fd);
    } else if (close(fd))
        rc = pcli_fail(err, errsize, "%s: cannot write: %s", path, strerror(errno));
    free(packed);
    return rc;
}
