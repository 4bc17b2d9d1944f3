/* Helpers the test programs share: a seed that changes every run (printed, and settable with
 * PC_TEST_SEED to replay a failure) and random data. */
#ifndef PC_TEST_UTIL_H
#define PC_TEST_UTIL_H

#include "parclust.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t test_seed(const char *name)
{
    const char *env = getenv("PC_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    printf("%s: seed %llu (replay with PC_TEST_SEED=%llu)\n", name, (unsigned long long)seed,
           (unsigned long long)seed);
    return seed;
}

/* Fresh data from the library's generator; the caller frees both arrays. */
static inline float *test_data(pc_dataset kind, size_t n, size_t dim, size_t k, double spread, double box,
                               uint64_t seed, int32_t **labels)
{
    pc_generate_params g;
    pc_generate_params_init(&g);
    g.dataset = kind;
    g.n = n;
    g.dim = dim;
    g.clusters = k;
    g.spread = spread;
    g.box = box;
    g.seed = seed;
    float *pts = malloc(n * dim * sizeof *pts);
    int32_t *l = malloc(n * sizeof *l);
    if (!pts || !l || pc_generate(&g, pts, l) != PC_OK) {
        fprintf(stderr, "test_blobs failed: %s\n", pc_last_error());
        exit(1);
    }
    if (labels)
        *labels = l;
    else
        free(l);
    return pts;
}

/* Gaussian blobs, centres uniform in [-box, box]^dim. */
static inline float *test_blobs(size_t n, size_t dim, size_t k, double spread, double box, uint64_t seed,
                                int32_t **labels)
{
    return test_data(PC_DATASET_BLOBS, n, dim, k, spread, box, seed, labels);
}

/* k tight clusters on a lattice `box` apart: well separated by construction. */
static inline float *test_lattice(size_t n, size_t dim, size_t k, double spread, double box, uint64_t seed,
                                  int32_t **labels)
{
    return test_data(PC_DATASET_GRID, n, dim, k, spread, box, seed, labels);
}

/* How many of n int32 labels the bytes of pc_hca_plan_run_u8 do not give (255 stands for -1). */
static inline size_t test_label_bytes_differ(const int32_t *labels, const uint8_t *bytes, size_t n)
{
    size_t differ = 0;
    for (size_t i = 0; i < n; i++)
        differ += bytes[i] != (labels[i] < 0 ? 255 : labels[i]);
    return differ;
}

#endif
