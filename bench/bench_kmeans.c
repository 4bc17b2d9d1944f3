/* k-means speed: one Lloyd iteration on the GPU for BENCHMARKS.md's km-large sizes (every CUDA
 * variant, after an untimed warm-up run), and Lloyd on the CPU. Random init from seed 0, no early stop, inertia printed beside
 * each time.
 *
 *   bench_kmeans gpu [--iterations 10] [--size 0|1|2] [--variant 0..4]   (one size, one variant:
 *       pc_kmeans_cuda_variant's order, 0 = fast; all by default)
 *   bench_kmeans gpu-converge [--size 0|1|2] [--tol 1e-4]   Lloyd (fast; direct, whose fixed-point sums
 *       make its centres comparable) and Hamerly's bounds on the GPU to convergence from the same random
 *       centres: GPU time per iteration, distances evaluated, and whether Hamerly's labels and centres
 *       are the direct Lloyd's
 *   bench_kmeans cpu [--n 1000000] [--dim 3] [--k 100] [--iterations 20]
 *   bench_kmeans seed   seed 002's experiments (2D: 100 points; 4,000 with k = 5 and 10; 100k; k = 100)
 *   bench_kmeans stream [--n 10000000] [--dim 3] [--k 100] [--iterations 20] [--block 1000000]
 *       pc_kmeans against the k-means stream (OpenMP) from the same given centres (random points),
 *       blocks of --block rows: seconds per iteration of each, and whether the centres are equal
 */
#include "parclust.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static float *blobs(size_t n, size_t dim, size_t k)
{
    pc_generate_params g;
    pc_generate_params_init(&g);
    g.n = n;
    g.dim = dim;
    g.clusters = k;
    g.spread = 1.0;
    g.box = 10.0;
    float *x = malloc(n * dim * sizeof *x);
    if (!x || pc_generate(&g, x, NULL) != PC_OK) {
        fprintf(stderr, "generate: %s\n", pc_last_error());
        exit(1);
    }
    return x;
}

static double stage(const pc_result *r, const char *want)
{
    for (size_t s = 0; s < pc_result_stage_count(r); s++) {
        const char *name;
        double t;
        pc_result_stage(r, s, &name, &t);
        if (strcmp(name, want) == 0)
            return t;
    }
    return 0;
}

static pc_result *run_algo(const float *x, size_t n, size_t dim, size_t k, int iterations, double tol,
                           pc_backend b, pc_kmeans_cuda_variant v, pc_kmeans_algorithm algo)
{
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    p.k = k;
    p.init = PC_INIT_RANDOM;
    p.max_iter = iterations;
    p.tol = tol;
    p.algorithm = algo;
    p.backend = b;
    p.cuda_variant = v;
    pc_points pts = pc_points_f32(x, n, dim);
    pc_result *r = NULL;
    if (pc_kmeans(&pts, &p, &r) != PC_OK) {
        fprintf(stderr, "k-means: %s\n", pc_last_error());
        exit(1);
    }
    return r;
}

