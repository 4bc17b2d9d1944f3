/* HECA and HCA-MS (ALGORITHMS.md 3a, 3b) against plain HCA where they must equal it: HECA with one
 * member (labels, components, dendrogram), HCA-MS with a zero bandwidth or no border cells; the
 * refined clusters' sizes and centres against the labels; OpenMP against the sequential reference;
 * the auto rule for m against its definition. The averaged distances and the moved points are checked
 * against NumPy renderings of the spec by tests/heca_numpy.py. */
#include "check.h"
#include "test_util.h"

#include <math.h>
#include <string.h>

static pc_result *hca(const pc_points *v, int m, size_t clusters, double threshold, pc_backend backend, int refine,
                      double bandwidth)
{
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = m;
    p.clusters = clusters;
    p.threshold = threshold;
    p.backend = backend;
    p.refine_borders = refine;
    p.refine_bandwidth = bandwidth;
    pc_result *r = NULL;
    pc_status st = pc_hca(v, &p, &r);
    CHECK_MSG(st == PC_OK, "pc_hca: %s", pc_last_error());
    return r;
}

/* min_size >= 0: the points of smaller clusters become noise (-1). */
static pc_result *heca_min(const pc_points *v, const int *ms, size_t members, int shifts, size_t clusters,
                           double threshold, int64_t min_size, pc_backend backend)
{
    pc_heca_params p;
    pc_heca_params_init(&p);
    memcpy(p.m, ms, members * sizeof *ms);
    p.members = members;
    p.shifts = shifts;
    p.hca.clusters = clusters;
    p.hca.threshold = threshold;
    p.hca.min_cluster_size = min_size;
    p.hca.noise = min_size >= 0;
    p.hca.backend = backend;
    pc_result *r = NULL;
    pc_status st = pc_heca(v, &p, &r);
    CHECK_MSG(st == PC_OK, "pc_heca: %s", pc_last_error());
    return r;
}

static pc_result *heca(const pc_points *v, const int *ms, size_t members, int shifts, size_t clusters,
                       double threshold, pc_backend backend)
{
    return heca_min(v, ms, members, shifts, clusters, threshold, -1, backend);
}

static int same_labels(const pc_result *a, const pc_result *b)
{
    return pc_result_n(a) == pc_result_n(b) &&
           memcmp(pc_result_labels(a), pc_result_labels(b), pc_result_n(a) * sizeof(int32_t)) == 0;
}

/* The heights at which every pair of leaves joins (the cophenetic matrix), leaves x leaves. */
static double *cophenetic(const pc_result *r, size_t *leaves)
{
    size_t rows;
    const double *z = pc_result_dendrogram(r, &rows);
    size_t n = rows + 1;
    *leaves = n;
    double *d = calloc(n * n, sizeof *d);
    size_t *first = malloc(2 * n * sizeof *first), *next = malloc(n * sizeof *next), *last = malloc(2 * n * sizeof *last);
    for (size_t i = 0; i < n; i++) {
        first[i] = last[i] = i;
        next[i] = (size_t)-1;
    }
    for (size_t q = 0; q < rows; q++) {
        size_t a = (size_t)z[4 * q], b = (size_t)z[4 * q + 1];
        for (size_t x = first[a]; x != (size_t)-1; x = next[x])
            for (size_t y = first[b]; y != (size_t)-1; y = next[y])
                d[x * n + y] = d[y * n + x] = z[4 * q + 2];
        next[last[a]] = first[b];
        first[n + q] = first[a];
        last[n + q] = last[b];
    }
    free(first);
    free(next);
    free(last);
    return d;
}

