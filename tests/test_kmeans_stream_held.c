/* pc_kmeans_stream_hold: passes over a held block against the plain stream on the CPU, which adds the
 * same points in blocks. The same iterations, centres, sizes and inertia bit for bit, and the same
 * labels, for float32, float64 and uint8 points; with empty clusters (duplicated initial centres: the
 * farthest points move into them); with many points tied for the farthest (the held pass then runs on
 * the host); with fewer points than k - 1 beyond the first; with k = 1; with a held half and the other
 * half added in blocks; and the refusals (calls out of order, a value the scan did not see, named with
 * its row). `test_kmeans_stream_held` holds on the CPU backend (OpenMP, else sequential);
 * `test_kmeans_stream_held cuda` on the GPU, where the pass runs whole (exits 77 without a device). */
#include "check.h"
#include "parclust.h"
#include "test_util.h"

#include <string.h>

static pc_backend held_backend;

static size_t elem_size(pc_dtype t) { return t == PC_F64 ? 8 : t == PC_F32 ? 4 : 1; }

static pc_points view(const void *data, pc_dtype t, size_t begin, size_t end, size_t dim)
{
    pc_points v = {(const unsigned char *)data + begin * dim * elem_size(t), end - begin, dim, 0, t};
    return v;
}

/* How a run adds its points: the CPU stream in blocks of at most 5000, or held (from row `from` on; the
 * rows before it added in blocks as the plain stream does). */
typedef struct {
    int held;
    size_t from;
} how;

static pc_status add_all(pc_kmeans_stream *s, const void *data, pc_dtype t, size_t n, size_t dim, how w)
{
    pc_status st = PC_OK;
    size_t end = w.held ? w.from : n;
    for (size_t b = 0; st == PC_OK && b < end; b += 5000) {
        pc_points v = view(data, t, b, b + 5000 < end ? b + 5000 : end, dim);
        st = pc_kmeans_stream_add(s, &v);
    }
    return st == PC_OK && w.held ? pc_kmeans_stream_add_held(s) : st;
}

static pc_result *run(const void *data, pc_dtype t, size_t n, size_t dim, const pc_kmeans_params *base, how w,
                      int32_t *labels)
{
    pc_kmeans_params p = *base;
    p.backend = w.held ? held_backend : pc_backend_available(PC_BACKEND_OPENMP) ? PC_BACKEND_OPENMP
                                                                                 : PC_BACKEND_SEQUENTIAL;
    pc_kmeans_stream *s = NULL;
    pc_result *r = NULL;
    pc_points all = view(data, t, 0, n, dim), rest = view(data, t, w.from, n, dim);
    pc_status st = pc_kmeans_stream_create(&p, dim, 0, &s);
    if (st == PC_OK)
        st = pc_kmeans_stream_scan(s, &all, 0);
    if (st == PC_OK)
        st = pc_kmeans_stream_start(s);
    if (st == PC_OK && w.held)
        st = pc_kmeans_stream_hold(s, &rest);
    int done = 0;
    while (st == PC_OK && !done && (st = add_all(s, data, t, n, dim, w)) == PC_OK)
        st = pc_kmeans_stream_step(s, &done);
    if (st == PC_OK && w.held) {
        pc_points head = view(data, t, 0, w.from, dim);
        st = pc_kmeans_stream_label_held(s, labels + w.from);
        if (st == PC_OK && w.from)
            st = pc_kmeans_stream_label(s, &head, labels);
    } else if (st == PC_OK)
        st = pc_kmeans_stream_label(s, &all, labels);
    if (st == PC_OK)
        st = pc_kmeans_stream_result(s, &r);
    CHECK_MSG(st == PC_OK, "%s stream: %s", w.held ? "held" : "plain", pc_last_error());
    pc_kmeans_stream_free(s);
    return r;
}

