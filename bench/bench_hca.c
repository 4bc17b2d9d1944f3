/* HCA speed on synthetic images (BENCHMARKS.md hca-rgb and hca-4band): uint8 pixels in blocky regions
 * of a few spectral classes plus noise, clustered at m = 32 with 1 and all threads; per-stage times,
 * medians of 3 runs, and the peak memory beyond the image and its labels. With --gpu, the CUDA backend
 * through a plan instead: the image already on the GPU (labels left there), with its host-to-device
 * copy from pageable and from pinned memory, and from host to host labels (pc_hca_plan_run).
 *
 *   bench_hca [--mpix 5,12.4,115] [--bands 3] [--repeats 3] [--gpu]
 */
#include "parclust.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#ifdef PC_BENCH_HAVE_CUDART
#include <cuda_runtime.h>
#endif

#include "bench_util.h"

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

#ifdef PC_BENCH_HAVE_CUDART
static double stage_ms(const pc_result *r, const char *want)
{
    for (size_t s = 0; s < pc_result_stage_count(r); s++) {
        const char *name;
        double sec;
        pc_result_stage(r, s, &name, &sec);
        if (!strcmp(name, want))
            return 1e3 * sec;
    }
    return 0;
}

#define GPU_STAGES 7
static const char *gpu_stage[GPU_STAGES] = {"copy to GPU", "grid", "components", "dendrogram", "cut", "label",
                                            "copy to host"};

/* Runs f `repeats` times after one warm-up; medians of the wall time and of each stage. */
static int gpu_rows(const char *tok, size_t bands, pc_hca_plan *plan, const uint8_t *img, const void *copy_from,
                    uint8_t *d_img, int32_t *d_labels, size_t pixels, int repeats, const char *how)
{
    double wall[16], stage[GPU_STAGES][16];
    size_t k = 0, comps = 0, cells = 0;
    for (int r = -1; r < repeats; r++) {
        pc_result *res = NULL;
        pc_status st;
        double t0 = now();
        if (d_img) {
            if (copy_from && cudaMemcpy(d_img, copy_from, pixels * bands, cudaMemcpyHostToDevice) != cudaSuccess)
                return 1;
            pc_points v = pc_points_u8(d_img, pixels, bands);
            st = pc_hca_plan_run_device(plan, &v, d_labels, &res);
        } else {
            pc_points v = pc_points_u8(img, pixels, bands);
            st = pc_hca_plan_run(plan, &v, &res);
        }
        double t1 = now();
        if (st != PC_OK) {
            fprintf(stderr, "hca (cuda) failed: %s\n", pc_last_error());
            return 1;
        }
        if (r >= 0) {
            wall[r] = t1 - t0;
            for (int s = 0; s < GPU_STAGES; s++)
                stage[s][r] = stage_ms(res, gpu_stage[s]);
        }
        k = pc_result_cluster_count(res);
        comps = pc_result_component_count(res);
        cells = pc_result_cell_count(res);
        pc_result_free(res);
    }
    printf("| %s Mpix x %zu bands | %s | %.2f |", tok, bands, how, 1e3 * median(wall, repeats));
    for (int s = 0; s < GPU_STAGES; s++)
        printf(" %.2f |", median(stage[s], repeats));
    printf(" %zu | %zu | %zu |\n", cells, comps, k);
    fflush(stdout);
    return 0;
}

