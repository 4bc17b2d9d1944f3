/* Reproduces the seeds' mean shift tables on the CPU (ms-agnolucci, ms-bindi, a thread sweep) and
 * measures the neighbour grid against all pairs. Prints Markdown tables; medians of several runs.
 *
 *   bench_meanshift agnolucci [--sizes 100,1000,10000] [--repeats 3]
 *   bench_meanshift threads   [--n 10000]
 *   bench_meanshift bindi
 *   bench_meanshift grid      [--n 1000000] [--clusters 10000] [--brute 1]
 *   bench_meanshift highd     [--n 2000] [--dims 64,1024] [--big 1000000] [--iterations 5] [--repeats 3]
 *   bench_meanshift gpu       [--sizes 100,...,250000] [--floor 3.3e12]   naive, tiled, fast side by side
 *   bench_meanshift gpu-tile  [--n 10000]     seed 000's TILE_WIDTH sweep 16..1024
 *   bench_meanshift gpu-bindi                 seed 001's workload, block-size sweep
 *   bench_meanshift gpu-exp   [--sizes 100000,250000] [--paths dot,dot:1,mma:0,mma:3] [--box 10]   the
 *                             gaussian's kernels of issue 17 (PC_MEANSHIFT_CUDA_PATH), modes against the first
 *                             (--box: the clusters' centres in [-box, box]^3; 1 overlaps them all)
 * GPU times are the iterations alone (CUDA events); "with copies" adds upload and download.
 */
#include "parclust.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_util.h"

static float *generate(pc_dataset kind, size_t n, size_t dim, size_t k, double spread, double box, int32_t *truth)
{
    pc_generate_params g;
    pc_generate_params_init(&g);
    g.dataset = kind;
    g.n = n;
    g.dim = dim;
    g.clusters = k;
    g.spread = spread;
    g.box = box;
    float *pts = malloc(n * dim * sizeof *pts);
    if (!pts || pc_generate(&g, pts, truth) != PC_OK) {
        fprintf(stderr, "generate: %s\n", pc_last_error());
        exit(1);
    }
    return pts;
}

/* Median wall time of `repeats` runs; *out keeps the last result (caller frees). */
static double time_run(const float *pts, size_t n, size_t dim, const pc_meanshift_params *p, int repeats,
                       pc_result **out)
{
    double t[32];
    if (repeats > 32)
        repeats = 32;
    pc_points v = pc_points_f32(pts, n, dim);
    for (int r = 0; r < repeats; r++) {
        pc_result *res = NULL;
        double t0 = now();
        if (pc_meanshift(&v, p, &res) != PC_OK) {
            fprintf(stderr, "mean shift failed: %s\n", pc_last_error());
            exit(1);
        }
        t[r] = now() - t0;
        if (out && r == repeats - 1)
            *out = res;
        else
            pc_result_free(res);
    }
    qsort(t, (size_t)repeats, sizeof *t, cmp_double);
    return t[repeats / 2];
}

/* Seed 000's workload: gaussian kernel, h = 2, 10 iterations, no stop, no cut-off. */
static void fixed_iterations(pc_meanshift_params *p, double h, int iterations, pc_backend b, int threads)
{
    pc_meanshift_params_init(p);
    p->bandwidth = h;
    p->max_iter = iterations;
    p->eps = 0;
    p->backend = b;
    p->threads = threads;
}

static int repeats_for(double pairs, int asked) { return pairs > 2e10 ? 1 : asked; }

static void bench_agnolucci(const char *sizes, int repeats)
{
    printf("| N | sequential (s) | OpenMP %d threads (s) | speedup | pairs/s (OpenMP) | clusters |\n",
           pc_openmp_max_threads());
    printf("|---|---|---|---|---|---|\n");
    char *list = strdup(sizes);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        size_t n = strtoull(tok, NULL, 10);
        float *pts = generate(PC_DATASET_AGNOLUCCI, n, 3, 3, 1.0, 10.0, NULL);
        double pairs = (double)n * (double)n * 10;
        int rep = repeats_for(pairs, repeats);
        pc_meanshift_params p;
        fixed_iterations(&p, 2.0, 10, PC_BACKEND_SEQUENTIAL, 0);
        double ts = time_run(pts, n, 3, &p, rep, NULL);
        fixed_iterations(&p, 2.0, 10, PC_BACKEND_OPENMP, 0);
        pc_result *r = NULL;
        double to = time_run(pts, n, 3, &p, rep, &r);
        printf("| %zu | %.4f | %.4f | %.2f | %.3g | %zu |\n", n, ts, to, ts / to, pairs / to,
               pc_result_cluster_count(r));
        fflush(stdout);
        pc_result_free(r);
        free(pts);
    }
    free(list);
}

