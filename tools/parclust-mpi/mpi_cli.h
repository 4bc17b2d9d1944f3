/* What parclust-mpi's commands share: the rank's slice of the input, the agreement on failures (one
 * message, from rank 0), and the labels written by every rank at its offset. The options are
 * parclust's own (tools/parclust/cli.h's parsers). */
#ifndef PARCLUST_MPI_CLI_H
#define PARCLUST_MPI_CLI_H

#include "cli.h"
#include "parclust_mpi.h"
#include "raster_io.h"

typedef struct {
    int rank, size;
    pcli_matrix m;       /* .npy: the header (checked through a mapping) and the shape; text:
                            read by rank 0 */
    void *rows;          /* this rank's rows: read from the .npy, or (text, float32) scattered from rank 0 */
    pc_points points;    /* this rank's rows */
    size_t total, first; /* rows of the data, index of this rank's first */
    pcli_read_info info; /* rank 0's */
} mpi_input;

/* Reads this rank's rows of path: rows first .. first + n - 1 where split (NULL: the even split, the
 * first N mod P ranks one row more; else "R0,R1,...", a row count per rank adding up to N) says. 0, or
 * -1 on every rank (message printed by rank 0) when any rank failed. */
int mpi_read_input(const char *cmd, const char *path, pcli_header header, const char *split, mpi_input *in);
void mpi_input_free(mpi_input *in);
/* This rank's rows of `total` (rows of a file, of an image): split as mpi_read_input says. 0, or -1
 * with the message in err. */
int mpi_rows_of(const char *split, size_t total, int size, int rank, size_t *first, size_t *n, char *err,
                size_t errsize);

/* Agrees on st across the ranks; when it failed anywhere, rank 0 prints the message (one line) and
 * every rank gets -1. */
int mpi_agree(const char *cmd, pc_status st, const char *message);
/* Rank 0's verdict (0 or -1, its message printed by it) on every rank. */
int mpi_rank0_verdict(int rc);

/* segment --truth (truth.c): this rank's valid pixels (rows: its rows' image, from image row y0 of
 * `height`; labels: n, one a valid pixel) against its rows of the truth raster; rank 0 prints parclust
 * segment's line of scores over every rank's pixels. 0, or -1 on every rank (printed by rank 0). */
int mpi_score_truth(const char *cmd, const char *truth_path, const pcli_image *rows, size_t y0, size_t height,
                    const int32_t *labels, size_t n);

/* Rank 0 staged the labels output (out, registered as --labels); every rank writes its labels (in
 * [0, clusters) or -1, clusters the same on every rank): .npy at its offset, text gathered to rank 0.
 * 0, or -1 on every rank (printed by rank 0). */
int mpi_write_labels(const char *cmd, cli_outputs *out, const char *target, const mpi_input *in,
                     const int32_t *labels, size_t clusters);

/* --backend cuda or auto on a host with GPUs: this rank's GPU is the local rank (MPI_COMM_TYPE_SHARED)
 * modulo the devices present, so P ranks on a host of P GPUs use one each. 0, or -1 on every rank
 * (printed by rank 0). */
int mpi_pick_device(const char *cmd, pc_backend backend);

/* rank_threads.c: sets the OpenMP threads of this rank where OMP_NUM_THREADS does not (its share of
 * the cores it may use, one left to MPI and CUDA from 8 up); collective, once after MPI_Init. */
void mpi_choose_threads(void);
/* Collective: the slowest rank's setup, compute, communication and finish seconds, printed by rank 0 under
 * --verbose with the threads a rank and why. */
void mpi_print_rank_times(const double parts[4], int verbose);

/* options.c: takes "--split V" out of argv (in place; *split NULL when absent); -1 when V is missing
 * (printed by rank 0). Then mpi_parse: parse(argc, argv, ctx), one of parclust's parsers, run by rank
 * 0 first (errors and --help printed once), by the others once it succeeded; its result (0, -1, -2). */
int mpi_take_split(const char *cmd, int *argc, char **argv, const char **split);
/* The same for any option of parclust-mpi's own, "NAME V" or "NAME=V". */
int mpi_take_option(const char *cmd, const char *name, int *argc, char **argv, const char **value);
int mpi_parse(int (*parse)(int, char **, void *), int argc, char **argv, void *ctx);

#endif
