/* parclust-mpi segment: parclust segment (HCA, k-means) across ranks. Each rank reads its own rows of
 * the raster (tools/fileio/raster_window.c: a GeoTIFF through GDAL, a .npy through a mapping), keeps
 * its valid pixels in raster order, and the ranks cluster them together (pc_mpi_hca, pc_mpi_kmeans:
 * the valid pixels of all ranks in rank order are the in-memory run's, so are the labels). Rank 0
 * writes the one label raster (GeoTIFF or .npy, as parclust segment writes it: type by cluster count,
 * nodata, georeferencing, --ot, --co), its own rows and then each rank's, received in row order. */
#include "mpi_cli.h"
#include "preview.h"
#include "raster_window.h"
#include "segment_cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse(int argc, char **argv, void *ctx)
{
    int rc = cli_segment_parse(argc, argv, ctx);
    return rc > 0 ? -2 : rc; /* --help */
}

/* This rank's valid pixels, compacted, from its window. */
static void *compact(const pcli_image *win, size_t pixel_bytes)
{
    void *out = malloc(win->n_valid * pixel_bytes + 1);
    if (!out)
        return NULL;
    const unsigned char *src = win->pixels;
    unsigned char *dst = out;
    for (size_t i = 0; i < win->width * win->height; i++)
        if (pcli_image_is_valid(win, i)) {
            memcpy(dst, src + i * pixel_bytes, pixel_bytes);
            dst += pixel_bytes;
        }
    return out;
}

