/* Mean shift against references computed another way: double-precision direct sums for one shift,
 * the sequential backend for OpenMP, all pairs for the neighbour grid, a brute-force component search
 * for merging, and the true labels of well-separated blobs. */
#include "check.h"
#include "test_util.h"

#include "../src/core/internal.h"
#include "../src/meanshift/internal_ms.h"

#include <math.h>
#include <string.h>

/* The kernel's weight at squared distance d2, by its definition (ALGORITHMS.md §1), in double. */
static double kernel_weight(pc_kernel kern, double d2, double h)
{
    return kern == PC_KERNEL_GAUSSIAN ? exp(-d2 / (2 * h * h))
         : d2 > h * h               ? 0
         : kern == PC_KERNEL_FLAT   ? 1
                                    : 1 - d2 / (h * h);
}

static pc_result *run(const float *pts, size_t n, size_t dim, const pc_meanshift_params *p)
{
    pc_points v = pc_points_f32(pts, n, dim);
    pc_result *r = NULL;
    pc_status st = pc_meanshift(&v, p, &r);
    CHECK_MSG(st == PC_OK, "pc_meanshift: %s", pc_last_error());
    return r;
}

/* One shift (max_iter 1, eps 0) equals the kernel-weighted mean summed in double. */
static void test_one_shift_against_double(uint64_t seed)
{
    const size_t n = 700;
    for (size_t dim = 1; dim <= 12; dim += (dim < 5 ? 1 : 7)) {
        float *pts = test_blobs(n, dim, 4, 1.5, 6, seed + dim, NULL);
        for (int kern = PC_KERNEL_GAUSSIAN; kern <= PC_KERNEL_EPANECHNIKOV; kern++) {
            pc_meanshift_params p;
            pc_meanshift_params_init(&p);
            p.kernel = (pc_kernel)kern;
            p.bandwidth = 1.7;
            p.max_iter = 1;
            p.eps = 0;
            p.backend = PC_BACKEND_SEQUENTIAL;
            pc_result *r = run(pts, n, dim, &p);
            if (!r)
                continue;
            const float *modes = pc_result_modes(r);
            double h = p.bandwidth, worst = 0;
            size_t compared = 0;
            for (size_t i = 0; i < n; i++) {
                double num[16] = {0}, den = 0;
                int ambiguous = 0;
                for (size_t j = 0; j < n; j++) {
                    double d2 = 0;
                    for (size_t k = 0; k < dim; k++) {
                        double d = (double)pts[i * dim + k] - pts[j * dim + k];
                        d2 += d * d;
                    }
                    /* The flat kernel jumps at h: a reference that close to the edge may fall on
                     * either side in float, so such queries are left out. */
                    if (kern == PC_KERNEL_FLAT && fabs(d2 - h * h) < 1e-4 * h * h)
                        ambiguous = 1;
                    double w = kernel_weight((pc_kernel)kern, d2, h);
                    den += w;
                    for (size_t k = 0; k < dim; k++)
                        num[k] += w * pts[j * dim + k];
                }
                if (ambiguous)
                    continue;
                compared++;
                for (size_t k = 0; k < dim; k++) {
                    double err = fabs(num[k] / den - modes[i * dim + k]) / h;
                    if (err > worst)
                        worst = err;
                }
            }
            CHECK(compared > n * 9 / 10);
            double tol = 2e-5;
            CHECK_MSG(worst <= tol, "dim %zu kernel %s: worst error %.3g h", dim, pc_kernel_name((pc_kernel)kern), worst);
            pc_result_free(r);
        }
        free(pts);
    }
}

/* Non-blurring mean shift straight from its definition, in double: every point moved `iterations` times
 * by the kernel-weighted mean of the original points. *ambiguous[i] is set where a flat kernel's edge
 * passes within 1e-4 h^2 of a reference (float may then fall on either side). */
