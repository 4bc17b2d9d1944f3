/* The CUDA backend of k-means against the sequential one from the same initial centres: every variant
 * (the default, the seed's kernels, the GEMM kernel, the direct kernel, the tensor screen), several
 * dimensions and k, both sides of the default's size thresholds, the GEMM kernel's tile edges, an empty
 * cluster; the tensor screen (both formats) against the direct kernel bit for bit on data full of
 * near-ties. Exits 77 (skipped) where there is no CUDA device. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "check.h"
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A converged run ends with every point at its nearest centre (up to near-ties). (Its centres are the
 * means of the labels before the last assignment, as in scikit-learn, so they need not be the means
 * of the final labels when the run stopped on tol.) */
static void check_fixed_point(const float *x, size_t n, size_t dim, size_t k, const pc_result *r)
{
    const float *c = pc_result_centers(r);
    const int32_t *l = pc_result_labels(r);
    double *mean = calloc(k * dim, sizeof *mean);
    int64_t *count = calloc(k, sizeof *count);
    size_t far = 0;
    for (size_t i = 0; i < n; i++) {
        double own = 0, best = INFINITY;
        for (size_t q = 0; q < k; q++) {
            double d = 0;
            for (size_t j = 0; j < dim; j++)
                d += ((double)x[i * dim + j] - c[q * dim + j]) * ((double)x[i * dim + j] - c[q * dim + j]);
            best = d < best ? d : best;
            if (q == (size_t)l[i])
                own = d;
        }
        far += own > best * (1 + 1e-4) + 1e-5;
        count[l[i]]++;
        for (size_t j = 0; j < dim; j++)
            mean[l[i] * dim + j] += x[i * dim + j];
    }
    double worst = 0;
    for (size_t q = 0; q < k; q++)
        for (size_t j = 0; j < dim && count[q]; j++)
            worst = fmax(worst, fabs(mean[q * dim + j] / (double)count[q] - c[q * dim + j]));
    CHECK_MSG(far == 0, "%zu points not at their nearest centre (centres %g from their points' means)", far, worst);
    free(mean);
    free(count);
}

