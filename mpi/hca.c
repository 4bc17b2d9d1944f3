/* HCA across ranks on the streamed HCA of parclust.h: the box by reductions of the ranks' minima and
 * maxima (pc_hca_stream_bound's box of all the points, exactly), each rank's points counted into its
 * own histogram, the non-empty cells (sparse: keys and counts) gathered to rank 0 and added there,
 * the sum broadcast, and every rank finishing that same histogram: the components, dendrogram and cut
 * depend on the cells alone, so each rank holds the single-process result and its cell-to-cluster
 * map, and labels its own points without any further exchange. (Broadcasting the histogram rather
 * than the finished map costs each rank the finish, which touches cells, never points, and needs no
 * interface beyond the stream's.) Each rank's rows are the stream's held block: with CUDA they cross
 * to the GPU once for the box, the counting and the labels. */
#include "internal_mpi.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* This rank's histogram: *cells non-empty cells, keys increasing, and their counts (arrays of
 * *cells + 1, the caller's to free). */
static pc_status own_histogram(MPI_Comm comm, int rank, const pc_hca_stream *s, size_t *cells, uint64_t **keys,
                               int64_t **counts)
{
    *keys = NULL;
    *counts = NULL;
    pc_status st = pc_hca_stream_histogram(s, cells, NULL, NULL);
    if (st != PC_OK)
        pc__mpi_core_fail(comm, st, "HCA histogram");
    else if (!(*keys = malloc((*cells + 1) * sizeof **keys)) || !(*counts = malloc((*cells + 1) * sizeof **counts)))
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the histogram", rank);
    else if ((st = pc_hca_stream_histogram(s, cells, *keys, *counts)) != PC_OK)
        pc__mpi_core_fail(comm, st, "HCA histogram");
    return st;
}

/* Two histograms (keys increasing) summed into out, keys increasing; returns its cells. */
static size_t sum_two(const uint64_t *ka, const int64_t *ca, size_t na, const uint64_t *kb, const int64_t *cb, size_t nb,
                      uint64_t *ko, int64_t *co)
{
    size_t i = 0, j = 0, q = 0;
    while (i < na || j < nb) {
        if (j == nb || (i < na && ka[i] < kb[j])) {
            ko[q] = ka[i];
            co[q++] = ca[i++];
        } else if (i == na || kb[j] < ka[i]) {
            ko[q] = kb[j];
            co[q++] = cb[j++];
        } else {
            ko[q] = ka[i];
            co[q++] = ca[i++] + cb[j++];
        }
    }
    return q;
}

/* Rank 0's sum of the other ranks' gathered histograms (rank q's `sizes[q]` cells at displs[q] of keys
 * and counts, keys increasing): summed two by two in rounds, so that P ranks of U cells in all cost
 * U log P (adding them to the stream one after another would merge each into the growing sum: U P).
 * The sum ends in keys and counts (from their start), *cells of them; spare: room for as many. */
static void sum_gathered(int size, const int *sizes, const int *displs, uint64_t *keys, int64_t *counts,
                         uint64_t *spare_keys, int64_t *spare_counts, size_t *first, size_t *length, size_t *cells)
{
    int lists = 0;
    for (int q = 1; q < size; q++) { /* rank 0's own cells are its stream's already */
        first[lists] = (size_t)displs[q];
        length[lists++] = (size_t)sizes[q];
    }
    uint64_t *k = keys, *ks = spare_keys;
    int64_t *c = counts, *cs = spare_counts;
    while (lists > 1) {
        int out = 0;
        size_t at = 0;
        for (int l = 0; l < lists; l += 2) {
            size_t n = l + 1 < lists ? sum_two(k + first[l], c + first[l], length[l], k + first[l + 1],
                                               c + first[l + 1], length[l + 1], ks + at, cs + at)
                                     : sum_two(k + first[l], c + first[l], length[l], NULL, NULL, 0, ks + at, cs + at);
            first[out] = at;
            length[out++] = n;
            at += n;
        }
        lists = out;
        uint64_t *tk = k;
        int64_t *tc = c;
        k = ks, c = cs, ks = tk, cs = tc;
    }
    *cells = lists ? length[0] : 0;
    if (lists && (k != keys || first[0] != 0)) {
        memmove(keys, k + first[0], *cells * sizeof *keys);
        memmove(counts, c + first[0], *cells * sizeof *counts);
    }
}

