/* pc_hca_stream against pc_hca on the same points: labels, dendrogram, components, sizes and centres
 * equal, whatever the blocks' sizes and order, for every point type, dense and sparse histograms,
 * sequential and OpenMP; merged streams and exported histograms equal one stream fed everything (also
 * added to a histogram already listed); a held block; calls out of order refused. */
#include "check.h"
#include "parclust.h"
#include "test_util.h"
#include "hca_stream_blocks.h"

#include <string.h>

static pc_points block_view(const void *data, size_t dim, pc_dtype t, size_t from, size_t to)
{
    pc_points all = view(data, to, dim, t);
    return rows_of(&all, from, to);
}

/* The stream's result and labels against pc_hca's on the same points. */
static void compare(const char *what, const pc_result *mem, const pc_result *str, const int32_t *labels,
                    const double *sums, size_t n, size_t dim, int exact_centres)
{
    size_t k = pc_result_cluster_count(mem), rows_m = 0, rows_s = 0;
    CHECK_MSG(pc_result_cluster_count(str) == k, "%s: k %zu vs %zu", what, pc_result_cluster_count(str), k);
    CHECK_MSG(pc_result_n(str) == n, "%s: n %zu", what, pc_result_n(str));
    CHECK_MSG(pc_result_labels(str) == NULL && pc_result_centers(str) == NULL, "%s: no labels nor centres", what);
    CHECK_MSG(memcmp(pc_result_labels(mem), labels, n * sizeof *labels) == 0, "%s: labels differ", what);
    const double *zm = pc_result_dendrogram(mem, &rows_m), *zs = pc_result_dendrogram(str, &rows_s);
    CHECK_MSG(rows_m == rows_s && (rows_m == 0 || memcmp(zm, zs, rows_m * 4 * sizeof *zm) == 0),
              "%s: dendrograms differ (%zu vs %zu rows)", what, rows_m, rows_s);
    size_t comps = pc_result_component_count(mem);
    CHECK_MSG(pc_result_component_count(str) == comps && pc_result_cell_count(str) == pc_result_cell_count(mem),
              "%s: components %zu vs %zu", what, pc_result_component_count(str), comps);
    if (pc_result_component_count(str) == comps) {
        CHECK(memcmp(pc_result_component_cells(mem), pc_result_component_cells(str), comps * 8) == 0);
        CHECK(memcmp(pc_result_component_densities(mem), pc_result_component_densities(str), comps * 8) == 0);
        CHECK(memcmp(pc_result_component_sizes(mem), pc_result_component_sizes(str), comps * 8) == 0);
    }
    if (pc_result_cluster_count(str) != k)
        return;
    CHECK_MSG(memcmp(pc_result_sizes(mem), pc_result_sizes(str), k * 8) == 0, "%s: sizes differ", what);
    const float *cm = pc_result_centers(mem);
    for (size_t c = 0; c < k; c++) {
        CHECK_MSG(sums[c * (dim + 1) + dim] == (double)pc_result_sizes(mem)[c], "%s: cluster %zu counted %g", what, c,
                  sums[c * (dim + 1) + dim]);
        for (size_t j = 0; j < dim; j++) {
            float centre = (float)(sums[c * (dim + 1) + j] / sums[c * (dim + 1) + dim]);
            if (exact_centres)
                CHECK_MSG(centre == cm[c * dim + j], "%s: centre %zu,%zu %.9g vs %.9g", what, c, j, centre,
                          cm[c * dim + j]);
            else
                CHECK_NEAR(centre, cm[c * dim + j], 1e-5 * (1 + fabs(cm[c * dim + j])));
        }
    }
}

