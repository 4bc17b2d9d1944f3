/* parclust-mpi's input and labels: each rank its rows of a .npy (the header checked through the
 * reader's mapping, the rows read with pread at their offset), text read by rank 0 and scattered;
 * labels written by each rank at its offset. */
#include "mpi_cli.h"

#include "npy_rows.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int mpi_agree(const char *cmd, pc_status st, const char *message)
{
    if (pc_mpi_agree(MPI_COMM_WORLD, st, message) == PC_OK)
        return 0;
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        cli_error(cmd, "%s", pc_mpi_last_error());
    return -1;
}

int mpi_rank0_verdict(int rc)
{
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return rc ? -1 : 0;
}

int mpi_rows_of(const char *split, size_t total, int size, int rank, size_t *first, size_t *n, char *err,
                   size_t errsize)
{
    if (!split) {
        size_t base = total / (size_t)size, extra = total % (size_t)size, r = (size_t)rank;
        *first = r * base + (r < extra ? r : extra);
        *n = base + (r < extra ? 1 : 0);
        return 0;
    }
    size_t sum = 0;
    const char *p = split;
    for (int q = 0; q < size; q++) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || errno || *p == '-' || (q < size - 1 ? *end != ',' : *end != '\0'))
            return pcli_fail(err, errsize, "--split '%s': expected %d row counts separated by commas, one per rank",
                             split, size);
        if (q == rank) {
            *first = sum;
            *n = (size_t)v;
        }
        sum += (size_t)v;
        p = end + 1;
    }
    if (sum != total)
        return pcli_fail(err, errsize, "--split '%s': %zu rows in all, the input has %zu", split, sum, total);
    return 0;
}

static size_t element_size(pc_dtype t) { return t == PC_F64 ? 8 : t == PC_F32 ? 4 : t == PC_U16 ? 2 : 1; }

