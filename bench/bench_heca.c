/* HECA and HCA-MS against HCA (issue 15 item 4) on bench_hca's synthetic images (uint8 pixels in
 * blocky regions of 8 spectral classes plus noise; the same generator and seed): wall time of pc_hca
 * at m = 32, pc_heca with its 5 default members, and pc_hca with refine_borders at m = 32, on the CPU
 * backends (OpenMP with OMP_NUM_THREADS or --threads), medians of --repeats runs, and their ratios.
 *
 * With --backend cuda, HECA's members are counted and labelled on the GPU (host pixels in, host labels
 * out) and HCA runs on the GPU through pc_hca (host in and out); HCA-MS's refinement runs on the CPU.
 *
 * --refine 0 leaves HCA-MS out (minutes on 100 Mpix x 4 on 2 cores).
 *
 *   bench_heca [--mpix 5,115] [--bands 3] [--repeats 3] [--threads T] [--clusters 8] [--backend openmp|cuda]
 *              [--refine 0|1]
 */
#include "parclust.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

static double wall(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    const char *mpix = "5,115";
    size_t bands = 3, clusters = 8;
    int repeats = 3, threads = 0, refine = 1;
    pc_backend backend = PC_BACKEND_OPENMP;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--mpix")) mpix = argv[i + 1];
        else if (!strcmp(argv[i], "--bands")) bands = (size_t)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeats")) repeats = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--clusters")) clusters = (size_t)atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--refine")) refine = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--backend")) {
            if (pc_backend_parse(argv[i + 1], &backend) != PC_OK) {
                fprintf(stderr, "bench_heca: unknown backend %s\n", argv[i + 1]);
                return 2;
            }
        }
        else {
            fprintf(stderr, "bench_heca: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    printf("backend %s, %d OpenMP threads\n\n", pc_backend_name(backend), threads ? threads : pc_openmp_max_threads());
    printf("| image | HCA m 32 (s) | HECA, 5 members (s) | ratio | HCA-MS m 32 (s) | ratio | border / changed pixels |\n");
    printf("|---|---|---|---|---|---|---|\n");
    char list[256];
    snprintf(list, sizeof list, "%s", mpix);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        size_t pixels = (size_t)(atof(tok) * 1e6);
        uint8_t *img = bench_scene(pixels, bands, 42);
        if (!img)
            return 1;
        pc_points v = pc_points_u8(img, pixels, bands);
        double t[3][16];
        int64_t border = 0, changed = 0;
        for (int rep = 0; rep < repeats && rep < 16; rep++) {
            t[2][rep] = 0;
            for (int a = 0; a < 2 + (refine != 0); a++) {
                pc_hca_params p;
                pc_hca_params_init(&p);
                p.m = 32;
                p.clusters = clusters;
                p.backend = backend;
                p.threads = threads;
                p.refine_borders = a == 2;
                pc_heca_params h;
                pc_heca_params_init(&h);
                h.hca = p;
                pc_result *r = NULL;
                double t0 = wall();
                pc_status st = a == 1 ? pc_heca(&v, &h, &r) : pc_hca(&v, &p, &r);
                t[a][rep] = wall() - t0;
                if (st != PC_OK) {
                    fprintf(stderr, "bench_heca: %s\n", pc_last_error());
                    return 1;
                }
                if (a == 2) {
                    border = pc_result_border_points(r);
                    changed = pc_result_changed_points(r);
                }
                pc_result_free(r);
            }
        }
        int n = repeats < 16 ? repeats : 16;
        double hca = median(t[0], n), heca = median(t[1], n), ms = median(t[2], n);
        printf("| %s Mpix x %zu | %.3f | %.3f | %.2fx | %.3f | %.2fx | %lld / %lld |\n", tok, bands, hca, heca,
               heca / hca, ms, ms / hca, (long long)border, (long long)changed);
        fflush(stdout);
        free(img);
    }
    return 0;
}
