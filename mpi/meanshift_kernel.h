/* The shifts that mean shift across ranks computes, whichever way the references reach a rank (the
 * ring of mpi/meanshift.c, the slabs of mpi/meanshift_slabs.c): weights and sums in double precision,
 * positions in float32 as pc_meanshift keeps them. */
#ifndef PC_MPI_MEANSHIFT_KERNEL_H
#define PC_MPI_MEANSHIFT_KERNEL_H

#include "parclust_mpi.h"

#include <stddef.h>

typedef struct {
    pc_kernel kernel;
    double h2x2, h2, radius2;
} pc__ms_kernel;

/* num/den += the weighted references (rows x dim), for the points (n x dim at pos) not stopped. */
void pc__ms_accumulate(const pc__ms_kernel *kf, const float *pos, const unsigned char *stopped, size_t n, size_t dim,
                       const float *refs, size_t rows, double *num, double *den);
/* Each point not stopped moves to num / den; it stops where that moved it by <= eps or nothing was
 * within its radius (den 0). Returns how many moved by more than eps. */
unsigned long long pc__ms_step(float *pos, unsigned char *stopped, size_t n, size_t dim, const double *num,
                               const double *den, double eps);
/* The slabs' shifts (meanshift_slabs.c), for a finite radius on more than one rank: modes (n x dim)
 * receive the modes of this rank's points `own`. */
pc_status pc__mpi_meanshift_slabs(MPI_Comm comm, const float *own, size_t n, size_t dim, const pc__ms_kernel *kf,
                                  double radius, double eps, int max_iter, float *modes, int *iterations,
                                  pc_mpi_report *times);
/* Not blurring (meanshift_gathered.c): every rank gathers all the points and climbs its own (counts:
 * every rank's rows) on params' backend; modes (n x dim) receive them. */
pc_status pc__mpi_meanshift_gathered(MPI_Comm comm, const float *own, size_t n, size_t dim,
                                     const unsigned long long *counts, const pc_meanshift_params *params, float *modes,
                                     int *iterations, pc_mpi_report *times);

#endif
