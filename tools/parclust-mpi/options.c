/* parclust-mpi's command lines: parclust's own parser (on rank 0 first, so that an error or --help is
 * printed once), with parclust-mpi's own options taken out before it. */
#include "mpi_cli.h"

#include <stdlib.h>
#include <string.h>

int mpi_take_option(const char *cmd, const char *name, int *argc, char **argv, const char **value)
{
    *value = NULL;
    size_t len = strlen(name);
    int out = 0;
    for (int i = 0; i < *argc; i++) {
        if (strncmp(argv[i], name, len) == 0 && argv[i][len] == '=') {
            *value = argv[i] + len + 1;
            continue;
        }
        if (strcmp(argv[i], name) == 0) {
            if (i + 1 >= *argc) {
                int rank = 0;
                MPI_Comm_rank(MPI_COMM_WORLD, &rank);
                if (rank == 0)
                    cli_error(cmd, "option %s needs a value", name);
                return -1;
            }
            *value = argv[++i];
            continue;
        }
        argv[out++] = argv[i];
    }
    *argc = out;
    argv[out] = NULL;
    return 0;
}

int mpi_take_split(const char *cmd, int *argc, char **argv, const char **split)
{
    return mpi_take_option(cmd, "--split", argc, argv, split);
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