static void bench_threads(size_t n)
{
    float *pts = generate(PC_DATASET_AGNOLUCCI, n, 3, 3, 1.0, 10.0, NULL);
    int max = pc_openmp_max_threads();
    pc_meanshift_params p;
    fixed_iterations(&p, 2.0, 10, PC_BACKEND_SEQUENTIAL, 0);
    double ts = time_run(pts, n, 3, &p, 3, NULL);
    printf("| threads | N | time (s) | speedup vs sequential |\n|---|---|---|---|\n");
    printf("| seq | %zu | %.4f | 1.00 |\n", n, ts);
    for (int t = 1; t <= max; t++) {
        fixed_iterations(&p, 2.0, 10, PC_BACKEND_OPENMP, t);
        double to = time_run(pts, n, 3, &p, 3, NULL);
        printf("| %d | %zu | %.4f | %.2f |\n", t, n, to, ts / to);
        fflush(stdout);
    }
    free(pts);
}

/* Seed 001's workload: 3 blobs, D = 2 and 3, N = 500..5000, 50 iterations, no eps stop; both OpenMP
 * schedules the report compares. */
static void bench_bindi(void)
{
    printf("| D | N | sequential (s) | OpenMP static (s) | OpenMP dynamic (s) | speedup (dynamic) |\n");
    printf("|---|---|---|---|---|---|\n");
    for (size_t dim = 2; dim <= 3; dim++) {
        for (size_t n = 500; n <= 5000; n += 500) {
            float *pts = generate(PC_DATASET_BINDI, n, dim, 3, 1.0, 10.0, NULL);
            pc_meanshift_params p;
            fixed_iterations(&p, 1.0, 50, PC_BACKEND_SEQUENTIAL, 0);
            double ts = time_run(pts, n, dim, &p, 5, NULL);
            fixed_iterations(&p, 1.0, 50, PC_BACKEND_OPENMP, 0);
            p.schedule = PC_SCHEDULE_STATIC;
            double tst = time_run(pts, n, dim, &p, 5, NULL);
            p.schedule = PC_SCHEDULE_DYNAMIC;
            double tdy = time_run(pts, n, dim, &p, 5, NULL);
            printf("| %zu | %zu | %.4f | %.4f | %.4f | %.2f |\n", dim, n, ts, tst, tdy, ts / tdy);
            fflush(stdout);
            free(pts);
        }
    }
}

/* Many small clusters with a finite radius: the neighbour grid against all pairs, same labels. */
static void bench_grid(size_t n, size_t clusters, int brute)
{
    int32_t *truth = malloc(n * sizeof *truth);
    float *pts = generate(PC_DATASET_GRID, n, 2, clusters, 0.1, 1.0, truth);
    pc_meanshift_params p;
    pc_meanshift_params_init(&p);
    p.kernel = PC_KERNEL_FLAT;
    p.bandwidth = 0.3;
    p.backend = PC_BACKEND_OPENMP;
    pc_result *g = NULL, *b = NULL;
    double tg = time_run(pts, n, 2, &p, 1, &g);
    double ari = 0;
    pc_adjusted_rand_index(truth, pc_result_labels(g), n, &ari);
    printf("| path | N | clusters found | iterations | time (s) | ARI vs truth |\n|---|---|---|---|---|---|\n");
    printf("| neighbour grid | %zu | %zu | %d | %.3f | %.4f |\n", n, pc_result_cluster_count(g),
           pc_result_iterations(g), tg, ari);
    fflush(stdout);
    if (brute) {
        p.use_grid = 0;
        double tb = time_run(pts, n, 2, &p, 1, &b);
        int same = pc_result_cluster_count(g) == pc_result_cluster_count(b) &&
                   memcmp(pc_result_labels(g), pc_result_labels(b), n * sizeof(int32_t)) == 0;
        printf("| all pairs | %zu | %zu | %d | %.3f | |\n", n, pc_result_cluster_count(b), pc_result_iterations(b), tb);
        printf("\ngrid speedup %.1fx, labels %s\n", tb / tg, same ? "identical" : "DIFFERENT");
    }
    pc_result_free(g);
    pc_result_free(b);
    free(pts);
    free(truth);
}