/* Bound, count and label `data` through one stream, blocks in the order given. */
static pc_result *stream_all(const pc_hca_params *p, const void *data, size_t dim, pc_dtype t, const size_t *start,
                             const size_t *order, size_t blocks, int32_t *labels, double *sums)
{
    pc_hca_stream *s = NULL;
    pc_result *r = NULL;
    CHECK_STATUS(pc_hca_stream_create(p, dim, &s), PC_OK);
    for (size_t b = 0; b < blocks; b++) {
        pc_points v = block_view(data, dim, t, start[order[b]], start[order[b] + 1]);
        CHECK_STATUS(pc_hca_stream_bound(s, &v), PC_OK);
    }
    for (size_t b = 0; b < blocks; b++) {
        pc_points v = block_view(data, dim, t, start[order[blocks - 1 - b]], start[order[blocks - 1 - b] + 1]);
        CHECK_STATUS(pc_hca_stream_add(s, &v), PC_OK);
    }
    CHECK_STATUS(pc_hca_stream_finish(s, &r), PC_OK);
    size_t k = r ? pc_result_cluster_count(r) : 0;
    memset(sums, 0, (k ? k : 1) * (dim + 1) * sizeof *sums);
    for (size_t b = 0; b < blocks && r; b++) {
        pc_points v = block_view(data, dim, t, start[order[b]], start[order[b] + 1]);
        CHECK_STATUS(pc_hca_stream_label(s, &v, labels + start[order[b]], sums), PC_OK);
    }
    pc_hca_stream_free(s);
    return r;
}

static void same_as_pc_hca(uint64_t seed)
{
    const pc_dtype types[] = {PC_F32, PC_F64, PC_U8, PC_U16};
    const char *names[] = {"f32", "f64", "u8", "u16"};
    const pc_backend backends[] = {PC_BACKEND_SEQUENTIAL, PC_BACKEND_OPENMP};
    uint64_t rng = seed;
    size_t start[70], order[70];
    /* Every dimension the library's integer loops are specialised for is run somewhere: 1 to 4 and 6
     * and 8 here (pc_hca_stream_label and the counting have one instance per dim of uint8/uint16). */
    static const size_t dims[] = {1, 2, 3, 4, 6, 8};
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
        for (int ti = 0; ti < 4; ti++)
            for (int bi = 0; bi < 2; bi++)
                for (int sparse = 0; sparse < 2; sparse++) {
                    size_t dim = dims[di];
                    int integer = types[ti] == PC_U8 || types[ti] == PC_U16;
                    if (!pc_backend_available(backends[bi]) || ((dim == 1 || dim > 4) && !integer))
                        continue;
                    size_t n = 70000 + (size_t)(rng % 1000);
                    float *x = test_blobs(n, dim, 5, 1.5, 12, seed + dim, NULL);
                    void *data = convert(x, n * dim, types[ti], 20);
                    pc_hca_params p;
                    pc_hca_params_init(&p);
                    p.m = dim > 4 ? 6 : dim == 4 ? 12 : 40;
                    p.clusters = 4;
                    p.backend = backends[bi];
                    if (sparse)
                        p.memory_budget = 1024; /* forces the sparse grid and histogram */
                    pc_points all = view(data, n, dim, types[ti]);
                    pc_result *mem = NULL;
                    CHECK_STATUS(pc_hca(&all, &p, &mem), PC_OK);
                    size_t blocks = make_blocks(n, &rng, start, order, 64);
                    int32_t *labels = malloc(n * sizeof *labels);
                    double *sums = malloc(64 * (dim + 1) * sizeof *sums);
                    pc_result *str = stream_all(&p, data, dim, types[ti], start, order, blocks, labels, sums);
                    char what[96];
                    snprintf(what, sizeof what, "%s dim %zu %s %s, %zu blocks", names[ti], dim,
                             pc_backend_name(backends[bi]), sparse ? "sparse" : "dense", blocks);
                    if (mem && str)
                        compare(what, mem, str, labels, sums, n, dim, types[ti] == PC_U8 || types[ti] == PC_U16);
                    /* One block, the whole input: the same again. */
                    size_t one[2] = {0, n}, first = 0;
                    pc_result *whole = stream_all(&p, data, dim, types[ti], one, &first, 1, labels, sums);
                    if (mem && whole)
                        compare(what, mem, whole, labels, sums, n, dim, types[ti] == PC_U8 || types[ti] == PC_U16);
                    pc_result_free(whole);
                    pc_result_free(mem);
                    pc_result_free(str);
                    free(labels);
                    free(sums);
                    free(data);
                    free(x);
                }
}