static void compare(size_t n, size_t dim, size_t k, int max_iter, double tol, pc_kmeans_cuda_variant variant,
                    uint64_t seed, int far_centre)
{
    float *x = test_blobs(n, dim, k / 2 + 1 < 200 ? k / 2 + 1 : 200, 2.0, 10, seed, NULL);
    float *init = malloc(k * dim * sizeof *init);
    for (size_t c = 0; c < k; c++)
        memcpy(init + c * dim, x + (c * 7919 % n) * dim, dim * sizeof *init);
    if (far_centre)
        for (size_t j = 0; j < dim; j++)
            init[j] = 1e4f; /* centre 0 gets no point: relocated to the farthest one */
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    p.algorithm = PC_KMEANS_LLOYD; /* Lloyd's kernels: Hamerly's are test_kmeans_hamerly's */
    p.k = k;
    p.init = PC_INIT_GIVEN;
    p.initial_centers = init;
    p.max_iter = max_iter;
    p.tol = tol;
    pc_points v = pc_points_f32(x, n, dim);
    pc_result *a = NULL, *b = NULL;
    p.backend = PC_BACKEND_SEQUENTIAL;
    CHECK_STATUS(pc_kmeans(&v, &p, &a), PC_OK);
    p.backend = PC_BACKEND_CUDA;
    p.cuda_variant = variant;
    CHECK_STATUS(pc_kmeans(&v, &p, &b), PC_OK);
    if (a && b && tol > 0) {
        /* Hundreds of steps: one near-tie flip can lead the runs to different local optima, so the
         * GPU's run is checked for what it must be, a fixed point of Lloyd's step. */
        CHECK(pc_result_backend(b) == PC_BACKEND_CUDA);
        if (pc_result_iterations(b) < max_iter)
            check_fixed_point(x, n, dim, k, b);
        CHECK_MSG(pc_result_inertia(b) <= 1.05 * pc_result_inertia(a), "inertia %.9g vs %.9g", pc_result_inertia(b),
                  pc_result_inertia(a));
    } else if (a && b) {
        CHECK(pc_result_backend(b) == PC_BACKEND_CUDA);
        /* After one step from the same centres, labels may differ only at near-ties of |c|^2 - 2 x.c
         * (summed in another order). But the final labels are those against the updated centres: a
         * near-tie flipped in the first assignment moves the two centres it touched, and then labels
         * near those may differ by more than a near-tie of the sequential run's centres (seed 5:
         * n 40001, dim 17, k 300, one label). So a difference counts as real only when no centre
         * moved; and over many steps, where such a flip can lead the runs apart (seed 2: n 50051,
         * dim 4, k 100, 10 steps, 0.29% of the labels, every variant alike), up to 1% may differ, at
         * the same inertia to 0.1%. */
        size_t differ = 0, real = 0, moved_centres = 0;
        for (size_t c = 0; c < k; c++) {
            double d = 0;
            for (size_t j = 0; j < dim; j++)
                d = fmax(d, fabs(pc_result_centers(a)[c * dim + j] - pc_result_centers(b)[c * dim + j]));
            moved_centres += d > 1e-4;
        }
        for (size_t i = 0; i < n; i++) {
            int32_t la = pc_result_labels(a)[i], lb = pc_result_labels(b)[i];
            if (la == lb)
                continue;
            differ++;
            double da = 0, db = 0;
            for (size_t j = 0; j < dim; j++) {
                double ta = (double)x[i * dim + j] - pc_result_centers(a)[la * dim + j];
                double tb = (double)x[i * dim + j] - pc_result_centers(a)[lb * dim + j];
                da += ta * ta;
                db += tb * tb;
            }
            real += fabs(da - db) > 1e-4 * (da + db) + 1e-5;
        }
        CHECK_MSG((max_iter == 1 && moved_centres == 0 ? real == 0 : 1) &&
                      differ <= (max_iter == 1 ? n / 1000 + 1 : n / 100 + 1),
                  "n %zu dim %zu k %zu variant %d, %d iterations: %zu labels differ, %zu of them not near-ties "
                  "(%zu centres moved)",
                  n, dim, k, (int)variant, max_iter, differ, real, moved_centres);
        /* Same labels at the same centres: the same inertia to rounding. A few flipped labels, or a
         * near-tie flipped in an earlier step (the same final labels, but centres that moved: seed
         * 1795487387 on an H100, inertia 1.4e-4 apart with no label different), move it a little. */
        double rel = differ == 0 && moved_centres == 0 ? 1e-5 : 1e-3;
        CHECK_MSG(fabs(pc_result_inertia(a) - pc_result_inertia(b)) <= rel * pc_result_inertia(a),
                  "inertia %.9g vs %.9g (%zu labels differ, %zu centres moved)", pc_result_inertia(a),
                  pc_result_inertia(b), differ, moved_centres);
        if (differ == 0) {
            CHECK(pc_result_iterations(a) == pc_result_iterations(b));
            /* The centres are the means of each step's labels, the final labels those against the
             * final centres, so equal final labels do not make the centres equal: a near-tie flipped
             * in any step, the first included, moves the two clusters it touched (seen with seeds
             * 1795257545 and 7, both at one step: n 40001, dim 8, k 128). At most two per step. */
            size_t moved = 0;
            double worst = 0;
            for (size_t c = 0; c < k; c++) {
                double d = 0;
                for (size_t j = 0; j < dim; j++)
                    d = fmax(d, fabs(pc_result_centers(a)[c * dim + j] - pc_result_centers(b)[c * dim + j]));
                moved += d > 1e-4;
                worst = fmax(worst, d);
            }
            CHECK_MSG(moved <= 2 * (size_t)pc_result_iterations(a),
                      "n %zu dim %zu k %zu variant %d, %d iterations: %zu centres differ (by up to %g)", n, dim, k,
                      (int)variant, max_iter, moved, worst);
        }
    }
    pc_result_free(a);
    pc_result_free(b);
    free(init);
    free(x);
}

