/* k-means|| (Bahmani et al.) across ranks, as Spark MLlib runs it: a first centre drawn uniformly, then
 * `rounds` rounds in which every point joins the candidates with probability
 * min(1, l d^2(x) / phi) (l = oversampling x k, phi the sum of d^2 over all points), each candidate
 * weighted by the points closest to it, and k-means++ on the weighted candidates (greedy: 2 + ln k
 * trials a step), refined by weighted Lloyd iterations (Spark: 30), on every rank alike. The random draws depend on the seed, the round
 * and the point's index among all the points, never on the rank that holds it, so the candidates are
 * the same for any number of ranks (up to phi, a double sum whose last bits depend on the reduction's
 * order: a draw that falls within that rounding of its threshold could go the other way). */
#include "internal_mpi.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix64(uint64_t z) /* splitmix64's finaliser */
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t seed, uint64_t round, uint64_t index)
{
    return (double)(mix64(mix64(seed ^ mix64(round)) ^ index) >> 11) * 0x1.0p-53;
}

static double dist2(const float *a, const float *b, size_t dim)
{
    double s = 0;
    for (size_t j = 0; j < dim; j++) {
        double d = (double)a[j] - b[j];
        s += d * d;
    }
    return s;
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

/* Weighted k-means++ then weighted Lloyd on the m candidates, the same on every rank. */
static void reduce_candidates(const float *cand, const double *w, size_t m, size_t dim, size_t k, uint64_t seed,
                              float *centres, double *d2, size_t *assign, double *sums)
{
    double total = 0;
    for (size_t i = 0; i < m; i++)
        total += w[i];
    uint64_t draw = 0;
    double u = uniform(seed, 1000003, draw++) * total, acc = 0;
    size_t pick = m - 1;
    for (size_t i = 0; i < m; i++)
        if ((acc += w[i]) > u) {
            pick = i;
            break;
        }
    memcpy(centres, cand + pick * dim, dim * sizeof *centres);
    for (size_t i = 0; i < m; i++)
        d2[i] = dist2(cand + i * dim, centres, dim);
    /* Greedy k-means++ (as scikit-learn's and pc_kmeans's: 2 + ln k trials a step, the one that lowers
     * the weighted potential most kept): plain k-means++ leaves two centres in one cluster and none
     * in another often enough to matter on its few candidates. */
    int trials = 2 + (int)log((double)k);
    for (size_t c = 1; c < k; c++) {
        double phi = 0;
        for (size_t i = 0; i < m; i++)
            phi += w[i] * d2[i];
        size_t best = m;
        double best_phi = INFINITY;
        for (int t = 0; t < trials; t++) {
            pick = m - 1;
            if (phi > 0) {
                u = uniform(seed, 1000003, draw++) * phi;
                acc = 0;
                for (size_t i = 0; i < m; i++)
                    if ((acc += w[i] * d2[i]) > u) {
                        pick = i;
                        break;
                    }
            } else { /* every candidate sits on a centre: any will do */
                pick = c < m ? c : m - 1;
            }
            double after = 0;
            for (size_t i = 0; i < m; i++) {
                double dd = dist2(cand + i * dim, cand + pick * dim, dim);
                after += w[i] * (dd < d2[i] ? dd : d2[i]);
            }
            if (after < best_phi) {
                best_phi = after;
                best = pick;
            }
        }
        memcpy(centres + c * dim, cand + best * dim, dim * sizeof *centres);
        for (size_t i = 0; i < m; i++) {
            double dd = dist2(cand + i * dim, centres + c * dim, dim);
            d2[i] = dd < d2[i] ? dd : d2[i];
        }
    }
    for (int it = 0; it < 30; it++) { /* weighted Lloyd on the candidates (Spark's LocalKMeans) */
        memset(sums, 0, k * (dim + 1) * sizeof *sums);
        for (size_t i = 0; i < m; i++) {
            size_t best = 0;
            double bd = INFINITY;
            for (size_t c = 0; c < k; c++) {
                double d = dist2(cand + i * dim, centres + c * dim, dim);
                if (d < bd) {
                    bd = d;
                    best = c;
                }
            }
            assign[i] = best;
            for (size_t j = 0; j < dim; j++)
                sums[best * (dim + 1) + j] += w[i] * cand[i * dim + j];
            sums[best * (dim + 1) + dim] += w[i];
        }
        int moved = 0;
        for (size_t c = 0; c < k; c++) {
            double cw = sums[c * (dim + 1) + dim];
            if (!(cw > 0))
                continue; /* an empty centre stays where it is */
            for (size_t j = 0; j < dim; j++) {
                float v = (float)(sums[c * (dim + 1) + j] / cw);
                moved |= v != centres[c * dim + j];
                centres[c * dim + j] = v;
            }
        }
        if (!moved)
            break;
    }
}

pc_status pc_mpi_kmeans_parallel_init(MPI_Comm comm, const pc_points *points, size_t k, uint64_t seed, int rounds,
                                      double oversampling, float *centres)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    pc_status st = PC_OK;
    unsigned long long n = points ? points->n : 0, dim = points ? points->dim : 0, first = 0, total = 0, dmax = 0;
    MPI_Allreduce(&dim, &dmax, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
    MPI_Allreduce(&n, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    MPI_Exscan(&n, &first, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    if (rank == 0)
        first = 0;
    if (!points || !centres || k == 0 || rounds < 1 || !(oversampling > 0) || dim != dmax || dim == 0)
        st = pc__mpi_fail(PC_INVALID_ARGUMENT, "rank %d: k-means||: points, centres, k >= 1, rounds >= 1, "
                          "oversampling > 0 and the same dim on every rank are needed", rank);
    else if (total < k)
        st = pc__mpi_fail(PC_INVALID_ARGUMENT, "rank %d: k (%zu) exceeds the %llu points", rank, k, total);
    size_t d = (size_t)dim, cap = 1 + (size_t)ceil(oversampling * (double)k) * (size_t)rounds * 2 + k;
    float *x = malloc((n * d + 1) * sizeof *x), *cand = NULL, *mine = NULL;
    double *d2 = malloc((n + 1) * sizeof *d2);
    int *counts = calloc((size_t)size, sizeof *counts), *displs = calloc((size_t)size, sizeof *displs);
    if (st == PC_OK && (!x || !d2 || !counts || !displs))
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for k-means||", rank);
    for (size_t i = 0; st == PC_OK && i < n; i++)
        for (size_t j = 0; j < d; j++)
            x[i * d + j] = (float)value_at(points, i, j);
    size_t m = 0;
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    /* The first centre: the point of a uniformly drawn index, sent by the rank that holds it. */
    unsigned long long g = (unsigned long long)(uniform(seed, 0, 0) * (double)total);
    g = g < total ? g : total - 1;
    unsigned long long holder_local = (g >= first && g < first + n) ? (unsigned long long)rank : 0, holder = 0;
    MPI_Allreduce(&holder_local, &holder, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm);
    cand = malloc((cap * d + 1) * sizeof *cand);
    mine = malloc((n * d + 1) * sizeof *mine);
    st = cand && mine ? PC_OK : pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the candidates", rank);
    if ((st = pc__mpi_agree(comm, st)) != PC_OK)
        goto done;
    if ((unsigned long long)rank == holder)
        memcpy(cand, x + (g - first) * d, d * sizeof *cand);
    MPI_Bcast(cand, (int)d, MPI_FLOAT, (int)holder, comm);
    m = 1;
    for (size_t i = 0; i < n; i++)
        d2[i] = dist2(x + i * d, cand, d);
    double l = oversampling * (double)k;
    for (int round = 1; round <= rounds; round++) {
        double local = 0, phi = 0;
        for (size_t i = 0; i < n; i++)
            local += d2[i];
        MPI_Allreduce(&local, &phi, 1, MPI_DOUBLE, MPI_SUM, comm);
        if (!(phi > 0))
            break; /* every point is a candidate already */
        int picked = 0;
        for (size_t i = 0; i < n; i++)
            if (uniform(seed, (uint64_t)round, first + i) < l * d2[i] / phi)
                memcpy(mine + (size_t)picked++ * d, x + i * d, d * sizeof *mine);
        int mine_values = picked * (int)d, all = 0;
        MPI_Allgather(&mine_values, 1, MPI_INT, counts, 1, MPI_INT, comm);
        for (int q = 0; q < size; q++) {
            displs[q] = all;
            all += counts[q];
        }
        if (m + (size_t)all / d > cap) { /* more than expected (l d^2 / phi exceeds 1 for many): grow */
            cap = m + (size_t)all / d + k;
            float *grown = realloc(cand, (cap * d + 1) * sizeof *cand);
            if (!grown)
                st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the candidates", rank);
            else
                cand = grown;
        }
        if ((st = pc__mpi_agree(comm, st)) != PC_OK)
            goto done;
        /* in rank order, that is in the points' order: the same list on every rank */
        MPI_Allgatherv(mine, mine_values, MPI_FLOAT, cand + m * d, counts, displs, MPI_FLOAT, comm);
        size_t added = (size_t)all / d;
        for (size_t i = 0; i < n; i++)
            for (size_t c = m; c < m + added; c++) {
                double dd = dist2(x + i * d, cand + c * d, d);
                d2[i] = dd < d2[i] ? dd : d2[i];
            }
        m += added;
    }
    if (m < k) {
        st = pc__mpi_fail(PC_INVALID_ARGUMENT, "rank %d: k-means|| found %zu candidates for k = %zu: raise "
                          "--kpar-rounds or --kpar-oversampling", rank, m, k);
        st = pc__mpi_agree(comm, st);
        goto done;
    }
    /* Weights: the points closest to each candidate (int64 counts, summed exactly). */
    int64_t *near = calloc(m + 1, sizeof *near), *weight_i = calloc(m + 1, sizeof *weight_i);
    double *w = malloc((m + 1) * sizeof *w), *cd2 = malloc((m + 1) * sizeof *cd2);
    size_t *assign = malloc((m + 1) * sizeof *assign);
    double *sums = malloc((k * (d + 1) + 1) * sizeof *sums);
    if (!near || !weight_i || !w || !cd2 || !assign || !sums)
        st = pc__mpi_fail(PC_OUT_OF_MEMORY, "rank %d: out of memory for the candidates' weights", rank);
    if ((st = pc__mpi_agree(comm, st)) == PC_OK) {
        for (size_t i = 0; i < n; i++) {
            size_t best = 0;
            double bd = INFINITY;
            for (size_t c = 0; c < m; c++) {
                double dd = dist2(x + i * d, cand + c * d, d);
                if (dd < bd) {
                    bd = dd;
                    best = c;
                }
            }
            near[best]++;
        }
        MPI_Allreduce(near, weight_i, (int)m, MPI_INT64_T, MPI_SUM, comm);
        for (size_t c = 0; c < m; c++)
            w[c] = (double)weight_i[c];
        reduce_candidates(cand, w, m, d, k, seed, centres, cd2, assign, sums);
    }
    free(near);
    free(weight_i);
    free(w);
    free(cd2);
    free(assign);
    free(sums);
done:
    free(x);
    free(d2);
    free(cand);
    free(mine);
    free(counts);
    free(displs);
    return st;
}