static void compare(const char *what, const void *data, pc_dtype t, size_t n, size_t dim, const pc_kmeans_params *p,
                    size_t from)
{
    int32_t *lp = malloc(n * sizeof *lp), *lh = malloc(n * sizeof *lh);
    how plain = {0, 0}, held = {1, from};
    pc_result *rp = run(data, t, n, dim, p, plain, lp), *rh = run(data, t, n, dim, p, held, lh);
    size_t k = p->k;
    if (rp && rh) {
        CHECK_MSG(pc_result_iterations(rp) == pc_result_iterations(rh), "%s: iterations %d vs %d", what,
                  pc_result_iterations(rp), pc_result_iterations(rh));
        CHECK_MSG(memcmp(pc_result_centers(rp), pc_result_centers(rh), k * dim * sizeof(float)) == 0,
                  "%s: centres differ", what);
        CHECK_MSG(memcmp(pc_result_sizes(rp), pc_result_sizes(rh), k * sizeof(int64_t)) == 0, "%s: sizes differ",
                  what);
        CHECK_MSG(pc_result_inertia(rp) == pc_result_inertia(rh), "%s: inertia %.17g vs %.17g", what,
                  pc_result_inertia(rp), pc_result_inertia(rh));
        size_t differ = 0;
        for (size_t i = 0; i < n; i++)
            differ += lp[i] != lh[i];
        CHECK_MSG(differ == 0, "%s: %zu of %zu labels differ", what, differ, n);
        printf("%s: %d iterations, inertia %.9g, the same held\n", what, pc_result_iterations(rh),
               pc_result_inertia(rh));
    }
    pc_result_free(rp);
    pc_result_free(rh);
    free(lp);
    free(lh);
}

static void params(pc_kmeans_params *p, size_t k, pc_kmeans_init init, uint64_t seed)
{
    pc_kmeans_params_init(p);
    p->k = k;
    p->init = init;
    p->seed = seed;
    p->max_iter = 30;
}

