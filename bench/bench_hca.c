/* HCA speed on synthetic images (BENCHMARKS.md hca-rgb and hca-4band): uint8 pixels in blocky regions
 * of a few spectral classes plus noise, clustered at m = 32 with 1 and all threads; per-stage times,
 * medians of 3 runs, and the peak memory beyond the image and its labels.
 *
 *   bench_hca [--mpix 5,12.4,115] [--bands 3] [--repeats 3]
 */
#include "parclust.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* 8 classes with random spectra over 64 x 64-pixel blocks, noise -12..12 (triangular). */
static uint8_t *scene(size_t pixels, size_t bands, uint64_t seed)
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *sizes = "5,12.4,115";
    size_t bands = 3;
    int repeats = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mpix") == 0)
            sizes = argv[i + 1];
        else if (strcmp(argv[i], "--bands") == 0)
            bands = strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--repeats") == 0)
            repeats = atoi(argv[i + 1]);
    }
    if (repeats < 1 || repeats > 15 || bands < 1 || bands > 8) {
        fprintf(stderr, "usage: bench_hca [--mpix 5,12.4,115] [--bands 3] [--repeats 3]\n");
        return 2;
    }
    printf("| image | threads | total (ms) | grid | components | dendrogram | cut | label | cells | components | clusters | extra memory (MiB) |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    char *list = strdup(sizes);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        size_t pixels = (size_t)(atof(tok) * 1e6);
        uint8_t *img = scene(pixels, bands, 12345);
        if (!img) {
            fprintf(stderr, "out of memory for %zu pixels\n", pixels);
            return 1;
        }
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        long before_kib = ru.ru_maxrss;
        int max_threads = pc_openmp_max_threads();
        for (int threads = 1; threads <= max_threads; threads = threads == 1 && max_threads > 1 ? max_threads : threads + max_threads) {
            double total[16], stage[5][16];
            size_t cells = 0, comps = 0, k = 0;
            for (int r = 0; r < repeats; r++) {
                pc_points v = pc_points_u8(img, pixels, bands);
                pc_hca_params p;
                pc_hca_params_init(&p);
                p.m = 32;
                p.backend = threads == 1 ? PC_BACKEND_SEQUENTIAL : PC_BACKEND_OPENMP;
                p.threads = threads;
                pc_result *res = NULL;
                double t0 = now();
                if (pc_hca(&v, &p, &res) != PC_OK) {
                    fprintf(stderr, "hca failed: %s\n", pc_last_error());
                    return 1;
                }
                total[r] = now() - t0;
                for (size_t s = 0; s < 5; s++)
                    pc_result_stage(res, s, NULL, &stage[s][r]);
                cells = pc_result_cell_count(res);
                comps = pc_result_component_count(res);
                k = pc_result_cluster_count(res);
                pc_result_free(res);
            }
            qsort(total, (size_t)repeats, sizeof(double), cmp_double);
            for (int s = 0; s < 5; s++)
                qsort(stage[s], (size_t)repeats, sizeof(double), cmp_double);
            getrusage(RUSAGE_SELF, &ru);
            /* Peak resident memory beyond the image, minus the 4-byte labels the result holds. */
            double extra = ((double)ru.ru_maxrss - (double)before_kib) / 1024.0 - (double)pixels * 4 / 1048576.0;
            printf("| %s Mpix x %zu bands | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %zu | %zu | %zu | %.0f |\n",
                   tok, bands, threads, 1e3 * total[repeats / 2], 1e3 * stage[0][repeats / 2],
                   1e3 * stage[1][repeats / 2], 1e3 * stage[2][repeats / 2], 1e3 * stage[3][repeats / 2],
                   1e3 * stage[4][repeats / 2], cells, comps, k, extra < 0 ? 0 : extra);
            fflush(stdout);
        }
        free(img);
    }
    free(list);
    return 0;
}