/* One member, no shift: HCA's result. */
static void test_single_member(uint64_t seed)
{
    for (int c = 0; c < 6; c++) {
        size_t dim = 2 + (size_t)(c % 2), n = 4000 + 1000 * (size_t)c;
        int m = 8 + 5 * c;
        int32_t *truth;
        float *x = test_data(PC_DATASET_BLOBS, n, dim, 5, 1.0 + 0.3 * c, 8, seed + (uint64_t)c, &truth);
        pc_points v = pc_points_f32(x, n, dim);
        size_t k = c % 3 == 2 ? 0 : 3 + (size_t)c % 3;
        pc_result *a = hca(&v, m, k, 0.4, PC_BACKEND_SEQUENTIAL, 0, 0);
        pc_result *b = heca(&v, &m, 1, 0, k, 0.4, PC_BACKEND_SEQUENTIAL);
        if (a && b) {
            CHECK_MSG(same_labels(a, b), "case %d (m %d, n %zu, dim %zu, k %zu): labels differ", c, m, n, dim, k);
            size_t ca = pc_result_component_count(a), cb = pc_result_component_count(b);
            CHECK_MSG(ca == cb, "case %d: %zu components against %zu", c, ca, cb);
            CHECK(pc_result_cell_count(a) == pc_result_cell_count(b));
            CHECK(pc_result_member_count(b) == 1 && pc_result_member_components(b, 0) == ca);
            CHECK(pc_result_grid_m(a) == m && pc_result_grid_m(b) == m);
            if (ca == cb) {
                CHECK(memcmp(pc_result_component_cells(a), pc_result_component_cells(b), ca * 8) == 0);
                CHECK(memcmp(pc_result_component_densities(a), pc_result_component_densities(b), ca * 8) == 0);
                CHECK(memcmp(pc_result_component_sizes(a), pc_result_component_sizes(b), ca * 8) == 0);
                size_t na, nb;
                double *da = cophenetic(a, &na), *db = cophenetic(b, &nb);
                double worst = 0;
                for (size_t i = 0; i < na * na; i++)
                    worst = fmax(worst, fabs(da[i] - db[i]));
                CHECK_MSG(worst <= 1e-12, "case %d: cophenetic matrices differ by %g", c, worst);
                /* Row by row too (with one member the merges of equal height come in HCA's order). */
                size_t rows;
                const double *za = pc_result_dendrogram(a, &rows), *zb = pc_result_dendrogram(b, &rows);
                CHECK_MSG(memcmp(za, zb, rows * 4 * sizeof *za) == 0, "case %d: linkage rows differ", c);
                free(da);
                free(db);
            }
            CHECK(memcmp(pc_result_sizes(a), pc_result_sizes(b), pc_result_cluster_count(a) * 8) == 0);
        }
        pc_result_free(a);
        pc_result_free(b);
        free(x);
        free(truth);
    }
}

/* Several members, shifted: OpenMP gives the sequential result; sizes and centres follow the labels. */
static void test_members_backends(uint64_t seed)
{
    int32_t *truth;
    size_t n = 20000, dim = 3;
    float *x = test_data(PC_DATASET_BLOBS, n, dim, 6, 1.2, 10, seed + 17, &truth);
    pc_points v = pc_points_f32(x, n, dim);
    int ms[] = {10, 13, 16, 20};
    pc_result *a = heca(&v, ms, 4, 1, 6, 0, PC_BACKEND_SEQUENTIAL);
    if (pc_backend_available(PC_BACKEND_OPENMP)) {
        pc_result *b = heca(&v, ms, 4, 1, 6, 0, PC_BACKEND_OPENMP);
        CHECK(a && b && same_labels(a, b));
        size_t ra = 0, rb = 0;
        const double *za = a ? pc_result_dendrogram(a, &ra) : NULL, *zb = b ? pc_result_dendrogram(b, &rb) : NULL;
        CHECK(a && b && ra == rb && memcmp(za, zb, ra * 4 * sizeof *za) == 0);
        pc_result_free(b);
    }
    if (a) {
        CHECK(pc_result_member_count(a) == 4 && pc_result_grid_m(a) == 20);
        int64_t count[64] = {0};
        const int32_t *l = pc_result_labels(a);
        size_t k = pc_result_cluster_count(a);
        for (size_t i = 0; i < n; i++)
            if (l[i] >= 0 && l[i] < 64)
                count[l[i]]++;
        for (size_t c = 0; c < k && c < 64; c++)
            CHECK(count[c] == pc_result_sizes(a)[c]);
    }
    pc_result_free(a);
    free(x);
    free(truth);
}

