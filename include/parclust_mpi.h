/* parclust across the processes of an MPI communicator (libparclust_mpi; the core library, parclust.h,
 * knows nothing of MPI). Every function here is collective: all ranks of comm call it, each with its
 * own points (any number of rows, none included; the same dim and options on every rank), and each
 * gets the labels of its own points. The points of all ranks, in rank order, are "the data": rank r's
 * rows follow those of ranks 0 .. r - 1.
 *
 * Results equal the single-process run on the data, for any number of ranks and any split:
 *   k-means: the streamed k-means of parclust.h (the sample depends on the rows' indices only; per
 *     iteration one MPI_Allreduce (MPI_SUM, int64) of the k x (dim + 1) fixed-point counts and sums,
 *     integers whose sum does not depend on the order, plus an exchange of the small rest: inertia
 *     buckets and the k - 1 farthest points for the empty-cluster rule), so from the same initial
 *     centres the labels, centres and iterations are pc_kmeans's bit for bit;
 *   HCA: the box by MPI_Allreduce of minima and maxima, the histograms of the non-empty cells
 *     (sparse) summed on rank 0 and the sum broadcast, so that every rank finishes the same histogram
 *     (components, dendrogram and cut touch cells, never points) and labels its own points: pc_hca's
 *     labels, dendrogram and components exactly.
 *
 * Failures are agreed: when a call fails on any rank, it returns the same status on every rank, and
 * pc_mpi_last_error() gives every rank the message of the lowest failing rank ("rank 2: ..."), so
 * that a program prints it once (from rank 0) and all ranks stop together. */
#ifndef PARCLUST_MPI_H
#define PARCLUST_MPI_H

#include <mpi.h>

#include "parclust.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The message of the last failed pc_mpi_ call on this thread ("" after success). Never NULL. */
const char *pc_mpi_last_error(void);

/* Agrees on a status across comm: the worst (lowest failing rank's) status on every rank, its message
 * (`message`, or pc_last_error() when NULL) in pc_mpi_last_error(). For programs that mix their own
 * steps (reading their slice, writing their labels) with these calls. */
pc_status pc_mpi_agree(MPI_Comm comm, pc_status status, const char *message);

/* Where a run's time went on this rank, in seconds: setup (the scan, its merge and the start), compute
 * (adding the rank's points and stepping, in the iterations), communication (the reductions and
 * exchanges of the iterations, waiting for the slowest rank included) and finish (below). HCA
 * (pc_mpi_hca_device): setup = the checks, the stream, the hold and the box (their agreements and
 * reductions included); compute = counting and labelling the rank's rows; communication = the rest: the
 * histograms' merge, the later agreements and the centres' sums, waiting included; finish = the
 * components, dendrogram and cut from the summed histogram (on every rank). */
typedef struct {
    double setup, compute, communication;
    /* k-means: the inertia of the final labels to the final centres (pc_kmeans's; the result's is the
     * stream's, of the assignment before the last update), summed over the ranks in double precision. */
    double inertia;
    /* mean shift: how the references reached the ranks' points: "gathered", "slabs" or "ring"
     * (parclust_mpi.h: pc_mpi_meanshift); NULL for the others. */
    const char *method;
    /* k-means: the final labels and their inertia, after the last iteration; HCA: above; 0 for the others. */
    double finish;
} pc_mpi_report;

/* k-means (params as pc_kmeans's, n_init as its runs from its seeds, each run scanning again;
 * backends as the stream's: with CUDA, the calling thread's current device, which holds the rank's
 * rows (pc_kmeans_stream_hold) so that a pass runs there whole; points must stay unchanged during the
 * call, as they would anyway). labels:
 * points->n int32 (may be NULL when n is 0). result (every rank): centres, sizes, inertia,
 * iterations and stages of the whole run, no labels. report: NULL, or this rank's times. */
pc_status pc_mpi_kmeans(MPI_Comm comm, const pc_points *points, const pc_kmeans_params *params, int32_t *labels,
                        pc_result **result, pc_mpi_report *report);