static void reference_modes(const float *pts, size_t n, size_t dim, pc_kernel kern, double h, int iterations,
                            double *y, unsigned char *ambiguous)
{
    double *num = malloc(dim * sizeof *num);
    for (size_t i = 0; i < n * dim; i++)
        y[i] = pts[i];
    memset(ambiguous, 0, n);
    for (int it = 0; it < iterations; it++) {
        for (size_t i = 0; i < n; i++) {
            double den = 0;
            memset(num, 0, dim * sizeof *num);
            for (size_t j = 0; j < n; j++) {
                double d2 = 0;
                for (size_t k = 0; k < dim; k++) {
                    double d = y[i * dim + k] - pts[j * dim + k];
                    d2 += d * d;
                }
                if (kern == PC_KERNEL_FLAT && fabs(d2 - h * h) < 1e-4 * h * h)
                    ambiguous[i] = 1;
                double w = kernel_weight(kern, d2, h);
                den += w;
                for (size_t k = 0; k < dim; k++)
                    num[k] += w * pts[j * dim + k];
            }
            if (den > 0)
                for (size_t k = 0; k < dim; k++)
                    y[i * dim + k] = num[k] / den;
        }
    }
    free(num);
}

/* Above 8 dimensions the references are rows, weighed once each and shifted in blocks of queries
 * (shift.c): modes against the double definition at 9 (the first such dimension), 37 (tails of every
 * slice width) and 256 dimensions, for every kernel (the flat one's early exit from the distance
 * included); OpenMP gives the same bits at 2 and 3 threads (blocks split differently). h = sqrt(2 dim):
 * a blob's points (spread 1) lie about that far apart at every dimension. */
static void test_high_dim_against_double(uint64_t seed)
{
    const size_t n = 300, dims[] = {9, 37, 256};
    for (size_t c = 0; c < sizeof dims / sizeof dims[0]; c++) {
        size_t dim = dims[c];
        float *pts = test_blobs(n, dim, 3, 1.0, 10, seed + 31 * dim, NULL);
        double *ref = malloc(n * dim * sizeof *ref);
        unsigned char *ambiguous = malloc(n);
        for (int kern = PC_KERNEL_GAUSSIAN; kern <= PC_KERNEL_EPANECHNIKOV; kern++) {
            pc_meanshift_params p;
            pc_meanshift_params_init(&p);
            p.kernel = (pc_kernel)kern;
            p.bandwidth = sqrt(2.0 * (double)dim);
            p.max_iter = kern == PC_KERNEL_GAUSSIAN ? 5 : 1;
            p.eps = 0;
            p.backend = PC_BACKEND_SEQUENTIAL;
            pc_result *r = run(pts, n, dim, &p);
            if (!r)
                continue;
            reference_modes(pts, n, dim, p.kernel, p.bandwidth, p.max_iter, ref, ambiguous);
            const float *modes = pc_result_modes(r);
            double worst = 0;
            size_t compared = 0, moved = 0;
            for (size_t i = 0; i < n; i++) {
                if (ambiguous[i])
                    continue;
                compared++;
                double step = 0;
                for (size_t k = 0; k < dim; k++) {
                    double err = fabs(ref[i * dim + k] - modes[i * dim + k]) / p.bandwidth;
                    worst = err > worst ? err : worst;
                    step += fabs(ref[i * dim + k] - pts[i * dim + k]);
                }
                moved += step > 1e-3 * p.bandwidth;
            }
            CHECK_MSG(compared > n * 3 / 4 && moved > n / 2, "dim %zu kernel %s: %zu compared, %zu moved", dim,
                      pc_kernel_name(p.kernel), compared, moved);
            CHECK_MSG(worst <= 2e-5, "dim %zu kernel %s: worst error %.3g h", dim, pc_kernel_name(p.kernel), worst);
            for (int threads = 2; threads <= 3 && pc_backend_available(PC_BACKEND_OPENMP); threads++) {
                p.backend = PC_BACKEND_OPENMP;
                p.threads = threads;
                pc_result *o = run(pts, n, dim, &p);
                CHECK_MSG(o && memcmp(pc_result_modes(o), modes, n * dim * sizeof *modes) == 0,
                          "dim %zu kernel %s: OpenMP (%d threads) modes differ from sequential", dim,
                          pc_kernel_name(p.kernel), threads);
                pc_result_free(o);
            }
            pc_result_free(r);
        }
        /* Five points on two threads: blocks of 3 and 2 instead of one of 5, the same bits. */
        if (pc_backend_available(PC_BACKEND_OPENMP)) {
            pc_meanshift_params p;
            pc_meanshift_params_init(&p);
            p.bandwidth = sqrt(2.0 * (double)dim);
            p.max_iter = 3;
            p.eps = 0;
            p.backend = PC_BACKEND_SEQUENTIAL;
            pc_result *a = run(pts, 5, dim, &p);
            p.backend = PC_BACKEND_OPENMP;
            p.threads = 2;
            pc_result *b = run(pts, 5, dim, &p);
            CHECK_MSG(a && b && memcmp(pc_result_modes(a), pc_result_modes(b), 5 * dim * sizeof(float)) == 0,
                      "dim %zu: five points on two threads differ from sequential", dim);
            pc_result_free(a);
            pc_result_free(b);
        }
        free(ref);
        free(ambiguous);
        free(pts);
    }
}

