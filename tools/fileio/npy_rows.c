/* Labels .npy written by rows at their offsets (npy_rows.h). */
#include "npy_rows.h"

#include "points_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* NumPy's format 1.0 header for '<i4' (n,): the dict padded with spaces and ended by '\n' so that the
 * data start at a multiple of 64 bytes, as numpy.save (and points_io.c's writer) lay it out. */
static size_t labels_header(unsigned char *out, size_t room, size_t n)
{
    char dict[160];
    int len = snprintf(dict, sizeof dict, "{'descr': '<i4', 'fortran_order': False, 'shape': (%zu,), }", n);
    size_t pad = (64 - (10 + (size_t)len + 1) % 64) % 64, hlen = (size_t)len + pad + 1;
    if (10 + hlen > room)
        return 0;
    const unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff),
                                   (unsigned char)(hlen >> 8)};
    memcpy(out, pre, sizeof pre);
    memcpy(out + 10, dict, (size_t)len);
    memset(out + 10 + len, ' ', pad);
    out[10 + hlen - 1] = '\n';
    return 10 + hlen;
}

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

int pcli_npy_labels_create(const char *path, size_t n, size_t *data_offset, char *err, size_t errsize)
{
    unsigned char header[256];
    size_t len = labels_header(header, sizeof header, n);
    if (n > ((size_t)INT64_MAX - len) / 4)
        return pcli_fail(err, errsize, "%s: %zu labels are too many for one file", path, n);
    int fd = open(path, O_WRONLY);
    if (fd < 0)
        return pcli_fail(err, errsize, "%s: cannot open for writing: %s", path, strerror(errno));
    if (write_all(fd, header, len, 0) || ftruncate(fd, (off_t)(len + 4 * n))) {
        int e = errno;
        close(fd);
        return pcli_fail(err, errsize, "%s: cannot write: %s", path, strerror(e ? e : EIO));
    }
    if (close(fd))
        return pcli_fail(err, errsize, "%s: cannot write: %s", path, strerror(errno));
    *data_offset = len;
    return 0;
}

int pcli_npy_labels_put(const char *path, size_t data_offset, size_t first, const int32_t *labels, size_t count,
                        char *err, size_t errsize)
{
    if (!count)
        return 0;
    const uint16_t one = 1;
    unsigned char little;
    memcpy(&little, &one, 1);
    int32_t *swapped = NULL;
    if (!little) { /* .npy '<i4' is little-endian */
        if (!(swapped = malloc(count * sizeof *swapped)))
            return pcli_fail(err, errsize, "%s: out of memory", path);
        for (size_t i = 0; i < count; i++) {
            uint32_t u = (uint32_t)labels[i];
            u = (u >> 24) | ((u >> 8) & 0xff00u) | ((u << 8) & 0xff0000u) | (u << 24);
            memcpy(&swapped[i], &u, 4);
        }
        labels = swapped;
    }
    int fd = open(path, O_WRONLY);
    int rc = 0;
    if (fd < 0)
        rc = pcli_fail(err, errsize, "%s: cannot open for writing: %s", path, strerror(errno));
    else if (write_all(fd, labels, count * sizeof *labels, (off_t)(data_offset + 4 * first))) {
        rc = pcli_fail(err, errsize, "%s: cannot write labels %zu to %zu: %s", path, first, first + count - 1,
                       strerror(errno ? errno : EIO));
        close(fd);
    } else if (close(fd))
        rc = pcli_fail(err, errsize, "%s: cannot write: %s", path, strerror(errno));
    free(swapped);
    return rc;
}