/* Two streams fed halves, merged (boxes, then histograms), and a third fed the exported histograms:
 * the same result as one stream fed everything. */
static void merges(uint64_t seed)
{
    size_t n = 60000, dim = 3, half = 23456;
    float *x = test_blobs(n, dim, 4, 1, 10, seed, NULL);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = 24;
    p.clusters = 3;
    pc_points a = view(x, half, dim, PC_F32), b = view(x + half * dim, n - half, dim, PC_F32),
              all = view(x, n, dim, PC_F32);
    pc_hca_stream *sa = NULL, *sb = NULL, *sc = NULL;
    CHECK_STATUS(pc_hca_stream_create(&p, dim, &sa), PC_OK);
    CHECK_STATUS(pc_hca_stream_create(&p, dim, &sb), PC_OK);
    CHECK_STATUS(pc_hca_stream_create(&p, dim, &sc), PC_OK);
    CHECK_STATUS(pc_hca_stream_bound(sa, &a), PC_OK);
    CHECK_STATUS(pc_hca_stream_bound(sb, &b), PC_OK);
    /* the joined box goes to every stream, as an MPI all-reduce of min and max would */
    CHECK_STATUS(pc_hca_stream_merge(sa, sb), PC_OK);
    double lo[3], hi[3];
    CHECK_STATUS(pc_hca_stream_box(sa, lo, hi), PC_OK);
    CHECK_STATUS(pc_hca_stream_set_box(sb, lo, hi), PC_OK);
    CHECK_STATUS(pc_hca_stream_set_box(sc, lo, hi), PC_OK);
    CHECK_STATUS(pc_hca_stream_add(sa, &a), PC_OK);
    CHECK_STATUS(pc_hca_stream_add(sb, &b), PC_OK);
    size_t cells = 0;
    CHECK_STATUS(pc_hca_stream_histogram(sb, &cells, NULL, NULL), PC_OK);
    uint64_t *keys = malloc(cells * sizeof *keys);
    int64_t *counts = malloc(cells * sizeof *counts);
    size_t room = cells - 1;
    CHECK_STATUS(pc_hca_stream_histogram(sb, &room, keys, counts), PC_INVALID_ARGUMENT); /* too little room */
    CHECK_STATUS(pc_hca_stream_histogram(sb, &cells, keys, counts), PC_OK);
    int64_t total = 0;
    for (size_t c = 0; c < cells; c++) {
        total += counts[c];
        CHECK(counts[c] > 0 && (c == 0 || keys[c] > keys[c - 1]));
    }
    CHECK(total == (int64_t)(n - half));
    CHECK_STATUS(pc_hca_stream_add(sc, &a), PC_OK);
    CHECK_STATUS(pc_hca_stream_add_histogram(sc, cells, keys, counts), PC_OK);
    CHECK_STATUS(pc_hca_stream_merge(sa, sb), PC_OK);
    pc_result *mem = NULL, *ra = NULL, *rc = NULL;
    CHECK_STATUS(pc_hca(&all, &p, &mem), PC_OK);
    CHECK_STATUS(pc_hca_stream_finish(sa, &ra), PC_OK);
    CHECK_STATUS(pc_hca_stream_finish(sc, &rc), PC_OK);
    int32_t *labels = malloc(n * sizeof *labels);
    double sums[64 * 4];
    if (mem && ra && rc) {
        memset(sums, 0, sizeof sums);
        CHECK_STATUS(pc_hca_stream_label(sa, &all, labels, sums), PC_OK);
        compare("merged", mem, ra, labels, sums, n, dim, 0);
        memset(sums, 0, sizeof sums);
        CHECK_STATUS(pc_hca_stream_label(sc, &a, labels, sums), PC_OK);
        CHECK_STATUS(pc_hca_stream_label(sc, &b, labels + half, sums), PC_OK);
        compare("histogram added", mem, rc, labels, sums, n, dim, 0);
    }
    pc_result_free(mem);
    pc_result_free(ra);
    pc_result_free(rc);
    pc_hca_stream_free(sa);
    pc_hca_stream_free(sb);
    pc_hca_stream_free(sc);
    free(keys);
    free(counts);
    free(labels);
    free(x);
}