int mpi_cmd_segment(int argc, char **argv)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *cmd = "segment", *split = NULL;
    seg_cli c;
    cli_segment_defaults(&c);
    if (mpi_take_split(cmd, &argc, argv, &split))
        return CLI_USAGE;
    int rc = mpi_parse(parse, argc, argv, &c);
    if (rc == -2)
        return CLI_OK;
    if (rc)
        return CLI_USAGE;
    const char *refused = c.algorithm != ALG_HCA && c.algorithm != ALG_KMEANS
                              ? "only --algorithm hca and kmeans run across ranks"
                                      : NULL;
    if (refused) {
        if (rank == 0)
            cli_error(cmd, "%s", refused);
        return CLI_USAGE;
    }
    if (!pcli_have_gdal() && (!cli_has_extension(c.input, ".npy") || !cli_has_extension(c.output, ".npy"))) {
        if (rank == 0)
            cli_error(cmd, "this parclust was built without raster support (GDAL): only .npy images and labels "
                           "can be segmented");
        return CLI_FAILED;
    }
    cli_outputs out;
    cli_outputs_init(&out, cmd);
    cli_outputs_input(&out, "the input image", c.input);
    cli_outputs_input(&out, "the --truth raster", c.truth);
    cli_outputs_input(&out, "the --init file", c.init_file);
    cli_outputs_add(&out, "--output", c.output);
    cli_outputs_add(&out, "--preview", c.preview);
    if (mpi_rank0_verdict(rank == 0 ? cli_outputs_check(&out) : 0))
        return CLI_FAILED;
    if (mpi_pick_device(cmd, c.algorithm == ALG_HCA ? c.hca.backend : c.km.backend))
        return CLI_FAILED;
    char err[1024] = "";
    pcli_window_reader *reader = NULL;
    pcli_image hdr, win;
    memset(&hdr, 0, sizeof hdr);
    memset(&win, 0, sizeof win);
    int bad = pcli_window_open(c.input, &c.read, &reader, &hdr, err, sizeof err);
    if (!bad && c.truth && rank == 0) { /* its size and type, before any pixel is read */
        char why[900];
        if (pcli_labels_check(c.truth, hdr.width, hdr.height, why, sizeof why))
            bad = snprintf(err, sizeof err, "--truth %s", why) > 0;
    }
    if (mpi_agree(cmd, bad ? PC_IO_ERROR : PC_OK, err)) {
        pcli_window_close(reader);
        pcli_image_free(&hdr);
        return CLI_FAILED;
    }
    size_t y0 = 0, rows = 0, W = hdr.width, B = hdr.bands, pixel_bytes = B * pcli_pixtype_size(hdr.type);
    bad = mpi_rows_of(split, hdr.height, size, rank, &y0, &rows, err, sizeof err);
    void *buf = NULL, *pixels = NULL;
    uint8_t *valid = NULL;
    if (!bad && (!(buf = malloc(rows * W * pixel_bytes + 1)) || !(valid = malloc((rows * W + 7) / 8 + 1))))
        bad = pcli_fail(err, sizeof err, "rank %d: out of memory for rows %zu to %zu", rank, y0, y0 + rows - 1) != 0;
    if (!bad && rows) {
        win.valid = valid;
        for (size_t b = 0; b < B; b++) {
            win.lo[b] = INFINITY;
            win.hi[b] = -INFINITY;
        }
        char why[900];
        if (pcli_window_read(reader, y0, rows, buf, &win, why, sizeof why))
            bad = pcli_fail(err, sizeof err, "rank %d (rows %zu to %zu): %s", rank, y0, y0 + rows - 1, why) != 0;
        else if (!(pixels = compact(&win, pixel_bytes)))
            bad = pcli_fail(err, sizeof err, "rank %d: out of memory for its valid pixels", rank) != 0;
    }
    win.width = W;
    win.height = rows;
    win.valid = valid;
    size_t n = rows ? win.n_valid : 0;
    rc = CLI_FAILED;
    int32_t *labels = NULL;
    pc_result *r = NULL;
    float *centres = NULL, *paint = NULL;
    pcli_picture picture = {0, 0, 0, 0, 0, NULL};
    unsigned char *rowbuf = NULL;
    pcli_raster_writer *writer = NULL;
    /* k-means --init FILE: read by rank 0, its centres (held units) sent to all. */
    float *init = NULL;
    if (!bad && c.algorithm == ALG_KMEANS && c.init_file) {
        int ok = 1;
        if (rank == 0)
            ok = (init = seg_read_init(c.init_file, c.km.k, B, hdr.offset)) != NULL; /* printed */
        MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (!ok) /* rank 0 said why */
            goto done;
        if (rank != 0 && !(init = malloc(c.km.k * B * sizeof *init + 1)))
            bad = pcli_fail(err, sizeof err, "rank %d: out of memory", rank) != 0;
        MPI_Bcast(init, (int)(c.km.k * B), MPI_FLOAT, 0, MPI_COMM_WORLD);
        c.km.initial_centers = init;
        c.km.init = PC_INIT_GIVEN;
    }
    if (mpi_agree(cmd, bad ? PC_IO_ERROR : PC_OK, err))
        goto done;
    labels = malloc((n + 1) * sizeof *labels);
    pc_points pts = hdr.type == PCLI_PIX_U8    ? pc_points_u8(pixels, n, B)
                    : hdr.type == PCLI_PIX_U16 ? pc_points_u16(pixels, n, B)
                                               : pc_points_f32(pixels, n, B);
    double t1 = MPI_Wtime();
    pc_status st = !labels ? pc_mpi_agree(MPI_COMM_WORLD, PC_OUT_OF_MEMORY, "out of memory for the labels")
                   : c.algorithm == ALG_HCA ? pc_mpi_hca(MPI_COMM_WORLD, &pts, &c.hca, labels, &r, &centres)
                                            : pc_mpi_kmeans(MPI_COMM_WORLD, &pts, &c.km, labels, &r, NULL);
    double t_cluster = MPI_Wtime() - t1;
    if (st != PC_OK) {
        if (rank == 0)
            cli_error(cmd, "%s: %s", c.input, pc_mpi_last_error());
        goto done;
    }
    size_t k = pc_result_cluster_count(r);
    /* --preview: the bands' valid ranges over every rank's rows (a rank without valid pixels adds none),
     * and the centres in the file's units (int16 is held shifted), as parclust segment paints them. */
    double lo[PCLI_MAX_BANDS], hi[PCLI_MAX_BANDS];
    for (size_t b = 0; b < B; b++) {
        lo[b] = n ? win.lo[b] : INFINITY;
        hi[b] = n ? win.hi[b] : -INFINITY;
    }
    MPI_Allreduce(lo, hdr.lo, (int)B, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(hi, hdr.hi, (int)B, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && c.preview) {
        const float *held = c.algorithm == ALG_HCA ? centres : pc_result_centers(r);
        if (!(paint = malloc((k * B + 1) * sizeof *paint))) {
            snprintf(err, sizeof err, "%s: out of memory for the clusters' colours", c.preview);
            bad = 1;
        } else if (pcli_picture_init(&picture, W, hdr.height, c.preview_size, err, sizeof err))
            bad = 1;
        for (size_t i = 0; paint && i < k * B; i++)
            paint[i] = (float)(held[i] - hdr.offset);
    }
    if (mpi_agree(cmd, bad ? PC_OUT_OF_MEMORY : PC_OK, err))
        goto done;
    unsigned long long valid_all = 0, mine = n;
    MPI_Allreduce(&mine, &valid_all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    pcli_label_type type = pcli_label_type_of_output(c.output, c.labels_format.type, k);
    if (rank == 0)
        printf("segment: %s, %zu x %zu pixels, %zu band%s (held as %s), %llu valid; %s: %zu clusters, %.3f s "
               "(%d ranks)\n", c.input, W, hdr.height, B, B == 1 ? "" : "s", pcli_pixtype_name(hdr.type), valid_all,
               c.algorithm == ALG_HCA ? "hca" : "k-means", k, t_cluster, size);
    if (k > pcli_label_type_max_clusters(type)) {
        if (rank == 0)
            cli_error(cmd, "%zu clusters do not fit a %s label raster (--ot)", k, pcli_label_type_name(type));
        goto done;
    }
    if (c.truth && mpi_score_truth(cmd, c.truth, &win, y0, hdr.height, labels, n))
        goto done;
    /* The label rows of this rank in the raster's label type. */
    size_t lb = pcli_label_type_size(type);
    if (!(rowbuf = malloc(rows * W * lb + 1)))
        bad = pcli_fail(err, sizeof err, "rank %d: out of memory for its label rows", rank) != 0;
    else if (rows)
        pcli_window_labels(&win, labels, type, rowbuf);
    if (mpi_agree(cmd, bad ? PC_OUT_OF_MEMORY : PC_OK, err))
        goto done;
    /* Rank 0 writes the raster: its rows, then every rank's in turn (received whole, or in pieces of
     * at most 1 GiB of rows). A failed write on rank 0 still takes the rows (no rank waits forever). */
    const char *path = NULL;
    int wrong = 0;
    if (rank == 0) {
        pcli_raster_spec spec = {W, hdr.height, 1, pcli_label_type_raster(type), 1, pcli_label_type_nodata(type),
                                 hdr.has_geotransform ? hdr.geotransform : NULL, 0, hdr.projection, &c.labels_format};
        wrong = !(path = cli_outputs_stage(&out, c.output)) ||
                pcli_raster_create(path, &spec, &writer, err, sizeof err);
        if (!wrong && rows)
            wrong = pcli_raster_write_rows(writer, y0, rows, rowbuf, err, sizeof err);
        if (picture.labels && rows)
            pcli_picture_sample(&picture, y0, rows, rowbuf, type);
    }
    size_t piece = ((size_t)1 << 30) / (W * lb) ? ((size_t)1 << 30) / (W * lb) : 1;
    for (int q = 1; q < size; q++) {
        unsigned long long range[2] = {y0, rows};
        if (rank == q)
            MPI_Send(range, 2, MPI_UNSIGNED_LONG_LONG, 0, 0, MPI_COMM_WORLD);
        if (rank == 0)
            MPI_Recv(range, 2, MPI_UNSIGNED_LONG_LONG, q, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        unsigned char *other = NULL;
        if (rank == 0 && range[1] && !(other = malloc((range[1] < piece ? range[1] : piece) * W * lb))) {
            wrong = 1;
            snprintf(err, sizeof err, "rank 0: out of memory for rank %d's label rows", q);
        }
        for (size_t at = 0; at < range[1]; at += piece) {
            size_t count = range[1] - at < piece ? range[1] - at : piece;
            if (rank == q)
                MPI_Send(rowbuf + at * W * lb, (int)(count * W * lb), MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            if (rank == 0) {
                if (!other) { /* a few MiB could not be had: no way to take the rows, none to go on */
                    fprintf(stderr, "%s %s: error: %s\n", cli_program, cmd, err);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                MPI_Recv(other, (int)(count * W * lb), MPI_BYTE, q, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (!wrong)
                    wrong = pcli_raster_write_rows(writer, (size_t)range[0] + at, count, other, err, sizeof err);
                if (picture.labels)
                    pcli_picture_sample(&picture, (size_t)range[0] + at, count, other, type);
            }
        }
        free(other);
    }
    if (rank == 0) {
        if (writer) {
            if (wrong)
                pcli_raster_abort(writer);
            else
                wrong = pcli_raster_close(writer, err, sizeof err);
            writer = NULL;
        }
        if (!wrong && c.preview)
            wrong = !(path = cli_outputs_stage(&out, c.preview)) ||
                    pcli_picture_write(&picture, path, &hdr, paint, k, c.palette, err, sizeof err);
        rc = cli_outputs_finish(&out, wrong, path, err);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
done:
    if (rank == 0 && rc != CLI_OK && writer)
        pcli_raster_abort(writer);
    if (rank == 0 && rc != CLI_OK)
        cli_outputs_discard(&out);
    pcli_picture_free(&picture);
    free(paint);
    free(rowbuf);
    free(labels);
    free(centres);
    free(init);
    free(pixels);
    free(buf);
    free(valid);
    pc_result_free(r);
    pcli_window_close(reader);
    pcli_image_free(&hdr);
    return rc;
}
