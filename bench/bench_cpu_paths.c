/* Issue 17 item 2: the CPU kernels' instruction-set paths side by side in one process (each forced
 * in turn, src/core/cpu_path.h), on the two workloads of the item, with what bounds the second:
 *   mean shift 10k x 10: ms-agnolucci (3D blobs, gaussian, h = 2), 10,000 points, 10 iterations
 *     with no stop, OpenMP (bench_meanshift agnolucci's workload);
 *   HCA 100-Mpix 4-band uint8 (bench_hca's synthetic scene, m = 32), OpenMP, labels allocated by
 *     each run; labels compared with the baseline path's, per-stage times;
 *   the memory traffic of that HCA run timed alone on the same threads: reading the 400 MB image,
 *     writing a fresh 400 MB array (first touch, huge pages requested as the library does), and
 *     rewriting one already touched.
 * Medians of --repeats runs. Threads: OMP_NUM_THREADS (pin with taskset).
 *
 *   bench_cpu_paths [--n 10000] [--mpix 100] [--repeats 5]
 */
#define _DEFAULT_SOURCE /* madvise */
#include "parclust.h"

#include "../src/core/cpu_path.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench_util.h"

static int paths(pc__cpu_path_id *out)
{
    int count = 0;
    for (int p = PC__CPU_BASELINE; p <= (int)pc__cpu_path_best(); p++)
        out[count++] = (pc__cpu_path_id)p;
    return count;
}

static void bench_meanshift(size_t n, int repeats)
{
    pc_generate_params g;
    pc_generate_params_init(&g);
    g.dataset = PC_DATASET_AGNOLUCCI;
    g.n = n;
    g.dim = 3;
    g.clusters = 3;
    g.spread = 1.0;
    g.box = 10.0;
    float *pts = malloc(n * 3 * sizeof *pts), *ref = malloc(n * 3 * sizeof *ref);
    if (!pts || !ref || pc_generate(&g, pts, NULL) != PC_OK) {
        fprintf(stderr, "bench_cpu_paths: cannot generate the points\n");
        exit(1);
    }
    pc_meanshift_params p;
    pc_meanshift_params_init(&p);
    p.bandwidth = 2.0;
    p.max_iter = 10;
    p.eps = 0;
    p.backend = PC_BACKEND_OPENMP;
    pc_points v = pc_points_f32(pts, n, 3);
    printf("\n| mean shift %zu x 3D x 10 iterations, %d threads | time (s) | pairs/s | vs baseline | clusters | "
           "largest mode difference from the baseline path (h) |\n|---|---|---|---|---|---|\n",
           n, pc_openmp_max_threads());
    pc__cpu_path_id list[3];
    int count = paths(list);
    double base = 0;
    for (int c = 0; c < count; c++) {
        pc__cpu_path_force(list[c]);
        double t[64];
        pc_result *r = NULL;
        for (int k = 0; k < repeats; k++) {
            pc_result_free(r);
            r = NULL;
            double t0 = now();
            if (pc_meanshift(&v, &p, &r) != PC_OK) {
                fprintf(stderr, "bench_cpu_paths: %s\n", pc_last_error());
                exit(1);
            }
            t[k] = now() - t0;
        }
        double med = median(t, repeats);
        const float *modes = pc_result_modes(r);
        double diff = 0;
        if (c == 0) {
            memcpy(ref, modes, n * 3 * sizeof *ref);
            base = med;
        }
        for (size_t i = 0; i < n * 3; i++)
            diff = fmax(diff, fabs((double)modes[i] - ref[i]) / p.bandwidth);
        printf("| %s | %.4f | %.3g | %.2fx | %zu | %.2g |\n", pc__cpu_path_name(list[c]), med,
               (double)n * (double)n * 10 / med, base / med, pc_result_cluster_count(r), diff);
        fflush(stdout);
        pc_result_free(r);
    }
    free(pts);
    free(ref);
}

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

/* The library's large allocations (pc__alloc_large): 2 MiB aligned, huge pages asked for. */
static void *alloc_like_labels(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, (size_t)2 << 20, bytes) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

