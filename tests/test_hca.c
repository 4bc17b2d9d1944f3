/* HCA against hand-worked grids (components, distances, dendrogram and cuts worked out in the
 * comments), the sequential backend for OpenMP, the dense grid for the sparse one, float rows for
 * integer pixel rows, and its degenerate inputs. */
#include "check.h"
#include "test_util.h"

#include <math.h>
#include <string.h>

static pc_result *hca(const pc_points *v, int m, size_t clusters, double threshold, int64_t min_size, int noise)
{
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = m;
    p.clusters = clusters;
    p.threshold = threshold;
    p.min_cluster_size = min_size;
    p.noise = noise;
    p.backend = PC_BACKEND_SEQUENTIAL;
    pc_result *r = NULL;
    pc_status st = pc_hca(v, &p, &r);
    CHECK_MSG(st == PC_OK, "pc_hca: %s", pc_last_error());
    return r;
}

/* 1D, m = 5, lo 0.1, hi 4.9: cells 0..4 hold 3, 1, 2, 0, 4 points.
 * Links: cell 0 is the densest of {0, 1}: a representative; cell 1 links to 0 (3 > 2); cell 2 beats
 * 1 and the empty 3: a representative; cell 4 too. Components G0 = {0, 1} (4 points, D(Y) = 3),
 * G1 = {2} (2 points, D(Y) = 2), G2 = {4} (4 points, D(Y) = 4).
 * G0-G1 touch through cells 1-2: h = 1 - min(1, 2) / min(3, 2) = 0.5. G2 touches nothing (cell 3 is
 * empty), so it joins at height 1. Linkage: (0, 1, 0.5, 2), (2, 3, 1, 3). */
static void test_line(void)
{
    float x[] = {0.1f, 0.2f, 0.3f, 1.5f, 2.5f, 2.6f, 4.5f, 4.6f, 4.7f, 4.9f};
    pc_points v = pc_points_f32(x, 10, 1);
    pc_result *r = hca(&v, 5, 2, 0, 0, 0);
    if (!r)
        return;
    CHECK(pc_result_cell_count(r) == 4);
    CHECK(pc_result_component_count(r) == 3);
    const int64_t *cells = pc_result_component_cells(r), *dens = pc_result_component_densities(r),
                  *sizes = pc_result_component_sizes(r);
    CHECK(cells[0] == 0 && cells[1] == 2 && cells[2] == 4);
    CHECK(dens[0] == 3 && dens[1] == 2 && dens[2] == 4);
    CHECK(sizes[0] == 4 && sizes[1] == 2 && sizes[2] == 4);
    size_t rows;
    const double *z = pc_result_dendrogram(r, &rows);
    CHECK(rows == 2);
    const double expect[8] = {0, 1, 0.5, 2, 2, 3, 1.0, 3};
    for (int i = 0; i < 8; i++)
        CHECK_NEAR(z[i], expect[i], 1e-12);
    /* Cut to 2: {G0, G1} (6 points) is cluster 0, G2 cluster 1. */
    const int32_t two[10] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
    CHECK(pc_result_cluster_count(r) == 2 && memcmp(pc_result_labels(r), two, sizeof two) == 0);
    CHECK_NEAR(pc_result_centers(r)[0], (0.1 + 0.2 + 0.3 + 1.5 + 2.5 + 2.6) / 6, 1e-6);
    pc_result_free(r);
    /* Threshold 0.4: no merge; sizes 4, 4, 2, ties by first component: G0 -> 0, G2 -> 1, G1 -> 2. */
    r = hca(&v, 5, 0, 0.4, 0, 0);
    const int32_t three[10] = {0, 0, 0, 0, 2, 2, 1, 1, 1, 1};
    CHECK(r && pc_result_cluster_count(r) == 3 && memcmp(pc_result_labels(r), three, sizeof three) == 0);
    pc_result_free(r);
    /* Minimum size 3: G1 is too small. Its cell centre 2.5 is nearer G0's mean (cells 0.58 x 3 and
     * 1.54 x 1: 0.82) than G2's (4.42), so its points join G0; with noise they get -1. */
    r = hca(&v, 5, 0, 0.4, 3, 0);
    const int32_t joined[10] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
    CHECK(r && pc_result_cluster_count(r) == 2 && memcmp(pc_result_labels(r), joined, sizeof joined) == 0);
    pc_result_free(r);
    r = hca(&v, 5, 0, 0.4, 3, 1);
    const int32_t noisy[10] = {0, 0, 0, 0, -1, -1, 1, 1, 1, 1};
    CHECK(r && pc_result_cluster_count(r) == 2 && memcmp(pc_result_labels(r), noisy, sizeof noisy) == 0);
    pc_result_free(r);
    /* Asking 3 clusters of at least 3 points: no level has 3, the most is 2 (G0 and G2). */
    r = hca(&v, 5, 3, 0, 3, 0);
    CHECK(r && pc_result_cluster_count(r) == 2);
    pc_result_free(r);
}

