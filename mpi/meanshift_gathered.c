/* Mean shift across ranks, not blurring (pc_mpi_meanshift's gathered way): every rank gathers all the
 * points (MPI_Allgatherv, once: non-blurring references never move) and climbs its own rows against
 * them with the core library's kernels (pc_meanshift_climb), on the CPU or the rank's GPU. The climbs
 * are independent, so the iterations need no messages at all; the only traffic is the gather, N x dim
 * float32 to every rank, which the O(N^2) sums of an all-pairs run dwarf: 1M points of 3 dimensions
 * are 12 MB against 10^12 pairs an iteration. (A ring sends the same blocks every iteration; it keeps
 * a rank's memory to two blocks, which all pairs cannot use: N that fits the work fits the memory.) */
#include "internal_mpi.h"
#include "meanshift_kernel.h"

#include <stdlib.h>

pc_status pc__mpi_meanshift_gathered(MPI_Comm comm, const float *own, size_t n, size_t dim,
                                     const unsigned long long *counts, const pc_meanshift_params *params, float *modes,
                                     int *iterations, pc_mpi_report *times)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    pc_status st = PC_OK;
    size_t total = 0, first = 0;
    for (int q = 0; q < size; q++) {
        first += q < rank ? (size_t)counts[q] : 0;
        total += (size_t)counts[q];
    }
    /* Message sizes are ints: meanshift.c has checked that total x dim fits. */
    float *all = malloc((total * dim + 1) * sizeof *all);
    int *sizes = malloc((size_t)size * sizeof *sizes), *displs = malloc((size_t)size * sizeof *displs);
    if (!all || !sizes || !displs)
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for all %zu points", rank, total);
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    for (int q = 0, at = 0; q < size; q++) {
        sizes[q] = (int)(counts[q] * dim);
        displs[q] = at;
        at += sizes[q];
    }
    double t0 = MPI_Wtime();
    MPI_Allgatherv(own, (int)(n * dim), MPI_FLOAT, all, sizes, displs, MPI_FLOAT, comm);
    double t1 = MPI_Wtime();
    pc_points points = pc_points_f32(all, total, dim);
    st = pc_meanshift_climb(&points, first, n, params, modes, iterations);
    if (st != PC_OK)
        pc__mpi_core_fail(comm, st, "mean shift on this rank");
    double t2 = MPI_Wtime();
    st = pc__mpi_agree(comm, st); /* waits for the slowest rank: communication */
    times->communication += (t1 - t0) + (MPI_Wtime() - t2);
    times->compute += t2 - t1;
done:
    free(all);
    free(sizes);
    free(displs);
    return st;
}