/* One point of 10^5 values: it is its own mode, bit for bit, after one step that costs O(dim). */
static void test_one_point_many_dims(void)
{
    const size_t dim = 100000;
    float *x = malloc(dim * sizeof *x);
    uint64_t s = 12345;
    for (size_t k = 0; k < dim; k++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        x[k] = (float)((double)(s >> 11) * 0x1p-53 * 2000.0 - 1000.0);
    }
    for (int b = 0; b < 2; b++) {
        pc_meanshift_params p;
        pc_meanshift_params_init(&p);
        p.backend = b ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
        if (!pc_backend_available(p.backend))
            continue;
        pc_result *r = run(x, 1, dim, &p);
        if (!r)
            continue;
        CHECK(pc_result_cluster_count(r) == 1 && pc_result_labels(r)[0] == 0);
        CHECK(pc_result_iterations(r) == 1);
        CHECK_MSG(memcmp(pc_result_modes(r), x, dim * sizeof *x) == 0, "the mode of a single point is not the point");
        CHECK(memcmp(pc_result_centers(r), x, dim * sizeof *x) == 0);
        pc_result_free(r);
    }
    free(x);
}

/* OpenMP computes the same function as the sequential reference, at any thread count and schedule. */
static void test_openmp_matches_sequential(uint64_t seed)
{
    if (!pc_backend_available(PC_BACKEND_OPENMP)) {
        printf("OpenMP not built: skipping the OpenMP comparison\n");
        return;
    }
    struct {
        size_t n, dim;
        pc_kernel kernel;
        double radius;
        int blurring;
        pc_schedule schedule;
        int threads;
    } cases[] = {
        {1500, 2, PC_KERNEL_GAUSSIAN, 0, 0, PC_SCHEDULE_DYNAMIC, 0},
        {1200, 3, PC_KERNEL_FLAT, 0, 0, PC_SCHEDULE_STATIC, 2},
        {900, 5, PC_KERNEL_EPANECHNIKOV, 0, 0, PC_SCHEDULE_GUIDED, 3},
        {2000, 2, PC_KERNEL_GAUSSIAN, 3.0, 0, PC_SCHEDULE_DYNAMIC, 4},
        {800, 3, PC_KERNEL_GAUSSIAN, 0, 1, PC_SCHEDULE_DYNAMIC, 2},
        {400, 11, PC_KERNEL_GAUSSIAN, 0, 0, PC_SCHEDULE_STATIC, 2},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        float *pts = test_blobs(cases[c].n, cases[c].dim, 5, 1.0, 8, seed + 100 + c, NULL);
        pc_meanshift_params p;
        pc_meanshift_params_init(&p);
        p.bandwidth = 1.2;
        p.kernel = cases[c].kernel;
        p.radius = cases[c].radius;
        p.blurring = cases[c].blurring;
        p.max_iter = 60;
        p.backend = PC_BACKEND_SEQUENTIAL;
        pc_result *a = run(pts, cases[c].n, cases[c].dim, &p);
        p.backend = PC_BACKEND_OPENMP;
        p.schedule = cases[c].schedule;
        p.threads = cases[c].threads;
        pc_result *b = run(pts, cases[c].n, cases[c].dim, &p);
        if (a && b) {
            size_t n = cases[c].n, dim = cases[c].dim;
            CHECK(pc_result_backend(b) == PC_BACKEND_OPENMP);
            CHECK_MSG(memcmp(pc_result_modes(a), pc_result_modes(b), n * dim * sizeof(float)) == 0,
                      "case %zu: modes differ", c);
            CHECK_MSG(memcmp(pc_result_labels(a), pc_result_labels(b), n * sizeof(int32_t)) == 0,
                      "case %zu: labels differ", c);
            CHECK(pc_result_cluster_count(a) == pc_result_cluster_count(b));
            CHECK(pc_result_iterations(a) == pc_result_iterations(b));
        }
        pc_result_free(a);
        pc_result_free(b);
        free(pts);
    }
}

