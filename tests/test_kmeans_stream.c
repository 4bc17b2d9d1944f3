/* The k-means stream against pc_kmeans on the same points: the same labels, centres and iterations
 * from the same initial centres (float32, float64, uint8; sequential and OpenMP; one block, many uneven
 * blocks in shuffled order), the same initialisation when the sample holds every point, streams merged
 * from halves equal to one stream fed all, a uniform sample, k-means++ on a sample, and calls in the
 * wrong order refused. */
#include "check.h"
#include "test_util.h"
#include "../src/kmeans/stream_internal.h" /* the sample, to test it */

#include <math.h>
#include <string.h>

static uint64_t rng_state;
static uint64_t next_u64(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static size_t below(size_t n) { return (size_t)(next_u64() % n); }

/* OpenMP where it was built, else the sequential backend (the tests then compare it with itself). */
static pc_backend openmp(void)
{
    return pc_backend_available(PC_BACKEND_OPENMP) ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
}

static size_t elem_size(pc_dtype t) { return t == PC_F64 ? 8 : t == PC_F32 ? 4 : t == PC_U16 ? 2 : 1; }

static pc_points view(const void *data, pc_dtype t, size_t begin, size_t end, size_t dim)
{
    pc_points v = {(const unsigned char *)data + begin * dim * elem_size(t), end - begin, dim, 0, t};
    return v;
}

/* Block boundaries: one block (max 0), or blocks of 1..max rows. */
static size_t make_blocks(size_t n, size_t max, size_t *bounds)
{
    size_t nb = 0, at = 0;
    bounds[nb++] = 0;
    while (at < n) {
        at += max ? 1 + below(max) : n;
        at = at < n ? at : n;
        bounds[nb++] = at;
    }
    return nb - 1;
}

static void shuffle(size_t *order, size_t m, int shuffled)
{
    for (size_t i = 0; i < m; i++)
        order[i] = i;
    for (size_t i = m; shuffled && i > 1; i--) {
        size_t j = below(i), t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}

/* A whole streamed run over the blocks (scan, start, passes, labels), each pass in a new order. */
static pc_result *stream_run(const void *data, pc_dtype t, size_t n, size_t dim, const pc_kmeans_params *p,
                             size_t sample, size_t max_block, int shuffled, int32_t *labels)
{
    size_t *bounds = malloc((n + 2) * sizeof *bounds), *order = malloc((n + 1) * sizeof *order);
    size_t nb = make_blocks(n, max_block, bounds);
    pc_kmeans_stream *s = NULL;
    pc_result *r = NULL;
    pc_status st = pc_kmeans_stream_create(p, dim, sample, &s);
    CHECK_MSG(st == PC_OK, "create: %s", pc_last_error());
    shuffle(order, nb, shuffled);
    for (size_t b = 0; st == PC_OK && b < nb; b++) {
        size_t i = order[b];
        pc_points v = view(data, t, bounds[i], bounds[i + 1], dim);
        st = pc_kmeans_stream_scan(s, &v, bounds[i]);
    }
    if (st == PC_OK)
        st = pc_kmeans_stream_start(s);
    int done = 0;
    while (st == PC_OK && !done) {
        shuffle(order, nb, shuffled);
        for (size_t b = 0; st == PC_OK && b < nb; b++) {
            size_t i = order[b];
            pc_points v = view(data, t, bounds[i], bounds[i + 1], dim);
            st = pc_kmeans_stream_add(s, &v);
        }
        if (st == PC_OK)
            st = pc_kmeans_stream_step(s, &done);
    }
    shuffle(order, nb, shuffled);
    for (size_t b = 0; st == PC_OK && b < nb; b++) {
        size_t i = order[b];
        pc_points v = view(data, t, bounds[i], bounds[i + 1], dim);
        st = pc_kmeans_stream_label(s, &v, labels + bounds[i]);
    }
    if (st == PC_OK)
        st = pc_kmeans_stream_result(s, &r);
    CHECK_MSG(st == PC_OK, "stream: %s", pc_last_error());
    pc_kmeans_stream_free(s);
    free(bounds);
    free(order);
    return r;
}

/* Blobs as float32, float64 (times `magnitude`) or uint8 (the range stretched over 0..255: many
 * exact ties and duplicates). */
static void *blob_data(pc_dtype t, size_t n, size_t dim, size_t blobs, double magnitude, uint64_t seed)
{
    float *x = test_blobs(n, dim, blobs, 1.5, 10, seed, NULL);
    if (t == PC_F32)
        return x;
    void *out = malloc(n * dim * elem_size(t));
    float lo = x[0], hi = x[0];
    for (size_t q = 0; q < n * dim; q++) {
        lo = x[q] < lo ? x[q] : lo;
        hi = x[q] > hi ? x[q] : hi;
    }
    for (size_t q = 0; q < n * dim; q++) {
        if (t == PC_F64)
            ((double *)out)[q] = (double)x[q] * magnitude;
        else
            ((uint8_t *)out)[q] = (uint8_t)lrint((x[q] - lo) / (hi - lo) * 255);
    }
    free(x);
    return out;
}

static void row_f32(const void *data, pc_dtype t, size_t i, size_t dim, float *out)
{
    pc_points v = view(data, t, 0, i + 1, dim);
    for (size_t d = 0; d < dim; d++) {
        switch (v.dtype) {
        case PC_F32: out[d] = ((const float *)data)[i * dim + d]; break;
        case PC_F64: out[d] = (float)((const double *)data)[i * dim + d]; break;
        default: out[d] = ((const uint8_t *)data)[i * dim + d]; break;
        }
    }
}

/* Streamed == pc_kmeans from the same given centres: labels, centres bit for bit, iterations. */
static void test_same_as_kmeans(uint64_t seed)
{
    const pc_dtype types[] = {PC_F32, PC_F64, PC_U8};
    const char *names[] = {"float32", "float64", "uint8"};
    const pc_backend backends[] = {PC_BACKEND_SEQUENTIAL, openmp()};
    for (int ti = 0; ti < 3; ti++)
        for (int special = 0; special < 3; special++) {
            /* special 0: plain; 1: a centre far away and two duplicates (empty clusters: the relocation
             * rule); 2: tol 0 and at most 7 iterations (the iteration limit, no early stop) */
            size_t n = 6000 + below(3000), dim = 1 + (size_t)(ti + special) % 4, k = 12 + below(12);
            double magnitude = special == 1 && types[ti] == PC_F64 ? 1e30 : 1.0; /* a frame with e != 0 */
            void *data = blob_data(types[ti], n, dim, 8, magnitude, seed + 17 * ti + special);
            float *given = malloc(k * dim * sizeof *given);
            for (size_t c = 0; c < k; c++)
                row_f32(data, types[ti], below(n), dim, given + c * dim);
            if (special == 1) {
                for (size_t d = 0; d < dim; d++) {
                    given[d] = given[d] * 3 + (float)(1000 * magnitude);
                    given[1 * dim + d] = given[2 * dim + d];
                    given[3 * dim + d] = given[2 * dim + d];
                }
            }
            pc_kmeans_params p;
            pc_kmeans_params_init(&p);
            p.k = k;
            p.init = PC_INIT_GIVEN;
            p.initial_centers = given;
            if (special == 2) {
                p.tol = 0;
                p.max_iter = 7;
            }
            p.backend = PC_BACKEND_SEQUENTIAL;
            pc_points all = view(data, types[ti], 0, n, dim);
            pc_result *ref = NULL;
            CHECK_STATUS(pc_kmeans(&all, &p, &ref), PC_OK);
            int32_t *labels = malloc(n * sizeof *labels);
            for (int bi = 0; ref && bi < 2; bi++)
                for (int layout = 0; layout < 3; layout++) {
                    /* layout 0: one block; 1: blocks of 1..2000 rows shuffled; 2: of 1..40 rows */
                    p.backend = backends[bi];
                    p.threads = bi ? 2 : 0;
                    memset(labels, 0xff, n * sizeof *labels);
                    pc_result *r = stream_run(data, types[ti], n, dim, &p, 0, layout == 0 ? 0 : layout == 1 ? 2000 : 40,
                                              layout != 0, labels);
                    if (!r)
                        continue;
                    int same_labels = memcmp(labels, pc_result_labels(ref), n * sizeof *labels) == 0;
                    int same_centres =
                        memcmp(pc_result_centers(r), pc_result_centers(ref), k * dim * sizeof(float)) == 0;
                    CHECK_MSG(same_labels && same_centres && pc_result_iterations(r) == pc_result_iterations(ref),
                              "%s, case %d, %s, layout %d: labels %s, centres %s, iterations %d vs %d", names[ti],
                              special,
                              pc_backend_name(backends[bi]), layout, same_labels ? "equal" : "differ",
                              same_centres ? "equal" : "differ", pc_result_iterations(r), pc_result_iterations(ref));
                    int64_t total = 0;
                    for (size_t c = 0; c < k; c++)
                        total += pc_result_sizes(r)[c];
                    CHECK(total == (int64_t)n && pc_result_n(r) == n && pc_result_labels(r) == NULL);
                    /* The last pass's inertia (to the centres before the last update): at least the final
                     * one, which the update and the final assignment can only lower, and near it. */
                    if (special == 0)
                        CHECK_MSG(pc_result_inertia(r) >= pc_result_inertia(ref) * (1 - 1e-6) &&
                                  pc_result_inertia(r) <= pc_result_inertia(ref) * 1.01,
                                  "inertia %.9g, pc_kmeans's %.9g", pc_result_inertia(r), pc_result_inertia(ref));
                    pc_result_free(r);
                }
            if (ref && special == 1) { /* the relocation ran: no centre was left far away */
                int moved = 1;
                for (size_t c = 0; c < k; c++)
                    moved &= fabs(pc_result_centers(ref)[c * dim] - given[0]) > 1e-3 * fabs(given[0]);
                CHECK_MSG(moved, "%s: the far centre kept no point yet stayed", names[ti]);
            }
            pc_result_free(ref);
            free(labels);
            free(given);
            free(data);
        }
}

/* With the sample holding every point, the initialisations draw what pc_kmeans draws. */
static void test_same_init(uint64_t seed)
{
    const pc_kmeans_init inits[] = {PC_INIT_KMEANSPP, PC_INIT_RANDOM, PC_INIT_KMEANS_PARALLEL};
    for (int i = 0; i < 3; i++) {
        size_t n = 5000, dim = 3, k = 15;
        float *x = test_blobs(n, dim, 10, 1.0, 10, seed + 300 + i, NULL);
        pc_kmeans_params p;
        pc_kmeans_params_init(&p);
        p.k = k;
        p.init = inits[i];
        p.seed = seed;
        p.backend = openmp();
        pc_points all = pc_points_f32(x, n, dim);
        pc_result *ref = NULL;
        CHECK_STATUS(pc_kmeans(&all, &p, &ref), PC_OK);
        int32_t *labels = malloc(n * sizeof *labels);
        pc_result *r = stream_run(x, PC_F32, n, dim, &p, n, 700, 1, labels);
        CHECK_MSG(ref && r && memcmp(pc_result_centers(r), pc_result_centers(ref), k * dim * sizeof(float)) == 0 &&
                  memcmp(labels, pc_result_labels(ref), n * sizeof *labels) == 0,
                  "init %s: the stream's run differs from pc_kmeans's", pc_kmeans_init_name(inits[i]));
        pc_result_free(r);
        pc_result_free(ref);
        free(labels);
        free(x);
    }
}

/* Two streams fed halves, exchanging their partial states after the scan and after each pass, reach
 * the centres of one stream fed all, bit for bit; pc_kmeans_stream_merge too. */
static void exchange(pc_kmeans_stream *a, pc_kmeans_stream *b)
{
    size_t na = 0, nb = 0;
    CHECK_STATUS(pc_kmeans_stream_partial(a, NULL, &na), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_partial(b, NULL, &nb), PC_OK);
    unsigned char *pa = malloc(na), *pb = malloc(nb);
    CHECK_STATUS(pc_kmeans_stream_partial(a, pa, &na), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_partial(b, pb, &nb), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_merge_partial(a, pb, nb), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_merge_partial(b, pa, na), PC_OK);
    free(pa);
    free(pb);
}

static void feed(pc_kmeans_stream *s, const float *x, size_t begin, size_t end, size_t dim, int scan, size_t max)
{
    while (begin < end) {
        size_t e = begin + 1 + below(max);
        e = e < end ? e : end;
        pc_points v = pc_points_f32(x + begin * dim, e - begin, dim);
        if (scan)
            CHECK_STATUS(pc_kmeans_stream_scan(s, &v, begin), PC_OK);
        else
            CHECK_STATUS(pc_kmeans_stream_add(s, &v), PC_OK);
        begin = e;
    }
}

static void test_merge_halves(uint64_t seed)
{
    size_t n = 40000, dim = 4, k = 20, half = 17000;
    float *x = test_blobs(n, dim, 12, 1.5, 10, seed + 400, NULL);
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    p.k = k;
    p.seed = seed;
    p.backend = PC_BACKEND_SEQUENTIAL;
    int32_t *labels = malloc(n * sizeof *labels);
    pc_result *one = stream_run(x, PC_F32, n, dim, &p, 3000, 5000, 1, labels); /* the sample: 3000 of 40000 */
    pc_kmeans_stream *a = NULL, *b = NULL, *c = NULL;
    CHECK_STATUS(pc_kmeans_stream_create(&p, dim, 3000, &a), PC_OK);
    p.backend = openmp(); /* the halves on other backends: the same numbers */
    CHECK_STATUS(pc_kmeans_stream_create(&p, dim, 3000, &b), PC_OK);
    feed(a, x, 0, half, dim, 1, 900);
    feed(b, x, half, n, dim, 1, 4000);
    exchange(a, b);
    CHECK_STATUS(pc_kmeans_stream_start(a), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_start(b), PC_OK);
    int da = 0, db = 0, passes = 0;
    while (!da && passes++ < 400) {
        feed(a, x, 0, half, dim, 0, 3000);
        feed(b, x, half, n, dim, 0, 500);
        exchange(a, b);
        CHECK_STATUS(pc_kmeans_stream_step(a, &da), PC_OK);
        CHECK_STATUS(pc_kmeans_stream_step(b, &db), PC_OK);
        CHECK(da == db);
    }
    pc_result *ra = NULL, *rb = NULL, *rc = NULL;
    CHECK_STATUS(pc_kmeans_stream_result(a, &ra), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_result(b, &rb), PC_OK);
    CHECK(one && ra && rb && memcmp(pc_result_centers(ra), pc_result_centers(one), k * dim * sizeof(float)) == 0 &&
          memcmp(pc_result_centers(rb), pc_result_centers(one), k * dim * sizeof(float)) == 0 &&
          pc_result_iterations(ra) == pc_result_iterations(one) && pc_result_inertia(ra) == pc_result_inertia(one));
    /* pc_kmeans_stream_merge: the scans of a and c into one stream that runs alone. */
    pc_kmeans_stream_free(a);
    pc_kmeans_stream_free(b);
    p.backend = PC_BACKEND_SEQUENTIAL;
    CHECK_STATUS(pc_kmeans_stream_create(&p, dim, 3000, &a), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_create(&p, dim, 3000, &c), PC_OK);
    feed(a, x, half, n, dim, 1, 2000);
    feed(c, x, 0, half, dim, 1, 2000);
    CHECK_STATUS(pc_kmeans_stream_merge(a, c), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_start(a), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_merge(a, c), PC_INVALID_ARGUMENT); /* one iterates, the other scans */
    for (da = 0, passes = 0; !da && passes++ < 400;) {
        feed(a, x, 0, n, dim, 0, 7000);
        CHECK_STATUS(pc_kmeans_stream_step(a, &da), PC_OK);
    }
    CHECK_STATUS(pc_kmeans_stream_result(a, &rc), PC_OK);
    CHECK(one && rc && memcmp(pc_result_centers(rc), pc_result_centers(one), k * dim * sizeof(float)) == 0);
    pc_result_free(ra);
    pc_result_free(rb);
    pc_result_free(rc);
    pc_result_free(one);
    pc_kmeans_stream_free(a);
    pc_kmeans_stream_free(c);
    free(labels);
    free(x);
}

/* A pass's partial state itself (not only the centres rounded from it) is the same integers whatever
 * the blocks, their order and the threads: sums, counts, inertia buckets, sums of squares, and the
 * farthest points. */
static void test_pass_order_free(uint64_t seed)
{
    (void)seed;
    size_t n = 30000, dim = 2, k = 6;
    /* Points of small integer coordinates and every centre at (10, 10): five empty clusters, and
     * hundreds of points equally far in each corner: which five are the farthest is decided by their
     * coordinates, not by the order they come in. */
    uint8_t *data = malloc(n * dim);
    for (size_t q = 0; q < n * dim / 2; q++) { /* each point mirrored: the mean is exactly (10, 10) */
        data[q] = (uint8_t)below(21);
        data[n * dim / 2 + q] = (uint8_t)(20 - data[q]);
    }
    float *given = malloc(k * dim * sizeof *given);
    for (size_t q = 0; q < k * dim; q++)
        given[q] = 10;
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    p.k = k;
    p.init = PC_INIT_GIVEN;
    p.initial_centers = given;
    pc_kmeans_stream *s[2] = {NULL, NULL};
    size_t *bounds = malloc((n + 2) * sizeof *bounds), *order = malloc((n + 1) * sizeof *order);
    for (int run = 0; run < 2; run++) {
        p.backend = run ? openmp() : PC_BACKEND_SEQUENTIAL;
        p.threads = 3;
        CHECK_STATUS(pc_kmeans_stream_create(&p, dim, 0, &s[run]), PC_OK);
        if (!s[run])
            return;
        size_t nb = make_blocks(n, run ? 300 : 0, bounds);
        for (int pass = 0; pass < 2; pass++) {
            shuffle(order, nb, run);
            for (size_t b = 0; b < nb; b++) {
                pc_points v = view(data, PC_U8, bounds[order[b]], bounds[order[b] + 1], dim);
                if (pass == 0)
                    CHECK_STATUS(pc_kmeans_stream_scan(s[run], &v, bounds[order[b]]), PC_OK);
                else
                    CHECK_STATUS(pc_kmeans_stream_add(s[run], &v), PC_OK);
            }
            if (pass == 0)
                CHECK_STATUS(pc_kmeans_stream_start(s[run]), PC_OK);
        }
    }
    const pc__km_pass_part *a = &s[0]->pass, *b = &s[1]->pass;
    CHECK(memcmp(a->sums, b->sums, k * dim * sizeof *a->sums) == 0);
    CHECK(memcmp(a->counts, b->counts, k * sizeof *a->counts) == 0);
    CHECK(memcmp(a->inertia, b->inertia, PC__KM_INERTIA_BUCKETS * sizeof *a->inertia) == 0);
    CHECK(memcmp(a->squares, b->squares, dim * sizeof *a->squares) == 0);
    pc__km_far fa = a->far, fb = b->far; /* sorted in place: both are read-only from here */
    pc__km_far_sort(&fa);
    pc__km_far_sort(&fb);
    int same_far = fa.count == k - 1 && fb.count == k - 1;
    for (size_t i = 0; same_far && i < fa.count; i++)
        same_far = fa.dist[fa.heap[i]] == fb.dist[fb.heap[i]] && fa.label[fa.heap[i]] == fb.label[fb.heap[i]] &&
                   memcmp(fa.x + fa.heap[i] * dim, fb.x + fb.heap[i] * dim, dim * sizeof(float)) == 0;
    CHECK_MSG(same_far, "the farthest points differ between blockings");
    pc_kmeans_stream_free(s[0]);
    pc_kmeans_stream_free(s[1]);
    /* And the whole run is pc_kmeans's: the same equally far points moved into the empty clusters. */
    pc_points all = view(data, PC_U8, 0, n, dim);
    pc_result *ref = NULL, *r = NULL;
    CHECK_STATUS(pc_kmeans(&all, &p, &ref), PC_OK);
    int32_t *labels = malloc(n * sizeof *labels);
    r = stream_run(data, PC_U8, n, dim, &p, 0, 500, 1, labels);
    CHECK(ref && r && memcmp(labels, pc_result_labels(ref), n * sizeof *labels) == 0 &&
          memcmp(pc_result_centers(r), pc_result_centers(ref), k * dim * sizeof(float)) == 0 &&
          pc_result_iterations(r) == pc_result_iterations(ref));
    pc_result_free(ref);
    pc_result_free(r);
    free(labels);
    free(bounds);
    free(order);
    free(given);
    free(data);
}

/* The sample: the same points whatever the blocks, and uniform over the points (their indices in
 * 20 bins, chi-square; their mean). */
static void test_sample(uint64_t seed)
{
    size_t n = 200000, m = 5000, dim = 1;
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)i; /* a point's value is its index */
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    p.k = 3;
    p.seed = seed;
    uint64_t *keys[2] = {NULL, NULL};
    for (int run = 0; run < 2; run++) {
        p.backend = run ? openmp() : PC_BACKEND_SEQUENTIAL;
        pc_kmeans_stream *s = NULL;
        CHECK_STATUS(pc_kmeans_stream_create(&p, dim, m, &s), PC_OK);
        if (!s)
            return;
        if (run == 0) {
            pc_points v = pc_points_f32(x, n, dim);
            CHECK_STATUS(pc_kmeans_stream_scan(s, &v, 0), PC_OK);
        } else { /* uneven blocks, backwards */
            size_t end = n;
            while (end > 0) {
                size_t len = 1 + below(9000), begin = end > len ? end - len : 0;
                pc_points v = pc_points_f32(x + begin, end - begin, dim);
                CHECK_STATUS(pc_kmeans_stream_scan(s, &v, begin), PC_OK);
                end = begin;
            }
        }
        const pc__km_sample *smp = &s->scan.sample;
        CHECK(smp->count == m);
        keys[run] = calloc(n, sizeof(uint64_t));
        double mean = 0, bins[20] = {0};
        for (size_t i = 0; i < smp->count; i++) {
            size_t index = (size_t)smp->index[i];
            CHECK(smp->rows[i] == (float)index); /* the row kept is the point's */
            keys[run][index] = smp->key[i] | 1;
            mean += smp->rows[i];
            bins[index * 20 / n]++;
        }
        mean /= (double)m;
        double chi2 = 0, expect = (double)m / 20;
        for (int b = 0; b < 20; b++)
            chi2 += (bins[b] - expect) * (bins[b] - expect) / expect;
        /* 19 degrees of freedom: P(chi2 > 60) is about 4e-6; the mean's deviation is 5 sigma at 2000 */
        CHECK_MSG(chi2 < 60, "sample's chi-square over 20 bins of indices: %.1f", chi2);
        CHECK_MSG(fabs(mean - (n - 1) / 2.0) < 5 * (n / sqrt(12.0)) / sqrt((double)m), "sample mean %.1f, data's %.1f",
                  mean, (n - 1) / 2.0);
        pc_kmeans_stream_free(s);
    }
    CHECK(keys[0] && keys[1] && memcmp(keys[0], keys[1], n * sizeof(uint64_t)) == 0);
    free(keys[0]);
    free(keys[1]);
    free(x);
}

/* k-means++ on a sample of 5% of well-separated blobs: the blobs found, the inertia of pc_kmeans's. */
static void test_sample_init_quality(uint64_t seed)
{
    size_t n = 100000, dim = 2, k = 16;
    int32_t *truth;
    float *x = test_lattice(n, dim, k, 0.5, 10, seed + 500, &truth);
    const pc_kmeans_init inits[] = {PC_INIT_KMEANSPP, PC_INIT_KMEANS_PARALLEL};
    for (int i = 0; i < 2; i++) {
        pc_kmeans_params p;
        pc_kmeans_params_init(&p);
        p.k = k;
        p.init = inits[i];
        p.seed = seed;
        p.n_init = 3;
        pc_points all = pc_points_f32(x, n, dim);
        pc_result *ref = NULL;
        CHECK_STATUS(pc_kmeans(&all, &p, &ref), PC_OK);
        p.n_init = 1;
        int32_t *labels = malloc(n * sizeof *labels);
        pc_result *r = stream_run(x, PC_F32, n, dim, &p, 5000, 30000, 1, labels);
        double ari = 0;
        CHECK(r && pc_adjusted_rand_index(truth, labels, n, &ari) == PC_OK);
        CHECK_MSG(ari >= 0.99, "init %s on the sample: ARI %.4f", pc_kmeans_init_name(inits[i]), ari);
        if (r && ref)
            CHECK_MSG(pc_result_inertia(r) <= 1.01 * pc_result_inertia(ref), "init %s on the sample: inertia %.6g, "
                      "pc_kmeans's %.6g", pc_kmeans_init_name(inits[i]), pc_result_inertia(r), pc_result_inertia(ref));
        pc_result_free(r);
        pc_result_free(ref);
        free(labels);
    }
    free(x);
    free(truth);
}

/* scikit-learn's empty-cluster rule lists the empty clusters before any point moves: here clusters 0
 * and 2 are empty, the farthest point (50) is cluster 1's only point, and its move leaves cluster 1
 * empty without giving it a point (the next farthest, 2, goes to cluster 2). */
static void test_emptied_cluster(void)
{
    float x[] = {0, 1, 50, 2}, init[] = {1000, 40, 2000, 0.5f}, expect[] = {50, 40, 2, 0.5f};
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    p.k = 4;
    p.init = PC_INIT_GIVEN;
    p.initial_centers = init;
    p.max_iter = 1;
    p.backend = PC_BACKEND_SEQUENTIAL;
    pc_points v = pc_points_f32(x, 4, 1);
    pc_result *ref = NULL;
    CHECK_STATUS(pc_kmeans(&v, &p, &ref), PC_OK);
    int32_t labels[4];
    pc_result *r = stream_run(x, PC_F32, 4, 1, &p, 0, 1, 1, labels);
    for (int c = 0; ref && r && c < 4; c++) {
        CHECK_NEAR(pc_result_centers(ref)[c], expect[c], 1e-5);
        CHECK(pc_result_centers(r)[c] == pc_result_centers(ref)[c]);
    }
    CHECK(ref && memcmp(labels, pc_result_labels(ref), sizeof labels) == 0);
    pc_result_free(ref);
    pc_result_free(r);
}

static int error_has(const char *text)
{
    int ok = strstr(pc_last_error(), text) != NULL;
    if (!ok)
        fprintf(stderr, "expected '%s' in: %s\n", text, pc_last_error());
    return ok;
}

static void test_bad_calls(void)
{
    float x[40];
    for (int i = 0; i < 40; i++)
        x[i] = (float)(i % 7) + (float)i / 10;
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    p.k = 3;
    pc_kmeans_stream *s = NULL, *t = NULL;
    pc_points v = pc_points_f32(x, 20, 2), v3 = pc_points_f32(x, 10, 3);
    int32_t labels[20];
    int done = 0;
    CHECK_STATUS(pc_kmeans_stream_create(&p, 0, 0, &s), PC_INVALID_ARGUMENT);
    p.backend = PC_BACKEND_CUDA; /* taken where a GPU is (test_kmeans_stream_cuda), else refused naming it */
    if (!pc_backend_available(PC_BACKEND_CUDA) || pc_cuda_device_count() <= 0) {
        CHECK(pc_kmeans_stream_create(&p, 2, 0, &s) != PC_OK && s == NULL);
        CHECK(error_has("CUDA"));
    }
    p.backend = PC_BACKEND_AUTO;
    p.n_init = 2;
    CHECK_STATUS(pc_kmeans_stream_create(&p, 2, 0, &s), PC_INVALID_ARGUMENT);
    CHECK(error_has("n_init"));
    p.n_init = 1;
    CHECK_STATUS(pc_kmeans_stream_create(&p, 2, 2, &s), PC_INVALID_ARGUMENT); /* sample < k */
    CHECK_STATUS(pc_kmeans_stream_create(&p, 2, 0, &s), PC_OK);
    if (!s)
        return;
    /* before start */
    CHECK_STATUS(pc_kmeans_stream_add(s, &v), PC_INVALID_ARGUMENT);
    CHECK(error_has("pc_kmeans_stream_start"));
    CHECK_STATUS(pc_kmeans_stream_step(s, &done), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_kmeans_stream_label(s, &v, labels), PC_INVALID_ARGUMENT);
    pc_result *r = NULL;
    CHECK_STATUS(pc_kmeans_stream_result(s, &r), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_kmeans_stream_start(s), PC_INVALID_ARGUMENT); /* nothing scanned: k > 0 points */
    CHECK(error_has("exceed"));
    CHECK_STATUS(pc_kmeans_stream_scan(s, &v3, 0), PC_INVALID_ARGUMENT); /* another dim */
    CHECK(error_has("3 values per point"));
    x[2 * 7 + 1] = NAN;
    pc_points v10 = pc_points_f32(x, 10, 2);
    CHECK_STATUS(pc_kmeans_stream_scan(s, &v10, 0), PC_INVALID_ARGUMENT);
    CHECK(error_has("row 7, dimension 1"));
    x[2 * 7 + 1] = 1;
    pc_points tiny = pc_points_f32(x, 2, 2);
    CHECK_STATUS(pc_kmeans_stream_scan(s, &tiny, 0), PC_OK); /* the refused block left nothing behind */
    CHECK_STATUS(pc_kmeans_stream_start(s), PC_INVALID_ARGUMENT); /* 2 points, k 3 */
    CHECK(error_has("k (3) must not exceed the number of points scanned (2)"));
    pc_points rest = pc_points_f32(x + 4, 18, 2);
    CHECK_STATUS(pc_kmeans_stream_scan(s, &rest, 2), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_start(s), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_start(s), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_kmeans_stream_scan(s, &v, 0), PC_INVALID_ARGUMENT);
    CHECK(error_has("before pc_kmeans_stream_start"));
    CHECK_STATUS(pc_kmeans_stream_step(s, &done), PC_INVALID_ARGUMENT); /* nothing added */
    CHECK(error_has("added 0 points, the scan 20"));
    float outside[4] = {x[0], x[1], 1e6f, x[1]};
    pc_points far = pc_points_f32(outside, 2, 2);
    CHECK_STATUS(pc_kmeans_stream_add(s, &far), PC_INVALID_ARGUMENT);
    CHECK(error_has("row 1, dimension 0"));
    CHECK_STATUS(pc_kmeans_stream_add(s, &v), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_add(s, &tiny), PC_INVALID_ARGUMENT); /* more points than scanned */
    CHECK_STATUS(pc_kmeans_stream_label(s, &v, labels), PC_INVALID_ARGUMENT); /* not done */
    /* merges between streams in other states */
    CHECK_STATUS(pc_kmeans_stream_create(&p, 2, 0, &t), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_merge(s, t), PC_INVALID_ARGUMENT);
    size_t size = 0;
    CHECK_STATUS(pc_kmeans_stream_partial(t, NULL, &size), PC_OK);
    unsigned char *buf = malloc(size);
    CHECK_STATUS(pc_kmeans_stream_partial(t, buf, &size), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_merge_partial(s, buf, size), PC_INVALID_ARGUMENT); /* a scan's, into a pass */
    CHECK_STATUS(pc_kmeans_stream_merge_partial(t, buf, size - 1), PC_INVALID_ARGUMENT); /* cut short */
    buf[0] ^= 1;
    CHECK_STATUS(pc_kmeans_stream_merge_partial(t, buf, size), PC_INVALID_ARGUMENT);
    free(buf);
    while (!done && pc_kmeans_stream_step(s, &done) == PC_OK && !done)
        CHECK_STATUS(pc_kmeans_stream_add(s, &v), PC_OK);
    CHECK(done);
    CHECK_STATUS(pc_kmeans_stream_add(s, &v), PC_INVALID_ARGUMENT); /* the run is over */
    CHECK(error_has("the stream is done"));
    CHECK_STATUS(pc_kmeans_stream_label(s, &v, labels), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_result(s, &r), PC_OK);
    for (int i = 0; r && i < 20; i++)
        CHECK(labels[i] >= 0 && labels[i] < 3);
    pc_result_free(r);
    pc_kmeans_stream_free(s);
    pc_kmeans_stream_free(t);
    pc_kmeans_stream_free(NULL);
}

int main(void)
{
    uint64_t seed = test_seed("kmeans_stream");
    rng_state = seed;
    test_same_as_kmeans(seed);
    test_same_init(seed);
    test_merge_halves(seed);
    test_pass_order_free(seed);
    test_emptied_cluster();
    test_sample(seed);
    test_sample_init_quality(seed);
    test_bad_calls();
    return check_report("kmeans_stream");
}
