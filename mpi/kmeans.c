/* k-means across ranks on the streamed k-means of parclust.h.
 *
 * Scan: each rank scans its rows (numbered by their place in the data, so the sample is the one a
 * single stream draws), rank 0 merges every rank's scan (gathered as partial states) and broadcasts
 * the merged one, from which every rank builds the same global stream and starts it: the same frame
 * and initial centres everywhere (the initialisation runs on the merged sample, as the single stream's
 * does, with pc_kmeans's centres when the sample holds every point).
 * Pass: each rank adds its rows to its global stream. The k x (dim + 1) counts and fixed-point sums
 * are integers: one MPI_Allreduce (MPI_SUM, int64) gives their totals, the same whatever the order
 * and the number of ranks. The rest of the partial states (point count, inertia buckets, the k - 1
 * farthest points) is exchanged (MPI_Allgatherv) and merged with the counts and sums zeroed, but for
 * one rank's, which carries the totals less this rank's own: every rank then holds the pass of all
 * the points and steps to the same centres. */
#include "internal_mpi.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    MPI_Comm comm;
    int rank, size;
    int *sizes, *displs; /* per rank, for the gathers */
} team;

static pc_status team_init(team *t, MPI_Comm comm)
{
    memset(t, 0, sizeof *t);
    t->comm = comm;
    MPI_Comm_rank(comm, &t->rank);
    MPI_Comm_size(comm, &t->size);
    t->sizes = calloc((size_t)t->size, sizeof *t->sizes);
    t->displs = calloc((size_t)t->size, sizeof *t->displs);
    if (!t->sizes || !t->displs)
        return pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory", t->rank);
    return PC_OK;
}

static void team_free(team *t)
{
    free(t->sizes);
    free(t->displs);
}

/* Displacements of the gathered pieces; -1 when their sum exceeds an int (MPI's counts). */
static long long place(team *t)
{
    long long at = 0;
    for (int q = 0; q < t->size; q++) {
        t->displs[q] = (int)at;
        at += t->sizes[q];
        if (at > 0x7fffffff)
            return -1;
    }
    return at;
}

static pc_status partial_bytes(const team *t, const pc_kmeans_stream *s, unsigned char **buf, size_t *size)
{
    *buf = NULL;
    pc_status st = pc_kmeans_stream_partial(s, NULL, size);
    if (st != PC_OK)
        return pc__mpi_core_fail(t->comm, st, "k-means partial state");
    if (*size > 0x7fffffff)
        return pc__mpi_fail(PC_UNSUPPORTED, "rank %d: a k-means partial state of %zu bytes is too large to send",
                            t->rank, *size);
    if (!(*buf = malloc(*size ? *size : 1)))
        return pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for a partial state", t->rank);
    if ((st = pc_kmeans_stream_partial(s, *buf, size)) != PC_OK)
        return pc__mpi_core_fail(t->comm, st, "k-means partial state");
    return PC_OK;
}

/* The scan of every rank in *global on every rank (`local` is consumed). */
static pc_status merge_scans(team *t, pc_kmeans_stream *local, const pc_kmeans_params *params, size_t dim,
                             pc_kmeans_stream **global)
{
    *global = NULL;
    unsigned char *mine = NULL, *all = NULL;
    size_t size = 0;
    pc_status st = partial_bytes(t, local, &mine, &size);
    int n = (int)size;
    MPI_Gather(&n, 1, MPI_INT, t->sizes, 1, MPI_INT, 0, t->comm);
    long long total = 0;
    if (t->rank == 0 && st == PC_OK && (total = place(t)) < 0)
        st = pc__mpi_fail(PC_UNSUPPORTED, "rank 0: the ranks' samples take more than 2 GiB together");
    if (t->rank == 0 && st == PC_OK && !(all = malloc((size_t)total + 1)))
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank 0: out of memory for the ranks' samples");
    if ((st = pc__mpi_agree(t->comm, st)) != PC_OK)
        goto done;
    MPI_Gatherv(mine, n, MPI_BYTE, all, t->sizes, t->displs, MPI_BYTE, 0, t->comm);
    free(mine);
    mine = NULL;
    if (t->rank == 0) { /* into rank 0's own scan, in rank order (the merge does not depend on it) */
        for (int q = 1; q < t->size && st == PC_OK; q++)
            if ((st = pc_kmeans_stream_merge_partial(local, all + t->displs[q], (size_t)t->sizes[q])) != PC_OK)
                pc__mpi_core_fail(t->comm, st, "merging the scans");
        free(all);
        all = NULL;
        if (st == PC_OK)
            st = partial_bytes(t, local, &mine, &size);
    }
    if ((st = pc__mpi_agree(t->comm, st)) != PC_OK)
        goto done;
    unsigned long long bytes = size;
    MPI_Bcast(&bytes, 1, MPI_UNSIGNED_LONG_LONG, 0, t->comm);
    if (t->rank != 0 && !(mine = malloc(bytes ? bytes : 1)))
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the merged sample", t->rank);
    if ((st = pc__mpi_agree(t->comm, st)) != PC_OK)
        goto done;
    MPI_Bcast(mine, (int)bytes, MPI_BYTE, 0, t->comm);
    if (t->rank == 0) {
        *global = local;
        local = NULL;
    } else if ((st = pc_kmeans_stream_create(params, dim, 0, global)) != PC_OK ||
               (st = pc_kmeans_stream_merge_partial(*global, mine, (size_t)bytes)) != PC_OK)
        pc__mpi_core_fail(t->comm, st, "the merged scan");
    st = pc__mpi_agree(t->comm, st);
done:
    free(mine);
    free(all);
    pc_kmeans_stream_free(local);
    if (st != PC_OK) {
        pc_kmeans_stream_free(*global);
        *global = NULL;
    }
    return st;
}