/* Data where the nearest centre is often a near-tie or an exact tie: k centres from blobs (the last
 * few duplicating earlier ones: exact ties, the lower index must win), then points at the midpoints of
 * pairs of centres (on their bisector up to rounding), points at centres, points a hair off midpoints,
 * and blob points; every coordinate shifted by `offset` (large offsets: |x| |c| dwarfs the distances).
 * The tensor variant must give the direct variant's labels, centres and inertia bit for bit (both
 * take fixed-point sums, so equal labels give equal centres at every step). */
static void compare_exact(size_t n, size_t dim, size_t k, int max_iter, float offset, const char *format,
                          uint64_t seed)
{
    float *x = test_blobs(n, dim, k / 3 + 1, 1.0, 10, seed, NULL);
    float *init = malloc(k * dim * sizeof *init);
    for (size_t c = 0; c < k; c++)
        memcpy(init + c * dim, x + (c * 7919 % n) * dim, dim * sizeof *init);
    for (size_t c = k - k / 8; c < k && c > 0; c++) /* duplicates of earlier centres */
        memcpy(init + c * dim, init + (c % (k - k / 8)) * dim, dim * sizeof *init);
    for (size_t i = 0; i < n; i++) {
        size_t a = (i * 31) % k, b = (i * 17 + 1) % k;
        float *p = x + i * dim;
        switch (i % 4) {
        case 0: /* a midpoint */
            for (size_t j = 0; j < dim; j++)
                p[j] = 0.5f * (init[a * dim + j] + init[b * dim + j]);
            break;
        case 1: /* a centre */
            memcpy(p, init + a * dim, dim * sizeof *p);
            break;
        case 2: /* a hair off a midpoint */
            for (size_t j = 0; j < dim; j++)
                p[j] = 0.5f * (init[a * dim + j] + init[b * dim + j]) + (float)((int)(i % 7) - 3) * 1e-6f;
            break;
        default: /* a blob point */
            break;
        }
    }
    for (size_t q = 0; q < n * dim; q++)
        x[q] += offset;
    for (size_t q = 0; q < k * dim; q++)
        init[q] += offset;
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    p.algorithm = PC_KMEANS_LLOYD; /* Lloyd's kernels: Hamerly's are test_kmeans_hamerly's */
    p.k = k;
    p.init = PC_INIT_GIVEN;
    p.initial_centers = init;
    p.max_iter = max_iter;
    p.tol = 0;
    p.backend = PC_BACKEND_CUDA;
    pc_points v = pc_points_f32(x, n, dim);
    pc_result *a = NULL, *b = NULL;
    p.cuda_variant = PC_KMEANS_CUDA_DIRECT;
    CHECK_STATUS(pc_kmeans(&v, &p, &a), PC_OK);
    setenv("PC_KMEANS_TENSOR_FORMAT", format, 1);
    p.cuda_variant = PC_KMEANS_CUDA_TENSOR;
    CHECK_STATUS(pc_kmeans(&v, &p, &b), PC_OK);
    unsetenv("PC_KMEANS_TENSOR_FORMAT");
    if (a && b) {
        size_t differ = 0, first = n;
        for (size_t i = 0; i < n; i++)
            if (pc_result_labels(a)[i] != pc_result_labels(b)[i]) {
                differ++;
                first = first < n ? first : i;
            }
        CHECK_MSG(differ == 0, "tensor (%s) n %zu dim %zu k %zu offset %g: %zu labels differ from the direct kernel's "
                  "(first: point %zu, %d against %d)", format, n, dim, k, offset, differ, first,
                  first < n ? pc_result_labels(b)[first] : -1, first < n ? pc_result_labels(a)[first] : -1);
        CHECK_MSG(memcmp(pc_result_centers(a), pc_result_centers(b), k * dim * sizeof(float)) == 0 &&
                      pc_result_inertia(a) == pc_result_inertia(b) &&
                      pc_result_iterations(a) == pc_result_iterations(b),
                  "tensor (%s) n %zu dim %zu k %zu: centres or inertia differ (%.17g vs %.17g)", format, n, dim, k,
                  pc_result_inertia(b), pc_result_inertia(a));
    }
    pc_result_free(a);
    pc_result_free(b);
    free(init);
    free(x);
}