/* The listed histogram of a stream given exported histograms one after another (as ranks add each
 * other's: the list kept up by merging the added cells in, src/hca/stream.c) against the listing of a
 * stream that counted every point, dense and sparse: the added cells in two parts, an empty cell
 * added, and a part whose keys do not increase (listed anew); then the finished result against pc_hca. */
static int64_t *listed(pc_hca_stream *s, size_t *cells, uint64_t **keys)
{
    *cells = 0;
    CHECK_STATUS(pc_hca_stream_histogram(s, cells, NULL, NULL), PC_OK);
    int64_t *counts = malloc((*cells + 1) * sizeof *counts);
    *keys = malloc((*cells + 1) * sizeof **keys);
    CHECK_STATUS(pc_hca_stream_histogram(s, cells, *keys, counts), PC_OK);
    return counts;
}

static void added_to_a_list(uint64_t seed)
{
    size_t n = 50000, dim = 3, half = 20011;
    float *x = test_blobs(n, dim, 5, 1, 10, seed + 7, NULL);
    pc_points a = view(x, half, dim, PC_F32), b = view(x + half * dim, n - half, dim, PC_F32),
              all = view(x, n, dim, PC_F32);
    for (int sparse = 0; sparse < 2; sparse++)
        for (int shuffled = 0; shuffled < 2; shuffled++) {
            pc_hca_params p;
            pc_hca_params_init(&p);
            p.m = 20;
            p.clusters = 4;
            if (sparse)
                p.memory_budget = 1024;
            pc_hca_stream *whole = NULL, *sb = NULL, *sd = NULL;
            CHECK_STATUS(pc_hca_stream_create(&p, dim, &whole), PC_OK);
            CHECK_STATUS(pc_hca_stream_create(&p, dim, &sb), PC_OK);
            CHECK_STATUS(pc_hca_stream_create(&p, dim, &sd), PC_OK);
            CHECK_STATUS(pc_hca_stream_bound(whole, &all), PC_OK);
            double lo[3], hi[3];
            CHECK_STATUS(pc_hca_stream_box(whole, lo, hi), PC_OK);
            CHECK_STATUS(pc_hca_stream_set_box(sb, lo, hi), PC_OK);
            CHECK_STATUS(pc_hca_stream_set_box(sd, lo, hi), PC_OK);
            CHECK_STATUS(pc_hca_stream_add(whole, &all), PC_OK);
            CHECK_STATUS(pc_hca_stream_add(sb, &b), PC_OK);
            CHECK_STATUS(pc_hca_stream_add(sd, &a), PC_OK);
            size_t cells_b, cells_d, cells_w;
            uint64_t *keys_b, *keys_d, *keys_w;
            int64_t *counts_b = listed(sb, &cells_b, &keys_b);
            free(listed(sd, &cells_d, &keys_d)); /* sd's histogram listed: the adds below merge into it */
            size_t first = cells_b / 3;
            if (shuffled && first >= 2) { /* keys out of order: no merge, the histogram is listed anew */
                uint64_t k = keys_b[0];
                int64_t c = counts_b[0];
                keys_b[0] = keys_b[1], counts_b[0] = counts_b[1];
                keys_b[1] = k, counts_b[1] = c;
            }
            CHECK_STATUS(pc_hca_stream_add_histogram(sd, first, keys_b, counts_b), PC_OK);
            uint64_t corner = 0; /* an empty cell, added with no points */
            int64_t none = 0;
            while (corner + 1 < 20 * 20 * 20) {
                int present = 0;
                for (size_t c = 0; c < cells_b; c++)
                    present |= keys_b[c] == corner;
                for (size_t c = 0; c < cells_d; c++)
                    present |= keys_d[c] == corner;
                if (!present)
                    break;
                corner++;
            }
            CHECK_STATUS(pc_hca_stream_add_histogram(sd, 1, &corner, &none), PC_OK);
            CHECK_STATUS(pc_hca_stream_add_histogram(sd, cells_b - first, keys_b + first, counts_b + first), PC_OK);
            int64_t *counts_w = listed(whole, &cells_w, &keys_w);
            size_t cells_s;
            uint64_t *keys_s;
            int64_t *counts_s = listed(sd, &cells_s, &keys_s);
            CHECK_MSG(cells_s == cells_w && memcmp(keys_s, keys_w, cells_w * sizeof *keys_w) == 0 &&
                          memcmp(counts_s, counts_w, cells_w * sizeof *counts_w) == 0,
                      "%s%s: the listed sum of %zu cells differs from the whole stream's %zu", sparse ? "sparse" : "dense",
                      shuffled ? ", keys out of order" : "", cells_s, cells_w);
            pc_result *mem = NULL, *rd = NULL;
            CHECK_STATUS(pc_hca(&all, &p, &mem), PC_OK);
            CHECK_STATUS(pc_hca_stream_finish(sd, &rd), PC_OK);
            int32_t *labels = malloc(n * sizeof *labels);
            double sums[64 * 4];
            memset(sums, 0, sizeof sums);
            if (mem && rd) {
                CHECK_STATUS(pc_hca_stream_label(sd, &all, labels, sums), PC_OK);
                compare("histograms added to a listed one", mem, rd, labels, sums, n, dim, 0);
            }
            pc_result_free(mem);
            pc_result_free(rd);
            pc_hca_stream_free(whole);
            pc_hca_stream_free(sb);
            pc_hca_stream_free(sd);
            free(keys_b), free(counts_b), free(keys_d), free(keys_w), free(counts_w), free(keys_s), free(counts_s);
            free(labels);
        }
    free(x);
}