/* HCA-MS: a zero bandwidth, or no border cell, gives HCA's labels; sizes and centres follow the moved
 * labels; OpenMP gives the sequential labels. */
static void test_refine(uint64_t seed)
{
    int32_t *truth;
    size_t n = 8000, dim = 2;
    float *x = test_data(PC_DATASET_HCA8, n, dim, 8, 1, 1, seed + 5, &truth);
    pc_points v = pc_points_f32(x, n, dim);
    pc_result *plain = hca(&v, 16, 8, 0, PC_BACKEND_SEQUENTIAL, 0, 0);
    pc_result *zero = hca(&v, 16, 8, 0, PC_BACKEND_SEQUENTIAL, 1, 0);
    pc_result *ms = hca(&v, 16, 8, 0, PC_BACKEND_SEQUENTIAL, 1, -1);
    if (plain && zero && ms) {
        CHECK(same_labels(plain, zero));
        CHECK(pc_result_border_points(zero) > 0 && pc_result_changed_points(zero) == 0);
        CHECK(pc_result_border_points(plain) == 0);
        CHECK(pc_result_border_points(ms) == pc_result_border_points(zero));
        size_t changed = 0;
        for (size_t i = 0; i < n; i++)
            changed += pc_result_labels(plain)[i] != pc_result_labels(ms)[i];
        CHECK_MSG((int64_t)changed == pc_result_changed_points(ms), "%zu changed, result says %lld", changed,
                  (long long)pc_result_changed_points(ms));
        CHECK(changed > 0);
        size_t k = pc_result_cluster_count(ms);
        double sum[16][3] = {{0}};
        for (size_t i = 0; i < n; i++) {
            int32_t c = pc_result_labels(ms)[i];
            if (c >= 0 && c < 16) {
                sum[c][0] += x[2 * i];
                sum[c][1] += x[2 * i + 1];
                sum[c][2] += 1;
            }
        }
        for (size_t c = 0; c < k && c < 16; c++) {
            CHECK(pc_result_sizes(ms)[c] == (int64_t)sum[c][2]);
            CHECK_NEAR(pc_result_centers(ms)[2 * c], sum[c][0] / sum[c][2], 1e-3);
            CHECK_NEAR(pc_result_centers(ms)[2 * c + 1], sum[c][1] / sum[c][2], 1e-3);
        }
        if (pc_backend_available(PC_BACKEND_OPENMP)) {
            pc_result *omp = hca(&v, 16, 8, 0, PC_BACKEND_OPENMP, 1, -1);
            CHECK(omp && same_labels(ms, omp) && pc_result_changed_points(omp) == pc_result_changed_points(ms));
            pc_result_free(omp);
        }
    }
    pc_result_free(plain);
    pc_result_free(zero);
    pc_result_free(ms);
    /* One cluster: no border cell, nothing moves. */
    plain = hca(&v, 16, 1, 0, PC_BACKEND_SEQUENTIAL, 0, 0);
    ms = hca(&v, 16, 1, 0, PC_BACKEND_SEQUENTIAL, 1, -1);
    CHECK(plain && ms && same_labels(plain, ms) && pc_result_border_points(ms) == 0);
    pc_result_free(plain);
    pc_result_free(ms);
    /* uint8 rows (runs of equal pixels climb once) against the same values as float32. */
    uint8_t *u = malloc(n * dim);
    float *f = malloc(n * dim * sizeof *f);
    for (size_t i = 0; i < n * dim; i++) {
        u[i] = (uint8_t)(x[i] * 2.5f > 255 ? 255 : x[i] * 2.5f < 0 ? 0 : x[i] * 2.5f);
        f[i] = u[i];
    }
    pc_points vu = pc_points_u8(u, n, dim), vf = pc_points_f32(f, n, dim);
    pc_result *ru = hca(&vu, 16, 8, 0, PC_BACKEND_SEQUENTIAL, 1, -1), *rf = hca(&vf, 16, 8, 0, PC_BACKEND_SEQUENTIAL, 1, -1);
    CHECK(ru && rf && same_labels(ru, rf) && pc_result_changed_points(ru) == pc_result_changed_points(rf));
    pc_result_free(ru);
    pc_result_free(rf);
    free(u);
    free(f);
    free(x);
    free(truth);
}

