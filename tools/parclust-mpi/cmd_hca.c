/* parclust-mpi hca: parclust hca across ranks (pc_mpi_hca), the same options and outputs. */
#include "mpi_cli.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    hca_cli c;
    pc_hca_params p;
} hca_args;

static int parse(int argc, char **argv, void *ctx)
{
    hca_args *a = ctx;
    return cli_hca_parse(argc, argv, &a->c, &a->p);
}

/* Rank 0: the centres, dendrogram and components staged; 0, or -1 with the failing path and err. */
static int stage_small(cli_outputs *out, const hca_args *a, const pc_result *r, const float *centres, size_t dim,
                       const char **path, char *err, size_t errsize)
{
    *path = NULL;
    return (a->c.out.centers && (!(*path = cli_outputs_stage(out, a->c.out.centers)) ||
                                 pcli_write_matrix(*path, centres, pc_result_cluster_count(r), dim, err, errsize))) ||
           (a->c.dendrogram && (!(*path = cli_outputs_stage(out, a->c.dendrogram)) ||
                                cli_write_dendrogram(*path, r, err, errsize))) ||
           (a->c.components && (!(*path = cli_outputs_stage(out, a->c.components)) ||
                                cli_write_components(*path, r, err, errsize)))
               ? -1
               : 0;
}

int mpi_cmd_hca(int argc, char **argv)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *cmd = "hca", *split = NULL;
    hca_args a = {0};
    pc_hca_params_init(&a.p);
    a.p.m = 0; /* -m auto: parclust hca's default, which cmd_hca() sets before its parser (pc_mpi_hca
                  resolves it on the points of all the ranks) */
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
    double t_start = MPI_Wtime();
    cli_outputs out;
    cli_outputs_init(&out, cmd);
    cli_outputs_input(&out, "the input", a.c.input);
    cli_outputs_add_common(&out, &a.c.out);
    cli_outputs_add(&out, "--dendrogram", a.c.dendrogram);
    cli_outputs_add(&out, "--components", a.c.components);
    if (mpi_rank0_verdict(rank == 0 ? cli_outputs_check(&out) : 0))
        return CLI_FAILED;
    if (mpi_pick_device(cmd, a.p.backend))
        return CLI_FAILED;
    mpi_input in;
    if (mpi_read_input(cmd, a.c.input, a.c.header, split, &in))
        return CLI_FAILED;
    if (mpi_rank0_verdict(rank == 0 ? cli_outputs_room_common(&out, &a.c.out, in.total, in.points.dim, 0) : 0)) {
        mpi_input_free(&in);
        return CLI_FAILED;
    }
    int32_t *labels = malloc((in.points.n + 1) * sizeof *labels);
    pc_result *r = NULL;
    float *centres = NULL;
    double t_read = MPI_Wtime() - t_start, t0 = MPI_Wtime();
    pc_status st = labels ? pc_mpi_hca(MPI_COMM_WORLD, &in.points, &a.p, labels, &r, &centres)
                          : pc_mpi_agree(MPI_COMM_WORLD, PC_OUT_OF_MEMORY, "out of memory for the labels");
    double seconds = MPI_Wtime() - t0;
    if (st != PC_OK) {
        if (rank == 0)
            cli_error(cmd, "%s: %s", a.c.input, pc_mpi_last_error());
        free(labels);
        mpi_input_free(&in);
        return CLI_FAILED;
    }
    size_t k = pc_result_cluster_count(r), dim = in.points.dim;
    if (rank == 0) {
        printf("hca: %zu points, %zu dimensions, m %d, %zu non-empty cells, %zu components, %zu clusters, %.3f s "
               "(%d ranks)\n", in.total, dim, pc_result_grid_m(r) > 0 ? pc_result_grid_m(r) : a.p.m, pc_result_cell_count(r), pc_result_component_count(r), k,
               seconds, size);
        if (a.p.clusters && k != a.p.clusters)
            fprintf(stderr, "parclust-mpi hca: note: %zu clusters asked, %zu found: no cut of the dendrogram gives "
                            "%zu clusters of at least the minimum size\n", a.p.clusters, k, a.p.clusters);
    }
    double t_write = MPI_Wtime();
    int failed = a.c.out.labels && mpi_write_labels(cmd, &out, a.c.out.labels, &in, labels, k);
    rc = CLI_OK;
    if (rank == 0) {
        char err[1024] = "";
        const char *path = NULL;
        if (failed) {
            cli_outputs_discard(&out);
            rc = CLI_FAILED;
        } else
            rc = cli_outputs_finish(&out, stage_small(&out, &a, r, centres, dim, &path, err, sizeof err), path, err);
        if (a.c.verbose)
            cli_print_times(t_read, seconds, MPI_Wtime() - t_write);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    pc_result_free(r);
    free(centres);
    free(labels);
    mpi_input_free(&in);
    return rc;
}
