/* What the benchmark programs share: a monotonic clock, a small xorshift generator for synthetic
 * images, the ordering for medians, and the HCA benchmarks' synthetic image. */
#ifndef PC_BENCH_UTIL_H
#define PC_BENCH_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts x and returns its middle element. */
static inline double median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return x[n / 2];
}

/* The HCA benchmarks' synthetic image (hca-rgb, hca-4band): uint8 pixels, 8 classes with random spectra
 * over 64 x 64-pixel blocks of a 10000-pixel-wide image, noise -12..12 (triangular). */
static inline uint8_t *bench_scene(size_t pixels, size_t bands, uint64_t seed)
{
    uint8_t *img = malloc(pixels * bands);
    if (!img)
        return NULL;
    uint64_t s = seed | 1;
    uint8_t spectra[8][8];
    for (int c = 0; c < 8; c++)
        for (size_t b = 0; b < bands; b++)
            spectra[c][b] = (uint8_t)(30 + next(&s) % 196);
    size_t width = 10000, blocks_per_row = width / 64 + 1;
    uint8_t *block_class = malloc((pixels / width / 64 + 2) * blocks_per_row);
    for (size_t i = 0; i < (pixels / width / 64 + 2) * blocks_per_row; i++)
        block_class[i] = (uint8_t)(next(&s) % 8);
    for (size_t p = 0; p < pixels; p++) {
        size_t row = p / width, col = p % width;
        int c = block_class[(row / 64) * blocks_per_row + col / 64];
        uint64_t r = next(&s);
        for (size_t b = 0; b < bands; b++) {
            int v = spectra[c][b] + (int)((r >> (8 * b)) & 15) - (int)((r >> (8 * b + 4)) & 15) + (int)((r >> 40) % 9) - 4;
            img[p * bands + b] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
    free(block_class);
    return img;
}

#endif