/* k-means|| across the ranks, as Spark MLlib initialises k-means: a first centre drawn uniformly,
 * `rounds` rounds each taking every point as a candidate with probability min(1, l d^2 / phi)
 * (l = oversampling x k; Spark's defaults: initializationSteps 2, l = 2k), the
 * candidates weighted by their closest points, then k-means++ and 30 weighted Lloyd iterations on
 * them, alike on every rank: centres (k x dim, every rank). The draws follow the points' indices
 * among all the points, not the ranks (mpi/kmeans_parallel.c). Then pc_mpi_kmeans with
 * PC_INIT_GIVEN and these centres. */
pc_status pc_mpi_kmeans_parallel_init(MPI_Comm comm, const pc_points *points, size_t k, uint64_t seed, int rounds,
                                      double oversampling, float *centres);

/* HCA (params as pc_hca's). With CUDA each rank's rows are its stream's held block
 * (pc_hca_stream_hold): they cross to the rank's GPU once, and must stay unchanged during the call.
 * labels: points->n int32. result (every rank): dendrogram, components, cluster count and sizes,
 * cells, no labels. centres: NULL, or receives (every rank) a malloc'd
 * k x dim array of the clusters' means (sums over the ranks in double precision, MPI_SUM: equal to
 * the single-process centres to rounding). */
pc_status pc_mpi_hca(MPI_Comm comm, const pc_points *points, const pc_hca_params *params, int32_t *labels,
                     pc_result **result, float **centres);
/* The same with each rank's rows already in its GPU's memory (CUDA builds; one GPU a rank, or ranks
 * sharing one): points->data is device memory of the rank's current device, read in place
 * (pc_hca_stream_hold_device: aligned, filled before the call, unchanged during it), and
 * device_labels (points->n int32 of that GPU's memory) receive the labels there: neither crosses the
 * bus; only the box, the non-empty cells' counts and the clusters' sums go between the ranks, as
 * pc_mpi_hca's. params->backend: AUTO or CUDA. The result, the centres and every rank's labels are
 * pc_mpi_hca's on the same rows. report: NULL, or this rank's times (pc_mpi_report). */
pc_status pc_mpi_hca_device(MPI_Comm comm, const pc_points *points, const pc_hca_params *params,
                            int32_t *device_labels, pc_result **result, float **centres, pc_mpi_report *report);

/* Clusters of a run across ranks, the same on every rank (pc_result's are made by the core library
 * only): k, the clusters' centres (k x dim) and sizes, numbered by size, largest first, and the most
 * iterations any point took. */
typedef struct {
    size_t k;
    float *centres;
    int64_t *sizes;
    int iterations;
} pc_mpi_clusters;
void pc_mpi_clusters_free(pc_mpi_clusters *clusters); /* frees the arrays; NULL-safe */

/* Mean shift (params as pc_meanshift's), the modes merged on rank 0, on the CPU (OpenMP where built)
 * or, with the CUDA backend (or auto where every rank has a device), on the calling thread's current
 * device. Not blurring, with an infinite radius (gaussian's default), on one rank or on GPUs: every
 * rank gathers all the points and climbs its own (pc_meanshift_climb): pc_meanshift's modes, bit for
 * bit on the CPU. A finite radius on several ranks' CPUs: slabs along the widest axis, one a rank,
 * each with a halo one radius wide; points move from slab to slab as they climb and their modes come
 * home at the end. Blurring (CPU only; the CUDA backend is refused): the all-pairs sums as a ring over
 * the ranks' blocks of points where the previous iteration left them. labels and modes (points->n and
 * n x dim float32) receive this rank's labels and modes. The slabs and the ring agree with
 * pc_meanshift to within the stopping tolerance (modes; labels on separated data), not bit for bit:
 * mpi/meanshift.c says why. report->method names the way taken. */
pc_status pc_mpi_meanshift(MPI_Comm comm, const pc_points *points, const pc_meanshift_params *params, int32_t *labels,
                           float *modes, pc_mpi_clusters *clusters, pc_mpi_report *report);

#ifdef __cplusplus
}
#endif
#endif /* PARCLUST_MPI_H */