/* A set box: the box pc_hca finds gives pc_hca's result; counts beyond 2^31 points are carried. */
static void given_box_and_large_counts(uint64_t seed)
{
    size_t n = 40000, dim = 2;
    float *x = test_blobs(n, dim, 3, 1, 10, seed, NULL);
    double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
    for (size_t i = 0; i < n * dim; i++) {
        lo[i % 2] = fmin(lo[i % 2], x[i]);
        hi[i % 2] = fmax(hi[i % 2], x[i]);
    }
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.clusters = 3;
    pc_points all = view(x, n, dim, PC_F32);
    pc_hca_stream *s = NULL;
    pc_result *mem = NULL, *r = NULL;
    CHECK_STATUS(pc_hca(&all, &p, &mem), PC_OK);
    CHECK_STATUS(pc_hca_stream_create(&p, dim, &s), PC_OK);
    CHECK_STATUS(pc_hca_stream_set_box(s, lo, hi), PC_OK);
    CHECK_STATUS(pc_hca_stream_add(s, &all), PC_OK);
    CHECK_STATUS(pc_hca_stream_finish(s, &r), PC_OK);
    int32_t *labels = malloc(n * sizeof *labels);
    double sums[64 * 3] = {0};
    if (mem && r) {
        CHECK_STATUS(pc_hca_stream_label(s, &all, labels, sums), PC_OK);
        compare("set box", mem, r, labels, sums, n, dim, 0);
    }
    pc_result_free(r);
    pc_hca_stream_free(s);

    /* Every count times 100,000 (4e9 points in all): the same clusters, sizes 100,000 times larger. */
    size_t cells = 0;
    CHECK_STATUS(pc_hca_stream_create(&p, dim, &s), PC_OK);
    CHECK_STATUS(pc_hca_stream_set_box(s, lo, hi), PC_OK);
    CHECK_STATUS(pc_hca_stream_add(s, &all), PC_OK);
    CHECK_STATUS(pc_hca_stream_histogram(s, &cells, NULL, NULL), PC_OK);
    uint64_t *keys = malloc(cells * sizeof *keys);
    int64_t *counts = malloc(cells * sizeof *counts);
    CHECK_STATUS(pc_hca_stream_histogram(s, &cells, keys, counts), PC_OK);
    pc_hca_stream_free(s);
    for (size_t c = 0; c < cells; c++)
        counts[c] *= 100000;
    p.min_cluster_size = 100000 * (int64_t)ceil(0.001 * (double)n); /* the default, scaled alike */
    CHECK_STATUS(pc_hca_stream_create(&p, dim, &s), PC_OK);
    CHECK_STATUS(pc_hca_stream_set_box(s, lo, hi), PC_OK);
    CHECK_STATUS(pc_hca_stream_add_histogram(s, cells, keys, counts), PC_OK);
    CHECK_STATUS(pc_hca_stream_finish(s, &r), PC_OK);
    if (mem && r) {
        CHECK(pc_result_n(r) == n * 100000);
        CHECK(pc_result_cluster_count(r) == pc_result_cluster_count(mem));
        for (size_t c = 0; c < pc_result_cluster_count(r) && c < pc_result_cluster_count(mem); c++)
            CHECK(pc_result_sizes(r)[c] == 100000 * pc_result_sizes(mem)[c]);
        CHECK_STATUS(pc_hca_stream_label(s, &all, labels, sums), PC_OK);
        CHECK(memcmp(labels, pc_result_labels(mem), n * sizeof *labels) == 0);
    }
    pc_result_free(r);
    pc_result_free(mem);
    pc_hca_stream_free(s);
    free(keys);
    free(counts);
    free(labels);
    free(x);
}

