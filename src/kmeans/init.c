/* Initial centres for k-means, all drawn on the CPU from an explicit seed, so that every backend starts
 * from the same centres: k distinct random points (seed 002), greedy k-means++ (scikit-learn's
 * variant, 2 + ln k candidates a step) and k-means|| (Bahmani et al., for data too large to scan k
 * times). */
#include "internal_km.h"

#include "../core/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* k distinct indices uniformly (Floyd's algorithm), in the order drawn. */
static pc_status distinct_indices(size_t n, size_t k, pc__rng *rng, size_t *out)
{
    size_t cap = 16;
    while (cap < 2 * k)
        cap *= 2;
    size_t *set = pc__alloc(cap, sizeof *set, "random init");
    if (!set)
        return PC_OUT_OF_MEMORY;
    for (size_t i = 0; i < cap; i++)
        set[i] = SIZE_MAX;
    for (size_t j = n - k, m = 0; j < n; j++, m++) {
        size_t t = (size_t)pc__rng_below(rng, j + 1), pick = t;
        for (int pass = 0; pass < 2; pass++) {
            size_t h = (pick * 0x9E3779B97F4A7C15ull) & (cap - 1);
            while (set[h] != SIZE_MAX && set[h] != pick)
                h = (h + 1) & (cap - 1);
            if (pass == 0 && set[h] == pick) {
                pick = j; /* t was taken: take j, which cannot be */
                continue;
            }
            set[h] = pick;
            break;
        }
        out[m] = pick;
    }
    free(set);
    return PC_OK;
}

/* Weighted greedy k-means++ over m candidate points (weights may be NULL = 1): writes k centres. */
static pc_status kmeanspp(const float *x, size_t n, size_t dim, const double *weight, size_t k, pc__rng *rng,
                          int threads, float *centres)
{
    int trials = 2 + (int)log((double)k);
    double *closest = pc__alloc(n, sizeof *closest, "k-means++ distances");
    double *cumsum = pc__alloc(n, sizeof *cumsum, "k-means++ sums");
    if (!closest || !cumsum) {
        free(closest);
        free(cumsum);
        return PC_OUT_OF_MEMORY;
    }
    size_t first = (size_t)pc__rng_below(rng, n);
    memcpy(centres, x + first * dim, dim * sizeof *centres);
    (void)threads;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
    for (long i = 0; i < (long)n; i++)
        closest[i] = (weight ? weight[i] : 1.0) * pc__km_dist2(x + (size_t)i * dim, centres, dim);
    for (size_t c = 1; c < k; c++) {
        double run = 0;
        for (size_t i = 0; i < n; i++)
            cumsum[i] = run += closest[i];
        size_t ids[64];
        for (int t = 0; t < trials; t++) {
            double r = pc__rng_uniform(rng) * run;
            size_t lo = 0, hi = n; /* first index with cumsum > r */
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (cumsum[mid] <= r)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            ids[t] = lo < n ? lo : n - 1;
        }
        /* The potential each candidate would leave; the best one's distances are then taken (one
         * more pass rather than trials x n doubles kept). */
        double pots[64] = {0};
        for (int t = 0; t < trials; t++) {
            /* Block sums added in order: the choice must not depend on the thread count. */
            double part[PC__KM_SUM_BLOCKS] = {0};
            const float *cx = x + ids[t] * dim;
            size_t per = (n + PC__KM_SUM_BLOCKS - 1) / PC__KM_SUM_BLOCKS;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
            for (long b = 0; b < PC__KM_SUM_BLOCKS; b++) {
                double p = 0;
                for (size_t i = (size_t)b * per; i < n && i < ((size_t)b + 1) * per; i++) {
                    double d = (weight ? weight[i] : 1.0) * pc__km_dist2(x + i * dim, cx, dim);
                    p += d < closest[i] ? d : closest[i];
                }
                part[b] = p;
            }
            for (int b = 0; b < PC__KM_SUM_BLOCKS; b++)
                pots[t] += part[b];
        }
        int best = 0;
        for (int t = 1; t < trials; t++)
            if (pots[t] < pots[best])
                best = t;
        const float *bx = x + ids[best] * dim;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
        for (long i = 0; i < (long)n; i++) {
            double d = (weight ? weight[i] : 1.0) * pc__km_dist2(x + (size_t)i * dim, bx, dim);
            closest[i] = d < closest[i] ? d : closest[i];
        }
        memcpy(centres + c * dim, bx, dim * sizeof *centres);
    }
    free(closest);
    free(cumsum);
    return PC_OK;
}