static pc_result *run(const float *x, size_t n, size_t dim, size_t k, int iterations, pc_backend b,
                      pc_kmeans_cuda_variant v)
{
    return run_algo(x, n, dim, k, iterations, 0, b, v, PC_KMEANS_LLOYD);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Lloyd and Hamerly on the GPU to convergence (issue 17 item 3, GPU part). */
static int converge_bench(int only, double tol)
{
    char desc[256];
    pc_cuda_device_describe(0, desc, sizeof desc);
    printf("GPU: %s; to convergence, tol %g, max_iter 300, random initial centres (seed 0)\n\n| N x D, k | algorithm "
           "| iterations | GPU ms per iteration | whole call (s) | distances / Lloyd's | inertia | labels and centres "
           "as direct Lloyd's |\n|---|---|---|---|---|---|---|---|\n", desc, tol);
    const size_t sizes[][3] = {{10000000, 3, 100}, {1000000, 16, 1000}, {10000000, 16, 1000}};
    const char *names[] = {"Lloyd, fast variant", "Lloyd, direct variant (fixed-point sums)", "Hamerly (auto)"};
    int bad = 0;
    for (int s = 0; s < 3; s++) {
        if (only >= 0 && s != only)
            continue;
        size_t n = sizes[s][0], dim = sizes[s][1], k = sizes[s][2];
        float *x = blobs(n, dim, 50);
        pc_result_free(run(x, n, dim, k, 2, PC_BACKEND_CUDA, PC_KMEANS_CUDA_FAST)); /* warm-up */
        pc_result *r[3];
        double wall[3];
        for (int a = 0; a < 3; a++) {
            double t0 = now();
            /* AUTO with the default variant: the bounds (from k = 8) */
            r[a] = run_algo(x, n, dim, k, 300, tol, PC_BACKEND_CUDA, a == 1 ? PC_KMEANS_CUDA_DIRECT : PC_KMEANS_CUDA_FAST,
                            a == 2 ? PC_KMEANS_AUTO : PC_KMEANS_LLOYD);
            wall[a] = now() - t0;
        }
        for (int a = 0; a < 3; a++) {
            int same = pc_result_iterations(r[a]) == pc_result_iterations(r[1]) &&
                       memcmp(pc_result_labels(r[a]), pc_result_labels(r[1]), n * sizeof(int32_t)) == 0 &&
                       memcmp(pc_result_centers(r[a]), pc_result_centers(r[1]), k * dim * sizeof(float)) == 0;
            if (a == 2 && (!same || pc_result_kmeans_algorithm(r[2]) != PC_KMEANS_HAMERLY))
                bad = 1;
            printf("| %zuM x %zu, k = %zu | %s | %d | %.3f | %.3f | %.4f | %.9g | %s |\n", n / 1000000, dim, k,
                   names[a], pc_result_iterations(r[a]), 1e3 * stage(r[a], "lloyd-gpu") / pc_result_iterations(r[a]),
                   wall[a], pc_result_distance_evaluations(r[a]) / pc_result_distance_evaluations(r[1]),
                   pc_result_inertia(r[a]), a == 1 ? "(reference)" : same ? "yes" : "no");
            fflush(stdout);
        }
        for (int a = 0; a < 3; a++)
            pc_result_free(r[a]);
        free(x);
    }
    return bad;
}


/* pc_kmeans and the stream from the same centres, no early stop: time per iteration of each (the
 * stream's: its passes and steps; its scan apart), and the centres compared bit for bit. */
static int stream_bench(size_t n, size_t dim, size_t k, int iterations, size_t block)
{
    float *x = blobs(n, dim, 50), *given = malloc(k * dim * sizeof *given);
    for (size_t c = 0; c < k; c++)
        memcpy(given + c * dim, x + (c * 7919 % n) * dim, dim * sizeof *given);
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    p.k = k;
    p.init = PC_INIT_GIVEN;
    p.initial_centers = given;
    p.max_iter = iterations;
    p.tol = 0;
    p.backend = PC_BACKEND_OPENMP;
    pc_points all = pc_points_f32(x, n, dim);
    pc_result *r = NULL, *rs = NULL;
    double t0 = now();
    if (pc_kmeans(&all, &p, &r) != PC_OK) {
        fprintf(stderr, "k-means: %s\n", pc_last_error());
        return 1;
    }
    double t_kmeans = now() - t0;
    pc_kmeans_stream *s = NULL;
    int done = 0;
    double t1 = now(), t_scan = 0;
    pc_status st = pc_kmeans_stream_create(&p, dim, 0, &s);
    for (size_t b = 0; st == PC_OK && b < n; b += block) {
        pc_points v = pc_points_f32(x + b * dim, b + block < n ? block : n - b, dim);
        st = pc_kmeans_stream_scan(s, &v, b);
    }
    if (st == PC_OK)
        st = pc_kmeans_stream_start(s);
    t_scan = now() - t1;
    while (st == PC_OK && !done) {
        for (size_t b = 0; st == PC_OK && b < n; b += block) {
            pc_points v = pc_points_f32(x + b * dim, b + block < n ? block : n - b, dim);
            st = pc_kmeans_stream_add(s, &v);
        }
        if (st == PC_OK)
            st = pc_kmeans_stream_step(s, &done);
    }
    double t_stream = now() - t1 - t_scan;
    if (st == PC_OK)
        st = pc_kmeans_stream_result(s, &rs);
    if (st != PC_OK) {
        fprintf(stderr, "k-means stream: %s\n", pc_last_error());
        return 1;
    }
    int same = memcmp(pc_result_centers(r), pc_result_centers(rs), k * dim * sizeof(float)) == 0;
    printf("| N x D, k | threads | pc_kmeans: whole call (s) | its Lloyd, per iteration (ms) | stream: scan + start (s) "
           "| its passes, per iteration (ms) | iterations | centres equal |\n|---|---|---|---|---|---|---|---|\n");
    printf("| %zu x %zu, k = %zu | %d | %.3f | %.1f | %.3f | %.1f | %d | %s |\n", n, dim, k, pc_openmp_max_threads(),
           t_kmeans, 1e3 * stage(r, "lloyd") / pc_result_iterations(r), t_scan, 1e3 * t_stream / pc_result_iterations(rs),
           pc_result_iterations(rs), same ? "yes" : "NO");
    pc_result_free(r);
    pc_result_free(rs);
    pc_kmeans_stream_free(s);
    free(given);
    free(x);
    return same ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "cpu";
    size_t n = 1000000, dim = 3, k = 100, block = 1000000;
    int iterations = strcmp(what, "gpu") == 0 ? 10 : 20, only = -1, variant = -1;
    double tol = 1e-4;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--n") == 0) n = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--dim") == 0) dim = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--k") == 0) k = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--iterations") == 0) iterations = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--size") == 0) only = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--variant") == 0) variant = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--block") == 0) block = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--tol") == 0) tol = atof(argv[i + 1]);
    }
    if (strcmp(what, "seed") == 0) {
        const size_t runs[][2] = {{100, 5}, {4000, 5}, {4000, 10}, {100000, 5}, {100000, 100}};
        int gpu = pc_cuda_device_count() > 0;
        printf("| N (2D) | k | sequential (ms) | OpenMP %d threads (ms) | CUDA fast (ms) | CUDA seed 002 (ms) | inertia |\n"
               "|---|---|---|---|---|---|---|\n", pc_openmp_max_threads());
        for (int s = 0; s < 5; s++) {
            size_t rn = runs[s][0], rk = runs[s][1];
            float *x = blobs(rn, 2, rk);
            pc_result *a = run(x, rn, 2, rk, iterations, PC_BACKEND_SEQUENTIAL, PC_KMEANS_CUDA_FAST);
            pc_result *b = run(x, rn, 2, rk, iterations, PC_BACKEND_OPENMP, PC_KMEANS_CUDA_FAST);
            pc_result *c = gpu ? run(x, rn, 2, rk, iterations, PC_BACKEND_CUDA, PC_KMEANS_CUDA_FAST) : NULL;
            pc_result *d = gpu ? run(x, rn, 2, rk, iterations, PC_BACKEND_CUDA, PC_KMEANS_CUDA_SEED) : NULL;
            char fast[32] = "no GPU", seed[32] = "no GPU";
            if (gpu) {
                snprintf(fast, sizeof fast, "%.3f", 1e3 * stage(c, "lloyd-gpu"));
                snprintf(seed, sizeof seed, "%.3f", 1e3 * stage(d, "lloyd-gpu"));
            }
            printf("| %zu | %zu | %.3f | %.3f | %s | %s | %.6g |\n", rn, rk, 1e3 * stage(a, "lloyd"),
                   1e3 * stage(b, "lloyd"), fast, seed, pc_result_inertia(a));
            pc_result_free(a);
            pc_result_free(b);
            pc_result_free(c);
            pc_result_free(d);
            free(x);
        }
        return 0;
    }
    if (strcmp(what, "gpu") == 0) {
        char desc[256];
        pc_cuda_device_describe(0, desc, sizeof desc);
        printf("GPU: %s\n\n| N x D, k | variant | one iteration on the GPU (ms) | iterations | inertia |\n|---|---|---|---|---|\n",
               desc);
        const size_t sizes[][3] = {{10000000, 3, 100}, {1000000, 16, 1000}, {10000000, 16, 1000}};
        const char *names[] = {"fast (default)", "seed 002", "GEMM", "direct, two passes",
                               "tensor screen, fixed-point sums"};
        for (int s = 0; s < 3; s++) {
            if (only >= 0 && s != only)
                continue;
            float *x = blobs(sizes[s][0], sizes[s][1], 50);
            /* A warm-up run: clocks up, every kernel loaded. */
            pc_result_free(run(x, sizes[s][0], sizes[s][1], sizes[s][2], 2, PC_BACKEND_CUDA, PC_KMEANS_CUDA_FAST));
            for (int v = 0; v < 5; v++) {
                if (variant >= 0 && v != variant)
                    continue;
                pc_result *r = run(x, sizes[s][0], sizes[s][1], sizes[s][2], iterations, PC_BACKEND_CUDA,
                                   (pc_kmeans_cuda_variant)v);
                printf("| %zuM x %zu, k = %zu | %s | %.3f | %d | %.6g |\n", sizes[s][0] / 1000000, sizes[s][1],
                       sizes[s][2], names[v], 1e3 * stage(r, "lloyd-gpu") / pc_result_iterations(r),
                       pc_result_iterations(r), pc_result_inertia(r));
                fflush(stdout);
                pc_result_free(r);
            }
            free(x);
        }
        return 0;
    }
    if (strcmp(what, "gpu-converge") == 0)
        return converge_bench(only, tol);
    if (strcmp(what, "stream") == 0)
        return stream_bench(n, dim, k, iterations, block);
    float *x = blobs(n, dim, 50);
    printf("| N x D, k | backend | Lloyd (s) for %d iterations | init (s) | inertia |\n|---|---|---|---|---|\n",
           iterations);
    pc_result *r = run(x, n, dim, k, iterations, PC_BACKEND_OPENMP, PC_KMEANS_CUDA_FAST);
    printf("| %zu x %zu, k = %zu | openmp, %d threads | %.3f | %.3f | %.6g |\n", n, dim, k, pc_openmp_max_threads(),
           stage(r, "lloyd"), stage(r, "init"), pc_result_inertia(r));
    pc_result_free(r);
    free(x);
    return 0;
}