int main(void)
{
    if (pc_cuda_device_count() <= 0) {
        printf("kmeans_cuda: no CUDA device, skipped\n");
        return 77;
    }
    uint64_t seed = test_seed("kmeans_cuda");
    int quick = getenv("PC_CUDA_TEST_QUICK") != NULL;
    const size_t dims[] = {1, 2, 3, 4, 5, 8, 16, 17};
    const pc_kmeans_cuda_variant variants[] = {PC_KMEANS_CUDA_FAST, PC_KMEANS_CUDA_SEED, PC_KMEANS_CUDA_GEMM,
                                               PC_KMEANS_CUDA_DIRECT, PC_KMEANS_CUDA_TENSOR};
    for (int v = 0; v < 5; v++)
        for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++) {
            size_t k = d % 2 ? 100 : 13;
            compare(quick ? 3000 : 50000 + 17 * d, dims[d], k, 1, 0, variants[v], seed + d, 0);
            compare(quick ? 3000 : 50000 + 17 * d, dims[d], k, 10, 0, variants[v], seed + 50 + d, 0);
            if (!quick || v == 0) /* (hundreds of launches: too slow under the race checker) */
                compare(quick ? 2000 : 20000, dims[d], k, 300, 1e-4, variants[v], seed + 100 + d, 0);
        }
    for (int v = 0; v < 5; v++)
        compare(5000, 3, 20, 5, 0, variants[v], seed + 7, 1);
    /* FAST's choice on both sides: sums fused up to 4096 entries (3 x 1000: 4000, 8 x 127: 1143),
     * else two passes (4 x 1000: 5000) with the seed's assignment below dim 8 (7 x 600) and above 64
     * (65 x 100), the tensor screen from 8 to 64 (8 x 600, 16 x 300, 17 x 300, 64 x 100). */
    const size_t fast_cases[][2] = {{8, 127}, {8, 128}, {5, 128}, {4, 127}, {3, 1000}, {4, 1000},
                                    {7, 600}, {8, 600}, {16, 300}, {17, 300}, {64, 100}, {65, 100}};
    for (size_t c = 0; c < sizeof fast_cases / sizeof fast_cases[0]; c++)
        compare(quick ? 3001 : 40001, fast_cases[c][0], fast_cases[c][1], c % 2 ? 1 : 4, 0, PC_KMEANS_CUDA_FAST,
                seed + 200 + c, 0);
    /* The GEMM kernel at its tile edges: k just under, at and over a 128-centre tile and a 4-centre
     * thread strip, dims not a multiple of the 4-float loads, points not a multiple of the 128-point tile
     * (and fewer than one tile). */
    const size_t gemm_cases[][3] = {{300, 7, 255}, {1000, 1, 129}, {2000, 31, 256}, {3333, 33, 130}, {100, 6, 3},
                                    {257, 16, 1}};
    for (size_t c = 0; c < sizeof gemm_cases / sizeof gemm_cases[0]; c++)
        compare(gemm_cases[c][0] * (quick ? 1 : 5), gemm_cases[c][1], gemm_cases[c][2], c % 2 ? 1 : 3, 0,
                PC_KMEANS_CUDA_GEMM, seed + 300 + c, 0);
    /* The tensor screen against the direct kernel, bit for bit, both formats: k and dim off the
     * 8-centre and 16-dimension steps, n off the 64-point warp tile (and under one), offsets 0 and
     * 1000, every group count (dim up to 64). */
    const size_t exact_cases[][3] = {{3001, 16, 100}, {1000, 8, 9},  {2049, 17, 130}, {700, 31, 1},
                                     {1500, 33, 57},  {63, 16, 7},   {999, 64, 40},   {4000, 12, 1000},
                                     {3000, 1, 13},   {3000, 3, 100}, {3000, 5, 13},   {1000, 2, 100}};
    const char *formats[] = {"tf32", "bf16"};
    for (size_t c = 0; c < (quick ? 4 : sizeof exact_cases / sizeof exact_cases[0]); c++) /* (racecheck: few) */
        for (int f = 0; f < 2; f++)
            for (int off = quick; off < 2; off++)
                compare_exact(exact_cases[c][0] * (quick ? 1 : 4) + (quick ? 0 : 3), exact_cases[c][1],
                              exact_cases[c][2], off ? 2 : 3, off ? 1000.0f : 0.0f, formats[f], seed + 500 + c);
    /* Fixed-point sums: the same run twice gives the same centres, bit for bit. */
    for (int v = 0; v < 5; v++) {
        if (variants[v] == PC_KMEANS_CUDA_SEED)
            continue; /* the seed's float atomics land in any order */
        size_t rn = quick ? 20000 : 200000, rd = v == 2 || v == 4 ? 16 : 3, rk = v == 2 || v == 4 ? 300 : 100;
        float *rx = test_blobs(rn, rd, 40, 2.0, 10, seed + 400 + v, NULL);
        pc_kmeans_params rp;
        pc_kmeans_params_init(&rp);
        rp.algorithm = PC_KMEANS_LLOYD; /* Lloyd's kernels: Hamerly's are test_kmeans_hamerly's */
        rp.k = rk;
        rp.init = PC_INIT_RANDOM;
        rp.max_iter = 5;
        rp.tol = 0;
        rp.backend = PC_BACKEND_CUDA;
        rp.cuda_variant = variants[v];
        pc_points rv = pc_points_f32(rx, rn, rd);
        pc_result *r1 = NULL, *r2 = NULL;
        CHECK_STATUS(pc_kmeans(&rv, &rp, &r1), PC_OK);
        CHECK_STATUS(pc_kmeans(&rv, &rp, &r2), PC_OK);
        if (r1 && r2)
            CHECK_MSG(memcmp(pc_result_centers(r1), pc_result_centers(r2), rk * rd * sizeof(float)) == 0 &&
                          pc_result_inertia(r1) == pc_result_inertia(r2),
                      "variant %d: two runs differ (inertia %.17g vs %.17g)", v, pc_result_inertia(r1),
                      pc_result_inertia(r2));
        pc_result_free(r1);
        pc_result_free(r2);
        free(rx);
    }
    if (!quick) {
        compare(200000, 16, 1000, 3, 0, PC_KMEANS_CUDA_FAST, seed + 8, 0);
        compare(200000, 16, 1000, 3, 0, PC_KMEANS_CUDA_DIRECT, seed + 9, 0);
        compare(200000, 16, 1000, 3, 0, PC_KMEANS_CUDA_TENSOR, seed + 10, 0);
    }
    /* Centres that do not fit in shared memory: a clear status, not a crash. */
    size_t n = 20000, dim = 64, k = 2000;
    float *x = test_blobs(n, dim, 5, 1, 5, seed, NULL);
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    p.algorithm = PC_KMEANS_LLOYD; /* Lloyd's kernels: Hamerly's are test_kmeans_hamerly's */
    p.k = k;
    p.init = PC_INIT_RANDOM;
    p.max_iter = 2;
    p.backend = PC_BACKEND_CUDA;
    pc_points v = pc_points_f32(x, n, dim);
    pc_result *r = NULL;
    CHECK_STATUS(pc_kmeans(&v, &p, &r), PC_UNSUPPORTED);
    CHECK(strstr(pc_last_error(), "shared memory") != NULL);
    p.backend = PC_BACKEND_AUTO; /* AUTO runs it on the CPU instead */
    CHECK_STATUS(pc_kmeans(&v, &p, &r), PC_OK);
    CHECK(r && pc_result_backend(r) != PC_BACKEND_CUDA);
    pc_result_free(r);
    free(x);
    return check_report("kmeans_cuda");
}
