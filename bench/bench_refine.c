/* HCA-MS and HECA against HCA (issue 15 item 4) on bench_hca's synthetic images (uint8, 8 classes in
 * 64-pixel blocks, seed 42), m 32 (HECA: its 5 default members), 8 clusters, all measured in the same
 * run: wall seconds (median of --repeats after one warm-up), HCA-MS's "refine" stage, border and changed
 * pixels, and HECA's stages (last run).
 *
 *   bench_refine [--mpix 115] [--bands 3] [--repeats 3] [--threads N]   the CPU (OpenMP, N threads)
 *   bench_refine --gpu [--mpix 115] [--bands 3] [--repeats 3]           the pixels and labels on the GPU
 *                                                                       (HCA and HECA plans made once,
 *                                                                       run_device; then HECA again by
 *                                                                       pc_heca_device, its state made
 *                                                                       every call)
 */
#include "parclust.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef PC_BENCH_HAVE_CUDART
#include <cuda_runtime.h>
#endif

#include "bench_util.h"

static double stage(const pc_result *r, const char *want)
{
    for (size_t s = 0; s < pc_result_stage_count(r); s++) {
        const char *name;
        double sec;
        pc_result_stage(r, s, &name, &sec);
        if (!strcmp(name, want))
            return sec;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *mpix = "115";
    size_t bands = 3;
    int repeats = 3, threads = 0, gpu = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--gpu")) gpu = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "--mpix")) mpix = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--bands")) bands = (size_t)atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--repeats")) repeats = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--threads")) threads = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_refine [--gpu] [--mpix 115] [--bands 3] [--repeats 3] [--threads N]\n");
            return 2;
        }
    }
    if (repeats < 1 || repeats > 15)
        repeats = 3;
    printf("| image | backend | HCA (s) | HCA-MS (s) | ratio | refine stage (s) | border / changed pixels | HECA (s) | "
           "ratio |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    char list[256];
    snprintf(list, sizeof list, "%s", mpix);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        size_t pixels = (size_t)(atof(tok) * 1e6);
        uint8_t *img = bench_scene(pixels, bands, 42);
        if (!img)
            return 1;
        pc_points v = pc_points_u8(img, pixels, bands);
        double t[4][16], refine[16];
        char heca_stages[512] = "";
        int64_t border = 0, changed = 0;
        void *d_img = NULL;
        int32_t *d_labels = NULL;
        pc_hca_plan *plan[2] = {NULL, NULL};
        pc_heca_plan *heca_plan = NULL;
        if (gpu) {
#ifdef PC_BENCH_HAVE_CUDART
            if (cudaMalloc(&d_img, pixels * bands) != cudaSuccess ||
                cudaMalloc((void **)&d_labels, pixels * sizeof(int32_t)) != cudaSuccess ||
                cudaMemcpy(d_img, img, pixels * bands, cudaMemcpyHostToDevice) != cudaSuccess) {
                fprintf(stderr, "bench_refine: cannot put the image on the GPU\n");
                return 1;
            }
#else
            fprintf(stderr, "bench_refine: built without the CUDA runtime\n");
            return 2;
#endif
        }
        for (int a = 0; a < (gpu ? 4 : 3); a++) {
            pc_hca_params p;
            pc_hca_params_init(&p);
            p.m = 32;
            p.clusters = 8;
            p.threads = threads;
            p.backend = gpu ? PC_BACKEND_CUDA : PC_BACKEND_OPENMP;
            p.refine_borders = a == 1;
            pc_heca_params h;
            pc_heca_params_init(&h);
            h.hca = p;
            if (gpu && ((a < 2 && pc_hca_plan_create(&p, pixels, bands, PC_U8, &plan[a]) != PC_OK) ||
                        (a == 2 && pc_heca_plan_create(&h, pixels, bands, PC_U8, &heca_plan) != PC_OK))) {
                fprintf(stderr, "bench_refine: plan: %s\n", pc_last_error());
                return 1;
            }
            for (int rep = -1; rep < repeats; rep++) {
                pc_result *r = NULL;
                double t0 = now();
                pc_status st;
                if (a >= 2) {
                    pc_points dv = pc_points_u8(d_img, pixels, bands);
                    st = !gpu     ? pc_heca(&v, &h, &r)
                         : a == 2 ? pc_heca_plan_run_device(heca_plan, &dv, d_labels, &r)
                                  : pc_heca_device(&dv, &h, d_labels, &r);
#ifdef PC_BENCH_HAVE_CUDART
                    cudaDeviceSynchronize();
#endif
                } else if (gpu) {
                    pc_points dv = pc_points_u8(d_img, pixels, bands);
                    st = pc_hca_plan_run_device(plan[a], &dv, d_labels, &r);
#ifdef PC_BENCH_HAVE_CUDART
                    cudaDeviceSynchronize();
#endif
                } else {
                    st = pc_hca(&v, &p, &r);
                }
                double t1 = now();
                if (st != PC_OK) {
                    fprintf(stderr, "bench_refine: %s\n", pc_last_error());
                    return 1;
                }
                if (rep >= 0) {
                    t[a][rep] = t1 - t0;
                    if (a == 2) {
                        size_t used = 0;
                        for (size_t q = 0; q < pc_result_stage_count(r) && used < sizeof heca_stages; q++) {
                            const char *name;
                            double sec;
                            pc_result_stage(r, q, &name, &sec);
                            used += (size_t)snprintf(heca_stages + used, sizeof heca_stages - used, "%s%s %.4f",
                                                     q ? ", " : "", name, sec);
                        }
                    }
                    if (a == 1) {
                        refine[rep] = stage(r, "refine");
                        border = pc_result_border_points(r);
                        changed = pc_result_changed_points(r);
                    }
                }
                pc_result_free(r);
            }
        }
        double hca = median(t[0], repeats), ms = median(t[1], repeats), rs = median(refine, repeats);
        double heca = median(t[2], repeats), heca_once = gpu ? median(t[3], repeats) : 0;
        char backend[32];
        snprintf(backend, sizeof backend, gpu ? "CUDA, on the GPU" : "OpenMP, %d threads", threads);
        printf("| %s Mpix x %zu | %s | %.4f | %.4f | **%.2fx** | %.4f | %lld / %lld | %.4f | **%.2fx** |\n", tok, bands,
               backend, hca, ms, ms / hca, rs, (long long)border, (long long)changed, heca, heca / hca);
        printf("\nHECA's stages (s, last run): %s\n", heca_stages);
        if (gpu)
            printf("HECA by pc_heca_device (its GPU state made every call): %.4f s, %.2fx HCA\n", heca_once,
                   heca_once / hca);
        printf("\n");
        fflush(stdout);
        pc_hca_plan_free(plan[0]);
        pc_hca_plan_free(plan[1]);
        pc_heca_plan_free(heca_plan);
#ifdef PC_BENCH_HAVE_CUDART
        cudaFree(d_img);
        cudaFree(d_labels);
#endif
        free(img);
    }
    return 0;
}