/* Many dimensions: blobs (3 clusters, spread 1, box 10) at n points and each dimension of `dims`,
 * gaussian kernel with h = sqrt(dim) (a cluster's points lie about sqrt(2 dim) apart at every
 * dimension, so the kernel sees the same structure), a fixed number of iterations without a stop, so
 * every dimension does the same pairs and the time measures the cost per dimension. Then one point of `big`
 * values (uniform in [-10, 10]) with every default (h = 1, eps stop, 300 iterations at most). */
static void bench_highd(size_t n, const char *dims, size_t big, int iterations, int repeats)
{
    repeats = repeats < 1 ? 1 : repeats;
    printf("| N | D | h | iterations | clusters | sequential (s) | OpenMP %d threads (s) | vs first D (OpenMP) |\n",
           pc_openmp_max_threads());
    printf("|---|---|---|---|---|---|---|---|\n");
    char *list = strdup(dims);
    double first = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        size_t dim = strtoull(tok, NULL, 10);
        float *pts = generate(PC_DATASET_BLOBS, n, dim, 3, 1.0, 10.0, NULL);
        double h = sqrt((double)dim);
        pc_meanshift_params p;
        fixed_iterations(&p, h, iterations, PC_BACKEND_SEQUENTIAL, 0);
        double ts = time_run(pts, n, dim, &p, repeats, NULL);
        fixed_iterations(&p, h, iterations, PC_BACKEND_OPENMP, 0);
        pc_result *r = NULL;
        double to = time_run(pts, n, dim, &p, repeats, &r);
        if (first == 0)
            first = to;
        printf("| %zu | %zu | %.4g | %d | %zu | %.4f | %.4f | %.1fx |\n", n, dim, h, pc_result_iterations(r),
               pc_result_cluster_count(r), ts, to, to / first);
        fflush(stdout);
        pc_result_free(r);
        free(pts);
    }
    free(list);
    if (big == 0)
        return;
    float *pts = malloc(big * sizeof *pts); /* the generator's blobs stop at 4096 values per point */
    if (!pts)
        exit(1);
    uint64_t state = 42;
    for (size_t k = 0; k < big; k++)
        pts[k] = (float)((double)(next(&state) >> 11) * 0x1p-53 * 20.0 - 10.0);
    pc_meanshift_params p;
    pc_meanshift_params_init(&p);
    pc_result *r = NULL;
    double t = time_run(pts, 1, big, &p, repeats, &r);
    int same = memcmp(pc_result_modes(r), pts, big * sizeof *pts) == 0;
    printf("\nN = 1, D = %zu, defaults: %.4f s, %d iterations, %zu cluster, mode %s the point\n", big, t,
           pc_result_iterations(r), pc_result_cluster_count(r), same ? "is" : "IS NOT");
    pc_result_free(r);
    free(pts);
}

/* GPU time of the iterations (the "shift" stage) and the whole call, medians over `repeats`. */
static void time_gpu(const float *pts, size_t n, size_t dim, const pc_meanshift_params *p, int repeats,
                     double *kernel_s, double *total_s, size_t *clusters)
{
    double tk[16], tt[16];
    if (repeats > 16)
        repeats = 16;
    pc_points v = pc_points_f32(pts, n, dim);
    for (int r = 0; r < repeats; r++) {
        pc_result *res = NULL;
        double t0 = now();
        if (pc_meanshift(&v, p, &res) != PC_OK) {
            fprintf(stderr, "GPU mean shift failed: %s\n", pc_last_error());
            exit(1);
        }
        tt[r] = now() - t0;
        tk[r] = 0;
        for (size_t s = 0; s < pc_result_stage_count(res); s++) {
            const char *name;
            double sec;
            pc_result_stage(res, s, &name, &sec);
            if (strcmp(name, "shift") == 0)
                tk[r] = sec;
        }
        *clusters = pc_result_cluster_count(res);
        pc_result_free(res);
    }
    qsort(tk, (size_t)repeats, sizeof *tk, cmp_double);
    qsort(tt, (size_t)repeats, sizeof *tt, cmp_double);
    *kernel_s = tk[repeats / 2];
    *total_s = tt[repeats / 2];
}

static void gpu_params(pc_meanshift_params *p, double h, int iterations, pc_cuda_kernel k, int block)
{
    fixed_iterations(p, h, iterations, PC_BACKEND_CUDA, 0);
    p->cuda_kernel = k;
    p->cuda_block = block;
}

static void gpu_header(void)
{
    char desc[256];
    if (pc_cuda_device_describe(0, desc, sizeof desc) != PC_OK) {
        fprintf(stderr, "no CUDA device: %s\n", desc);
        exit(1);
    }
    printf("GPU: %s\n\n", desc);
}

