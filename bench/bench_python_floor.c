/* The floor under the Python package's calls (bench_python.py): the same library call on the same data,
 * from C, timed around the call alone. The data come from pc_generate with the seed bench_python.py
 * passes to parclust._core.generate, so both sides cluster identical points.
 *
 *   bench_python_floor kmeans    DATASET N DIM CLUSTERS SPREAD BOX SEED REPS K MAX_ITER TOL
 *   bench_python_floor meanshift DATASET N DIM CLUSTERS SPREAD BOX SEED REPS KERNEL H MAX_ITER EPS
 *   bench_python_floor hca       DATASET N DIM CLUSTERS SPREAD BOX SEED REPS M K     (uint8 pixels)
 *
 * k-means starts from the points i * N / K (what bench_python.py gives both). uint8 pixels for HCA are
 * clamp(rint(x + 128), 0, 255) of the generated values. One untimed call first. Prints one line: median=S min=S iter=I k=K
 * inertia=V. */
#include <parclust.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 10) {
        fprintf(stderr, "usage: see bench_python_floor.c\n");
        return 2;
    }
    const char *algo = argv[1];
    pc_generate_params g;
    pc_generate_params_init(&g);
    if (pc_dataset_parse(argv[2], &g.dataset) != PC_OK)
        return 2;
    g.n = strtoull(argv[3], NULL, 10);
    g.dim = strtoull(argv[4], NULL, 10);
    g.clusters = strtoull(argv[5], NULL, 10);
    g.spread = atof(argv[6]);
    g.box = atof(argv[7]);
    g.seed = strtoull(argv[8], NULL, 10);
    int reps = atoi(argv[9]);
    float *x = malloc(g.n * g.dim * sizeof *x);
    if (!x || pc_generate(&g, x, NULL) != PC_OK || reps < 1 || reps > 100)
        return 1;
    double times[100];
    pc_result *r = NULL;
    pc_status st = PC_OK;
    if (!strcmp(algo, "kmeans") && argc == 13) {
        pc_kmeans_params p;
        pc_kmeans_params_init(&p);
        p.k = strtoull(argv[10], NULL, 10);
        p.max_iter = atoi(argv[11]);
        p.tol = atof(argv[12]);
        float *init = malloc(p.k * g.dim * sizeof *init);
        for (size_t c = 0; c < p.k; c++)
            memcpy(init + c * g.dim, x + (c * g.n / p.k) * g.dim, g.dim * sizeof *init);
        p.init = PC_INIT_GIVEN;
        p.initial_centers = init;
        pc_points pts = pc_points_f32(x, g.n, g.dim);
        for (int i = -1; i < reps && st == PC_OK; i++) { /* -1: untimed warm-up */
            pc_result_free(r);
            double t0 = now();
            st = pc_kmeans(&pts, &p, &r);
            if (i >= 0)
                times[i] = now() - t0;
        }
        free(init);
    } else if (!strcmp(algo, "meanshift") && argc == 14) {
        pc_meanshift_params p;
        pc_meanshift_params_init(&p);
        if (pc_kernel_parse(argv[10], &p.kernel) != PC_OK)
            return 2;
        p.bandwidth = atof(argv[11]);
        p.max_iter = atoi(argv[12]);
        p.eps = atof(argv[13]);
        pc_points pts = pc_points_f32(x, g.n, g.dim);
        for (int i = -1; i < reps && st == PC_OK; i++) { /* -1: untimed warm-up */
            pc_result_free(r);
            double t0 = now();
            st = pc_meanshift(&pts, &p, &r);
            if (i >= 0)
                times[i] = now() - t0;
        }
    } else if (!strcmp(algo, "hca") && argc == 12) {
        pc_hca_params p;
        pc_hca_params_init(&p);
        p.m = atoi(argv[10]);
        p.clusters = strtoull(argv[11], NULL, 10);
        unsigned char *u8 = malloc(g.n * g.dim);
        for (size_t i = 0; i < g.n * g.dim; i++) {
            double v = rint((double)x[i] + 128.0);
            u8[i] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
        pc_points pts = pc_points_u8(u8, g.n, g.dim);
        for (int i = -1; i < reps && st == PC_OK; i++) { /* -1: untimed warm-up */
            pc_result_free(r);
            double t0 = now();
            st = pc_hca(&pts, &p, &r);
            if (i >= 0)
                times[i] = now() - t0;
        }
        free(u8);
    } else {
        fprintf(stderr, "usage: see bench_python_floor.c\n");
        return 2;
    }
    if (st != PC_OK) {
        fprintf(stderr, "bench_python_floor: %s\n", pc_last_error());
        return 1;
    }
    double min = times[0];
    for (int i = 1; i < reps; i++)
        min = times[i] < min ? times[i] : min;
    qsort(times, (size_t)reps, sizeof *times, cmp);
    double median = reps % 2 ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
    printf("median=%.6f min=%.6f iter=%d k=%zu inertia=%.9g\n", median, min, pc_result_iterations(r),
           pc_result_cluster_count(r), pc_result_inertia(r));
    pc_result_free(r);
    free(x);
    return 0;
}