/* After this rank added its rows to s: s holds the pass of every rank's rows. */
static pc_status merge_pass(team *t, pc_kmeans_stream *s)
{
    if (t->size == 1)
        return PC_OK;
    unsigned char *mine = NULL, *rest = NULL, *rebuilt = NULL;
    int64_t *own = NULL, *totals = NULL;
    size_t size = 0, offset = 0, count = 0;
    pc_status st = partial_bytes(t, s, &mine, &size);
    if (st == PC_OK && (st = pc_kmeans_stream_partial_sums(s, &offset, &count)) != PC_OK)
        pc__mpi_core_fail(t->comm, st, "k-means partial state");
    size_t region = count * sizeof(int64_t);
    if (st == PC_OK && (offset + region > size || count > 0x7fffffff))
        st = pc__mpi_fail(PC_INTERNAL_ERROR, "rank %d: the partial state's sums lie outside it", t->rank);
    if (st == PC_OK && (!(own = malloc(region)) || !(totals = malloc(region))))
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the sums", t->rank);
    if ((st = pc__mpi_agree(t->comm, st)) != PC_OK)
        goto done;
    /* The counts and sums: one reduction, exact. */
    memcpy(own, mine + offset, region);
    MPI_Allreduce(own, totals, (int)count, MPI_INT64_T, MPI_SUM, t->comm);
    /* The rest: this rank's partial state without them. */
    memmove(mine + offset, mine + offset + region, size - offset - region);
    int n = (int)(size - region);
    MPI_Allgather(&n, 1, MPI_INT, t->sizes, 1, MPI_INT, t->comm);
    long long total = place(t);
    size_t largest = 0;
    for (int q = 0; q < t->size; q++)
        largest = (size_t)t->sizes[q] > largest ? (size_t)t->sizes[q] : largest;
    if (total < 0)
        st = pc__mpi_fail(PC_UNSUPPORTED, "rank %d: the ranks' partial states take more than 2 GiB together",
                          t->rank);
    else if (!(rest = malloc((size_t)total + 1)) || !(rebuilt = malloc(largest + region)))
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the partial states", t->rank);
    if ((st = pc__mpi_agree(t->comm, st)) != PC_OK)
        goto done;
    MPI_Allgatherv(mine, n, MPI_BYTE, rest, t->sizes, t->displs, MPI_BYTE, t->comm);
    int carrier = t->rank == 0 ? 1 : 0; /* the other rank whose state carries the totals less ours */
    for (int q = 0; q < t->size && st == PC_OK; q++) {
        if (q == t->rank)
            continue;
        const unsigned char *p = rest + t->displs[q];
        memcpy(rebuilt, p, offset);
        int64_t *sums = (int64_t *)(void *)(rebuilt + offset);
        for (size_t i = 0; i < count; i++)
            sums[i] = q == carrier ? totals[i] - own[i] : 0;
        memcpy(rebuilt + offset + region, p + offset, (size_t)t->sizes[q] - offset);
        if ((st = pc_kmeans_stream_merge_partial(s, rebuilt, (size_t)t->sizes[q] + region)) != PC_OK)
            pc__mpi_core_fail(t->comm, st, "merging the passes");
    }
    st = pc__mpi_agree(t->comm, st);
done:
    free(mine);
    free(rest);
    free(rebuilt);
    free(own);
    free(totals);
    return st;
}

