/* parclust-mpi meanshift: parclust meanshift across ranks (pc_mpi_meanshift), the same options and
 * outputs; the modes and centres come from rank 0, which gathered the modes to merge them. */
#include "mpi_cli.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    ms_cli c;
    pc_meanshift_params p;
} ms_args;

static int parse(int argc, char **argv, void *ctx)
{
    ms_args *a = ctx;
    return cli_meanshift_parse(argc, argv, &a->c, &a->p);
}

int mpi_cmd_meanshift(int argc, char **argv)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *cmd = "meanshift", *split = NULL;
    ms_args a = {0};
    pc_meanshift_params_init(&a.p);
    if (mpi_take_split(cmd, &argc, argv, &split))
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
    cli_outputs out;
    cli_outputs_init(&out, cmd);
    cli_outputs_input(&out, "the input", a.c.input);
    cli_outputs_add_common(&out, &a.c.out);
    cli_outputs_add(&out, "--modes", a.c.modes);
    if (mpi_rank0_verdict(rank == 0 ? cli_outputs_check(&out) : 0))
        return CLI_FAILED;
    if (mpi_pick_device(cmd, a.p.backend)) /* the GPUs' path: one GPU per rank */
        return CLI_FAILED;
    mpi_input in;
    if (mpi_read_input(cmd, a.c.input, a.c.header, split, &in))
        return CLI_FAILED;
    size_t n = in.points.n, dim = in.points.dim;
    if (mpi_rank0_verdict(rank == 0 ? cli_outputs_room_common(&out, &a.c.out, in.total, dim, 0) : 0)) {
        mpi_input_free(&in);
        return CLI_FAILED;
    }
    int32_t *labels = malloc((n + 1) * sizeof *labels);
    float *modes = malloc((n * dim + 1) * sizeof *modes);
    pc_mpi_clusters cl;
    pc_mpi_report report;
    double t0 = MPI_Wtime();
    pc_status st = labels && modes ? pc_mpi_meanshift(MPI_COMM_WORLD, &in.points, &a.p, labels, modes, &cl, &report)
                                   : pc_mpi_agree(MPI_COMM_WORLD, PC_OUT_OF_MEMORY, "out of memory for the labels");
    double seconds = MPI_Wtime() - t0;
    if (st != PC_OK) {
        if (rank == 0)
            cli_error(cmd, "%s: %s", a.c.input, pc_mpi_last_error());
        free(labels);
        free(modes);
        mpi_input_free(&in);
        return CLI_FAILED;
    }
    double parts[4] = {report.setup, report.compute, report.communication, report.finish};
    if (rank == 0) {
        printf("mean shift: %zu points, %zu dimensions, %zu clusters, %d iterations, %.3f s (%s, %d rank%s)\n",
               in.total, dim, cl.k, cl.iterations, seconds, report.method, size, size == 1 ? "" : "s");
    }
    mpi_print_rank_times(parts, a.c.verbose);
    int failed = a.c.out.labels && mpi_write_labels(cmd, &out, a.c.out.labels, &in, labels, cl.k);
    /* The modes: gathered to rank 0 (which held them all for the merge), written there. */
    float *all = NULL;
    int *counts = NULL, *displs = NULL;
    int bad = 0;
    if (!failed && a.c.modes && rank == 0) {
        all = malloc((in.total * dim + 1) * sizeof *all);
        counts = calloc((size_t)size, sizeof *counts);
        displs = calloc((size_t)size, sizeof *displs);
        bad = !all || !counts || !displs;
    }
    if (!failed && a.c.modes && mpi_agree(cmd, bad ? PC_OUT_OF_MEMORY : PC_OK, "rank 0: out of memory for the modes"))
        failed = 1;
    if (!failed && a.c.modes) {
        int mine = (int)(n * dim), at = (int)(in.first * dim);
        MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Gather(&at, 1, MPI_INT, displs, 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Gatherv(modes, mine, MPI_FLOAT, all, counts, displs, MPI_FLOAT, 0, MPI_COMM_WORLD);
    }
    rc = CLI_OK;
    if (rank == 0) {
        char err[1024] = "";
        const char *path = NULL;
        int wrong = failed;
        if (!wrong && a.c.out.centers && (!(path = cli_outputs_stage(&out, a.c.out.centers)) ||
                                          pcli_write_matrix(path, cl.centres, cl.k, dim, err, sizeof err)))
            wrong = 1;
        if (!wrong && a.c.modes && (!(path = cli_outputs_stage(&out, a.c.modes)) ||
                                        pcli_write_matrix(path, all, in.total, dim, err, sizeof err)))
            wrong = 1;
        rc = failed ? (cli_outputs_discard(&out), CLI_FAILED) : cli_outputs_finish(&out, wrong, path, err);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(all);
    free(counts);
    free(displs);
    pc_mpi_clusters_free(&cl);
    free(labels);
    free(modes);
    mpi_input_free(&in);
    return rc;
}