/* Packed uint8 rows of 1 or 2 bands take the distinct values' path (members, prototypes and sums from
 * the values' counts), 3 and 4 bands (and uint16 rows) the members counted together in one pass
 * (grid_many.c), or with AVX-512 where the processor has it (grid.c, grid_refined.c: 3 and 4 bands,
 * m <= 127) several to a pass through their common refinement or one at a time, the reference
 * member's cells found again from the pixels; the same values as float32 take the points' path as
 * floats, one member at a time: the same result, on one thread and several (per-thread counts). */
static void compare_members(const pc_points *vi, const pc_points *vf, size_t dim, const char *what, const int *ms,
                            size_t L, size_t clusters, int64_t min_size)
{
    for (int shifts = 0; shifts <= 1; shifts++)
        for (int b = 0; b < 2; b++) {
            pc_backend be = b == 0 ? PC_BACKEND_SEQUENTIAL : PC_BACKEND_OPENMP;
            if (!pc_backend_available(be))
                continue;
            pc_result *a = heca_min(vi, ms, L, shifts, clusters, 0, min_size, be);
            pc_result *c = heca_min(vf, ms, L, shifts, clusters, 0, min_size, be);
            CHECK(a && c);
            if (a && c) {
                CHECK_MSG(same_labels(a, c), "%s, dim %zu, m %d.., shifts %d, %s: labels differ from float32's", what,
                          dim, ms[0], shifts, pc_backend_name(be));
                size_t ra, rb;
                const double *za = pc_result_dendrogram(a, &ra), *zb = pc_result_dendrogram(c, &rb);
                CHECK(ra == rb && memcmp(za, zb, ra * 4 * sizeof *za) == 0);
                for (size_t l = 0; l < L; l++)
                    CHECK(pc_result_member_components(a, l) == pc_result_member_components(c, l));
                size_t k = pc_result_cluster_count(a);
                CHECK(k == pc_result_cluster_count(c) && memcmp(pc_result_sizes(a), pc_result_sizes(c), k * 8) == 0);
                for (size_t q = 0; q < k * dim && k == pc_result_cluster_count(c); q++)
                    CHECK_NEAR(pc_result_centers(a)[q], pc_result_centers(c)[q], 1e-3);
            }
            pc_result_free(a);
            pc_result_free(c);
        }
}

static void compare_paths(const pc_points *vi, const pc_points *vf, size_t dim, const char *what)
{
    const int ms[] = {12, 16, 21};
    compare_members(vi, vf, dim, what, ms, 3, 5, -1);
    /* bench_heca's five members (16 and 32 share cells' boundaries), the small clusters' points noise. */
    const int five[] = {16, 19, 23, 27, 32};
    compare_members(vi, vf, dim, what, five, 5, 8, 1000);
    /* No two of these share a pass (their refinements pass 127 cells a side): the reference counted
     * alone, without the points' cells (3 bands: 121^3 cells are dense). */
    const int apart[] = {70, 100, 121};
    if (dim == 3)
        compare_members(vi, vf, dim, what, apart, 3, 5, -1);
}

/* 300 clusters (more than a byte holds) of uniform 3-band noise: the labels of the reference member's
 * cells found again go through the int32 cluster map. */
static void test_many_clusters(uint64_t seed)
{
    size_t n = 30000, dim = 3;
    uint8_t *u = malloc(n * dim);
    float *f = malloc(n * dim * sizeof *f);
    uint64_t s = seed | 1;
    for (size_t q = 0; q < n * dim; q++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        u[q] = (uint8_t)(s >> 56);
        f[q] = u[q];
    }
    pc_points vu = pc_points_u8(u, n, dim), vf = pc_points_f32(f, n, dim);
    const int ms[] = {70, 100, 121};
    compare_members(&vu, &vf, dim, "uint8 noise", ms, 3, 300, 1);
    pc_result *r = heca_min(&vu, ms, 3, 0, 300, 0, 1, PC_BACKEND_AUTO);
    CHECK(r && pc_result_cluster_count(r) == 300);
    pc_result_free(r);
    free(u);
    free(f);
}

