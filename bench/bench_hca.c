/* HCA speed on synthetic images (BENCHMARKS.md hca-rgb and hca-4band): uint8 pixels in blocky regions
 * of a few spectral classes plus noise, clustered at m = 32 with 1 and all threads; per-stage times,
 * medians of 3 runs, and the peak memory beyond the image and its labels. With --gpu, the CUDA backend
 * through a plan instead: the image already on the GPU (labels left there), with its host-to-device
 * copy from pageable and from pinned memory, and from host to host labels (pc_hca_plan_run).
 *
 *   bench_hca [--mpix 5,12.4,115] [--bands 3] [--repeats 3] [--gpu]
 *   bench_hca --gpu-io [--mpix 115] [--bands 3] [--repeats 5]
 * --gpu-io (issue 17 item 4): host to host through a plan, the overlapped copies (PC_HCA_CUDA_OVERLAP=1)
 * against round one's (=0, the default), and the labels as bytes to the caller (pc_hca_plan_run_u8, both
 * ways), in the same run, beside the floor: the pixels in and the labels out as bytes at the bandwidth
 * of plain copies between pinned memory and the GPU, measured here; and what the host's side of those
 * copies costs alone (all cores).
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

/* The library's own parallel host loops (src/hca/hca.c), timed alone. */
void pc__hca_widen_labels(const uint8_t *bytes, size_t n, int32_t *labels);
void pc__hca_copy_parallel(void *dst, const void *src, size_t bytes);
void *pc__alloc_large(size_t n, size_t size, const char *what);

static double median_ms(double *v, int n) { return 1e3 * median(v, n); }