/* The image read once on all threads, each 64 bytes asked for ahead as HCA's passes do
 * (src/core/simd.h: pc__prefetch_stream), else the 4 KiB pages' ends stall the stream. */
static uint64_t read_all(const uint8_t *a, size_t bytes)
{
    uint64_t sum = 0;
    size_t lines = bytes / 64;
#pragma omp parallel for schedule(static) reduction(+ : sum)
    for (long l = 0; l < (long)lines; l++) {
        const uint8_t *at = a + (size_t)l * 64;
        pc__prefetch_stream(at);
        for (int w = 0; w < 8; w++) {
            uint64_t x;
            memcpy(&x, at + 8 * w, 8);
            sum += x;
        }
    }
    return sum;
}

static void write_all(uint8_t *a, size_t bytes, int value)
{
    size_t chunk = (size_t)1 << 21, chunks = (bytes + chunk - 1) / chunk;
#pragma omp parallel for schedule(static)
    for (long c = 0; c < (long)chunks; c++) {
        size_t b = (size_t)c * chunk, e = b + chunk < bytes ? b + chunk : bytes;
        memset(a + b, value, e - b);
    }
}

static void bench_hca(double mpix, int repeats)
{
    size_t n = (size_t)(mpix * 1e6), bytes = n * 4;
    uint8_t *img = bench_scene(n, 4, 42);
    int32_t *ref = malloc(n * sizeof *ref);
    if (!img || !ref) {
        fprintf(stderr, "bench_cpu_paths: no memory for %.0f Mpix\n", mpix);
        exit(1);
    }
    pc_points v = pc_points_u8(img, n, 4);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = 32;
    p.backend = PC_BACKEND_OPENMP;
    printf("\n| HCA %.0f Mpix x 4 bands uint8, m = 32, %d threads | total (ms) | vs baseline | box + grid (ms) | "
           "components (ms) | label (ms) | clusters | labels = baseline path's |\n|---|---|---|---|---|---|---|---|\n",
           mpix, pc_openmp_max_threads());
    pc__cpu_path_id list[3];
    int count = paths(list);
    double base = 0;
    for (int c = 0; c < count; c++) {
        pc__cpu_path_force(list[c]);
        double t[64], grid[64], comp[64], label[64];
        int same = 1;
        size_t k_found = 0;
        for (int k = 0; k < repeats; k++) {
            pc_result *r = NULL;
            double t0 = now();
            if (pc_hca(&v, &p, &r) != PC_OK) {
                fprintf(stderr, "bench_cpu_paths: %s\n", pc_last_error());
                exit(1);
            }
            t[k] = 1e3 * (now() - t0);
            grid[k] = stage_ms(r, "box") + stage_ms(r, "grid");
            comp[k] = stage_ms(r, "components");
            label[k] = stage_ms(r, "label");
            k_found = pc_result_cluster_count(r);
            if (c == 0 && k == 0)
                memcpy(ref, pc_result_labels(r), n * sizeof *ref);
            else
                same &= memcmp(ref, pc_result_labels(r), n * sizeof *ref) == 0;
            pc_result_free(r);
        }
        double med = median(t, repeats);
        if (c == 0)
            base = med;
        printf("| %s | %.1f | %.2fx | %.1f | %.1f | %.1f | %zu | %s |\n", pc__cpu_path_name(list[c]), med, base / med,
               median(grid, repeats), median(comp, repeats), median(label, repeats), k_found, same ? "yes" : "NO");
        fflush(stdout);
    }
    /* The labels as bytes (pc_hca_plan_run_u8, the way to a uint8 raster) on the best path: into a
     * fresh buffer each run (its first touch timed), and into one buffer used again. */
    pc__cpu_path_force(list[count - 1]);
    pc_hca_plan *plan = NULL;
    uint8_t *reused = malloc(n);
    if (pc_hca_plan_create(&p, n, 4, PC_U8, &plan) != PC_OK || !reused) {
        fprintf(stderr, "bench_cpu_paths: %s\n", pc_last_error());
        exit(1);
    }
    memset(reused, 0, n);
    for (int fresh_buffer = 1; fresh_buffer >= 0; fresh_buffer--) {
        double t[64], grid[64], label[64];
        int same = 1;
        for (int k = 0; k < repeats; k++) {
            pc_result *r = NULL;
            double t0 = now();
            uint8_t *out = fresh_buffer ? malloc(n) : reused;
            if (!out || pc_hca_plan_run_u8(plan, &v, out, &r) != PC_OK) {
                fprintf(stderr, "bench_cpu_paths: %s\n", pc_last_error());
                exit(1);
            }
            t[k] = 1e3 * (now() - t0);
            grid[k] = stage_ms(r, "box") + stage_ms(r, "grid");
            label[k] = stage_ms(r, "label to bytes");
            for (size_t i = 0; i < n; i++)
                same &= out[i] == (ref[i] < 0 ? 255 : ref[i]);
            if (fresh_buffer)
                free(out);
            pc_result_free(r);
        }
        double med = median(t, repeats);
        printf("| %s, labels as bytes (%s) | %.1f | %.2fx | %.1f | | %.1f | | %s |\n", pc__cpu_path_name(list[count - 1]),
               fresh_buffer ? "a fresh buffer each run" : "one buffer used again", med, base / med,
               median(grid, repeats), median(label, repeats), same ? "yes" : "NO");
        fflush(stdout);
    }
    pc_hca_plan_free(plan);
    free(reused);
    /* The memory traffic alone, on the same threads and sizes. */
    double rd[64], fresh[64], again[64];
    uint64_t sink = 0;
    for (int k = 0; k < repeats; k++) {
        double t0 = now();
        sink += read_all(img, bytes);
        rd[k] = 1e3 * (now() - t0);
        uint8_t *a = alloc_like_labels(bytes);
        if (!a)
            exit(1);
        t0 = now();
        write_all(a, bytes, 1);
        fresh[k] = 1e3 * (now() - t0);
        t0 = now();
        write_all(a, bytes, 2);
        again[k] = 1e3 * (now() - t0);
        free(a);
    }
    double r = median(rd, repeats), wf = median(fresh, repeats), wa = median(again, repeats);
    printf("\nMemory traffic alone (%.0f MB, %d threads; checksum %llu): read %.1f ms (%.1f GB/s), write to a fresh "
           "array %.1f ms (%.1f GB/s, first touch), rewrite %.1f ms (%.1f GB/s).\n",
           bytes / 1e6, pc_openmp_max_threads(), (unsigned long long)(sink & 0xff), r, bytes / r / 1e6, wf,
           bytes / wf / 1e6, wa, bytes / wa / 1e6);
    printf("Floor of the stages as built (image read 3 times: box, cells, the label stage's sums; cells written "
           "to the fresh labels array, read back and overwritten by the labels): %.1f ms.\n",
           3 * r + wf + r + wa);
    printf("Floor of any HCA that reads the image for the box and again for the cells and writes each label "
           "once: %.1f ms.\n", 2 * r + wf);
    printf("Floor of the labels as bytes as built (image read 3 times: box, counts, the label stage's cells and "
           "sums; a byte a pixel written, fresh): %.1f ms; into a buffer used again: %.1f ms.\n", 3 * r + wf / 4,
           3 * r + wa / 4);
    free(img);
    free(ref);
}

int main(int argc, char **argv)
{
    size_t n = 10000;
    double mpix = 100;
    int repeats = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--n"))
            n = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--mpix"))
            mpix = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeats"))
            repeats = atoi(argv[i + 1]);
    }
    if (repeats < 1 || repeats > 64)
        repeats = 5;
    printf("best CPU path here: %s; AVX-512 VBMI: %s; PARCLUST_CPU_PATH would give %s\n",
           pc__cpu_path_name(pc__cpu_path_best()), pc__cpu_has_vbmi() ? "yes" : "no", pc_cpu_path());
    if (n > 0)
        bench_meanshift(n, repeats);
    if (mpix > 0)
        bench_hca(mpix, repeats);
    return 0;
}