static int bench_gpu(const char *tok, const uint8_t *img, size_t pixels, size_t bands, int repeats)
{
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = 32;
    p.backend = PC_BACKEND_CUDA;
    pc_hca_plan *plan = NULL;
    double t0 = now();
    if (pc_hca_plan_create(&p, pixels, bands, PC_U8, &plan) != PC_OK) {
        fprintf(stderr, "plan failed: %s\n", pc_last_error());
        return 1;
    }
    double plan_ms = 1e3 * (now() - t0);
    uint8_t *d_img = NULL, *pinned = NULL;
    int32_t *d_labels = NULL;
    if (cudaMalloc((void **)&d_img, pixels * bands) != cudaSuccess ||
        cudaMalloc((void **)&d_labels, pixels * sizeof(int32_t)) != cudaSuccess ||
        cudaMallocHost((void **)&pinned, pixels * bands) != cudaSuccess) {
        fprintf(stderr, "GPU benchmark: cannot allocate %s Mpix\n", tok);
        cudaFree(d_img);
        cudaFree(d_labels);
        pc_hca_plan_free(plan);
        return 1;
    }
    memcpy(pinned, img, pixels * bands);
    cudaMemcpy(d_img, img, pixels * bands, cudaMemcpyHostToDevice);
    int bad = gpu_rows(tok, bands, plan, img, NULL, d_img, d_labels, pixels, repeats, "on the GPU") ||
              gpu_rows(tok, bands, plan, img, pinned, d_img, d_labels, pixels, repeats, "+ copy from pinned") ||
              gpu_rows(tok, bands, plan, img, img, d_img, d_labels, pixels, repeats, "+ copy from pageable") ||
              gpu_rows(tok, bands, plan, img, NULL, NULL, NULL, pixels, repeats, "host in, host labels");
    /* The timings are of a right answer: the GPU's labels against the CPU backend's. */
    pc_result *gpu_res = NULL, *cpu_res = NULL;
    pc_points v = pc_points_u8(img, pixels, bands);
    p.backend = PC_BACKEND_OPENMP;
    int same = pc_hca_plan_run(plan, &v, &gpu_res) == PC_OK && pc_hca(&v, &p, &cpu_res) == PC_OK &&
               pc_result_cluster_count(gpu_res) == pc_result_cluster_count(cpu_res) &&
               !memcmp(pc_result_labels(gpu_res), pc_result_labels(cpu_res), pixels * sizeof(int32_t));
    pc_result_free(gpu_res);
    pc_result_free(cpu_res);
    printf("(plan for %s Mpix made in %.1f ms; labels %s the CPU backend's)\n", tok, plan_ms,
           same ? "identical to" : "DIFFERENT FROM");
    bad |= !same;
    cudaFree(d_img);
    cudaFree(d_labels);
    cudaFreeHost(pinned);
    pc_hca_plan_free(plan);
    return bad;
}
#endif

int main(int argc, char **argv)
{
    const char *sizes = "5,12.4,115";
    size_t bands = 3;
    int repeats = 3, gpu = 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--gpu") == 0) {
            gpu = 1;
            memmove(argv + i, argv + i + 1, (size_t)(argc - i - 1) * sizeof *argv);
            argc--;
            break;
        }
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mpix") == 0)
            sizes = argv[i + 1];
        else if (strcmp(argv[i], "--bands") == 0)
            bands = strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--repeats") == 0)
            repeats = atoi(argv[i + 1]);
    }
    if (repeats < 1 || repeats > 15 || bands < 1 || bands > 8) {
        fprintf(stderr, "usage: bench_hca [--mpix 5,12.4,115] [--bands 3] [--repeats 3] [--gpu]\n");
        return 2;
    }
    if (gpu) {
#ifdef PC_BENCH_HAVE_CUDART
        printf("| image | input | wall (ms) | copy to GPU | grid | components | dendrogram | cut | label | copy to host | cells | components | clusters |\n");
        printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        char *gl = strdup(sizes);
        for (char *tok = strtok(gl, ","); tok; tok = strtok(NULL, ",")) {
            size_t pixels = (size_t)(atof(tok) * 1e6);
            uint8_t *img = scene(pixels, bands, 12345);
            if (!img || bench_gpu(tok, img, pixels, bands, repeats))
                return 1;
            free(img);
        }
        free(gl);
        return 0;
#else
        fprintf(stderr, "bench_hca: built without CUDA\n");
        return 1;
#endif
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