static void bench_gpu(const char *sizes, double floor_pairs)
{
    gpu_header();
    printf("| N | naive (s) | tiled, TILE_WIDTH 64 (s) | fast (s) | fast with copies (s) | fast pairs/s | share of floor | clusters |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    char *list = strdup(sizes);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        size_t n = strtoull(tok, NULL, 10), k;
        float *pts = generate(PC_DATASET_AGNOLUCCI, n, 3, 3, 1.0, 10.0, NULL);
        double pairs = (double)n * (double)n * 10, kn, kt, kf, tn, tt, tf;
        int rep = pairs > 1e11 ? 3 : 5;
        pc_meanshift_params p;
        gpu_params(&p, 2.0, 10, PC_CUDA_KERNEL_NAIVE, 0);
        time_gpu(pts, n, 3, &p, rep, &kn, &tn, &k);
        gpu_params(&p, 2.0, 10, PC_CUDA_KERNEL_TILED, 64);
        time_gpu(pts, n, 3, &p, rep, &kt, &tt, &k);
        gpu_params(&p, 2.0, 10, PC_CUDA_KERNEL_FAST, 0);
        time_gpu(pts, n, 3, &p, rep, &kf, &tf, &k);
        printf("| %zu | %.5f | %.5f | %.5f | %.5f | %.3g | %.0f%% | %zu |\n", n, kn, kt, kf, tf, pairs / kf,
               100.0 * pairs / kf / floor_pairs, k);
        fflush(stdout);
        free(pts);
    }
    free(list);
}

static void bench_gpu_tile(size_t n)
{
    gpu_header();
    float *pts = generate(PC_DATASET_AGNOLUCCI, n, 3, 3, 1.0, 10.0, NULL);
    printf("| TILE_WIDTH | tiled (s) | naive, same block (s) |\n|---|---|---|\n");
    for (int tw = 16; tw <= 1024; tw *= 2) {
        pc_meanshift_params p;
        double kt, kn, t;
        size_t k;
        gpu_params(&p, 2.0, 10, PC_CUDA_KERNEL_TILED, tw);
        time_gpu(pts, n, 3, &p, 5, &kt, &t, &k);
        gpu_params(&p, 2.0, 10, PC_CUDA_KERNEL_NAIVE, tw);
        time_gpu(pts, n, 3, &p, 5, &kn, &t, &k);
        printf("| %d | %.5f | %.5f |\n", tw, kt, kn);
        fflush(stdout);
    }
    free(pts);
}

static void bench_gpu_bindi(void)
{
    gpu_header();
    printf("| D | N | naive b64 | naive b256 | tiled b64 | tiled b256 | tiled b1024 | fast | (s, 50 iterations) |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    for (size_t dim = 2; dim <= 3; dim++) {
        for (size_t n = 500; n <= 5000; n += 1500) {
            float *pts = generate(PC_DATASET_BINDI, n, dim, 3, 1.0, 10.0, NULL);
            struct { pc_cuda_kernel k; int b; } runs[] = {{PC_CUDA_KERNEL_NAIVE, 64}, {PC_CUDA_KERNEL_NAIVE, 256},
                {PC_CUDA_KERNEL_TILED, 64}, {PC_CUDA_KERNEL_TILED, 256}, {PC_CUDA_KERNEL_TILED, 1024},
                {PC_CUDA_KERNEL_FAST, 0}};
            printf("| %zu | %zu |", dim, n);
            for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
                pc_meanshift_params p;
                double kt, t;
                size_t k;
                gpu_params(&p, 1.0, 50, runs[r].k, runs[r].b);
                time_gpu(pts, n, dim, &p, 5, &kt, &t, &k);
                printf(" %.5f |", kt);
            }
            printf(" |\n");
            fflush(stdout);
            free(pts);
        }
    }
}

/* Issue 17: the same run through each path of the gaussian without cut-off (PC_MEANSHIFT_CUDA_PATH),
 * 10 iterations, h = 2; the modes of every path against the first path's, in units of h. */
