/* parclust-mpi's command lines: parclust's own parser (on rank 0 first, so that an error or --help is
 * printed once), with parclust-mpi's own options taken out before it. */
#include "mpi_cli.h"

#include <stdlib.h>
#include <string.h>

/* Removes "--split V" / "--split=V" from argv (in place); *split: V or NULL. -1 (printed) when V is missing. */
int mpi_take_split(const char *cmd, int *argc, char **argv, const char **split)
{
    *split = NULL;
    int out = 0;
    for (int i = 0; i < *argc; i++) {
        if (strncmp(argv[i], "--split=", 8) == 0) {
            *split = argv[i] + 8;
            continue;
        }
        if (strcmp(argv[i], "--split") == 0) {
            if (i + 1 >= *argc) {
                int rank = 0;
                MPI_Comm_rank(MPI_COMM_WORLD, &rank);
                if (rank == 0)
                    cli_error(cmd, "option --split needs a value");
                return -1;
            }
            *split = argv[++i];
            continue;
        }
        argv[out++] = argv[i];
    }
    *argc = out;
    argv[out] = NULL;
    return 0;
}

int mpi_parse(int (*parse)(int, char **, void *), int argc, char **argv, void *ctx)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int rc = rank == 0 ? parse(argc, argv, ctx) : 0;
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc == 0 && rank != 0)
        rc = parse(argc, argv, ctx); /* the same argv: the same outcome, silently */
    return rc;
}