/* 2D, m = 3: 5 points in cell (0,0), 2 in (1,1), 3 in (2,2), linear indices 0, 4, 8. Cell (1,1) sees
 * both others (corners touch) and links to (0,0); (2,2) is a representative. Components A = {0, 4}
 * (D(Y) = 5), B = {8} (D(Y) = 3), touching through (1,1)-(2,2): h = 1 - min(2, 3) / min(5, 3) = 1/3. */
static void test_corners(void)
{
    float p[20];
    size_t n = 0;
    const float where[3] = {0.5f, 1.5f, 2.5f};
    const int count[3] = {5, 2, 3};
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < count[c]; i++) {
            p[2 * n] = p[2 * n + 1] = where[c];
            n++;
        }
    pc_points v = pc_points_f32(p, n, 2);
    pc_result *r = hca(&v, 3, 2, 0, 0, 0);
    if (!r)
        return;
    CHECK(pc_result_component_count(r) == 2);
    CHECK(pc_result_component_cells(r)[0] == 0 && pc_result_component_cells(r)[1] == 8);
    size_t rows;
    const double *z = pc_result_dendrogram(r, &rows);
    CHECK(rows == 1);
    CHECK_NEAR(z[2], 1.0 / 3.0, 1e-12);
    CHECK(z[0] == 0 && z[1] == 1 && z[3] == 2);
    pc_result_free(r);
}

/* Equal densities: the larger index wins, so cells 0 and 1 (2 points each) form one component whose
 * representative is cell 1. */
static void test_tie(void)
{
    float x[] = {0, 0, 1, 1};
    pc_points v = pc_points_f32(x, 4, 1);
    pc_result *r = hca(&v, 2, 1, 0, 0, 0);
    CHECK(r && pc_result_component_count(r) == 1 && pc_result_component_cells(r)[0] == 1);
    pc_result_free(r);
}

static int same_result(const pc_result *a, const pc_result *b)
{
    size_t ra, rb;
    const double *za = pc_result_dendrogram(a, &ra), *zb = pc_result_dendrogram(b, &rb);
    return pc_result_cluster_count(a) == pc_result_cluster_count(b) &&
           memcmp(pc_result_labels(a), pc_result_labels(b), pc_result_n(a) * sizeof(int32_t)) == 0 && ra == rb &&
           (ra == 0 || memcmp(za, zb, ra * 4 * sizeof(double)) == 0);
}

/* OpenMP at several thread counts, and the sparse grid, give exactly the sequential dense result. */
static void test_backends_agree(uint64_t seed)
{
    for (size_t dim = 2; dim <= 5; dim++) {
        size_t n = 20000;
        float *pts = test_blobs(n, dim, 6, 1.0, 6, seed + dim, NULL);
        pc_points v = pc_points_f32(pts, n, dim);
        pc_hca_params p;
        pc_hca_params_init(&p);
        p.m = dim <= 3 ? 24 : 10;
        p.clusters = 6;
        p.backend = PC_BACKEND_SEQUENTIAL;
        pc_result *ref = NULL, *other = NULL;
        CHECK(pc_hca(&v, &p, &ref) == PC_OK);
        /* Clusters are numbered by size, largest first, after small ones joined them. */
        for (size_t c = 1; ref && c < pc_result_cluster_count(ref); c++)
            CHECK(pc_result_sizes(ref)[c - 1] >= pc_result_sizes(ref)[c]);
        for (int t = 1; t <= 4 && ref; t++) {
            p.backend = pc_backend_available(PC_BACKEND_OPENMP) ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
            p.threads = t;
            CHECK(pc_hca(&v, &p, &other) == PC_OK);
            CHECK_MSG(other && same_result(ref, other), "dim %zu, %d threads: result differs", dim, t);
            pc_result_free(other);
        }
        /* Room for the dense grid but not for per-thread counts: every thread counts with atomics. */
        size_t cells = 1;
        for (size_t j = 0; j < dim; j++)
            cells *= (size_t)p.m;
        p.memory_budget = cells * sizeof(int32_t);
        p.threads = 4;
        p.backend = pc_backend_available(PC_BACKEND_OPENMP) ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
        CHECK(pc_hca(&v, &p, &other) == PC_OK);
        CHECK_MSG(other && ref && same_result(ref, other), "dim %zu: atomic counts differ", dim);
        pc_result_free(other);
        p.memory_budget = 64; /* too small for any dense grid */
        CHECK(pc_hca(&v, &p, &other) == PC_OK);
        CHECK_MSG(other && ref && same_result(ref, other), "dim %zu: sparse grid differs from dense", dim);
        pc_result_free(other);
        pc_result_free(ref);
        free(pts);
    }
}