/* A uniform number in [0, 1) from (seed, round, i) alone, so that the sampling of k-means|| is the
 * same whatever the threads. */
static double counter_uniform(uint64_t seed, uint64_t round, uint64_t i)
{
    uint64_t z = seed ^ (round * 0xD1B54A32D192ED03ull) ^ (i * 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* k-means||: 5 rounds, each keeping every point with probability min(1, 2k d^2 / potential); the
 * candidates, weighted by the points nearest to them, are reduced to k by k-means++. */
static pc_status kmeans_parallel(const float *x, size_t n, size_t dim, size_t k, uint64_t seed, pc__rng *rng,
                                 int threads, float *centres)
{
    const int rounds = 5;
    const double oversample = 2.0 * (double)k;
    size_t cap = 1 + (size_t)(rounds * oversample * 2) + k;
    float *cand = pc__alloc(cap, dim * sizeof *cand, "k-means|| candidates");
    double *d2 = pc__alloc(n, sizeof *d2, "k-means|| distances");
    int32_t *nearest = pc__alloc(n, sizeof *nearest, "k-means|| nearest");
    pc_status st = PC_OUT_OF_MEMORY;
    double *weight = NULL;
    if (!cand || !d2 || !nearest)
        goto done;
    size_t m = 1, first = (size_t)pc__rng_below(rng, n);
    memcpy(cand, x + first * dim, dim * sizeof *cand);
    for (size_t i = 0; i < n; i++) {
        d2[i] = pc__km_dist2(x + i * dim, cand, dim);
        nearest[i] = 0;
    }
    for (int r = 0; r < rounds; r++) {
        double pot = 0;
        for (size_t i = 0; i < n; i++)
            pot += d2[i];
        if (!(pot > 0))
            break;
        size_t before = m;
        for (size_t i = 0; i < n && m < cap; i++)
            if (counter_uniform(seed, (uint64_t)r + 1, i) < oversample * d2[i] / pot)
                memcpy(cand + m++ * dim, x + i * dim, dim * sizeof *cand);
        (void)threads;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
        for (long i = 0; i < (long)n; i++)
            for (size_t c = before; c < m; c++) {
                double d = pc__km_dist2(x + (size_t)i * dim, cand + c * dim, dim);
                if (d < d2[i]) {
                    d2[i] = d;
                    nearest[i] = (int32_t)c;
                }
            }
    }
    if (m <= k) { /* too few candidates (tiny or degenerate data): the rest at random */
        size_t *ids = pc__alloc(k, sizeof *ids, "k-means|| fill");
        if (!ids || distinct_indices(n, k, rng, ids) != PC_OK) {
            free(ids);
            goto done;
        }
        memcpy(centres, cand, m * dim * sizeof *cand);
        for (size_t c = m; c < k; c++)
            memcpy(centres + c * dim, x + ids[c] * dim, dim * sizeof *centres);
        free(ids);
        st = PC_OK;
        goto done;
    }
    weight = pc__calloc(m, sizeof *weight, "k-means|| weights");
    if (!weight)
        goto done;
    for (size_t i = 0; i < n; i++)
        weight[nearest[i]] += 1.0;
    st = kmeanspp(cand, m, dim, weight, k, rng, 1, centres);
done:
    free(cand);
    free(d2);
    free(nearest);
    free(weight);
    return st;
}

pc_status pc__km_init(const float *x, size_t n, size_t dim, size_t k, pc_kmeans_init init, uint64_t seed,
                      int threads, float *centres)
{
    pc__rng rng;
    pc__rng_seed(&rng, seed);
    switch (init) {
    case PC_INIT_RANDOM: {
        size_t *ids = pc__alloc(k, sizeof *ids, "random init");
        if (!ids)
            return PC_OUT_OF_MEMORY;
        pc_status st = distinct_indices(n, k, &rng, ids);
        for (size_t c = 0; st == PC_OK && c < k; c++)
            memcpy(centres + c * dim, x + ids[c] * dim, dim * sizeof *centres);
        free(ids);
        return st;
    }
    case PC_INIT_KMEANS_PARALLEL:
        return kmeans_parallel(x, n, dim, k, seed, &rng, threads, centres);
    default:
        return kmeanspp(x, n, dim, NULL, k, &rng, threads, centres);
    }
}