/* With a finite radius the neighbour grid visits only nearby cells; it must find what all pairs find. */
static void test_grid_matches_all_pairs(uint64_t seed)
{
    const size_t n = 6000;
    for (size_t dim = 2; dim <= 3; dim++) {
        float *pts = test_lattice(n, dim, 100, 0.08, 1.0, seed + dim, NULL);
        for (int kern = PC_KERNEL_GAUSSIAN; kern <= PC_KERNEL_EPANECHNIKOV; kern++) {
            pc_meanshift_params p;
            pc_meanshift_params_init(&p);
            p.kernel = (pc_kernel)kern;
            p.bandwidth = 0.25;
            p.radius = 0.4;
            p.backend = PC_BACKEND_OPENMP;
            p.use_grid = 1;
            pc_result *a = run(pts, n, dim, &p);
            p.use_grid = 0;
            pc_result *b = run(pts, n, dim, &p);
            if (a && b) {
                CHECK(pc_result_cluster_count(a) == pc_result_cluster_count(b));
                CHECK_MSG(memcmp(pc_result_labels(a), pc_result_labels(b), n * sizeof(int32_t)) == 0,
                          "dim %zu kernel %d: grid and all-pairs labels differ", dim, kern);
                double worst = 0;
                for (size_t i = 0; i < n * dim; i++)
                    worst = fmax(worst, fabs(pc_result_modes(a)[i] - pc_result_modes(b)[i]));
                /* Summed in another order, a point may cross the stop threshold one iteration
                 * earlier or later, so the modes agree to within eps (1e-3 h), not to the last bit. */
                CHECK_MSG(worst <= 1e-3 * p.bandwidth, "dim %zu: modes differ by %g", dim, worst);
                /* The lattice's 100 sites are the clusters; a far outlier of a compact kernel may
                 * stay alone, so only clusters of 5 or more points count. */
                size_t big = 0;
                for (size_t c = 0; c < pc_result_cluster_count(a); c++)
                    big += pc_result_sizes(a)[c] >= 5;
                CHECK_MSG(big == 100, "kernel %d: %zu clusters of 5 or more points", kern, big);
            }
            pc_result_free(a);
            pc_result_free(b);
        }
        free(pts);
    }
}

/* Components of "within r" by breadth-first search over all pairs: the merge's reference. */
static void components_by_search(const float *m, size_t n, size_t dim, double r, int32_t *comp)
{
    size_t *queue = malloc(n * sizeof *queue);
    for (size_t i = 0; i < n; i++)
        comp[i] = -1;
    int32_t next = 0;
    for (size_t s = 0; s < n; s++) {
        if (comp[s] >= 0)
            continue;
        size_t head = 0, tail = 0;
        queue[tail++] = s;
        comp[s] = next;
        while (head < tail) {
            size_t i = queue[head++];
            for (size_t j = 0; j < n; j++) {
                if (comp[j] >= 0)
                    continue;
                double d2 = 0;
                for (size_t k = 0; k < dim; k++) {
                    double d = (double)m[i * dim + k] - m[j * dim + k];
                    d2 += d * d;
                }
                if (d2 <= r * r) {
                    comp[j] = next;
                    queue[tail++] = j;
                }
            }
        }
        next++;
    }
    free(queue);
}