/* Pixel rows as uint8 / uint16 are read in place and cluster exactly as their float copies. */
static void test_integer_pixels(uint64_t seed)
{
    size_t n = 30000, dim = 4;
    float *f = test_blobs(n, dim, 5, 12, 100, seed + 77, NULL);
    uint8_t *u8 = malloc(n * dim);
    uint16_t *u16 = malloc(n * dim * sizeof *u16);
    for (size_t i = 0; i < n * dim; i++) {
        float v = f[i] + 128;
        u8[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        u16[i] = (uint16_t)(u8[i] * 8 + 3);
        f[i] = u8[i];
    }
    pc_points vf = pc_points_f32(f, n, dim), v8 = pc_points_u8(u8, n, dim), v16 = pc_points_u16(u16, n, dim);
    pc_result *a = hca(&vf, 32, 5, 0, -1, 0), *b = hca(&v8, 32, 5, 0, -1, 0), *c = hca(&v16, 32, 5, 0, -1, 0);
    CHECK(a && b && same_result(a, b));
    /* u16 = 8 u8 + 3 is the same picture with the same cell boundaries. */
    CHECK(a && c && same_result(a, c));
    pc_result_free(a);
    pc_result_free(b);
    pc_result_free(c);
    free(f);
    free(u8);
    free(u16);
}

/* The HCA paper's model sets: HCA must separate them about as well as the paper reports (97.98% and
 * 99.44%); the generators follow the paper's description, not its (unpublished) data. */
static void test_model_sets(void)
{
    const struct {
        pc_dataset set;
        size_t n, k;
        double at_least;
    } sets[] = {{PC_DATASET_HCA8, 20000, 8, 0.97}, {PC_DATASET_HCA5, 12000, 5, 0.97}};
    for (int s = 0; s < 2; s++) {
        int32_t *truth;
        float *pts = test_data(sets[s].set, sets[s].n, 2, sets[s].k, 1, 1, 1, &truth);
        pc_points v = pc_points_f32(pts, sets[s].n, 2);
        pc_result *r = hca(&v, 32, sets[s].k, 0, -1, 0);
        double acc = 0;
        CHECK(r && pc_matched_accuracy(truth, pc_result_labels(r), sets[s].n, &acc) == PC_OK);
        CHECK_MSG(acc >= sets[s].at_least, "%s: matched accuracy %.4f", pc_dataset_name(sets[s].set), acc);
        printf("%s: matched accuracy %.4f\n", pc_dataset_name(sets[s].set), acc);
        pc_result_free(r);
        free(pts);
        free(truth);
    }
}

static void test_degenerate(void)
{
    float same[12] = {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3};
    pc_points v = pc_points_f32(same, 6, 2);
    pc_result *r = hca(&v, 32, 3, 0, -1, 0); /* all points equal: one cell, one cluster */
    CHECK(r && pc_result_cell_count(r) == 1 && pc_result_cluster_count(r) == 1 && pc_result_labels(r)[5] == 0);
    pc_result_free(r);
    pc_points one = pc_points_f32(same, 1, 2);
    r = hca(&one, 32, 1, 0, -1, 0);
    CHECK(r && pc_result_cluster_count(r) == 1 && pc_result_labels(r)[0] == 0);
    pc_result_free(r);
    /* A constant band: its coordinate is 0 for every point; the other band decides. */
    float band[8] = {0, 7, 0, 7, 10, 7, 10, 7};
    pc_points vb = pc_points_f32(band, 4, 2);
    r = hca(&vb, 4, 2, 0, 0, 0);
    const int32_t two[4] = {0, 0, 1, 1};
    CHECK(r && pc_result_cluster_count(r) == 2 && memcmp(pc_result_labels(r), two, sizeof two) == 0);
    pc_result_free(r);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = 1;
    CHECK_STATUS(pc_hca(&v, &p, &r), PC_INVALID_ARGUMENT);
    CHECK(r == NULL && strstr(pc_last_error(), "m (cells") != NULL);
    p.m = 32;
    float nine[9] = {0};
    pc_points v9 = pc_points_f32(nine, 1, 9);
    CHECK_STATUS(pc_hca(&v9, &p, &r), PC_INVALID_ARGUMENT);
    CHECK(strstr(pc_last_error(), "dimensions") != NULL);
    p.threshold = 1.5;
    CHECK_STATUS(pc_hca(&v, &p, &r), PC_INVALID_ARGUMENT);
    p.threshold = 0.5;
    same[3] = NAN;
    CHECK_STATUS(pc_hca(&v, &p, &r), PC_INVALID_ARGUMENT);
    pc_points empty = pc_points_f32(same, 0, 2);
    CHECK_STATUS(pc_hca(&empty, &p, &r), PC_INVALID_ARGUMENT);
}

/* pc_hca_plan_run_u8 on the CPU: the labels of pc_hca_plan_run as bytes, none in the result; 255
 * clusters or more refused. */
static void test_label_bytes(uint64_t seed)
{
    size_t n = 20000;
    float *pts = test_blobs(n, 3, 6, 1.0, 6, seed + 31, NULL);
    /* Points 0 and 1 moved 3 units beyond the others' box, below and above: cells of their own, far
     * from any other, so clusters of one point, which noise turns into the byte 255 (the blobs alone
     * left none for some seeds, e.g. 1795744732). */
    for (size_t j = 0; j < 3; j++) {
        float lo = pts[2 * 3 + j], hi = lo;
        for (size_t i = 2; i < n; i++) {
            lo = pts[i * 3 + j] < lo ? pts[i * 3 + j] : lo;
            hi = pts[i * 3 + j] > hi ? pts[i * 3 + j] : hi;
        }
        pts[j] = lo - 3;
        pts[3 + j] = hi + 3;
    }
    pc_points v = pc_points_f32(pts, n, 3);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = 24;
    p.clusters = 6;
    p.noise = 1; /* some points in no cluster: the byte 255 */
    p.backend = pc_backend_available(PC_BACKEND_OPENMP) ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
    pc_hca_plan *plan = NULL;
    pc_result *ref = NULL, *r = NULL;
    uint8_t *bytes = malloc(n);
    CHECK(pc_hca_plan_create(&p, n, 3, PC_F32, &plan) == PC_OK);
    CHECK(plan && pc_hca_plan_run(plan, &v, &ref) == PC_OK);
    CHECK(plan && pc_hca_plan_run_u8(plan, &v, bytes, &r) == PC_OK);
    if (ref && r) {
        CHECK(pc_result_labels(r) == NULL && pc_result_cluster_count(r) == pc_result_cluster_count(ref));
        CHECK(!memcmp(pc_result_sizes(r), pc_result_sizes(ref), pc_result_cluster_count(r) * sizeof(int64_t)));
        CHECK_MSG(test_label_bytes_differ(pc_result_labels(ref), bytes, n) == 0, "bytes differ from the labels");
        size_t unclustered = 0;
        for (size_t i = 0; i < n; i++)
            unclustered += bytes[i] == 255;
        CHECK_MSG(unclustered > 0, "the case has no point outside the clusters");
    }
    pc_result_free(ref);
    pc_result_free(r);
    r = NULL;
    CHECK(pc_hca_plan_run_u8(plan, &v, NULL, &r) == PC_INVALID_ARGUMENT && r == NULL);
    pc_hca_plan_free(plan);
    free(pts);
    /* Hundreds of small clusters: more than a byte holds. */
    n = 400000;
    pts = test_blobs(n, 2, 1, 1000, 1, seed + 32, NULL);
    v = pc_points_f32(pts, n, 2);
    free(bytes);
    bytes = malloc(n);
    pc_hca_params_init(&p);
    p.m = 256;
    p.clusters = 300;
    p.min_cluster_size = 0;
    CHECK(pc_hca_plan_create(&p, n, 2, PC_F32, &plan) == PC_OK);
    CHECK(plan && pc_hca_plan_run(plan, &v, &ref) == PC_OK);
    CHECK_MSG(ref && pc_result_cluster_count(ref) >= 255, "%zu clusters", ref ? pc_result_cluster_count(ref) : 0);
    pc_result_free(ref);
    r = NULL;
    CHECK(plan && pc_hca_plan_run_u8(plan, &v, bytes, &r) == PC_UNSUPPORTED && r == NULL);
    CHECK(strstr(pc_last_error(), "clusters") != NULL);
    pc_hca_plan_free(plan);
    free(pts);
    free(bytes);
}

int main(void)
{
    uint64_t seed = test_seed("hca");
    test_line();
    test_corners();
    test_tie();
    test_backends_agree(seed);
    test_integer_pixels(seed);
    test_model_sets();
    test_degenerate();
    test_label_bytes(seed);
    return check_report("hca");
}
