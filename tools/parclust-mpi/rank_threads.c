/* How many OpenMP threads a rank runs where OMP_NUM_THREADS does not say. OpenMP's own default is
 * every core the process may use, and mpirun leaves ranks unbound, or bound to a whole socket,
 * beyond two ranks: 4 ranks on a 64-core host would run 64 threads each. Here a rank takes its share
 * of the cores it may use (shared with the ranks of its host whose cores overlap its own), and, from
 * 8 cores a rank up, leaves one of them to MPI's and CUDA's own threads: where every core runs an
 * OpenMP thread, one of those threads loses its core now and then and holds up every parallel loop
 * (bench/RESULTS.md, 2026-11-26: k-means on 4 GPUs, 16 threads on 16 cores a rank, 1.7x slower an
 * iteration than 15). */
#define _GNU_SOURCE
#include "mpi_cli.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static char note[160] = "1 thread a rank (built without OpenMP)";

void mpi_choose_threads(void)
{
#ifdef _OPENMP
    const char *env = getenv("OMP_NUM_THREADS");
    if (env && *env) {
        snprintf(note, sizeof note, "%d threads a rank (OMP_NUM_THREADS)", omp_get_max_threads());
        return;
    }
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (sched_getaffinity(0, sizeof mine, &mine) != 0) {
        snprintf(note, sizeof note, "%d threads a rank (OpenMP's default)", omp_get_max_threads());
        return;
    }
    MPI_Comm local;
    int size = 1;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &size);
    cpu_set_t *all = malloc((size_t)size * sizeof *all);
    int sharers = 1; /* this rank, where the masks cannot be gathered */
    if (all) {
        MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, local);
        sharers = 0;
        for (int r = 0; r < size; r++) {
            cpu_set_t both;
            CPU_AND(&both, &mine, &all[r]);
            sharers += CPU_COUNT(&both) > 0;
        }
        free(all);
    }
    MPI_Comm_free(&local);
    int cores = CPU_COUNT(&mine), share = cores / (sharers > 0 ? sharers : 1);
    int threads = share < 1 ? 1 : share >= 8 ? share - 1 : share;
    omp_set_num_threads(threads);
    snprintf(note, sizeof note, "%d thread%s a rank (%d core%s shared by %d rank%s of this host%s)", threads,
             threads == 1 ? "" : "s", cores, cores == 1 ? "" : "s", sharers, sharers == 1 ? "" : "s",
             share >= 8 ? ", one left to MPI and CUDA" : "");
#endif
}

void mpi_print_rank_times(const double parts[3], int verbose)
{
    double slowest[3];
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Reduce(parts, slowest, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0 && verbose)
        printf("  ranks (slowest): setup %.6f s, compute %.6f s, communication %.6f s; %s\n", slowest[0], slowest[1],
               slowest[2], note);
}
