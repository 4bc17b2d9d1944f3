/* k-means against references computed another way: a brute-force nearest centre and mean for one
 * Lloyd step, the sequential backend for OpenMP, a hand-worked empty cluster, the true labels of
 * well-separated blobs for every initialisation, and its bad input. */
#include "check.h"
#include "test_util.h"

#include <math.h>
#include <string.h>

static pc_result *km(const float *x, size_t n, size_t dim, const pc_kmeans_params *p)
{
    pc_points v = pc_points_f32(x, n, dim);
    pc_result *r = NULL;
    pc_status st = pc_kmeans(&v, p, &r);
    CHECK_MSG(st == PC_OK, "pc_kmeans: %s", pc_last_error());
    return r;
}

/* One iteration from given centres: labels are the nearest centres and the new centres the means,
 * both computed here by brute force in double. */
static void test_one_step(uint64_t seed)
{
    for (size_t dim = 1; dim <= 20; dim += 6) {
        size_t n = 3000, k = 37;
        float *x = test_blobs(n, dim, 6, 3.0, 8, seed + dim, NULL);
        pc_kmeans_params p;
        pc_kmeans_params_init(&p);
        p.k = k;
        p.init = PC_INIT_GIVEN;
        p.initial_centers = x + 100 * dim; /* points 100..136 */
        p.max_iter = 1;
        p.backend = PC_BACKEND_SEQUENTIAL;
        pc_result *r = km(x, n, dim, &p);
        if (!r)
            continue;
        /* After one iteration the result's labels are those of the updated centres (final E-step):
         * check them against the result's own centres, and those centres against the means of the
         * labels of the initial centres. */
        int32_t *first = malloc(n * sizeof *first);
        double *mean = calloc(k * dim, sizeof *mean);
        int64_t *count = calloc(k, sizeof *count);
        char *tainted = calloc(k, 1);
        size_t bad_labels = 0;
        for (size_t i = 0; i < n; i++) {
            double best = INFINITY, best2 = INFINITY, second = INFINITY;
            int32_t arg = 0, arg2 = 0;
            for (size_t c = 0; c < k; c++) {
                double d = 0;
                for (size_t j = 0; j < dim; j++) {
                    double t = (double)x[i * dim + j] - p.initial_centers[c * dim + j];
                    d += t * t;
                }
                if (d < best) {
                    second = best;
                    arg2 = arg;
                    best = d;
                    arg = (int32_t)c;
                } else if (d < second) {
                    second = d;
                    arg2 = (int32_t)c;
                }
            }
            /* A near-tie may go either way in float, whose |c|^2 - 2 x.c errs by about 2^-24 times
             * |x|^2 + |c|^2 (not times the distance): the means of both clusters are not compared. */
            double xx = 0;
            for (size_t j = 0; j < dim; j++)
                xx += (double)x[i * dim + j] * x[i * dim + j];
            double slack = 1e-6 * (1 + 2 * xx); /* |c|^2 is about |x|^2 for the nearest centres */
            if (second - best <= 1e-5 * best + slack)
                tainted[arg] = tainted[arg2] = 1;
            first[i] = arg;
            count[arg]++;
            for (size_t j = 0; j < dim; j++)
                mean[arg * dim + j] += x[i * dim + j];
            best = best2 = INFINITY;
            for (size_t c = 0; c < k; c++) {
                double d = 0;
                for (size_t j = 0; j < dim; j++) {
                    double t = (double)x[i * dim + j] - pc_result_centers(r)[c * dim + j];
                    d += t * t;
                }
                if (c == (size_t)pc_result_labels(r)[i])
                    best2 = d;
                best = d < best ? d : best;
            }
            /* The label's centre is the nearest, up to float rounding of |c|^2 - 2 x.c. */
            bad_labels += best2 > best * (1 + 1e-5) + slack;
        }
        CHECK_MSG(bad_labels == 0, "dim %zu: %zu points not at their nearest centre", dim, bad_labels);
        double worst = 0;
        size_t compared = 0;
        for (size_t c = 0; c < k; c++) {
            if (!count[c] || tainted[c])
                continue;
            compared++;
            for (size_t j = 0; j < dim; j++)
                worst = fmax(worst, fabs(mean[c * dim + j] / (double)count[c] - pc_result_centers(r)[c * dim + j]));
        }
        CHECK_MSG(worst < 1e-4, "dim %zu: centres differ from the means by %g", dim, worst);
        CHECK(compared >= k / 2); /* near-ties of dense 1-D data exclude up to a third */
        free(tainted);
        free(first);
        free(mean);
        free(count);
        pc_result_free(r);
        free(x);
    }
}