static void refusals(void)
{
    pc_hca_params p;
    pc_hca_params_init(&p);
    float pts[6] = {0, 0, 1, 1, 2, NAN}, three[3] = {1, 2, 3};
    pc_points good = view(pts, 2, 2, PC_F32), bad = view(pts, 3, 2, PC_F32), wide = view(three, 1, 3, PC_F32);
    pc_hca_stream *s = NULL;
    pc_result *r = NULL;
    int32_t labels[3];
    CHECK_STATUS(pc_hca_stream_create(&p, 9, &s), PC_INVALID_ARGUMENT);
    CHECK(s == NULL);
    CHECK_STATUS(pc_hca_stream_create(&p, 2, &s), PC_OK);
    CHECK_STATUS(pc_hca_stream_add(s, &good), PC_INVALID_ARGUMENT); /* no box yet */
    CHECK_STATUS(pc_hca_stream_finish(s, &r), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_hca_stream_bound(s, &bad), PC_INVALID_ARGUMENT); /* NaN */
    CHECK(strstr(pc_last_error(), "finite") != NULL || strstr(pc_last_error(), "NaN") != NULL);
    CHECK_STATUS(pc_hca_stream_bound(s, &wide), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_hca_stream_bound(s, &good), PC_OK);
    CHECK_STATUS(pc_hca_stream_label(s, &good, labels, NULL), PC_INVALID_ARGUMENT); /* not finished */
    CHECK_STATUS(pc_hca_stream_add(s, &good), PC_OK);
    CHECK_STATUS(pc_hca_stream_bound(s, &good), PC_INVALID_ARGUMENT); /* box fixed */
    double lo[2] = {0, 0}, hi[2] = {1, -1};
    CHECK_STATUS(pc_hca_stream_set_box(s, lo, hi), PC_INVALID_ARGUMENT);
    uint64_t key = 1u << 30;
    int64_t count = 1;
    CHECK_STATUS(pc_hca_stream_add_histogram(s, 1, &key, &count), PC_INVALID_ARGUMENT); /* not a cell */
    pc_hca_stream *other = NULL;
    CHECK_STATUS(pc_hca_stream_create(&p, 2, &other), PC_OK);
    hi[1] = 5;
    CHECK_STATUS(pc_hca_stream_set_box(other, lo, hi), PC_OK);
    CHECK_STATUS(pc_hca_stream_add(other, &good), PC_OK);
    CHECK_STATUS(pc_hca_stream_merge(s, other), PC_INVALID_ARGUMENT); /* other box */
    CHECK_STATUS(pc_hca_stream_finish(s, &r), PC_OK);
    pc_result *again = NULL;
    CHECK_STATUS(pc_hca_stream_finish(s, &again), PC_INVALID_ARGUMENT);
    CHECK(again == NULL);
    CHECK_STATUS(pc_hca_stream_add(s, &good), PC_INVALID_ARGUMENT); /* finished */
    CHECK_STATUS(pc_hca_stream_label(s, &good, labels, NULL), PC_OK);
    pc_result_free(r);
    pc_hca_stream_free(s);
    pc_hca_stream_free(other);
    /* CUDA: a stream where a device is (tests/test_hca_stream_cuda.c tests it), else a clear refusal. */
    p.backend = PC_BACKEND_CUDA;
    pc_status st = pc_hca_stream_create(&p, 2, &s);
    if (pc_backend_available(PC_BACKEND_CUDA))
        CHECK_STATUS(st, PC_OK);
    else {
        CHECK_MSG(st == PC_UNSUPPORTED || st == PC_NO_DEVICE, "got %s", pc_status_string(st));
        CHECK_MSG(s == NULL && strstr(pc_last_error(), "CUDA") != NULL, "message: %s", pc_last_error());
    }
    pc_hca_stream_free(s);
}