/* Every rank's histogram summed into every rank's stream s: the ranks' non-empty cells gathered to
 * rank 0 and added into its s, the sum broadcast, and every other rank adding to its own counts the
 * rest of the sum (the sum less its own cells, which it keeps: its held rows stay where they are). */
static pc_status merge_histograms(MPI_Comm comm, int rank, int size, pc_hca_stream *s)
{
    size_t cells = 0, own_cells = 0;
    uint64_t *keys = NULL, *own_keys = NULL;
    int64_t *counts = NULL, *own_counts = NULL;
    int *sizes = NULL, *displs = NULL;
    pc_status st = own_histogram(comm, rank, s, &own_cells, &own_keys, &own_counts);
    if (st == PC_OK && own_cells > 0x7fffffff)
        st = pc__mpi_fail(PC_UNSUPPORTED, "rank %d: %zu non-empty cells are more than one message holds", rank,
                          own_cells);
    if (rank == 0 && st == PC_OK && (!(sizes = calloc((size_t)size, sizeof *sizes)) ||
                                     !(displs = calloc((size_t)size, sizeof *displs))))
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank 0: out of memory");
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    int mine = (int)own_cells;
    MPI_Gather(&mine, 1, MPI_INT, sizes, 1, MPI_INT, 0, comm);
    uint64_t *all_keys = NULL;
    int64_t *all_counts = NULL;
    long long total = 0;
    if (rank == 0) {
        for (int q = 0; q < size && total >= 0; q++) {
            displs[q] = (int)total;
            total += sizes[q];
            if (total > 0x7fffffff)
                total = -1;
        }
        if (total < 0)
            st = pc__mpi_fail(PC_UNSUPPORTED, "rank 0: the ranks' histograms hold more than 2^31 cells together");
        else if (!(all_keys = malloc(((size_t)total + 1) * sizeof *all_keys)) ||
                 !(all_counts = malloc(((size_t)total + 1) * sizeof *all_counts)))
            st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank 0: out of memory for the ranks' histograms");
    }
    if ((st = pc__mpi_agree(comm, st)) != PC_OK) {
        free(all_keys);
        free(all_counts);
        goto done;
    }
    MPI_Gatherv(own_keys, mine, MPI_UINT64_T, all_keys, sizes, displs, MPI_UINT64_T, 0, comm);
    MPI_Gatherv(own_counts, mine, MPI_INT64_T, all_counts, sizes, displs, MPI_INT64_T, 0, comm);
    if (rank == 0) {
        uint64_t *spare_keys = malloc(((size_t)total + 1) * sizeof *spare_keys);
        int64_t *spare_counts = malloc(((size_t)total + 1) * sizeof *spare_counts);
        size_t *first = malloc((size_t)size * sizeof *first), *length = malloc((size_t)size * sizeof *length), sum = 0;
        if (!spare_keys || !spare_counts || !first || !length)
            st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank 0: out of memory for the ranks' histograms");
        else {
            sum_gathered(size, sizes, displs, all_keys, all_counts, spare_keys, spare_counts, first, length, &sum);
            if ((st = pc_hca_stream_add_histogram(s, sum, all_keys, all_counts)) != PC_OK)
                pc__mpi_core_fail(comm, st, "adding the ranks' histograms");
        }
        free(spare_keys);
        free(spare_counts);
        free(first);
        free(length);
        free(all_keys);
        free(all_counts);
        if (st == PC_OK)
            st = own_histogram(comm, rank, s, &cells, &keys, &counts);
    }
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    unsigned long long total_cells = cells;
    MPI_Bcast(&total_cells, 1, MPI_UNSIGNED_LONG_LONG, 0, comm);
    if (total_cells > 0x7fffffff)
        st = pc__mpi_fail(PC_UNSUPPORTED, "rank %d: %llu non-empty cells are more than one message holds", rank,
                          total_cells);
    else if (rank != 0 && (!(keys = malloc(((size_t)total_cells + 1) * sizeof *keys)) ||
                           !(counts = malloc(((size_t)total_cells + 1) * sizeof *counts))))
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the histogram", rank);
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    MPI_Bcast(keys, (int)total_cells, MPI_UINT64_T, 0, comm);
    MPI_Bcast(counts, (int)total_cells, MPI_INT64_T, 0, comm);
    if (rank != 0) {
        /* The sum less this rank's cells (both by increasing key; the sum holds every cell of this
         * rank's), its empty differences left out. */
        size_t j = 0, rest = 0;
        for (size_t i = 0; i < (size_t)total_cells; i++) {
            int64_t c = counts[i];
            if (j < own_cells && own_keys[j] == keys[i])
                c -= own_counts[j++];
            if (c != 0) {
                keys[rest] = keys[i];
                counts[rest++] = c;
            }
        }
        if (j != own_cells)
            st = pc__mpi_fail(PC_INTERNAL_ERROR, "rank %d: the summed histogram lacks cells of this rank's", rank);
        else if ((st = pc_hca_stream_add_histogram(s, rest, keys, counts)) != PC_OK)
            pc__mpi_core_fail(comm, st, "the summed histogram");
    }
    st = pc__mpi_agree(comm, st);
done:
    free(keys);
    free(counts);
    free(own_keys);
    free(own_counts);
    free(sizes);
    free(displs);
    return st;
}

