/* How many OpenMP threads a rank runs where OMP_NUM_THREADS does not say. OpenMP's own default is
 * every core the process may use, and mpirun leaves ranks unbound, or bound to a whole socket,
 * beyond two ranks: 4 ranks on a 64-core host would run 64 threads each. Here a rank takes its share
 * of the cores it may use (divided by the most ranks of its host that may use any one of them), and, from
 * 8 cores a rank up, leaves one of them to MPI's and CUDA's own threads: where every core runs an
 * OpenMP thread, one of those threads loses its core now and then and holds up every parallel loop
 * (bench/RESULTS.md, 2026-11-26: k-means on 4 GPUs, 16 threads on 16 cores a rank, 1.7x slower an
 * iteration than 15). */
#define _GNU_SOURCE
#include "mpi_cli.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static char note[160] = "1 thread a rank (built without OpenMP)";

/* CPUs the masks count: more than glibc's cpu_set_t (1024), whose size the kernel refuses on hosts
 * with more CPUs than it holds. Static: the reduction needs no allocation that one rank could lack. */
#define MAX_CPUS 8192
static unsigned long mask_bits[MAX_CPUS / (8 * sizeof(unsigned long))];
static int mine[MAX_CPUS], users[MAX_CPUS];

void mpi_choose_threads(void)
{
    /* Every rank takes part in the reduction whatever it then decides (its environment or affinity
     * may differ from the others'): how many of the host's ranks may use each CPU. */
    cpu_set_t *mask = (cpu_set_t *)mask_bits;
    int have_mask = sched_getaffinity(0, sizeof mask_bits, mask) == 0;
    for (int c = 0; c < MAX_CPUS; c++)
        mine[c] = have_mask && CPU_ISSET_S(c, sizeof mask_bits, mask);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Allreduce(mine, users, MAX_CPUS, MPI_INT, MPI_SUM, local);
    MPI_Comm_free(&local);
#ifdef _OPENMP
    const char *env = getenv("OMP_NUM_THREADS");
    if (env && *env) {
        snprintf(note, sizeof note, "%d threads a rank (OMP_NUM_THREADS)", omp_get_max_threads());
        return;
    }
    if (!have_mask) {
        snprintf(note, sizeof note, "%d threads a rank (OpenMP's default)", omp_get_max_threads());
        return;
    }
    int cores = 0, sharers = 1;
    for (int c = 0; c < MAX_CPUS; c++)
        if (mine[c]) {
            cores++;
            sharers = users[c] > sharers ? users[c] : sharers;
        }
    int share = cores / sharers;
    int threads = share < 1 ? 1 : share >= 8 ? share - 1 : share;
    omp_set_num_threads(threads);
    snprintf(note, sizeof note, "%d thread%s a rank (%d core%s shared by %d rank%s of this host%s)", threads,
             threads == 1 ? "" : "s", cores, cores == 1 ? "" : "s", sharers, sharers == 1 ? "" : "s",
             share >= 8 ? ", one left to MPI and CUDA" : "");
#endif
}

void mpi_print_rank_times(const double parts[4], int verbose)
{
    double slowest[4];
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Reduce(parts, slowest, 4, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0 && verbose)
        printf("  ranks (slowest): setup %.6f s, compute %.6f s, communication %.6f s, finish %.6f s; %s\n", slowest[0],
               slowest[1], slowest[2], slowest[3], note);
}