/* The held block on the CPU (the caller's view, read by each call): the same as pc_hca, every type,
 * the box set after bound_held as parclust_mpi does; a non-finite value refused by bound_held; the
 * held calls without a held block, and a second hold, refused. */
static void held(uint64_t seed)
{
    const pc_dtype types[] = {PC_F32, PC_F64, PC_U8, PC_U16};
    size_t n = 30000, dim = 3;
    float *x = test_blobs(n, dim, 4, 1.5, 12, seed + 41, NULL);
    int32_t *labels = malloc(n * sizeof *labels);
    double sums[64 * 4];
    for (int ti = 0; ti < 4; ti++) {
        void *data = convert(x, n * dim, types[ti], 20);
        pc_hca_params p;
        pc_hca_params_init(&p);
        p.m = 24;
        p.clusters = 4;
        pc_points all = view(data, n, dim, types[ti]);
        pc_result *mem = NULL, *r = NULL;
        CHECK_STATUS(pc_hca(&all, &p, &mem), PC_OK);
        pc_hca_stream *s = NULL;
        CHECK_STATUS(pc_hca_stream_create(&p, dim, &s), PC_OK);
        double lo[3], hi[3];
        CHECK_STATUS(pc_hca_stream_add_held(s), PC_INVALID_ARGUMENT);
        CHECK_MSG(strstr(pc_last_error(), "holds no block") != NULL, "message: %s", pc_last_error());
        CHECK_STATUS(pc_hca_stream_hold(s, &all), PC_OK);
        CHECK_STATUS(pc_hca_stream_hold(s, &all), PC_INVALID_ARGUMENT);
        CHECK_STATUS(pc_hca_stream_bound_held(s), PC_OK);
        CHECK_STATUS(pc_hca_stream_box(s, lo, hi), PC_OK);
        CHECK_STATUS(pc_hca_stream_set_box(s, lo, hi), PC_OK);
        CHECK_STATUS(pc_hca_stream_add_held(s), PC_OK);
        CHECK_STATUS(pc_hca_stream_finish(s, &r), PC_OK);
        memset(sums, 0, sizeof sums);
        CHECK_STATUS(pc_hca_stream_label_held(s, labels, sums), PC_OK);
        if (mem && r)
            compare("held", mem, r, labels, sums, n, dim, types[ti] == PC_U8 || types[ti] == PC_U16);
        pc_result_free(mem);
        pc_result_free(r);
        pc_hca_stream_free(s);
        free(data);
    }
    pc_hca_params p;
    pc_hca_params_init(&p);
    x[dim * 7 + 1] = NAN;
    pc_points bad = view(x, n, dim, PC_F32);
    pc_hca_stream *s = NULL;
    CHECK_STATUS(pc_hca_stream_create(&p, dim, &s), PC_OK);
    CHECK_STATUS(pc_hca_stream_hold(s, &bad), PC_OK);
    CHECK_STATUS(pc_hca_stream_bound_held(s), PC_INVALID_ARGUMENT);
    pc_hca_stream_free(s);
    free(labels);
    free(x);
}

int main(void)
{
    uint64_t seed = test_seed("hca_stream");
    same_as_pc_hca(seed);
    merges(seed);
    added_to_a_list(seed);
    given_box_and_large_counts(seed);
    refusals();
    held(seed);
    return check_report("hca_stream");
}