/* OpenMP gives the sequential labels and (within rounding of the summation order) centres. */
static void test_openmp_matches_sequential(uint64_t seed)
{
    if (!pc_backend_available(PC_BACKEND_OPENMP))
        return;
    for (size_t dim = 2; dim <= 16; dim += 7) {
        size_t n = 20000, k = 25;
        float *x = test_blobs(n, dim, 10, 2.0, 10, seed + 50 + dim, NULL);
        pc_kmeans_params p;
        pc_kmeans_params_init(&p);
        p.k = k;
        p.seed = seed;
        p.backend = PC_BACKEND_SEQUENTIAL;
        pc_result *a = km(x, n, dim, &p);
        p.backend = PC_BACKEND_OPENMP;
        p.threads = 3;
        pc_result *b = km(x, n, dim, &p);
        if (a && b) {
            CHECK(memcmp(pc_result_labels(a), pc_result_labels(b), n * sizeof(int32_t)) == 0);
            CHECK(pc_result_iterations(a) == pc_result_iterations(b));
            CHECK_NEAR(pc_result_inertia(a), pc_result_inertia(b), 1e-9 * pc_result_inertia(a));
            double worst = 0;
            for (size_t q = 0; q < k * dim; q++)
                worst = fmax(worst, fabs(pc_result_centers(a)[q] - pc_result_centers(b)[q]));
            CHECK_MSG(worst <= 1e-5, "centres differ by %g", worst);
        }
        pc_result_free(a);
        pc_result_free(b);
        free(x);
    }
}

/* Centre 2 starts far from every point and gets none: it takes the point farthest from its own centre
 * (point 3, 10 from centre 1), which leaves cluster 1. Points: 0, 1 near 0; 2, 3 at 10 and 20. */
static void test_empty_cluster(void)
{
    float x[] = {0, 0.5f, 10, 20};
    float init[] = {0, 10, 1000};
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    p.k = 3;
    p.init = PC_INIT_GIVEN;
    p.initial_centers = init;
    p.max_iter = 1;
    p.backend = PC_BACKEND_SEQUENTIAL;
    pc_result *r = km(x, 4, 1, &p);
    if (!r)
        return;
    /* Sums after relocation: cluster 1 keeps point 2 (10), cluster 2 is point 3 (20). */
    CHECK_NEAR(pc_result_centers(r)[0], 0.25, 1e-6);
    CHECK_NEAR(pc_result_centers(r)[1], 10, 1e-6);
    CHECK_NEAR(pc_result_centers(r)[2], 20, 1e-6);
    const int32_t expect[4] = {0, 0, 1, 2};
    CHECK(memcmp(pc_result_labels(r), expect, sizeof expect) == 0);
    CHECK_NEAR(pc_result_inertia(r), 0.125, 1e-9);
    pc_result_free(r);
}

/* Every initialisation finds 9 well-separated blobs (with restarts); the same seed gives the
 * same result twice. */
static void test_inits_find_blobs(uint64_t seed)
{
    size_t n = 9000, dim = 2, k = 9;
    int32_t *truth;
    float *x = test_lattice(n, dim, k, 0.5, 10, seed + 9, &truth);
    const pc_kmeans_init inits[] = {PC_INIT_KMEANSPP, PC_INIT_KMEANS_PARALLEL, PC_INIT_RANDOM};
    for (int i = 0; i < 3; i++) {
        pc_kmeans_params p;
        pc_kmeans_params_init(&p);
        p.k = k;
        p.init = inits[i];
        p.n_init = inits[i] == PC_INIT_RANDOM ? 150 : 3; /* random init often needs many restarts (50 failed 1 seed in 40) */
        p.seed = seed;
        pc_result *a = km(x, n, dim, &p), *b = km(x, n, dim, &p);
        double ari = 0;
        CHECK(a && pc_adjusted_rand_index(truth, pc_result_labels(a), n, &ari) == PC_OK);
        CHECK_MSG(ari >= 0.99, "init %s: ARI %.4f", pc_kmeans_init_name(inits[i]), ari);
        CHECK(a && b && memcmp(pc_result_centers(a), pc_result_centers(b), k * dim * sizeof(float)) == 0);
        pc_result_free(a);
        pc_result_free(b);
    }
    free(x);
    free(truth);
}

