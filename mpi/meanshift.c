/* Mean shift across ranks, three ways of bringing the references to a rank's points, then one merge.
 *
 * Gathered (meanshift_gathered.c), not blurring: a climb depends on its own point and the references
 * only, so every rank gathers all the points once and climbs its own with the core library's kernels
 * (pc_meanshift_climb, on the CPU or the rank's GPU): the modes are pc_meanshift's (CPU: bit for bit),
 * the iterations send nothing. All pairs (an infinite radius, gaussian's default) and one rank take it;
 * so does a finite radius on GPUs.
 *
 * Ring, for blurring (its references move: every point where the previous iteration left it, stopped
 * ones included, as pc_meanshift's blurring moves them): in every iteration each rank shifts its own
 * points against every rank's block in turn, own block first, the next block travelling round the
 * ring (MPI_Isend / MPI_Irecv to the neighbours) while the current one is summed. Weights and sums are
 * in double precision, positions in float32 as pc_meanshift keeps them; a point stops once a shift
 * moves it by <= eps (or nothing is within its radius), the run when no point of any rank moves or
 * after max_iter. Not pc_meanshift's bit for bit (its sums are float32, of scaled coordinates, with
 * exp2): the modes agree to within the stopping tolerance, and so do labels on separated data.
 *
 * Slabs (meanshift_slabs.c), a finite radius on several ranks' CPUs, not blurring: each rank sums over
 * its slab's references and a halo only, so no rank holds all the points.
 *
 * The modes are then gathered to rank 0 and merged there by the core library's own merge
 * (pc_meanshift_merge: connected components of modes closer than merge_radius; clusters numbered by
 * size, largest first, ties by their first point; centres the means of their modes), and each rank
 * gets its labels back. */
#include "internal_mpi.h"
#include "meanshift_kernel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Rank 0's clusters of all the modes, as pc_meanshift merges them (pc_meanshift_merge): labels (n) and
 * out's k, sizes and centres (malloc'd). */
static pc_status merge(const float *modes, size_t n, size_t dim, double radius, int32_t *labels, pc_mpi_clusters *out)
{
    pc_result *r = NULL;
    pc_status st = pc_meanshift_merge(modes, n, dim, radius, &r);
    if (st != PC_OK)
        return st;
    size_t k = pc_result_cluster_count(r);
    memcpy(labels, pc_result_labels(r), n * sizeof *labels);
    out->k = k;
    out->sizes = malloc((k + 1) * sizeof *out->sizes);
    out->centres = malloc((k * dim + 1) * sizeof *out->centres);
    if (!out->sizes || !out->centres)
        st = PC_OUT_OF_MEMORY;
    else {
        memcpy(out->sizes, pc_result_sizes(r), k * sizeof *out->sizes);
        memcpy(out->centres, pc_result_centers(r), k * dim * sizeof *out->centres);
    }
    pc_result_free(r);
    return st;
}

void pc_mpi_clusters_free(pc_mpi_clusters *c)
{
    if (!c)
        return;
    free(c->centres);
    free(c->sizes);
    memset(c, 0, sizeof *c);
}

/* ---------------------------------------------------------------- the shifts (meanshift_kernel.h) */

static double weight(const pc__ms_kernel *kf, double d2)
{
    if (d2 > kf->radius2)
        return 0;
    switch (kf->kernel) {
    case PC_KERNEL_FLAT: return 1;
    case PC_KERNEL_EPANECHNIKOV: return 1 - d2 / kf->h2;
    case PC_KERNEL_GAUSSIAN: break;
    }
    return exp(-d2 / kf->h2x2);
}

void pc__ms_accumulate(const pc__ms_kernel *kf, const float *pos, const unsigned char *stopped, size_t n, size_t dim,
                       const float *block, size_t rows, double *num, double *den)
{
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 64) if (n * rows > 65536)
#endif
    for (long li = 0; li < (long)n; li++) {
        size_t i = (size_t)li;
        if (stopped[i])
            continue;
        const float *q = pos + i * dim;
        double *acc = num + i * dim, wsum = 0;
        for (size_t r = 0; r < rows; r++) {
            const float *x = block + r * dim;
            double d2 = 0;
            for (size_t k = 0; k < dim; k++) {
                double d = (double)x[k] - q[k];
                d2 += d * d;
            }
            double w = weight(kf, d2);
            if (w <= 0)
                continue;
            wsum += w;
            for (size_t k = 0; k < dim; k++)
                acc[k] += w * x[k];
        }
        den[i] += wsum;
    }
}