static void test_values_path(uint64_t seed)
{
    for (size_t dim = 2; dim <= 4; dim++) {
        size_t n = 30000;
        uint8_t *u = malloc(n * dim);
        float *f = malloc(n * dim * sizeof *f);
        uint64_t s = seed | 1;
        for (size_t i = 0; i < n; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            int c = (int)((i / 1000 + (s >> 62)) % 5);
            for (size_t j = 0; j < dim; j++) {
                int v = 40 + 35 * ((c + (int)j) % 5) + (int)((s >> (8 * j + 8)) & 31) - (int)((s >> (8 * j + 13)) & 15);
                u[i * dim + j] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
                f[i * dim + j] = u[i * dim + j];
            }
        }
        pc_points vu = pc_points_u8(u, n, dim), vf = pc_points_f32(f, n, dim);
        compare_paths(&vu, &vf, dim, "uint8");
        /* uint16: the values spread over 0 .. 65535 (x 257), the floats alike. */
        uint16_t *w = malloc(n * dim * sizeof *w);
        for (size_t q = 0; w && q < n * dim; q++) {
            w[q] = (uint16_t)(u[q] * 257u);
            f[q] = w[q];
        }
        if (w && dim == 3) {
            pc_points vw = pc_points_u16(w, n, dim);
            compare_paths(&vw, &vf, dim, "uint16");
        }
        free(w);
        free(u);
        free(f);
    }
}

/* The auto rule: the largest m in [4, 32] with n / m^dim >= 4, or 4. */
static void test_auto_m(void)
{
    const uint64_t ns[] = {50, 200, 500, 1000, 12000, 20000, 1000000, 115000000, 100000000};
    for (size_t d = 1; d <= 8; d++)
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
            int m = pc_hca_auto_m(ns[i], d);
            CHECK(m >= 4 && m <= 32);
            if (m > 4)
                CHECK((double)ns[i] / pow(m, (double)d) >= 4);
            if (m < 32)
                CHECK((double)ns[i] / pow(m + 1, (double)d) < 4);
        }
    CHECK(pc_hca_auto_m(115000000, 3) == 32 && pc_hca_auto_m(100000000, 4) == 32);
}

static void test_errors(void)
{
    float x[4] = {0, 1, 2, 3};
    pc_points v = pc_points_f32(x, 4, 1);
    pc_heca_params p;
    pc_heca_params_init(&p);
    pc_result *r = NULL;
    p.members = PC_HECA_MAX_MEMBERS + 1;
    CHECK_STATUS(pc_heca(&v, &p, &r), PC_INVALID_ARGUMENT);
    p.members = 1;
    p.m[0] = 1;
    CHECK_STATUS(pc_heca(&v, &p, &r), PC_INVALID_ARGUMENT);
    p.m[0] = 4;
    p.reference = 2;
    CHECK_STATUS(pc_heca(&v, &p, &r), PC_INVALID_ARGUMENT);
    CHECK(r == NULL);
    pc_hca_params h;
    pc_hca_params_init(&h);
    h.refine_borders = 1;
    h.refine_max_iter = 0;
    CHECK_STATUS(pc_hca(&v, &h, &r), PC_INVALID_ARGUMENT);
    /* pc_heca_device refuses a CPU backend before it reads anything (these points are not the GPU's). */
    pc_heca_params_init(&p);
    p.hca.backend = PC_BACKEND_OPENMP;
    CHECK_STATUS(pc_heca_device(&v, &p, NULL, &r), PC_INVALID_ARGUMENT);
    CHECK(r == NULL && strstr(pc_last_error(), "CUDA"));
}

int main(void)
{
    uint64_t seed = test_seed("heca");
    test_single_member(seed);
    test_members_backends(seed);
    test_refine(seed);
    test_values_path(seed);
    test_many_clusters(seed);
    test_auto_m();
    test_errors();
    return check_report("heca");
}