/* pc_mpi_hca and pc_mpi_hca_device: on_device, the rows and labels are in GPU memory. */
static pc_status hca(MPI_Comm comm, const pc_points *points, const pc_hca_params *params, int32_t *labels,
                     int on_device, pc_result **result, float **centres, pc_mpi_report *report)
{
    double t_start = MPI_Wtime(), t_setup = t_start, compute = 0, finish = 0, t;
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    pc_hca_stream *s = NULL;
    double *sums = NULL, *all = NULL;
    pc_status st = PC_OK;
    if (result)
        *result = NULL;
    if (centres)
        *centres = NULL;
    if (!points || !params || !result || (points->n && !labels))
        st = pc__mpi_fail(PC_INVALID_ARGUMENT, "rank %d: %s: points, params, result and (with rows) labels must "
                          "not be NULL", rank, on_device ? "pc_mpi_hca_device" : "pc_mpi_hca");
    unsigned long long dim = points ? points->dim : 0, dlo = 0, dhi = 0, n = points ? points->n : 0, total = 0;
    MPI_Allreduce(&dim, &dlo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm);
    MPI_Allreduce(&dim, &dhi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
    MPI_Allreduce(&n, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    if (st == PC_OK && dlo != dhi)
        st = pc__mpi_fail(PC_INVALID_ARGUMENT, "rank %d: the ranks' points have %llu to %llu values per row", rank,
                          dlo, dhi);
    if (st == PC_OK && (dim < 1 || dim > 8))
        st = pc__mpi_fail(PC_INVALID_ARGUMENT, "rank %d: HCA takes points of 1 to 8 values, got %llu", rank, dim);
    if (st == PC_OK && total == 0)
        st = pc__mpi_fail(PC_INVALID_ARGUMENT, "rank %d: HCA needs at least one point; the ranks hold none", rank);
    if (st == PC_OK && on_device && params->backend != PC_BACKEND_AUTO && params->backend != PC_BACKEND_CUDA)
        st = pc__mpi_fail(PC_INVALID_ARGUMENT, "rank %d: pc_mpi_hca_device: points in GPU memory need the CUDA "
                          "backend (or AUTO), not %s", rank, pc_backend_name(params->backend));
    if (st == PC_OK && params->refine_borders)
        st = pc__mpi_fail(PC_UNSUPPORTED, "rank %d: HCA-MS (refine_borders) does not run across ranks: its border "
                          "points climb the cells' means one by one, which the streamed HCA does not do", rank);
    /* m 0: pc_hca's rule on the points of all the ranks (the stream itself needs m). */
    pc_hca_params own = params ? *params : (pc_hca_params){0};
    if (st == PC_OK && own.m == 0 && total > 0 && dim >= 1 && dim <= 8)
        own.m = pc_hca_auto_m(total, (size_t)dim);
    if (on_device)
        own.backend = PC_BACKEND_CUDA;
    params = &own;
    if (st == PC_OK && (st = pc_hca_stream_create(params, (size_t)dim, &s)) != PC_OK)
        pc__mpi_core_fail(comm, st, NULL);
    /* Every rank's stream is made before any rank holds its rows: ranks sharing a GPU size their
     * buffers to its free memory, which a held block would take. */
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    double lo[8], hi[8], glo[8], ghi[8];
    for (int j = 0; j < 8; j++) {
        lo[j] = INFINITY;
        hi[j] = -INFINITY;
    }
    /* The rank's rows held by its stream (on its GPU with CUDA: one crossing of the bus for the three
     * passes, none when they are there already). */
    if (st == PC_OK && n &&
        ((st = on_device ? pc_hca_stream_hold_device(s, points) : pc_hca_stream_hold(s, points)) != PC_OK ||
         (st = pc_hca_stream_bound_held(s)) != PC_OK ||
         (st = pc_hca_stream_box(s, lo, hi)) != PC_OK))
        pc__mpi_core_fail(comm, st, NULL);
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    /* The box of all the points: min and max are exact, in any order. */
    MPI_Allreduce(lo, glo, (int)dim, MPI_DOUBLE, MPI_MIN, comm);
    MPI_Allreduce(hi, ghi, (int)dim, MPI_DOUBLE, MPI_MAX, comm);
    t_setup = t = MPI_Wtime();
    if ((st = pc_hca_stream_set_box(s, glo, ghi)) != PC_OK || (n && (st = pc_hca_stream_add_held(s)) != PC_OK))
        pc__mpi_core_fail(comm, st, NULL);
    compute += MPI_Wtime() - t;
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    if ((st = merge_histograms(comm, rank, size, s)) != PC_OK)
        goto done;
    t = MPI_Wtime();
    if ((st = pc_hca_stream_finish(s, result)) != PC_OK)
        pc__mpi_core_fail(comm, st, NULL);
    finish = MPI_Wtime() - t;
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    size_t k = pc_result_cluster_count(*result), width = k * ((size_t)dim + 1);
    if (!(sums = calloc(width + 1, sizeof *sums)) || !(all = calloc(width + 1, sizeof *all)))
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the centres", rank);
    t = MPI_Wtime();
    if (st == PC_OK && n &&
        (st = on_device ? pc_hca_stream_label_held_device(s, labels, sums) : pc_hca_stream_label_held(s, labels, sums)) !=
            PC_OK)
        pc__mpi_core_fail(comm, st, NULL);
    compute += MPI_Wtime() - t;
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    if (centres) {
        MPI_Allreduce(sums, all, (int)width, MPI_DOUBLE, MPI_SUM, comm);
        float *c = malloc((k * (size_t)dim + 1) * sizeof *c);
        if (!c)
            st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the centres", rank);
        for (size_t q = 0; c && q < k; q++) { /* as pc_hca: float(sum / count) */
            double count = all[q * ((size_t)dim + 1) + (size_t)dim];
            for (size_t j = 0; j < (size_t)dim; j++)
                c[q * (size_t)dim + j] = count > 0 ? (float)(all[q * ((size_t)dim + 1) + j] / count) : 0.0f;
        }
        *centres = c;
        st = pc__mpi_agree(comm, st);
    }
done:
    if (report) {
        memset(report, 0, sizeof *report);
        report->setup = t_setup - t_start;
        report->compute = compute;
        report->finish = finish;
        report->communication = MPI_Wtime() - t_setup - compute - finish;
    }
    if (st != PC_OK) {
        if (result) {
            pc_result_free(*result);
            *result = NULL;
        }
        if (centres) {
            free(*centres);
            *centres = NULL;
        }
    }
    free(sums);
    free(all);
    pc_hca_stream_free(s);
    return st;
}

pc_status pc_mpi_hca(MPI_Comm comm, const pc_points *points, const pc_hca_params *params, int32_t *labels,
                     pc_result **result, float **centres)
{
    return hca(comm, points, params, labels, 0, result, centres, NULL);
}

pc_status pc_mpi_hca_device(MPI_Comm comm, const pc_points *points, const pc_hca_params *params,
                            int32_t *device_labels, pc_result **result, float **centres, pc_mpi_report *report)
{
    return hca(comm, points, params, device_labels, 1, result, centres, report);
}