/* Value j of row i of any view. */
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

/* The rank's share of the inertia of its final labels to the final centres, on the rank's threads:
 * chunks of rows summed apart, then the chunks in order, so that the sum does not depend on the
 * threads. */
static pc_status own_inertia(const pc_points *p, const int32_t *labels, const float *centres, double *inertia)
{
    const size_t chunk = 8192, chunks = (p->n + chunk - 1) / chunk;
    double *part = malloc((chunks + 1) * sizeof *part);
    if (!part)
        return PC_OUT_OF_MEMORY;
    const size_t stride = p->stride ? p->stride : p->dim * sizeof(float);
    const int f32 = p->dtype == PC_F32 && (uintptr_t)p->data % sizeof(float) == 0 && stride % sizeof(float) == 0;
#pragma omp parallel for schedule(static)
    for (long ch = 0; ch < (long)chunks; ch++) {
        size_t end = ((size_t)ch + 1) * chunk < p->n ? ((size_t)ch + 1) * chunk : p->n;
        double sum = 0;
        if (f32) /* the common case, without value_at's switch a value: the same sum */
            for (size_t i = (size_t)ch * chunk; i < end; i++) {
                const float *x = (const float *)((const unsigned char *)p->data + i * stride);
                const float *c = centres + (size_t)labels[i] * p->dim;
                for (size_t j = 0; j < p->dim; j++) {
                    double d = (double)x[j] - (double)c[j];
                    sum += d * d;
                }
            }
        else
            for (size_t i = (size_t)ch * chunk; i < end; i++)
                for (size_t j = 0; j < p->dim; j++) {
                    double d = value_at(p, i, j) - (double)centres[(size_t)labels[i] * p->dim + j];
                    sum += d * d;
                }
        part[ch] = sum;
    }
    double total = 0;
    for (size_t ch = 0; ch < chunks; ch++)
        total += part[ch];
    free(part);
    *inertia = total;
    return PC_OK;
}