static void test_bad_input(void)
{
    float x[6] = {0, 1, 2, 3, 4, 5};
    pc_points v = pc_points_f32(x, 3, 2);
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    pc_result *r = NULL;
    CHECK_STATUS(pc_kmeans(&v, &p, &r), PC_INVALID_ARGUMENT); /* k = 0 */
    CHECK(strstr(pc_last_error(), "k must be") != NULL);
    p.k = 4;
    CHECK_STATUS(pc_kmeans(&v, &p, &r), PC_INVALID_ARGUMENT);
    CHECK(strstr(pc_last_error(), "exceed") != NULL);
    p.k = 2;
    p.init = PC_INIT_GIVEN;
    CHECK_STATUS(pc_kmeans(&v, &p, &r), PC_INVALID_ARGUMENT);
    p.init = PC_INIT_KMEANSPP;
    p.tol = -1;
    CHECK_STATUS(pc_kmeans(&v, &p, &r), PC_INVALID_ARGUMENT);
    p.tol = 1e-4;
    p.max_iter = 0;
    CHECK_STATUS(pc_kmeans(&v, &p, &r), PC_INVALID_ARGUMENT);
    p.max_iter = 10;
    x[2] = NAN;
    CHECK_STATUS(pc_kmeans(&v, &p, &r), PC_INVALID_ARGUMENT);
    x[2] = 2;
    pc_points empty = pc_points_f32(x, 0, 2);
    CHECK_STATUS(pc_kmeans(&empty, &p, &r), PC_INVALID_ARGUMENT);
    p.backend = PC_BACKEND_CUDA;
    pc_status st = pc_kmeans(&v, &p, &r);
    if (pc_cuda_device_count() == 0) { /* CUDA asked where there is none: a clear error */
        CHECK(st == PC_UNSUPPORTED || st == PC_NO_DEVICE);
        CHECK(r == NULL);
    } else {
        CHECK(st == PC_OK && r && pc_result_backend(r) == PC_BACKEND_CUDA);
        pc_result_free(r);
        r = NULL;
    }
    /* Values whose distance from the mean overflows float32 (6e38): clustered in scaled units. */
    float huge[4] = {-3e38f, 3e38f, 3e38f, 3e38f};
    pc_points hv = pc_points_f32(huge, 4, 1);
    p.backend = PC_BACKEND_AUTO;
    p.k = 2;
    CHECK_STATUS(pc_kmeans(&hv, &p, &r), PC_OK);
    if (r) {
        const int32_t *l = pc_result_labels(r);
        CHECK(l[0] != l[1] && l[1] == l[2] && l[2] == l[3]);
        CHECK(fabs(pc_result_centers(r)[l[0]] / -3e38 - 1) < 1e-6 && fabs(pc_result_centers(r)[l[1]] / 3e38 - 1) < 1e-6);
    }
    pc_result_free(r);
    r = NULL;
    /* Given centres 1e12 spreads away from the points: refused, not mis-assigned. */
    float far[4] = {0, 0, 1e30f, 1e30f};
    p.init = PC_INIT_GIVEN;
    p.initial_centers = far;
    CHECK_STATUS(pc_kmeans(&v, &p, &r), PC_INVALID_ARGUMENT);
    CHECK(r == NULL);
    p.init = PC_INIT_KMEANSPP;
    p.initial_centers = NULL;
    /* k = n: every point its own cluster, inertia 0. */
    p.backend = PC_BACKEND_AUTO;
    p.k = 3;
    CHECK_STATUS(pc_kmeans(&v, &p, &r), PC_OK);
    CHECK(r && pc_result_inertia(r) == 0);
    pc_result_free(r);
}

int main(void)
{
    uint64_t seed = test_seed("kmeans");
    test_one_step(seed);
    test_openmp_matches_sequential(seed);
    test_empty_cluster();
    test_inits_find_blobs(seed);
    test_bad_input();
    return check_report("kmeans");
}