/* merge_radius 0: exactly the identical modes form a cluster. */
static void test_merge_identical(void)
{
    float m[] = {1, 2, 3, 4, 1, 2, 5, 5, 3, 4, 1, 2, -0.0f, 0, 0, 0};
    pc_result *r = pc__result_new(8, 2);
    CHECK(pc__merge_modes(m, 8, 2, 0.0, 0, r) == PC_OK);
    /* Rows: (1,2) x3, (3,4) x2, (5,5), (0,0) x2 (-0 equals 0). */
    CHECK(r->k == 4);
    CHECK(r->labels[0] == r->labels[2] && r->labels[2] == r->labels[5]);
    CHECK(r->labels[1] == r->labels[4] && r->labels[1] != r->labels[0]);
    CHECK(r->labels[6] == r->labels[7]);
    CHECK(r->sizes[0] == 3);
    pc_result_free(r);
}

static void test_merge_against_search(uint64_t seed)
{
    /* 40 dimensions: every cell within reach of every other, pairs decided by the distance alone. */
    const size_t dims[] = {1, 2, 3, 4, 5, 6, 40};
    for (size_t t = 0; t < sizeof dims / sizeof dims[0]; t++) {
        size_t dim = dims[t], n = 900;
        /* Scattered points with chains and near-misses at the merge radius. */
        float *m = test_blobs(n, dim, 30, 0.6, 10, seed + 7 * dim, NULL);
        double radius = 0.35 + 0.1 * (double)dim;
        pc_result *r = pc__result_new(n, dim);
        CHECK(pc__merge_modes(m, n, dim, radius, 0, r) == PC_OK);
        int32_t *ref = malloc(n * sizeof *ref);
        components_by_search(m, n, dim, radius, ref);
        /* Same partition: a one-to-one map between the two numberings. */
        int32_t *map = malloc(n * sizeof *map), *back = malloc(n * sizeof *back);
        for (size_t i = 0; i < n; i++)
            map[i] = back[i] = -1;
        int same = 1;
        for (size_t i = 0; i < n; i++) {
            int32_t a = r->labels[i], b = ref[i];
            if (map[a] < 0 && back[b] < 0) {
                map[a] = b;
                back[b] = a;
            } else if (map[a] != b || back[b] != a)
                same = 0;
        }
        CHECK_MSG(same, "dim %zu: merged clusters differ from the components found by search", dim);
        /* Sizes descending; centres are the means of their members. */
        for (size_t c = 1; c < r->k; c++)
            CHECK(r->sizes[c - 1] >= r->sizes[c]);
        for (size_t c = 0; c < r->k && c < 5; c++) {
            double s = 0;
            for (size_t i = 0; i < n; i++)
                if (r->labels[i] == (int32_t)c)
                    s += m[i * dim];
            CHECK_NEAR(r->centers[c * dim], s / (double)r->sizes[c], 1e-5);
        }
        free(map);
        free(back);
        free(ref);
        pc_result_free(r);
        free(m);
    }
}

/* Converged modes crowd into a few cells: three crowds of 20000 modes far apart, and two of them with
 * a fourth crowd 1.3 radii away, in cells within reach of each other. The clusters are the crowds,
 * found with distances in proportion to the modes (the grid rules out cells and points farther than
 * the radius), not to their pairs (2 x 10^9 here). */