/* One run (n_init 1). */
static pc_status kmeans_once(MPI_Comm comm, const pc_points *points, const pc_kmeans_params *params, int32_t *labels,
                             pc_result **result, pc_mpi_report *report)
{
    pc_mpi_report times = {0};
    team t;
    pc_kmeans_stream *local = NULL, *s = NULL;
    pc_status st = team_init(&t, comm);
    if (result)
        *result = NULL;
    if (st == PC_OK && (!points || !params || !result || (points->n && !labels)))
        st = pc__mpi_fail(PC_INVALID_ARGUMENT, "rank %d: pc_mpi_kmeans: points, params, result and (with rows) "
                          "labels must not be NULL", t.rank);
    /* Every rank's dim the same; the rows numbered in rank order. */
    unsigned long long dim = points ? points->dim : 0, lo = 0, hi = 0, n = points ? points->n : 0, first = 0;
    MPI_Allreduce(&dim, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm);
    MPI_Allreduce(&dim, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
    MPI_Exscan(&n, &first, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    if (t.rank == 0)
        first = 0; /* MPI_Exscan leaves rank 0's undefined */
    if (st == PC_OK && lo != hi)
        st = pc__mpi_fail(PC_INVALID_ARGUMENT, "rank %d: the ranks' points have %llu to %llu values per row", t.rank,
                          lo, hi);
    double t0 = MPI_Wtime();
    if (st == PC_OK && (st = pc_kmeans_stream_create(params, (size_t)dim, 0, &local)) != PC_OK)
        pc__mpi_core_fail(comm, st, NULL);
    if (st == PC_OK && n && (st = pc_kmeans_stream_scan(local, points, first)) != PC_OK)
        pc__mpi_fail(st, "rank %d (rows %llu to %llu): %s", t.rank, first, first + n - 1, pc_last_error());
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    st = merge_scans(&t, local, params, (size_t)dim, &s);
    local = NULL; /* merge_scans took it */
    if (st != PC_OK)
        goto done;
    /* The rank's rows, the same every pass, are held: with CUDA they stay on the GPU and a pass runs
     * there whole. */
    if ((st = pc_kmeans_stream_start(s)) != PC_OK || (n && (st = pc_kmeans_stream_hold(s, points)) != PC_OK)) {
        if (n)
            pc__mpi_fail(st, "rank %d (rows %llu to %llu): %s", t.rank, first, first + n - 1, pc_last_error());
        else
            pc__mpi_core_fail(comm, st, NULL);
    }
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    times.setup = MPI_Wtime() - t0;
    for (int done = 0; !done;) {
        double t1 = MPI_Wtime();
        if (n && (st = pc_kmeans_stream_add_held(s)) != PC_OK)
            pc__mpi_core_fail(comm, st, NULL);
        double t2 = MPI_Wtime();
        times.compute += t2 - t1;
        /* (the agreement's own reduction counts as communication: it is where a slow rank is waited for) */
        if ((st = pc__mpi_agree(comm, st)) != PC_OK || (st = merge_pass(&t, s)) != PC_OK)
            goto done;
        double t3 = MPI_Wtime();
        times.communication += t3 - t2;
        if ((st = pc_kmeans_stream_step(s, &done)) != PC_OK)
            pc__mpi_core_fail(comm, st, NULL);
        times.compute += MPI_Wtime() - t3;
        if ((st = pc__mpi_agree(comm, st)) != PC_OK)
            goto done;
    }
    double t4 = MPI_Wtime();
    if (n && (st = pc_kmeans_stream_label_held(s, labels)) != PC_OK)
        pc__mpi_core_fail(comm, st, NULL);
    if (st == PC_OK && (st = pc_kmeans_stream_result(s, result)) != PC_OK)
        pc__mpi_core_fail(comm, st, NULL);
    double mine = 0;
    if (st == PC_OK && n && own_inertia(points, labels, pc_result_centers(*result), &mine) != PC_OK)
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the inertia's sums", t.rank);
    if ((st = pc__mpi_agree(comm, st)) == PC_OK)
        MPI_Allreduce(&mine, &times.inertia, 1, MPI_DOUBLE, MPI_SUM, comm);
    times.finish = MPI_Wtime() - t4;
    if (report)
        *report = times;
done:
    if (st != PC_OK && result) {
        pc_result_free(*result);
        *result = NULL;
    }
    pc_kmeans_stream_free(local);
    pc_kmeans_stream_free(s);
    team_free(&t);
    return st;
}

/* --n-init: the runs pc_kmeans makes, run r from seed + 0x9E3779B97F4A7C15 r (its rule), each a
 * stream of its own (a stream is not rewound: each run scans again); the lowest inertia of the final
 * labels to the final centres wins, the first of equals. */
pc_status pc_mpi_kmeans(MPI_Comm comm, const pc_points *points, const pc_kmeans_params *params, int32_t *labels,
                        pc_result **result, pc_mpi_report *report)
{
    if (!params || !result || params->init == PC_INIT_GIVEN || params->n_init <= 1)
        return kmeans_once(comm, points, params, labels, result, report);
    size_t n = points ? points->n : 0;
    int32_t *trial = malloc((n + 1) * sizeof *trial);
    pc_status st = pc_mpi_agree(comm, trial ? PC_OK : PC_OUT_OF_MEMORY, "out of memory for a run's labels");
    if (st != PC_OK) {
        free(trial);
        return st;
    }
    pc_mpi_report best = {.inertia = INFINITY}, sum = {0};
    *result = NULL;
    for (int run = 0; run < params->n_init && st == PC_OK; run++) {
        pc_kmeans_params one = *params;
        one.n_init = 1;
        one.seed = params->seed + 0x9E3779B97F4A7C15ull * (uint64_t)run;
        pc_result *r = NULL;
        pc_mpi_report times;
        if ((st = kmeans_once(comm, points, &one, trial, &r, &times)) != PC_OK)
            break;
        sum.setup += times.setup;
        sum.compute += times.compute;
        sum.communication += times.communication;
        sum.finish += times.finish;
        if (run == 0 || times.inertia < best.inertia) { /* the same decision on every rank: the sum is */
            pc_result_free(*result);
            *result = r;
            best.inertia = times.inertia;
            if (n)
                memcpy(labels, trial, n * sizeof *labels);
        } else
            pc_result_free(r);
    }
    free(trial);
    if (st != PC_OK) {
        pc_result_free(*result);
        *result = NULL;
    } else if (report) {
        *report = sum;
        report->inertia = best.inertia;
    }
    return st;
}