static void bench_gpu_exp(const char *sizes, const char *paths, double box)
{
    gpu_header();
    printf("| N | path | shift (s, median of 3) | pairs/s | vs first | largest mode difference / h | clusters | "
           "upload (s; the spatial order's sort included) |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    char *list = strdup(sizes);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        size_t n = strtoull(tok, NULL, 10), dim = 3;
        float *pts = generate(PC_DATASET_AGNOLUCCI, n, dim, 3, 1.0, box, NULL);
        float *first = malloc(n * dim * sizeof *first);
        double first_s = 0, pairs = (double)n * (double)n * 10;
        char *pl = strdup(paths), *save = NULL;
        int index = 0;
        for (char *path = strtok_r(pl, ",", &save); path; path = strtok_r(NULL, ",", &save), index++) {
            setenv("PC_MEANSHIFT_CUDA_PATH", path, 1);
            pc_meanshift_params p;
            gpu_params(&p, 2.0, 10, PC_CUDA_KERNEL_FAST, 0);
            pc_points v = pc_points_f32(pts, n, dim);
            double tk[3], tu[3];
            double worst = 0;
            size_t clusters = 0;
            for (int r = 0; r < 3; r++) {
                pc_result *res = NULL;
                if (pc_meanshift(&v, &p, &res) != PC_OK) {
                    fprintf(stderr, "GPU mean shift (%s) failed: %s\n", path, pc_last_error());
                    exit(1);
                }
                tk[r] = tu[r] = 0;
                for (size_t st = 0; st < pc_result_stage_count(res); st++) {
                    const char *name;
                    double sec;
                    pc_result_stage(res, st, &name, &sec);
                    if (strcmp(name, "shift") == 0)
                        tk[r] = sec;
                    if (strcmp(name, "upload") == 0)
                        tu[r] = sec;
                }
                const float *m = pc_result_modes(res);
                if (r == 2 && index == 0)
                    memcpy(first, m, n * dim * sizeof *first);
                if (r == 2)
                    for (size_t i = 0; i < n * dim; i++)
                        worst = fmax(worst, fabs((double)m[i] - first[i]) / 2.0);
                clusters = pc_result_cluster_count(res);
                pc_result_free(res);
            }
            qsort(tk, 3, sizeof *tk, cmp_double);
            qsort(tu, 3, sizeof *tu, cmp_double);
            if (index == 0)
                first_s = tk[1];
            printf("| %zu | %s | %.5f | %.3g | %.2fx | %.2g | %zu | %.4f |\n", n, path, tk[1], pairs / tk[1],
                   first_s / tk[1], worst, clusters, tu[1]);
            fflush(stdout);
        }
        unsetenv("PC_MEANSHIFT_CUDA_PATH");
        free(pl);
        free(first);
        free(pts);
    }
    free(list);
}

static const char *arg(int argc, char **argv, const char *name, const char *fallback)
{
    for (int i = 2; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return argv[i + 1];
    return fallback;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "agnolucci";
    if (strcmp(what, "agnolucci") == 0)
        bench_agnolucci(arg(argc, argv, "--sizes", "100,1000,10000"), atoi(arg(argc, argv, "--repeats", "3")));
    else if (strcmp(what, "threads") == 0)
        bench_threads(strtoull(arg(argc, argv, "--n", "10000"), NULL, 10));
    else if (strcmp(what, "bindi") == 0)
        bench_bindi();
    else if (strcmp(what, "grid") == 0)
        bench_grid(strtoull(arg(argc, argv, "--n", "1000000"), NULL, 10),
                   strtoull(arg(argc, argv, "--clusters", "10000"), NULL, 10), atoi(arg(argc, argv, "--brute", "1")));
    else if (strcmp(what, "highd") == 0)
        bench_highd(strtoull(arg(argc, argv, "--n", "2000"), NULL, 10), arg(argc, argv, "--dims", "64,1024"),
                    strtoull(arg(argc, argv, "--big", "1000000"), NULL, 10), atoi(arg(argc, argv, "--iterations", "5")),
                    atoi(arg(argc, argv, "--repeats", "3")));
    else if (strcmp(what, "gpu") == 0)
        bench_gpu(arg(argc, argv, "--sizes", "100,1000,10000,100000,250000"), atof(arg(argc, argv, "--floor", "3.3e12")));
    else if (strcmp(what, "gpu-tile") == 0)
        bench_gpu_tile(strtoull(arg(argc, argv, "--n", "10000"), NULL, 10));
    else if (strcmp(what, "gpu-bindi") == 0)
        bench_gpu_bindi();
    else if (strcmp(what, "gpu-exp") == 0)
        bench_gpu_exp(arg(argc, argv, "--sizes", "100000,250000"),
                      arg(argc, argv, "--paths", "dot,dot:1,dot:2,mma:0,mma:2,mma:3,mma:4"),
                      atof(arg(argc, argv, "--box", "10")));
    else {
        fprintf(stderr, "usage: bench_meanshift agnolucci|threads|bindi|grid|highd|gpu|gpu-tile|gpu-bindi|gpu-exp [options]\n");
        return 2;
    }
    return 0;
}