static void test_merge_crowds(uint64_t seed)
{
    const size_t per = 20000, groups = 4, dim = 3, n = per * groups;
    const double radius = 1.0, centre[4][3] = {{0, 0, 0}, {10, 0, 0}, {0, 10, 0}, {1.3, 0, 0}};
    float *m = malloc(n * dim * sizeof *m);
    uint64_t s = seed * 2654435761u + 5;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < dim; k++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            /* within 0.005 of the crowd's centre, crowds dealt out in turn */
            m[i * dim + k] = (float)(centre[i % groups][k] + ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 0.01);
        }
    pc_result *r = pc__result_new(n, dim);
    CHECK(pc__merge_modes(m, n, dim, radius, 0, r) == PC_OK);
    CHECK_MSG(r->k == groups, "%zu clusters, not %zu", r->k, groups);
    for (size_t i = groups; i < n; i++)
        CHECK_MSG(r->labels[i] == r->labels[i % groups], "mode %zu not with its crowd", i);
    CHECK_MSG(pc__merge_distances <= 4 * n, "%zu distances for %zu modes", pc__merge_distances, n);
    pc_result_free(r);
    free(m);
}

/* Four blobs on the corners of a lattice 10 apart, spread 1.2: well separated, so mean shift must
 * recover them. */
static void test_blobs_recovered(uint64_t seed)
{
    const size_t n = 3000, dim = 3;
    int32_t *truth;
    float *pts = test_lattice(n, dim, 4, 1.2, 10, seed + 999, &truth);
    pc_meanshift_params p;
    pc_meanshift_params_init(&p);
    p.bandwidth = 2.0;
    pc_result *r = run(pts, n, dim, &p);
    if (r) {
        double ari;
        CHECK(pc_adjusted_rand_index(truth, pc_result_labels(r), n, &ari) == PC_OK);
        CHECK_MSG(ari >= 0.95, "ARI %.4f with %zu clusters", ari, pc_result_cluster_count(r));
    }
    pc_result_free(r);
    free(pts);
    free(truth);
}

/* Input types read without conversion by the caller give the same result as the float32 copy. */
static void test_views_of_other_types(void)
{
    size_t n = 500, dim = 3;
    uint8_t *u8 = malloc(n * dim);
    double *f64 = malloc(n * dim * sizeof *f64);
    float *f32 = malloc(n * dim * sizeof *f32);
    for (size_t i = 0; i < n * dim; i++) {
        u8[i] = (uint8_t)((i / dim % 4) * 60 + (i * 7919) % 13);
        f64[i] = u8[i];
        f32[i] = u8[i];
    }
    pc_meanshift_params p;
    pc_meanshift_params_init(&p);
    p.bandwidth = 8;
    p.backend = PC_BACKEND_SEQUENTIAL;
    pc_points views[3] = {pc_points_f32(f32, n, dim), pc_points_f64(f64, n, dim), pc_points_u8(u8, n, dim)};
    pc_result *r[3] = {0};
    for (int v = 0; v < 3; v++)
        CHECK(pc_meanshift(&views[v], &p, &r[v]) == PC_OK);
    if (r[0] && r[1] && r[2]) {
        CHECK(pc_result_cluster_count(r[0]) == 4);
        for (int v = 1; v < 3; v++)
            CHECK(memcmp(pc_result_modes(r[0]), pc_result_modes(r[v]), n * dim * sizeof(float)) == 0);
    }
    for (int v = 0; v < 3; v++)
        pc_result_free(r[v]);
    free(u8);
    free(f64);
    free(f32);
}