int mpi_read_input(const char *cmd, const char *path, pcli_header header, const char *split, mpi_input *in)
{
    memset(in, 0, sizeof *in);
    MPI_Comm_rank(MPI_COMM_WORLD, &in->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &in->size);
    char err[1024] = "";
    int npy = pcli_has_extension(path, ".npy");
    size_t n = 0;
    if (npy) { /* every rank maps the file and checks its header; the pages of other ranks' rows are never read */
        int rc = pcli_read_points_ex(path, header, &in->m, &in->info, err, sizeof err);
        if (mpi_agree(cmd, rc ? PC_IO_ERROR : PC_OK, err))
            return -1;
        in->total = in->m.n;
        rc = mpi_rows_of(split, in->total, in->size, in->rank, &in->first, &n, err, sizeof err);
        if (mpi_agree(cmd, rc ? PC_INVALID_ARGUMENT : PC_OK, err))
            return -1;
        pc_points all = cli_points_view(&in->m);
        size_t row = all.dim * element_size(all.dtype);
        in->points = all;
        in->points.data = (const unsigned char *)all.data + in->first * row;
        in->points.n = n;
        if (!in->m.map) /* converted on reading (integer types other than uint8/uint16): held already */
            return 0;
        /* The file itself: the rank's rows read with pread from their offset (the data end the file,
         * whose length the reader checked), so that an unreadable slice is an error (EIO) on its rank,
         * not a SIGBUS through the mapping; the mapping, of which only the header was touched, goes. */
        size_t bytes = n * row;
        off_t at = (off_t)(in->m.map_len - in->total * row + in->first * row);
        int fd = -1;
        rc = !(in->rows = malloc(bytes + 1)) ? pcli_fail(err, sizeof err, "rank %d: out of memory for its %zu rows",
                                                          in->rank, n)
             : (fd = open(path, O_RDONLY)) < 0 ? pcli_fail(err, sizeof err, "%s: cannot open: %s", path, strerror(errno))
                                               : 0;
        for (size_t done = 0; !rc && done < bytes;) {
            ssize_t got = pread(fd, (char *)in->rows + done, bytes - done, at + (off_t)done);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0)
                rc = pcli_fail(err, sizeof err, "%s: rank %d cannot read rows %zu to %zu: %s", path, in->rank, in->first,
                               in->first + n - 1, got < 0 ? strerror(errno) : "the file ends early");
            else
                done += (size_t)got;
        }
        if (fd >= 0)
            close(fd);
        if (mpi_agree(cmd, rc ? PC_IO_ERROR : PC_OK, err))
            return -1;
        in->points.data = in->rows;
        munmap(in->m.map, in->m.map_len);
        in->m.map = NULL;
        in->m.values = NULL;
        return 0;
    }
    /* Text: rank 0 reads and converts to float32, then scatters the rows. */
    const float *f32 = NULL;
    int rc = 0;
    if (in->rank == 0)
        rc = pcli_read_points_ex(path, header, &in->m, &in->info, err, sizeof err) ||
             !(f32 = pcli_matrix_f32(&in->m, err, sizeof err));
    if (mpi_agree(cmd, rc ? PC_IO_ERROR : PC_OK, err))
        return -1;
    unsigned long long shape[2] = {in->m.n, in->m.dim};
    MPI_Bcast(shape, 2, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    in->total = (size_t)shape[0];
    size_t dim = (size_t)shape[1];
    rc = mpi_rows_of(split, in->total, in->size, in->rank, &in->first, &n, err, sizeof err);
    if (!rc && n * dim > 0x7fffffffu)
        rc = pcli_fail(err, sizeof err, "%s: rank %d's %zu rows are too many for one message (use .npy)", path,
                       in->rank, n);
    if (!rc && !(in->rows = malloc((n * dim + 1) * sizeof(float))))
        rc = pcli_fail(err, sizeof err, "rank %d: out of memory for %zu rows", in->rank, n);
    if (mpi_agree(cmd, rc ? PC_INVALID_ARGUMENT : PC_OK, err))
        return -1;
    int *counts = NULL, *displs = NULL;
    if (in->rank == 0) {
        counts = calloc((size_t)in->size, sizeof *counts);
        displs = calloc((size_t)in->size, sizeof *displs);
        if (!counts || !displs) { /* (a few ints per rank) */
            fprintf(stderr, "%s %s: error: out of memory\n", cli_program, cmd);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    int mine = (int)(n * dim), at = (int)(in->first * dim);
    MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gather(&at, 1, MPI_INT, displs, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Scatterv(f32, counts, displs, MPI_FLOAT, in->rows, mine, MPI_FLOAT, 0, MPI_COMM_WORLD);
    free(counts);
    free(displs);
    in->points = pc_points_f32(in->rows, n, dim);
    return 0;
}

void mpi_input_free(mpi_input *in)
{
    pcli_matrix_free(&in->m);
    free(in->rows);
    memset(in, 0, sizeof *in);
}

int mpi_write_labels(const char *cmd, cli_outputs *out, const char *target, const mpi_input *in,
                     const int32_t *labels, size_t clusters)
{
    char err[1024] = "";
    const char *staged = NULL;
    int rc = 0;
    if (!pcli_has_extension(target, ".npy")) { /* text: gathered to rank 0, written there */
        int32_t *all = NULL;
        int *counts = NULL, *displs = NULL;
        if (in->rank == 0) {
            all = malloc((in->total + 1) * sizeof *all);
            counts = calloc((size_t)in->size, sizeof *counts);
            displs = calloc((size_t)in->size, sizeof *displs);
            if (!all || !counts || !displs || in->total > 0x7fffffffu)
                rc = pcli_fail(err, sizeof err, "%s: %zu labels: out of memory, or too many for text (use .npy)",
                               target, in->total);
        }
        if (mpi_agree(cmd, rc ? PC_OUT_OF_MEMORY : PC_OK, err)) {
            free(all);
            free(counts);
            free(displs);
            return -1;
        }
        int mine = (int)in->points.n, at = (int)in->first;
        MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Gather(&at, 1, MPI_INT, displs, 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Gatherv(labels, mine, MPI_INT32_T, all, counts, displs, MPI_INT32_T, 0, MPI_COMM_WORLD);
        if (in->rank == 0) {
            if (!(staged = cli_outputs_stage(out, target)))
                rc = -1;
            else if (pcli_write_labels(staged, all, in->total, clusters, err, sizeof err)) {
                cli_outputs_error(out, err);
                rc = -1;
            }
        }
        free(all);
        free(counts);
        free(displs);
        return mpi_rank0_verdict(rc);
    }
    /* .npy: rank 0 stages the file with its header and length, every rank writes its rows in it. */
    unsigned long long offset = 0;
    char path[4096] = "";
    if (in->rank == 0) {
        size_t data = 0;
        if (!(staged = cli_outputs_stage(out, target)))
            rc = -1;
        else if (strlen(staged) >= sizeof path || pcli_npy_labels_create(staged, in->total, clusters, &data, err, sizeof err)) {
            cli_outputs_error(out, err[0] ? err : "the staging name is too long");
            rc = -1;
        } else {
            strcpy(path, staged);
            offset = data;
        }
    }
    if (mpi_rank0_verdict(rc))
        return -1;
    MPI_Bcast(path, (int)sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
    MPI_Bcast(&offset, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    rc = pcli_npy_labels_put(path, (size_t)offset, clusters, in->first, labels, in->points.n, err, sizeof err);
    char named[sizeof err + sizeof path + 32] = "";
    if (rc) { /* the staging name means nothing to the user: the target's (the message starts with it) */
        size_t len = strlen(path);
        snprintf(named, sizeof named, "rank %d: %s%s", in->rank, target,
                 strncmp(err, path, len) == 0 ? err + len : err);
    }
    return mpi_agree(cmd, rc ? PC_IO_ERROR : PC_OK, named);
}

int mpi_pick_device(const char *cmd, pc_backend backend)
{
    if (backend != PC_BACKEND_CUDA && backend != PC_BACKEND_AUTO)
        return 0;
    MPI_Comm local;
    int rank = 0, local_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);
    int count = pc_cuda_device_count();
    pc_status st = count > 0 ? pc_cuda_select_device(local_rank % count) : PC_OK; /* none: AUTO runs on the CPU */
    char why[300] = "";
    if (st != PC_OK)
        snprintf(why, sizeof why, "rank %d: %s", rank, pc_last_error());
    return mpi_agree(cmd, st, why);
}