unsigned long long pc__ms_step(float *pos, unsigned char *stopped, size_t n, size_t d, const double *num,
                               const double *den, double eps)
{
    unsigned long long moving = 0;
    for (size_t i = 0; i < n; i++) {
        if (stopped[i])
            continue;
        float *q = pos + i * d;
        if (!(den[i] > 0)) { /* nothing within its radius: it stays */
            stopped[i] = 1;
            continue;
        }
        double d2 = 0;
        for (size_t k = 0; k < d; k++) {
            float v = (float)(num[i * d + k] / den[i]);
            double step_k = (double)v - q[k];
            d2 += step_k * step_k;
            q[k] = v;
        }
        if (d2 <= eps * eps)
            stopped[i] = 1;
        else
            moving++;
    }
    return moving;
}

static double value_at(const pc_points *p, size_t i, size_t j)
{
    size_t size = p->dtype == PC_F64 ? 8 : p->dtype == PC_F32 ? 4 : p->dtype == PC_U16 ? 2 : 1;
    const unsigned char *row = (const unsigned char *)p->data + i * (p->stride ? p->stride : p->dim * size);
    switch (p->dtype) {
    case PC_F64: { double v; memcpy(&v, row + j * 8, 8); return v; }
    case PC_U8: return row[j];
    case PC_U16: { uint16_t v; memcpy(&v, row + j * 2, 2); return v; }
    case PC_F32: break;
    }
    float v;
    memcpy(&v, row + j * 4, 4);
    return v;
}