static int bench_gpu_io(const char *tok, const uint8_t *img, size_t pixels, size_t bands, int repeats)
{
    size_t in = pixels * bands, out = pixels;
    uint8_t *h_in = NULL, *h_out = NULL, *d_in = NULL, *d_out = NULL;
    if (cudaMallocHost((void **)&h_in, in) != cudaSuccess || cudaMallocHost((void **)&h_out, out) != cudaSuccess ||
        cudaMalloc((void **)&d_in, in) != cudaSuccess || cudaMalloc((void **)&d_out, out) != cudaSuccess) {
        fprintf(stderr, "bench_hca --gpu-io: cannot allocate\n");
        return 1;
    }
    memcpy(h_in, img, in);
    memset(h_out, 7, out);
    double t_in[16], t_out[16], t_stage[16], t_widen_fresh[16], t_widen_warm[16];
    for (int r = -1; r < repeats; r++) {
        double t0 = now();
        cudaMemcpy(d_in, h_in, in, cudaMemcpyHostToDevice);
        double t1 = now();
        cudaMemcpy(h_out, d_out, out, cudaMemcpyDeviceToHost);
        double t2 = now();
        pc__hca_copy_parallel(h_in, img, in);
        double t3 = now();
        int32_t *labels = pc__alloc_large(pixels, sizeof(int32_t), "labels");
        double t4 = now();
        pc__hca_widen_labels(h_out, out, labels);
        double t5 = now();
        pc__hca_widen_labels(h_out, out, labels);
        double t6 = now();
        free(labels);
        if (r >= 0) {
            t_in[r] = t1 - t0;
            t_out[r] = t2 - t1;
            t_stage[r] = t3 - t2;
            t_widen_fresh[r] = t5 - t4;
            t_widen_warm[r] = t6 - t5;
        }
    }
    double in_ms = median_ms(t_in, repeats), out_ms = median_ms(t_out, repeats), floor_ms = in_ms + out_ms;
    printf("%s Mpix x %zu bands: pinned to GPU %.2f ms (%.1f GB/s), GPU to pinned %.2f ms (%.1f GB/s) for the labels "
           "as bytes: floor %.2f ms\n", tok, bands, in_ms, in / in_ms * 1e-6, out_ms, out / out_ms * 1e-6, floor_ms);
    printf("host alone (all cores): pageable to pinned %.2f ms (%.1f GB/s); bytes widened to int32 labels %.2f ms in "
           "fresh memory, %.2f ms in memory touched before\n\n", median_ms(t_stage, repeats),
           in / median_ms(t_stage, repeats) * 1e-6, median_ms(t_widen_fresh, repeats), median_ms(t_widen_warm, repeats));
    cudaFreeHost(h_in);
    cudaFreeHost(h_out);
    cudaFree(d_in);
    cudaFree(d_out);

    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = 32;
    p.backend = PC_BACKEND_CUDA;
    pc_hca_plan *plan = NULL;
    if (pc_hca_plan_create(&p, pixels, bands, PC_U8, &plan) != PC_OK) {
        fprintf(stderr, "plan failed: %s\n", pc_last_error());
        return 1;
    }
    printf("| image | host to host | wall (ms) | share of floor | copy to GPU | grid | components | dendrogram | cut | label | copy to host | clusters |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    int32_t *first = malloc(pixels * sizeof *first);
    uint8_t *bytes = malloc(pixels);
    int bad = 0;
    /* Twice each, interleaved: int32 labels into the result (round one's way, overlapped), and labels
     * as bytes into the caller's buffer (pc_hca_plan_run_u8, both ways). */
    const char *overlap[] = {"0", "1", "0", "1"};
    const char *names[] = {"round one's", "overlapped (issue 17)", "bytes (pc_hca_plan_run_u8)",
                           "bytes, overlapped"};
    for (int w = 0; w < 8; w++) {
        int way = w % 4, as_bytes = way >= 2;
        setenv("PC_HCA_CUDA_OVERLAP", overlap[way], 1);
        double wall[16], stage[GPU_STAGES][16];
        size_t k = 0;
        for (int r = -1; r < repeats; r++) {
            pc_result *res = NULL;
            pc_points v = pc_points_u8(img, pixels, bands);
            double t0 = now();
            pc_status st = as_bytes ? pc_hca_plan_run_u8(plan, &v, bytes, &res) : pc_hca_plan_run(plan, &v, &res);
            if (st != PC_OK) {
                fprintf(stderr, "hca (cuda) failed: %s\n", pc_last_error());
                return 1;
            }
            double t1 = now();
            if (r >= 0) {
                wall[r] = t1 - t0;
                for (int s = 0; s < GPU_STAGES; s++)
                    stage[s][r] = stage_ms(res, gpu_stage[s]);
            }
            int differ = 0;
            if (r == 0 && w == 0)
                memcpy(first, pc_result_labels(res), pixels * sizeof *first);
            else if (r == 0 && as_bytes)
                for (size_t i = 0; i < pixels; i++)
                    differ |= bytes[i] != (first[i] < 0 ? 255 : first[i]);
            else if (r == 0)
                differ = memcmp(first, pc_result_labels(res), pixels * sizeof *first) != 0;
            if (differ) {
                printf("labels of %s DIFFER from round one's\n", names[way]);
                bad = 1;
            }
            k = pc_result_cluster_count(res);
            pc_result_free(res);
        }
        double ms = median_ms(wall, repeats);
        printf("| %s Mpix x %zu bands | %s | %.2f | %.0f%% |", tok, bands, names[way], ms, 100.0 * floor_ms / ms);
        for (int s = 0; s < GPU_STAGES; s++)
            printf(" %.2f |", median(stage[s], repeats));
        printf(" %zu |\n", k);
        fflush(stdout);
    }
    unsetenv("PC_HCA_CUDA_OVERLAP");
    free(first);
    free(bytes);
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
        if (strcmp(argv[i], "--gpu") == 0 || strcmp(argv[i], "--gpu-io") == 0) {
            gpu = strcmp(argv[i], "--gpu") == 0 ? 1 : 2;
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
    if (gpu == 2 && strcmp(sizes, "5,12.4,115") == 0)
        sizes = "115";
    if (repeats < 1 || repeats > 15 || bands < 1 || bands > 8) {
        fprintf(stderr, "usage: bench_hca [--mpix 5,12.4,115] [--bands 3] [--repeats 3] [--gpu | --gpu-io]\n");
        return 2;
    }
    if (gpu) {
#ifdef PC_BENCH_HAVE_CUDART
        if (gpu == 1) {
            printf("| image | input | wall (ms) | copy to GPU | grid | components | dendrogram | cut | label | copy to host | cells | components | clusters |\n");
            printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        }
        char *gl = strdup(sizes);
        for (char *tok = strtok(gl, ","); tok; tok = strtok(NULL, ",")) {
            size_t pixels = (size_t)(atof(tok) * 1e6);
            uint8_t *img = bench_scene(pixels, bands, 12345);
            if (!img || (gpu == 2 ? bench_gpu_io(tok, img, pixels, bands, repeats)
                                  : bench_gpu(tok, img, pixels, bands, repeats)))
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
        uint8_t *img = bench_scene(pixels, bands, 12345);
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
