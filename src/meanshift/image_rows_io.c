/* pc_meanshift_image_rows' input and output: rows read through the caller's callback into the float
 * planes the filter reads (the same conversion as pc_meanshift_image's, so the same floats), the
 * rows held moved along the image so that each row is read once per sweep, and the scratch storage
 * of the strip regions' numbers (the caller's callbacks, or a temporary file). */
#include "image_rows_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

pc_status pc__rows_callback_failed(pc_status st, const char *what, size_t row0, size_t rows)
{
    return pc__fail(st, "image mean shift by rows: the %s callback failed on rows %zu to %zu (%s)", what, row0,
                    row0 + rows - 1, pc_status_string(st));
}

pc_status pc__rows_read_raw(rows_run *run, size_t row0, size_t rows)
{
    memset(run->valid, 1, rows * run->width);
    pc_status st = run->io->read(run->io->user, row0, rows, run->raw, run->valid);
    run->rep.rows_read += rows;
    return st == PC_OK ? PC_OK : pc__rows_callback_failed(st, "read", row0, rows);
}

/* The rows just read (raw, valid) into the planes from row `at` of those held: band values times
 * 2^e, NaN where invalid, as pc_meanshift_image's make_planes. */
static pc_status convert(rows_run *run, size_t row0, size_t rows, size_t at)
{
    size_t w = run->width, bands = run->bands, n = rows * w, stride = run->plane_stride;
    pc_points view = {run->raw, n, bands, 0, run->dtype};
    float row[64];
    float *wide = bands > 64 ? pc__alloc(bands, sizeof *wide, "pixel row") : NULL;
    if (bands > 64 && !wide)
        return PC_OUT_OF_MEMORY;
    float *v = wide ? wide : row;
    float *planes = run->planes + at * w;
    uint8_t *ok = run->ok + at * w;
    pc_status st = PC_OK;
    for (size_t i = 0; i < n; i++) {
        ok[i] = run->valid[i] != 0;
        if (!ok[i]) {
            for (size_t b = 0; b < bands; b++)
                planes[b * stride + i] = NAN;
            continue;
        }
        pc__points_row_f32(&view, i, v);
        for (size_t b = 0; b < bands; b++) {
            if (!isfinite(v[b])) {
                st = pc__fail(PC_INVALID_ARGUMENT,
                              "pixel (row %zu, col %zu), band %zu: %g is not a finite float (mark it invalid)",
                              row0 + i / w, i % w, b, (double)v[b]);
                goto done;
            }
            planes[b * stride + i] = ldexpf(v[b], run->e);
        }
    }
done:
    free(wide);
    return st;
}

pc_status pc__rows_hold(rows_run *run, size_t row0, size_t row1)
{
    size_t w = run->width, end = run->held0 + run->held, from = row0;
    double t0 = pc__now();
    if (run->held > 0 && row0 >= run->held0 && row0 <= end && row1 >= end) {
        /* Rows already held stay: moved to the front, and only the rows after them are read. */
        size_t shift = row0 - run->held0, keep = end - row0;
        if (shift > 0 && keep > 0) {
            for (size_t b = 0; b < run->bands; b++)
                memmove(run->planes + b * run->plane_stride, run->planes + b * run->plane_stride + shift * w,
                        keep * w * sizeof *run->planes);
            memmove(run->ok, run->ok + shift * w, keep * w);
        }
        from = end;
    }
    run->held0 = row0;
    run->held = from - row0;
    pc_status st = PC_OK;
    while (from < row1) {
        size_t rows = row1 - from < run->strip_rows ? row1 - from : run->strip_rows;
        if ((st = pc__rows_read_raw(run, from, rows)) != PC_OK ||
            (st = convert(run, from, rows, from - row0)) != PC_OK)
            break;
        from += rows;
        run->held += rows;
    }
    run->t_read += pc__now() - t0;
    return st;
}

/* ---------------------------------------------------------------- scratch */

pc_status pc__rows_scratch_open(rows_run *run)
{
    run->tmp.fd = -1;
    if (run->io->scratch_write)
        return PC_OK;
    const char *dir = run->io->scratch_dir;
    if (!dir || !*dir)
        dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    size_t len = strlen(dir) + 32;
    char *path = pc__alloc(len, 1, "temporary file name");
    if (!path)
        return PC_OUT_OF_MEMORY;
    snprintf(path, len, "%s/parclust-labels-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0) {
        pc_status st = pc__fail(PC_IO_ERROR, "cannot create a temporary file for the strips' labels in %s: %s", dir,
                                strerror(errno));
        free(path);
        return st;
    }
    /* Removed at once: the file lives while it is open, and nothing is left behind, however the
     * run ends. */
    unlink(path);
    free(path);
    run->tmp.fd = fd;
    return PC_OK;
}

void pc__rows_scratch_close(rows_run *run)
{
    if (run->tmp.fd >= 0)
        close(run->tmp.fd);
    run->tmp.fd = -1;
}

pc_status pc__rows_scratch_write(rows_run *run, size_t row0, size_t rows, const int32_t *labels)
{
    run->rep.scratch_bytes += (uint64_t)rows * run->width * sizeof *labels;
    if (run->io->scratch_write) {
        pc_status st = run->io->scratch_write(run->io->user, row0, rows, labels);
        return st == PC_OK ? PC_OK : pc__rows_callback_failed(st, "scratch_write", row0, rows);
    }
    const char *p = (const char *)labels;
    size_t left = rows * run->width * sizeof *labels;
    off_t at = (off_t)(row0 * run->width * sizeof *labels);
    while (left > 0) {
        ssize_t done = pwrite(run->tmp.fd, p, left, at);
        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0)
            return pc__fail(PC_IO_ERROR, "cannot write the strips' labels to the temporary file (rows %zu to %zu): %s",
                            row0, row0 + rows - 1, done < 0 ? strerror(errno) : "nothing written");
        p += done;
        left -= (size_t)done;
        at += done;
    }
    return PC_OK;
}

pc_status pc__rows_scratch_read(rows_run *run, size_t row0, size_t rows, int32_t *labels)
{
    if (run->io->scratch_read) {
        pc_status st = run->io->scratch_read(run->io->user, row0, rows, labels);
        return st == PC_OK ? PC_OK : pc__rows_callback_failed(st, "scratch_read", row0, rows);
    }
    char *p = (char *)labels;
    size_t left = rows * run->width * sizeof *labels;
    off_t at = (off_t)(row0 * run->width * sizeof *labels);
    while (left > 0) {
        ssize_t done = pread(run->tmp.fd, p, left, at);
        if (done < 0 && errno == EINTR)
            continue;
        if (done <= 0)
            return pc__fail(PC_IO_ERROR, "cannot read the strips' labels back from the temporary file (rows %zu to %zu): %s",
                            row0, row0 + rows - 1, done < 0 ? strerror(errno) : "file too short");
        p += done;
        left -= (size_t)done;
        at += done;
    }
    return PC_OK;
}
