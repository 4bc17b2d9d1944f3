/* parclust-mpi: parclust's clustering across the ranks of an MPI job (mpirun -np P parclust-mpi CMD
 * ...), with parclust's options (tools/parclust's parsers) plus --split. Every rank runs the same
 * command on its own rows; rank 0 prints and writes the small outputs. */
#include "mpi_cli.h"

#include <stdio.h>
#include <string.h>

int mpi_cmd_kmeans(int argc, char **argv);
int mpi_cmd_hca(int argc, char **argv);
int mpi_cmd_meanshift(int argc, char **argv);
int mpi_cmd_segment(int argc, char **argv);

static void usage(FILE *out)
{
    fprintf(out,
            "parclust-mpi %s: parclust across the processes of an MPI job\n"
            "\n"
            "usage: mpirun -np P parclust-mpi COMMAND INPUT [options]\n"
            "\n"
            "commands (the options of 'parclust COMMAND --help', less --plot, plus --split):\n"
            "  kmeans INPUT -k K   Lloyd's k-means: the single-process result for any P\n"
            "  hca INPUT           grid-based hierarchical clustering: the single-process result for any P\n"
            "  meanshift INPUT     mean shift: every rank all the points, its own climbing (CPU or GPU):\n"
            "                      parclust's modes; a finite radius on CPUs: slabs with halos; --blurring\n"
            "                      (CPU): the sums as a ring over the ranks. Those two: parclust's modes\n"
            "                      to within the stopping tolerance\n"
            "  segment IMAGE -o L  an image by HCA or k-means, each rank its rows: parclust segment's labels,\n"
            "                      --preview and --truth scores\n"
            "\n"
            "  --split R0,R1,...   rows of each rank (default: as even as can be, in rank order)\n"
            "  --kpar-rounds R, --kpar-oversampling L   kmeans --init kmeans-par across the ranks as Spark\n"
            "                      runs it: R rounds (default 2) drawing about L x k candidates each (default\n"
            "                      2), k-means++ on the weighted candidates; the same for any P (without\n"
            "                      them: k-means|| on the gathered sample, parclust kmeans's centres)\n"
            "\n"
            "A .npy INPUT is read by every rank, its own rows only; a text INPUT by rank 0, its rows scattered.\n"
            "--labels .npy is written by every rank at its rows' offset; the other outputs by rank 0.\n"
            "HCA, k-means and mean shift with --backend cuda (or auto, where a GPU takes the work) run each\n"
            "rank on a GPU of its host: the local rank modulo the devices present.\n"
            "OpenMP threads a rank: OMP_NUM_THREADS, else the cores it may use divided by the most ranks of\n"
            "its host that may use any one of them, one left to MPI and CUDA from 8 up; kmeans and meanshift\n"
            "--verbose say how many.\n",
            pc_version());
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    cli_program = "parclust-mpi";
    int rank = 0, rc = CLI_USAGE;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    mpi_choose_threads();
    const char *cmd = argc > 1 ? argv[1] : "";
    if (strcmp(cmd, "kmeans") == 0)
        rc = mpi_cmd_kmeans(argc - 1, argv + 1);
    else if (strcmp(cmd, "hca") == 0)
        rc = mpi_cmd_hca(argc - 1, argv + 1);
    else if (strcmp(cmd, "meanshift") == 0)
        rc = mpi_cmd_meanshift(argc - 1, argv + 1);
    else if (strcmp(cmd, "segment") == 0)
        rc = mpi_cmd_segment(argc - 1, argv + 1);
    else if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        if (rank == 0)
            usage(stdout);
        rc = CLI_OK;
    } else if (rank == 0) {
        if (argc < 2)
            usage(stderr);
        else
            fprintf(stderr, "parclust-mpi: error: unknown command '%s' (see 'parclust-mpi --help')\n", cmd);
    }
    fflush(stdout);
    MPI_Finalize();
    return rc;
}
