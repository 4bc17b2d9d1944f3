/* Mean shift across ranks with a finite radius R: slabs along one axis instead of the ring. The axis is
 * the one of the widest extent; its range is cut into one slab per rank holding about as many points
 * each (quantiles of an allreduced histogram). Rank s keeps, as references, every original point
 * whose axis value lies within R of its slab (the slab and a halo one radius wide on each side, sent
 * once), and shifts the points whose current position lies in its slab. A point at axis value x in slab
 * [lo, hi) sees only references within R of it, whose axis values lie in [x - R, x + R], inside
 * [lo - R, hi + R]: the halo holds all of them, so each shift is the one the ring computes. A point
 * that moves out of its slab travels to the slab it moved into (alltoallv) before the next
 * iteration; at the end every mode goes home to its point's rank and index. A rank then sums over its
 * slab's references only, not over every rank's points: the ring's P blocks become about one.
 *
 * The sums are the ring's (meanshift_kernel.h, doubles), over the references in another order: the
 * modes agree with the ring's and pc_meanshift's to within the stopping tolerance. */
#include "internal_mpi.h"
#include "meanshift_kernel.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BINS 4096

/* A point on the move: where it came from, whether it stopped, and its position (dim floats after
 * the header). Sent between ranks as bytes. */
typedef struct {
    uint64_t index;
    int32_t rank;
    int32_t stopped;
} point_head;

/* Whole multiples of 8 bytes, so that every record's head is aligned for its uint64. */
static size_t record_bytes(size_t dim) { return (sizeof(point_head) + dim * sizeof(float) + 7) / 8 * 8; }
static point_head *head_of(unsigned char *recs, size_t i, size_t dim) { return (point_head *)(void *)(recs + i * record_bytes(dim)); }
static float *pos_of(unsigned char *recs, size_t i, size_t dim) { return (float *)(void *)(recs + i * record_bytes(dim) + sizeof(point_head)); }

typedef struct {
    int axis, size;
    double *cut; /* size - 1 slab boundaries, increasing: slab s is [cut[s - 1], cut[s]) */
} slabs;

/* Record c: point i of this rank, at its original position, not stopped. */
static void put_point(unsigned char *recs, size_t c, size_t i, int rank, const float *own, size_t d)
{
    point_head h = {i, rank, 0};
    memcpy(head_of(recs, c, d), &h, sizeof h);
    memcpy(pos_of(recs, c, d), own + i * d, d * sizeof(float));
}

