/* parclust-mpi kmeans: parclust kmeans across ranks (pc_mpi_kmeans), the same options and outputs. */
#include "mpi_cli.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    km_cli c;
    pc_kmeans_params p;
} km_args;

static int parse(int argc, char **argv, void *ctx)
{
    km_args *a = ctx;
    return cli_kmeans_parse(argc, argv, &a->c, &a->p);
}

int mpi_cmd_kmeans(int argc, char **argv)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *cmd = "kmeans", *split = NULL;
    km_args a = {0};
    pc_kmeans_params_init(&a.p);
    const char *rounds_text = NULL, *over_text = NULL;
    if (mpi_take_split(cmd, &argc, argv, &split) ||
        mpi_take_option(cmd, "--kpar-rounds", &argc, argv, &rounds_text) ||
        mpi_take_option(cmd, "--kpar-oversampling", &argc, argv, &over_text))
        return CLI_USAGE;
    int rc = mpi_parse(parse, argc, argv, &a);
    if (rc == -2)
        return CLI_OK;
    if (rc)
        return CLI_USAGE;
    if (a.c.out.plot) {
        if (rank == 0)
            cli_error(cmd, "--plot is not available across ranks (the points stay on their ranks)");
        return CLI_USAGE;
    }
    /* --kpar-rounds / --kpar-oversampling: k-means|| across the ranks (Spark's) instead of on the
     * gathered sample; --init kmeans-par then means that one. */
    int kpar = rounds_text || over_text, rounds = 2;
    double oversampling = 2;
    char *end = NULL;
    if (kpar && ((rounds_text && (rounds = (int)strtol(rounds_text, &end, 10), !end || *end || rounds < 1 ||
                                  rounds > 1000)) ||
                 (over_text && (oversampling = strtod(over_text, &end), !end || *end || !(oversampling > 0) ||
                                oversampling > 1e6)) ||
                 (a.p.init != PC_INIT_KMEANS_PARALLEL))) {
        if (rank == 0)
            cli_error(cmd, a.p.init != PC_INIT_KMEANS_PARALLEL
                               ? "--kpar-rounds and --kpar-oversampling go with --init kmeans-par"
                               : "--kpar-rounds takes 1 to 1000 rounds, --kpar-oversampling a factor > 0 (x k)");
        return CLI_USAGE;
    }
    double t_start = MPI_Wtime();
    cli_outputs out;
    cli_outputs_init(&out, cmd);
    cli_outputs_input(&out, "the input", a.c.input);
    cli_outputs_input(&out, "the --init file", a.c.init_file);
    cli_outputs_add_common(&out, &a.c.out);
    if (mpi_rank0_verdict(rank == 0 ? cli_outputs_check(&out) : 0))
        return CLI_FAILED;
    if (mpi_pick_device(cmd, a.p.backend)) /* the k-means stream's CUDA backend: one GPU per rank */
        return CLI_FAILED;
    mpi_input in;
    if (mpi_read_input(cmd, a.c.input, a.c.header, split, &in))
        return CLI_FAILED;
    pcli_matrix init = {0};
    char err[1024] = "";
    int bad = 0;
    if (a.c.init_file) { /* small: every rank reads it */
        pcli_read_info init_read;
        if (pcli_read_points_ex(a.c.init_file, a.c.header, &init, &init_read, err, sizeof err))
            bad = 1;
        else if (init.n != a.p.k || init.dim != in.points.dim)
            bad = pcli_fail(err, sizeof err, "%s: %zu centres of %zu values, expected %zu of %zu (-k and the points' "
                            "dimensions)", a.c.init_file, init.n, init.dim, a.p.k, in.points.dim) != 0;
        else if (!(a.p.initial_centers = pcli_matrix_f32(&init, err, sizeof err)))
            bad = 1;
    }
    if (mpi_agree(cmd, bad ? PC_IO_ERROR : PC_OK, err) ||
        mpi_rank0_verdict(rank == 0 ? cli_outputs_room_common(&out, &a.c.out, in.total, in.points.dim, a.p.k) : 0)) {
        pcli_matrix_free(&init);
        mpi_input_free(&in);
        return CLI_FAILED;
    }
    int32_t *labels = malloc((in.points.n + 1) * sizeof *labels);
    pc_result *r = NULL;
    pc_mpi_report report;
    double t_read = MPI_Wtime() - t_start, t0 = MPI_Wtime();
    float *kpar_centres = NULL;
    if (kpar) {
        kpar_centres = malloc((a.p.k * in.points.dim + 1) * sizeof *kpar_centres);
        pc_status kst = kpar_centres ? pc_mpi_kmeans_parallel_init(MPI_COMM_WORLD, &in.points, a.p.k, a.p.seed, rounds,
                                                                   oversampling, kpar_centres)
                                     : pc_mpi_agree(MPI_COMM_WORLD, PC_OUT_OF_MEMORY, "out of memory for the centres");
        if (kst != PC_OK) {
            if (rank == 0)
                cli_error(cmd, "%s: %s", a.c.input, pc_mpi_last_error());
            free(kpar_centres);
            free(labels);
            mpi_input_free(&in);
            return CLI_FAILED;
        }
        a.p.init = PC_INIT_GIVEN;
        a.p.initial_centers = kpar_centres;
        a.p.n_init = 1;
    }
    pc_status st = labels ? pc_mpi_kmeans(MPI_COMM_WORLD, &in.points, &a.p, labels, &r, &report)
                          : pc_mpi_agree(MPI_COMM_WORLD, PC_OUT_OF_MEMORY, "out of memory for the labels");
    double seconds = MPI_Wtime() - t0;
    pcli_matrix_free(&init);
    free(kpar_centres);
    if (st != PC_OK) {
        if (rank == 0)
            cli_error(cmd, "%s: %s", a.c.input, pc_mpi_last_error());
        free(labels);
        mpi_input_free(&in);
        return CLI_FAILED;
    }
    /* Where the time went: the slowest rank's of each part. */
    double parts[4] = {report.setup, report.compute, report.communication, report.finish};
    size_t k = pc_result_cluster_count(r);
    if (rank == 0) {
        printf("k-means: %zu points, %zu dimensions, %zu clusters, %d iterations, inertia %.9g, %.3f s (%s, %d rank%s)\n",
               in.total, in.points.dim, k, pc_result_iterations(r), report.inertia, seconds,
               pc_backend_name(pc_result_backend(r)), size, size == 1 ? "" : "s");
    }
    mpi_print_rank_times(parts, a.c.verbose);
    double t_write = MPI_Wtime();
    int failed = a.c.out.labels && mpi_write_labels(cmd, &out, a.c.out.labels, &in, labels, k);
    rc = CLI_OK;
    if (rank == 0) {
        const char *path = NULL;
        if (!failed && a.c.out.centers && (!(path = cli_outputs_stage(&out, a.c.out.centers)) ||
                                           pcli_write_matrix(path, pc_result_centers(r), k, in.points.dim, err,
                                                             sizeof err)))
            rc = cli_outputs_finish(&out, 1, path, err);
        else if (failed) {
            cli_outputs_discard(&out);
            rc = CLI_FAILED;
        } else
            rc = cli_outputs_finish(&out, 0, NULL, "");
        if (a.c.verbose)
            cli_print_times(t_read, seconds, MPI_Wtime() - t_write);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    pc_result_free(r);
    free(labels);
    mpi_input_free(&in);
    return rc;
}