pc_status pc_mpi_meanshift(MPI_Comm comm, const pc_points *points, const pc_meanshift_params *params, int32_t *labels,
                           float *modes, pc_mpi_clusters *clusters, pc_mpi_report *report)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    pc_mpi_report times = {0};
    double t0 = MPI_Wtime();
    pc_status st = PC_OK;
    if (clusters)
        memset(clusters, 0, sizeof *clusters);
    unsigned long long n = points ? points->n : 0, dim = points ? points->dim : 0, dlo = 0, dhi = 0;
    if (!points || !params || !clusters || (n && (!labels || !modes)))
        st = pc__mpi_fail(PC_INVALID_ARGUMENT, "rank %d: pc_mpi_meanshift: points, params, clusters and (with rows) "
                          "labels and modes must not be NULL", rank);
    MPI_Allreduce(&dim, &dlo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm);
    MPI_Allreduce(&dim, &dhi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
    if (st == PC_OK && (dlo != dhi || dim == 0))
        st = pc__mpi_fail(PC_INVALID_ARGUMENT, "rank %d: the ranks' points have %llu to %llu values per row", rank, dlo,
                          dhi);
    double h = params ? params->bandwidth : 0;
    if (st == PC_OK && (!(h > 0) || !isfinite(h)))
        st = pc__mpi_fail(PC_INVALID_ARGUMENT, "rank %d: bandwidth must be a finite number > 0, got %g", rank, h);
    if (st == PC_OK && params->max_iter < 1)
        st = pc__mpi_fail(PC_INVALID_ARGUMENT, "rank %d: max_iter must be >= 1, got %d", rank, params->max_iter);
    if (st == PC_OK && (unsigned)params->kernel > PC_KERNEL_EPANECHNIKOV)
        st = pc__mpi_fail(PC_INVALID_ARGUMENT, "rank %d: unknown kernel %d", rank, (int)params->kernel);
    /* GPUs: --backend cuda, or auto where every rank has a device (the same path on all ranks). */
    int gpus = params && (params->backend == PC_BACKEND_CUDA ||
                          (params->backend == PC_BACKEND_AUTO && pc_cuda_device_count() > 0)),
        all_gpus = 0;
    MPI_Allreduce(&gpus, &all_gpus, 1, MPI_INT, MPI_MIN, comm);
    if (st == PC_OK && params->blurring && params->backend == PC_BACKEND_CUDA)
        st = pc__mpi_fail(PC_UNSUPPORTED, "rank %d: blurring mean shift across ranks runs on the CPU (the ring), "
                          "not on GPUs: take --backend openmp", rank);
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        return st;
    pc__ms_kernel kf = {params->kernel, 2 * h * h, h * h, INFINITY};
    double radius = params->radius > 0 ? params->radius : params->kernel == PC_KERNEL_GAUSSIAN ? INFINITY : h;
    kf.radius2 = radius * radius;
    double eps = params->eps < 0 ? 1e-3 * h : params->eps, merge_radius = params->merge_radius < 0 ? h / 2
                                                                                                     : params->merge_radius;
    /* Not blurring, the climbs are independent: all the points on every rank (one gather) and the core
     * library's climbs, unless a finite radius on several CPUs keeps each rank to its slab. */
    int gathered = !params->blurring && (all_gpus || !isfinite(radius) || size == 1), ring = params->blurring;
    times.method = gathered ? "gathered" : ring ? "ring" : "slabs";
    /* Every rank's row count: the blocks' sizes round the ring, and rank 0's gather. */
    unsigned long long *counts = calloc((size_t)size, sizeof *counts);
    size_t d = (size_t)dim, largest = 0, total = 0;
    float *own = NULL, *blk[2] = {NULL, NULL}, *all = NULL;
    double *num = NULL, *den = NULL;
    unsigned char *stopped = NULL;
    int32_t *all_labels = NULL;
    int *ints = NULL, *displs = NULL;
    if (!counts)
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory", rank);
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    MPI_Allgather(&n, 1, MPI_UNSIGNED_LONG_LONG, counts, 1, MPI_UNSIGNED_LONG_LONG, comm);
    for (int q = 0; q < size; q++) {
        largest = counts[q] > largest ? (size_t)counts[q] : largest;
        total += (size_t)counts[q];
    }
    if (total == 0)
        st = pc__mpi_fail(PC_INVALID_ARGUMENT, "rank %d: mean shift needs at least one point; the ranks hold none", rank);
    else if (largest * d > 0x7fffffffu || total * d > 0x7fffffffu)
        st = pc__mpi_fail(PC_UNSUPPORTED, "rank %d: %zu points of %zu values are more than one MPI message holds",
                          rank, total, d);
    else if (!(own = malloc((n * d + 1) * sizeof *own)))
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for its points", rank);
    else if (ring && (!(blk[0] = malloc((largest * d + 1) * sizeof(float))) ||
                      !(blk[1] = malloc((largest * d + 1) * sizeof(float))) || !(num = malloc((n * d + 1) * sizeof *num)) ||
                      !(den = malloc((n + 1) * sizeof *den)) || !(stopped = calloc(n + 1, 1))))
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the ring's blocks", rank);
    for (size_t i = 0; st == PC_OK && i < n; i++)
        for (size_t k = 0; k < d; k++) {
            double v = value_at(points, i, k);
            if (!isfinite(v) || fabs(v) > 3.4e38) {
                st = pc__mpi_fail(PC_INVALID_ARGUMENT, "rank %d: row %zu, dimension %zu: %g is not a finite float32",
                                  rank, i, k, v);
                break;
            }
            own[i * d + k] = (float)v;
        }
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    if (n)
        memcpy(modes, own, n * d * sizeof *own);
    times.setup = MPI_Wtime() - t0;
    int iterations = 0;
    if (gathered) {
        /* Where every rank has a GPU, all climb there: the core's auto would keep small shares on the
         * CPU, which differs by rank with the share's size and is slower than the device here. */
        pc_meanshift_params climb = *params;
        if (all_gpus)
            climb.backend = PC_BACKEND_CUDA;
        if ((st = pc__mpi_meanshift_gathered(comm, own, (size_t)n, d, counts, &climb, modes, &iterations,
                                             &times)) != PC_OK)
            goto done;
    } else if (!ring) {
        if ((st = pc__mpi_meanshift_slabs(comm, own, (size_t)n, d, &kf, radius, eps, params->max_iter, modes,
                                          &iterations, &times)) != PC_OK)
            goto done;
    } else
        for (;;) {
            double t1 = MPI_Wtime(), wait = 0;
            memset(num, 0, n * d * sizeof *num);
            memset(den, 0, n * sizeof *den);
            memcpy(blk[0], params->blurring ? modes : own, n * d * sizeof *own);
            int cur = 0, next_rank = (rank + 1) % size, prev_rank = (rank + size - 1) % size;
            for (int step = 0; step < size; step++) {
                int owner = (rank - step + size) % size, incoming = (owner - 1 + size) % size;
                MPI_Request req[2];
                int more = step < size - 1;
                if (more) { /* the next block travels while this one is summed */
                    MPI_Irecv(blk[1 - cur], (int)(counts[incoming] * d), MPI_FLOAT, prev_rank, step, comm, &req[0]);
                    MPI_Isend(blk[cur], (int)(counts[owner] * d), MPI_FLOAT, next_rank, step, comm, &req[1]);
                }
                pc__ms_accumulate(&kf, modes, stopped, (size_t)n, d, blk[cur], (size_t)counts[owner], num, den);
                if (more) {
                    double tw = MPI_Wtime();
                    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
                    wait += MPI_Wtime() - tw;
                    cur = 1 - cur;
                }
            }
            unsigned long long moving = pc__ms_step(modes, stopped, (size_t)n, d, num, den, eps), any = 0;
            iterations++;
            double t2 = MPI_Wtime();
            MPI_Allreduce(&moving, &any, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
            times.communication += wait + MPI_Wtime() - t2;
            times.compute += t2 - t1 - wait;
            if (any == 0 || iterations >= params->max_iter)
                break;
        }
    /* The modes merged on rank 0, the labels sent back. */
    double t3 = MPI_Wtime();
    if (rank == 0) {
        ints = calloc((size_t)size, sizeof *ints);
        displs = calloc((size_t)size, sizeof *displs);
        all = malloc((total * d + 1) * sizeof *all);
        all_labels = malloc((total + 1) * sizeof *all_labels);
        if (!ints || !displs || !all || !all_labels)
            st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank 0: out of memory for the modes");
        for (int q = 0, at = 0; st == PC_OK && q < size; q++) {
            ints[q] = (int)(counts[q] * d);
            displs[q] = at;
            at += ints[q];
        }
    }
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    MPI_Gatherv(modes, (int)(n * d), MPI_FLOAT, all, ints, displs, MPI_FLOAT, 0, comm);
    if (rank == 0) {
        if ((st = merge(all, total, d, merge_radius, all_labels, clusters)) != PC_OK)
            pc__mpi_core_fail(comm, st, "merging the modes");
        for (int q = 0, at = 0; q < size; q++) {
            ints[q] = (int)counts[q];
            displs[q] = at;
            at += ints[q];
        }
    }
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    MPI_Scatterv(all_labels, ints, displs, MPI_INT32_T, labels, (int)n, MPI_INT32_T, 0, comm);
    unsigned long long k = clusters->k;
    MPI_Bcast(&k, 1, MPI_UNSIGNED_LONG_LONG, 0, comm);
    if (rank != 0) {
        clusters->k = (size_t)k;
        clusters->sizes = malloc((k + 1) * sizeof *clusters->sizes);
        clusters->centres = malloc((k * d + 1) * sizeof *clusters->centres);
        if (!clusters->sizes || !clusters->centres)
            st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the clusters", rank);
    }
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    MPI_Bcast(clusters->sizes, (int)k, MPI_INT64_T, 0, comm);
    MPI_Bcast(clusters->centres, (int)(k * d), MPI_FLOAT, 0, comm);
    MPI_Allreduce(&iterations, &clusters->iterations, 1, MPI_INT, MPI_MAX, comm);
    times.communication += MPI_Wtime() - t3;
    if (report)
        *report = times;
done:
    if (st != PC_OK)
        pc_mpi_clusters_free(clusters);
    free(counts);
    free(own);
    free(blk[0]);
    free(blk[1]);
    free(num);
    free(den);
    free(stopped);
    free(all);
    free(all_labels);
    free(ints);
    free(displs);
    return st;
}