/* Blobs as float32, float64 (offset and scaled) or uint8 (many exact ties). */
static void *blobs(pc_dtype t, size_t n, size_t dim, size_t k, uint64_t seed)
{
    float *f = test_blobs(n, dim, k, 1.0, 10.0, seed, NULL);
    if (t == PC_F32)
        return f;
    void *out = malloc(n * dim * elem_size(t));
    for (size_t i = 0; i < n * dim; i++) {
        if (t == PC_F64)
            ((double *)out)[i] = (double)f[i] * 1e3 + 5e4;
        else {
            double v = (f[i] + 14.0) * 9.0;
            ((unsigned char *)out)[i] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
    free(f);
    return out;
}

static void test_same_as_plain(uint64_t seed, int quick)
{
    size_t big = quick ? 120000 : 400000;
    pc_kmeans_params p;
    void *d = blobs(PC_F32, big, 3, 8, seed);
    params(&p, 8, PC_INIT_KMEANSPP, seed);
    compare("float32 x 3, k 8", d, PC_F32, big, 3, &p, 0);
    compare("float32 x 3, k 8, the first 70001 rows added in blocks", d, PC_F32, big, 3, &p, 70001);
    free(d);
    d = blobs(PC_F64, 60000, 16, 100, seed + 1);
    params(&p, 100, PC_INIT_RANDOM, seed + 1);
    compare("float64 x 16, k 100", d, PC_F64, 60000, 16, &p, 0);
    free(d);
    d = blobs(PC_U8, big, 4, 6, seed + 2);
    params(&p, 6, PC_INIT_KMEANSPP, seed + 2);
    compare("uint8 x 4, k 6", d, PC_U8, big, 4, &p, 0);
    free(d);
    d = blobs(PC_F32, 20000, 70, 12, seed + 3);
    params(&p, 12, PC_INIT_RANDOM, seed + 3);
    compare("float32 x 70, k 12", d, PC_F32, 20000, 70, &p, 0);
    params(&p, 1, PC_INIT_RANDOM, seed + 3);
    compare("float32 x 70, k 1", d, PC_F32, 20000, 70, &p, 0);
    free(d);
    /* Fewer points than clusters less one in the held part (every point is a candidate). */
    d = blobs(PC_F32, 300, 2, 5, seed + 4);
    params(&p, 120, PC_INIT_RANDOM, seed + 4);
    compare("float32 x 2, 300 points, k 120, 100 held", d, PC_F32, 300, 2, &p, 200);
    free(d);
}

/* Duplicated initial centres: the second of each pair starts empty and takes the farthest points. */
static void test_empty_clusters(uint64_t seed)
{
    size_t n = 50000, dim = 5, k = 40;
    float *x = test_blobs(n, dim, 10, 2.0, 10.0, seed, NULL), *init = malloc(k * dim * sizeof *init);
    for (size_t c = 0; c < k; c++)
        memcpy(init + c * dim, x + (c / 2 * 997 % n) * dim, dim * sizeof *x);
    pc_kmeans_params p;
    params(&p, k, PC_INIT_GIVEN, seed);
    p.initial_centers = init;
    compare("float32 x 5, k 40 from 20 duplicated centres", x, PC_F32, n, dim, &p, 0);
    free(init);
    free(x);
}

/* 60% of the points on one spot far from the rest: its points tie for the farthest (more of them than
 * the GPU's candidates), the others spread out. */
static void test_ties(uint64_t seed)
{
    size_t n = 150000, dim = 3, k = 20;
    float *x = test_blobs(n, dim, 6, 1.0, 10.0, seed, NULL);
    for (size_t i = 0; i < n * 6 / 10; i++)
        for (size_t d = 0; d < dim; d++)
            x[i * dim + d] = 40.0f + (float)d;
    float *init = malloc(k * dim * sizeof *init);
    for (size_t c = 0; c < k; c++)
        for (size_t d = 0; d < dim; d++)
            init[c * dim + d] = c == 0 ? 30.0f : x[(n - 1 - c * 1013) * dim + d];
    pc_kmeans_params p;
    params(&p, k, PC_INIT_GIVEN, seed);
    p.initial_centers = init;
    compare("float32 x 3, k 20, 90000 points tied", x, PC_F32, n, dim, &p, 0);
    free(init);
    free(x);
}

static int error_has(const char *text)
{
    int ok = strstr(pc_last_error(), text) != NULL;
    if (!ok)
        fprintf(stderr, "expected \"%s\" in: %s\n", text, pc_last_error());
    return ok;
}

static void test_refusals(uint64_t seed)
{
    size_t n = 3000, dim = 3;
    float *x = test_blobs(n, dim, 4, 1.0, 10.0, seed, NULL);
    pc_kmeans_params p;
    params(&p, 4, PC_INIT_KMEANSPP, seed);
    p.backend = held_backend;
    pc_points all = pc_points_f32(x, n, dim), first = pc_points_f32(x, 2000, dim);
    pc_kmeans_stream *s = NULL;
    int32_t *labels = malloc(n * sizeof *labels);
    CHECK_STATUS(pc_kmeans_stream_create(&p, dim, 0, &s), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_scan(s, &first, 0), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_hold(s, &first), PC_INVALID_ARGUMENT); /* before start */
    CHECK(error_has("pc_kmeans_stream_hold comes between pc_kmeans_stream_start"));
    CHECK_STATUS(pc_kmeans_stream_start(s), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_add_held(s), PC_INVALID_ARGUMENT);
    CHECK(error_has("holds no block"));
    CHECK_STATUS(pc_kmeans_stream_hold(s, &all), PC_INVALID_ARGUMENT); /* more points than scanned */
    CHECK(error_has("more than the 2000 scanned"));
    /* A row the scan did not see (rows 2000 on; 2500 surely): refused with the first such row, at the hold
     * or at the pass. */
    float lo[3], hi[3];
    for (size_t d = 0; d < dim; d++) {
        lo[d] = INFINITY;
        hi[d] = -INFINITY;
        for (size_t j = 0; j < 2000; j++) {
            lo[d] = x[j * dim + d] < lo[d] ? x[j * dim + d] : lo[d];
            hi[d] = x[j * dim + d] > hi[d] ? x[j * dim + d] : hi[d];
        }
    }
    x[2500 * dim + 1] = 1e3f;
    pc_points later = pc_points_f32(x + 1000 * dim, 2000, dim);
    size_t row = 0;
    for (size_t i = 1000; i < 2000 && !row; i++)
        for (size_t d = 0; d < dim; d++)
            if (x[(1000 + i) * dim + d] < lo[d] || x[(1000 + i) * dim + d] > hi[d])
                row = i;
    pc_status st = row ? pc_kmeans_stream_hold(s, &later) : PC_INVALID_ARGUMENT;
    if (st == PC_OK)
        st = pc_kmeans_stream_add_held(s);
    CHECK_MSG(row && st == PC_INVALID_ARGUMENT, "a row outside the scan's values held and added: %s",
              pc_status_string(st));
    char want[64];
    snprintf(want, sizeof want, "block row %zu, dimension", row);
    CHECK(error_has(want));
    pc_kmeans_stream_free(s);
    /* Held and done: a second hold is refused, labels before done are refused. */
    CHECK_STATUS(pc_kmeans_stream_create(&p, dim, 0, &s), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_scan(s, &all, 0), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_start(s), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_hold(s, &all), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_hold(s, &all), PC_INVALID_ARGUMENT);
    CHECK(error_has("holds a block already"));
    CHECK_STATUS(pc_kmeans_stream_label_held(s, labels), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_kmeans_stream_add_held(s), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_add_held(s), PC_INVALID_ARGUMENT); /* twice in a pass */
    CHECK(error_has("more than the 3000 scanned"));
    pc_kmeans_stream_free(s);
    free(labels);
    free(x);
}

/* Two held streams of one dimension, the second with fewer clusters (its per-cluster sums take less
 * shared memory): the first's passes still run (the kernels' shared-memory limit is not lowered under
 * it). */
static void test_two_streams(uint64_t seed)
{
    size_t n = 20000, dim = 16;
    float *x = test_blobs(n, dim, 8, 1.0, 10.0, seed, NULL);
    pc_points all = pc_points_f32(x, n, dim);
    pc_kmeans_stream *s[2] = {NULL, NULL};
    const size_t ks[2] = {600, 4};
    int done = 0;
    for (int q = 0; q < 2; q++) {
        pc_kmeans_params p;
        params(&p, ks[q], PC_INIT_RANDOM, seed);
        p.backend = held_backend;
        CHECK_STATUS(pc_kmeans_stream_create(&p, dim, 0, &s[q]), PC_OK);
        CHECK_STATUS(pc_kmeans_stream_scan(s[q], &all, 0), PC_OK);
        CHECK_STATUS(pc_kmeans_stream_start(s[q]), PC_OK);
        CHECK_STATUS(pc_kmeans_stream_hold(s[q], &all), PC_OK);
        CHECK_STATUS(pc_kmeans_stream_add_held(s[q]), PC_OK);
        CHECK_STATUS(pc_kmeans_stream_step(s[q], &done), PC_OK);
    }
    pc_status st = pc_kmeans_stream_add_held(s[0]);
    CHECK_MSG(st == PC_OK, "the first held stream after a second one: %s", pc_last_error());
    pc_kmeans_stream_free(s[0]);
    pc_kmeans_stream_free(s[1]);
    free(x);
}

int main(int argc, char **argv)
{
    int cuda = argc > 1 && strcmp(argv[1], "cuda") == 0;
    if (cuda && (!pc_backend_available(PC_BACKEND_CUDA) || pc_cuda_device_count() <= 0)) {
        printf("kmeans_stream_held cuda: no CUDA device, skipped\n");
        return 77;
    }
    held_backend = cuda ? PC_BACKEND_CUDA
                 : pc_backend_available(PC_BACKEND_OPENMP) ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
    uint64_t seed = test_seed(cuda ? "kmeans_stream_held cuda" : "kmeans_stream_held");
    int quick = getenv("PC_CUDA_TEST_QUICK") != NULL;
    test_same_as_plain(seed, quick);
    test_empty_clusters(seed + 10);
    test_ties(seed + 11);
    test_refusals(seed + 12);
    test_two_streams(seed + 13);
    return check_report(cuda ? "kmeans_stream_held cuda" : "kmeans_stream_held");
}