static void test_bad_input(void)
{
    float pts[6] = {0, 1, 2, 3, 4, 5};
    pc_points v = pc_points_f32(pts, 3, 2);
    pc_meanshift_params p;
    pc_result *r = (pc_result *)&p; /* must be reset to NULL on failure */
    pc_meanshift_params_init(&p);
    p.bandwidth = 0;
    CHECK_STATUS(pc_meanshift(&v, &p, &r), PC_INVALID_ARGUMENT);
    CHECK(r == NULL);
    CHECK(strstr(pc_last_error(), "bandwidth") != NULL);
    p.bandwidth = -1;
    CHECK_STATUS(pc_meanshift(&v, &p, &r), PC_INVALID_ARGUMENT);
    p.bandwidth = NAN;
    CHECK_STATUS(pc_meanshift(&v, &p, &r), PC_INVALID_ARGUMENT);
    p.bandwidth = 1;
    p.max_iter = 0;
    CHECK_STATUS(pc_meanshift(&v, &p, &r), PC_INVALID_ARGUMENT);
    p.max_iter = 10;
    p.radius = -2;
    CHECK_STATUS(pc_meanshift(&v, &p, &r), PC_INVALID_ARGUMENT);
    p.radius = 0;
    pc_points empty = pc_points_f32(pts, 0, 2);
    CHECK_STATUS(pc_meanshift(&empty, &p, &r), PC_INVALID_ARGUMENT);
    pc_points nodim = pc_points_f32(pts, 3, 0);
    CHECK_STATUS(pc_meanshift(&nodim, &p, &r), PC_INVALID_ARGUMENT);
    pts[3] = NAN;
    CHECK_STATUS(pc_meanshift(&v, &p, &r), PC_INVALID_ARGUMENT);
    CHECK(strstr(pc_last_error(), "not finite") != NULL);
    pts[3] = INFINITY;
    CHECK_STATUS(pc_meanshift(&v, &p, &r), PC_INVALID_ARGUMENT);
    pts[3] = 3;
    CHECK_STATUS(pc_meanshift(&v, NULL, &r), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_meanshift(NULL, &p, &r), PC_INVALID_ARGUMENT);
    p.backend = PC_BACKEND_CUDA;
    pc_status st = pc_meanshift(&v, &p, &r);
    if (pc_cuda_device_count() == 0) { /* CUDA asked where there is none: a clear error */
        CHECK_MSG(st == PC_UNSUPPORTED || st == PC_NO_DEVICE, "CUDA asked without it: %s", pc_status_string(st));
        CHECK(pc_last_error()[0] != '\0');
    } else {
        CHECK(st == PC_OK && r && pc_result_backend(r) == PC_BACKEND_CUDA);
        pc_result_free(r);
    }
    /* One point is a valid input: one cluster. */
    p.backend = PC_BACKEND_AUTO;
    pc_points one = pc_points_f32(pts, 1, 2);
    CHECK_STATUS(pc_meanshift(&one, &p, &r), PC_OK);
    CHECK(r && pc_result_cluster_count(r) == 1 && pc_result_labels(r)[0] == 0);
    pc_result_free(r);
}

/* Permuting the input permutes the labels and changes nothing else. */
static void test_order_independence(uint64_t seed)
{
    size_t n = 1000, dim = 2;
    float *pts = test_blobs(n, dim, 6, 0.7, 8, seed + 5, NULL);
    float *rev = malloc(n * dim * sizeof *rev);
    for (size_t i = 0; i < n; i++)
        memcpy(rev + i * dim, pts + (n - 1 - i) * dim, dim * sizeof *rev);
    pc_meanshift_params p;
    pc_meanshift_params_init(&p);
    p.bandwidth = 1.0;
    pc_result *a = run(pts, n, dim, &p), *b = run(rev, n, dim, &p);
    if (a && b) {
        CHECK(pc_result_cluster_count(a) == pc_result_cluster_count(b));
        int same = 1;
        for (size_t i = 0; i < n; i++) {
            int32_t la = pc_result_labels(a)[i], lb = pc_result_labels(b)[n - 1 - i];
            /* Equal-size clusters may swap numbers; compare the partitions by their centres. */
            for (size_t d = 0; d < dim; d++)
                if (fabs(pc_result_centers(a)[la * dim + d] - pc_result_centers(b)[lb * dim + d]) > 1e-3)
                    same = 0;
        }
        CHECK_MSG(same, "clusters depend on point order");
    }
    pc_result_free(a);
    pc_result_free(b);
    free(pts);
    free(rev);
}

int main(void)
{
    uint64_t seed = test_seed("meanshift");
    test_one_shift_against_double(seed);
    test_openmp_matches_sequential(seed);
    test_high_dim_against_double(seed);
    test_one_point_many_dims();
    test_grid_matches_all_pairs(seed);
    test_merge_against_search(seed);
    test_merge_identical();
    test_merge_crowds(seed);
    test_blobs_recovered(seed);
    test_views_of_other_types();
    test_bad_input();
    test_order_independence(seed);
    return check_report("meanshift");
}