static int slab_of(const slabs *sl, double x)
{
    int lo = 0, hi = sl->size - 1; /* the number of cuts <= x */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (sl->cut[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The axis of the widest extent and cuts at the quantiles of its values. */
static pc_status make_slabs(MPI_Comm comm, int rank, int size, const float *own, size_t n, size_t d, slabs *sl)
{
    double *lo = malloc(d * sizeof *lo), *hi = malloc(d * sizeof *hi), *glo = malloc(d * sizeof *glo),
           *ghi = malloc(d * sizeof *ghi);
    unsigned long long *hist = calloc(BINS, sizeof *hist), *ghist = calloc(BINS, sizeof *ghist);
    sl->size = size;
    sl->cut = malloc((size_t)size * sizeof *sl->cut);
    pc_status st = lo && hi && glo && ghi && hist && ghist && sl->cut
                       ? PC_OK
                       : pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the slabs", rank);
    if ((st = pc__mpi_agree(comm, st)) == PC_OK) {
        for (size_t k = 0; k < d; k++) {
            lo[k] = INFINITY;
            hi[k] = -INFINITY;
        }
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < d; k++) {
                double v = own[i * d + k];
                lo[k] = v < lo[k] ? v : lo[k];
                hi[k] = v > hi[k] ? v : hi[k];
            }
        MPI_Allreduce(lo, glo, (int)d, MPI_DOUBLE, MPI_MIN, comm);
        MPI_Allreduce(hi, ghi, (int)d, MPI_DOUBLE, MPI_MAX, comm);
        sl->axis = 0;
        for (size_t k = 1; k < d; k++)
            if (ghi[k] - glo[k] > ghi[sl->axis] - glo[sl->axis])
                sl->axis = (int)k;
        double a = glo[sl->axis], width = (ghi[sl->axis] - a) / BINS;
        for (size_t i = 0; i < n; i++) {
            double b = width > 0 ? floor((own[i * d + (size_t)sl->axis] - a) / width) : 0;
            hist[b < 0 ? 0 : b >= BINS ? BINS - 1 : (size_t)b]++;
        }
        MPI_Allreduce(hist, ghist, BINS, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
        unsigned long long total = 0, seen = 0;
        for (int b = 0; b < BINS; b++)
            total += ghist[b];
        int s = 1;
        for (int b = 0; b < BINS && s < size; b++) {
            seen += ghist[b];
            while (s < size && (double)seen >= (double)total * s / size)
                sl->cut[s++ - 1] = a + width * (b + 1);
        }
        while (s < size)
            sl->cut[s++ - 1] = INFINITY;
    }
    free(lo);
    free(hi);
    free(glo);
    free(ghi);
    free(hist);
    free(ghist);
    return st;
}

/* Sends each rank the records addressed to it (dest[i], -1: none); *in, *nin: what arrived. */
static pc_status exchange(MPI_Comm comm, int rank, int size, const unsigned char *recs, size_t n, size_t bytes,
                          const int *dest, unsigned char **in, size_t *nin)
{
    int *scount = calloc((size_t)size, sizeof *scount), *rcount = calloc((size_t)size, sizeof *rcount),
        *sdisp = calloc((size_t)size, sizeof *sdisp), *rdisp = calloc((size_t)size, sizeof *rdisp);
    size_t *at = calloc((size_t)size, sizeof *at);
    unsigned char *out = malloc(n * bytes + 1);
    pc_status st = scount && rcount && sdisp && rdisp && at && out
                       ? PC_OK
                       : pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the slabs' exchange", rank);
    unsigned long long sent_bytes = 0, recv_bytes = 0;
    if (st == PC_OK) {
        for (size_t i = 0; i < n; i++)
            if (dest[i] >= 0)
                scount[dest[i]]++;
        for (int q = 0; q < size; q++)
            sent_bytes += (unsigned long long)scount[q] * bytes;
    }
    if (st == PC_OK && sent_bytes > INT_MAX)
        st = pc__mpi_fail(PC_UNSUPPORTED, "rank %d: %llu bytes of points for the slabs are more than one message holds",
                          rank, sent_bytes);
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, comm);
    for (int q = 0; q < size; q++)
        recv_bytes += (unsigned long long)rcount[q] * bytes;
    *nin = 0;
    *in = NULL;
    if (recv_bytes > INT_MAX)
        st = pc__mpi_fail(PC_UNSUPPORTED, "rank %d: %llu bytes of points for one slab are more than one message holds",
                          rank, recv_bytes);
    else if (!(*in = malloc(recv_bytes + 1)))
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the slab's points", rank);
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    for (int q = 0, s = 0, r = 0; q < size; q++) {
        sdisp[q] = s;
        rdisp[q] = r;
        at[q] = (size_t)s;
        s += scount[q];
        r += rcount[q];
        *nin += (size_t)rcount[q];
    }
    for (size_t i = 0; i < n; i++)
        if (dest[i] >= 0)
            memcpy(out + at[dest[i]]++ * bytes, recs + i * bytes, bytes);
    for (int q = 0; q < size; q++) { /* in bytes from here on */
        scount[q] *= (int)bytes;
        rcount[q] *= (int)bytes;
        sdisp[q] *= (int)bytes;
        rdisp[q] *= (int)bytes;
    }
    MPI_Alltoallv(out, scount, sdisp, MPI_BYTE, *in, rcount, rdisp, MPI_BYTE, comm);
done:
    free(scount);
    free(rcount);
    free(sdisp);
    free(rdisp);
    free(at);
    free(out);
    return st;
}

pc_status pc__mpi_meanshift_slabs(MPI_Comm comm, const float *own, size_t n, size_t d, const pc__ms_kernel *kf,
                                  double radius, double eps, int max_iter, float *modes, int *iterations,
                                  pc_mpi_report *times)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    slabs sl = {0, size, NULL};
    size_t bytes = record_bytes(d), nref = 0, held = 0;
    unsigned char *recs = NULL, *refs_in = NULL, *mine = NULL, *home = NULL;
    float *ref = NULL, *pos = NULL;
    double *num = NULL, *den = NULL;
    unsigned char *stopped = NULL;
    int *dest = NULL;
    pc_status st = make_slabs(comm, rank, size, own, n, d, &sl);
    if (st != PC_OK)
        goto done;
    /* The references: each point to every slab within R of it (its own and the neighbours whose halo
     * it lies in); then each point, as a mover, to its own slab. */
    size_t copies = 0;
    int *first = malloc((n + 1) * sizeof *first), *last = malloc((n + 1) * sizeof *last);
    if (first && last)
        for (size_t i = 0; i < n; i++) {
            double x = own[i * d + (size_t)sl.axis];
            first[i] = slab_of(&sl, x - radius);
            last[i] = slab_of(&sl, x + radius);
            copies += (size_t)(last[i] - first[i] + 1);
        }
    if (!first || !last || !(recs = malloc(copies * bytes + 1)) || !(dest = malloc((copies + 1) * sizeof *dest)))
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the slabs' references", rank);
    for (size_t i = 0, c = 0; st == PC_OK && i < n; i++)
        for (int s = first[i]; s <= last[i]; s++, c++) {
            put_point(recs, c, i, rank, own, d);
            dest[c] = s;
        }
    free(first);
    free(last);
    if ((st = pc__mpi_agree(comm, st)) != PC_OK || (st = exchange(comm, rank, size, recs, copies, bytes, dest, &refs_in, &nref)) != PC_OK)
        goto done;
    if (!(ref = malloc((nref * d + 1) * sizeof *ref)))
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the slab's references", rank);
    for (size_t r = 0; st == PC_OK && r < nref; r++)
        memcpy(ref + r * d, pos_of(refs_in, r, d), d * sizeof(float));
    free(refs_in);
    refs_in = NULL;
    for (size_t i = 0; st == PC_OK && i < n; i++) { /* the movers, each to its own slab */
        put_point(recs, i, i, rank, own, d);
        dest[i] = slab_of(&sl, own[i * d + (size_t)sl.axis]);
    }
    if ((st = pc__mpi_agree(comm, st)) != PC_OK || (st = exchange(comm, rank, size, recs, n, bytes, dest, &mine, &held)) != PC_OK)
        goto done;
    *iterations = 0;
    for (;;) {
        double t1 = MPI_Wtime();
        free(pos);
        free(num);
        free(den);
        free(stopped);
        free(dest);
        pos = malloc((held * d + 1) * sizeof *pos);
        num = calloc(held * d + 1, sizeof *num);
        den = calloc(held + 1, sizeof *den);
        stopped = malloc(held + 1);
        dest = malloc((held + 1) * sizeof *dest);
        if (!pos || !num || !den || !stopped || !dest)
            st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the slab's points", rank);
        if ((st = pc__mpi_agree(comm, st)) != PC_OK)
            goto done;
        for (size_t i = 0; i < held; i++) {
            memcpy(pos + i * d, pos_of(mine, i, d), d * sizeof(float));
            stopped[i] = (unsigned char)head_of(mine, i, d)->stopped;
        }
        pc__ms_accumulate(kf, pos, stopped, held, d, ref, nref, num, den);
        unsigned long long moving = pc__ms_step(pos, stopped, held, d, num, den, eps), any = 0;
        int moved_out = 0;
        for (size_t i = 0; i < held; i++) {
            memcpy(pos_of(mine, i, d), pos + i * d, d * sizeof(float));
            head_of(mine, i, d)->stopped = stopped[i];
            dest[i] = slab_of(&sl, pos[i * d + (size_t)sl.axis]);
            moved_out |= dest[i] != rank;
        }
        (*iterations)++;
        double t2 = MPI_Wtime();
        times->compute += t2 - t1;
        unsigned long long mine_flags[2] = {moving, (unsigned long long)moved_out}, all_flags[2];
        MPI_Allreduce(mine_flags, all_flags, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
        any = all_flags[0];
        if (any == 0 || *iterations >= max_iter)
            break;
        if (all_flags[1]) { /* some points crossed into another slab: they travel there */
            unsigned char *moved = NULL;
            size_t nmoved = 0;
            if ((st = exchange(comm, rank, size, mine, held, bytes, dest, &moved, &nmoved)) != PC_OK)
                goto done;
            free(mine);
            mine = moved;
            held = nmoved;
        }
        times->communication += MPI_Wtime() - t2;
    }
    /* Home: every mode to its point's rank and index. */
    double t3 = MPI_Wtime();
    for (size_t i = 0; i < held; i++)
        dest[i] = head_of(mine, i, d)->rank;
    size_t back = 0;
    if ((st = exchange(comm, rank, size, mine, held, bytes, dest, &home, &back)) != PC_OK)
        goto done;
    if (back != n)
        st = pc__mpi_fail(PC_INTERNAL_ERROR, "rank %d: %zu of its %zu points came back from the slabs", rank, back, n);
    for (size_t i = 0; st == PC_OK && i < back; i++) {
        uint64_t at = head_of(home, i, d)->index;
        if (at >= n) {
            st = pc__mpi_fail(PC_INTERNAL_ERROR, "rank %d: a mode came back for point %llu of %zu", rank,
                              (unsigned long long)at, n);
            break;
        }
        memcpy(modes + at * d, pos_of(home, i, d), d * sizeof(float));
    }
    st = pc__mpi_agree(comm, st);
    times->communication += MPI_Wtime() - t3;
done:
    free(sl.cut);
    free(recs);
    free(refs_in);
    free(mine);
    free(home);
    free(ref);
    free(pos);
    free(num);
    free(den);
    free(stopped);
    free(dest);
    return st;
}
