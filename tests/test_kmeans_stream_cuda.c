/* The CUDA backend under pc_kmeans_stream against its OpenMP backend on the same blocks: the same
 * iterations, centres, cluster sizes and inertia, bit for bit, and the same labels (the GPU finds the
 * nearest centres by the CPU's own arithmetic; the host gathers the rest), for float32, float64 and
 * uint8 blocks of uneven sizes that cross the GPU's pieces of 2^18 rows, several k and dimensions,
 * k-means++ and given starts; labels from two threads at once; a refused block (a value the scan did
 * not see) named with its row. Exits 77 (skipped) without a CUDA device. PC_CUDA_TEST_QUICK (for
 * compute-sanitizer) takes smaller sizes. */
#include "check.h"
#include "parclust.h"
#include "test_util.h"

#include <pthread.h>
#include <string.h>

static size_t elem_size(pc_dtype t) { return t == PC_F64 ? 8 : t == PC_F32 ? 4 : 1; }

static pc_points view(const void *data, pc_dtype t, size_t begin, size_t end, size_t dim)
{
    const unsigned char *p = (const unsigned char *)data + begin * dim * elem_size(t);
    return t == PC_F64 ? pc_points_f64((const double *)(const void *)p, end - begin, dim)
           : t == PC_F32 ? pc_points_f32((const float *)(const void *)p, end - begin, dim)
                         : pc_points_u8(p, end - begin, dim);
}

/* Blobs in the asked type (uint8: stretched over 0..255, many ties and duplicates). */
static void *blob_data(pc_dtype t, size_t n, size_t dim, size_t blobs, uint64_t seed)
{
    float *f = test_blobs(n, dim, blobs, 1.0, 10.0, seed, NULL);
    if (t == PC_F32)
        return f;
    void *out = malloc(n * dim * elem_size(t));
    for (size_t i = 0; out && i < n * dim; i++) {
        if (t == PC_F64)
            ((double *)out)[i] = (double)f[i] * 1e3 + 1e-3 * (double)(i % 7);
        else {
            double v = (f[i] + 14.0) * 9.0;
            ((unsigned char *)out)[i] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
    free(f);
    return out;
}

/* Block bounds: uneven sizes (a third, a prime, the rest) so that pieces and chunks end mid-block. */
static size_t blocks_of(size_t n, size_t *b)
{
    size_t m = 0;
    b[m++] = 0;
    if (n / 3 > 0)
        b[m++] = n / 3;
    if (n / 3 + 262147 < n)
        b[m++] = n / 3 + 262147;
    b[m++] = n;
    return m - 1;
}

/* A whole streamed run on `backend`; labels of every point. */
static pc_result *run(const void *data, pc_dtype t, size_t n, size_t dim, const pc_kmeans_params *base,
                      pc_backend backend, int32_t *labels)
{
    pc_kmeans_params p = *base;
    p.backend = backend;
    size_t b[8], nb = blocks_of(n, b);
    pc_kmeans_stream *s = NULL;
    pc_result *r = NULL;
    pc_status st = pc_kmeans_stream_create(&p, dim, 0, &s);
    for (size_t i = 0; st == PC_OK && i < nb; i++) {
        pc_points v = view(data, t, b[i], b[i + 1], dim);
        st = pc_kmeans_stream_scan(s, &v, b[i]);
    }
    if (st == PC_OK)
        st = pc_kmeans_stream_start(s);
    int done = 0;
    while (st == PC_OK && !done) {
        for (size_t i = nb; st == PC_OK && i-- > 0;) { /* last block first: order does not matter */
            pc_points v = view(data, t, b[i], b[i + 1], dim);
            st = pc_kmeans_stream_add(s, &v);
        }
        if (st == PC_OK)
            st = pc_kmeans_stream_step(s, &done);
    }
    for (size_t i = 0; st == PC_OK && i < nb; i++) {
        pc_points v = view(data, t, b[i], b[i + 1], dim);
        st = pc_kmeans_stream_label(s, &v, labels + b[i]);
    }
    if (st == PC_OK)
        st = pc_kmeans_stream_result(s, &r);
    CHECK_MSG(st == PC_OK, "%s stream: %s", pc_backend_name(backend), pc_last_error());
    if (r)
        CHECK_MSG(pc_result_backend(r) == backend, "ran on %s", pc_backend_name(pc_result_backend(r)));
    pc_kmeans_stream_free(s);
    return r;
}

static void compare(const char *what, pc_dtype t, size_t n, size_t dim, size_t k, pc_kmeans_init init, uint64_t seed)
{
    void *data = blob_data(t, n, dim, k, seed);
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    p.k = k;
    p.seed = seed;
    p.init = init;
    p.max_iter = 30;
    float *given = NULL;
    if (init == PC_INIT_GIVEN) { /* the first k points, as float32 */
        given = malloc(k * dim * sizeof *given);
        for (size_t i = 0; i < k * dim; i++)
            given[i] = t == PC_F64 ? (float)((double *)data)[i * 97 % (n * dim)]
                       : t == PC_F32 ? ((float *)data)[i * 97 % (n * dim)]
                                     : (float)((unsigned char *)data)[i * 97 % (n * dim)];
        p.initial_centers = given;
    }
    int32_t *lc = malloc(n * sizeof *lc), *lg = malloc(n * sizeof *lg);
    pc_backend cpu = pc_backend_available(PC_BACKEND_OPENMP) ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
    pc_result *rc = run(data, t, n, dim, &p, cpu, lc), *rg = run(data, t, n, dim, &p, PC_BACKEND_CUDA, lg);
    if (rc && rg) {
        CHECK_MSG(pc_result_iterations(rc) == pc_result_iterations(rg), "%s: iterations %d vs %d", what,
                  pc_result_iterations(rc), pc_result_iterations(rg));
        CHECK_MSG(memcmp(pc_result_centers(rc), pc_result_centers(rg), k * dim * sizeof(float)) == 0,
                  "%s: centres differ", what);
        CHECK_MSG(memcmp(pc_result_sizes(rc), pc_result_sizes(rg), k * sizeof(int64_t)) == 0, "%s: sizes differ",
                  what);
        CHECK_MSG(pc_result_inertia(rc) == pc_result_inertia(rg), "%s: inertia %.17g vs %.17g", what,
                  pc_result_inertia(rc), pc_result_inertia(rg));
        size_t differ = 0;
        for (size_t i = 0; i < n; i++)
            differ += lc[i] != lg[i];
        CHECK_MSG(differ == 0, "%s: %zu of %zu labels differ", what, differ, n);
        printf("%s: %d iterations, inertia %.9g, the same on both\n", what, pc_result_iterations(rg),
               pc_result_inertia(rg));
    }
    pc_result_free(rc);
    pc_result_free(rg);
    free(lc);
    free(lg);
    free(given);
    free(data);
}

/* Two threads labelling halves of the points at once through one CUDA stream. */
typedef struct {
    const pc_kmeans_stream *s;
    const float *x;
    size_t begin, end, dim;
    int32_t *labels;
    pc_status st;
} half;

static void *label_half(void *arg)
{
    half *h = arg;
    pc_points v = pc_points_f32(h->x + h->begin * h->dim, h->end - h->begin, h->dim);
    h->st = pc_kmeans_stream_label(h->s, &v, h->labels + h->begin);
    return NULL;
}

static void test_threads_and_refusal(size_t n, uint64_t seed)
{
    size_t dim = 5, k = 12;
    float *x = test_blobs(n, dim, k, 1.0, 10.0, seed, NULL);
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    p.k = k;
    p.seed = seed;
    p.backend = PC_BACKEND_CUDA;
    pc_kmeans_stream *s = NULL;
    pc_points all = pc_points_f32(x, n, dim);
    int done = 0;
    CHECK_STATUS(pc_kmeans_stream_create(&p, dim, 0, &s), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_scan(s, &all, 0), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_start(s), PC_OK);
    while (!done && pc_kmeans_stream_add(s, &all) == PC_OK && pc_kmeans_stream_step(s, &done) == PC_OK)
        ;
    CHECK(done);
    int32_t *one = malloc(n * sizeof *one), *two = malloc(n * sizeof *two);
    CHECK_STATUS(pc_kmeans_stream_label(s, &all, one), PC_OK);
    half h[2] = {{s, x, 0, n / 2, dim, two, PC_OK}, {s, x, n / 2, n, dim, two, PC_OK}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, label_half, &h[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    CHECK(h[0].st == PC_OK && h[1].st == PC_OK);
    CHECK_MSG(memcmp(one, two, n * sizeof *one) == 0, "labels from two threads at once differ");
    /* A block with a value the scan never saw: refused with its row, past the first GPU piece. */
    pc_kmeans_stream *r = NULL;
    CHECK_STATUS(pc_kmeans_stream_create(&p, dim, 0, &r), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_scan(r, &all, 0), PC_OK);
    CHECK_STATUS(pc_kmeans_stream_start(r), PC_OK);
    size_t row = n - 3;
    x[row * dim + 2] = 1e9f;
    CHECK_STATUS(pc_kmeans_stream_add(r, &all), PC_INVALID_ARGUMENT);
    char want[64];
    snprintf(want, sizeof want, "block row %zu, dimension 2", row);
    CHECK_MSG(strstr(pc_last_error(), want) != NULL, "refusal: %s", pc_last_error());
    pc_kmeans_stream_free(r);
    pc_kmeans_stream_free(s);
    free(one);
    free(two);
    free(x);
}

int main(void)
{
    if (!pc_backend_available(PC_BACKEND_CUDA) || pc_cuda_device_count() <= 0) {
        printf("kmeans_stream_cuda: no CUDA device, skipped\n");
        return 77;
    }
    uint64_t seed = test_seed("kmeans_stream_cuda");
    int quick = getenv("PC_CUDA_TEST_QUICK") != NULL;
    size_t big = quick ? 300001 : 700001;
    compare("float32 700k x 3, k 8, k-means++", PC_F32, big, 3, 8, PC_INIT_KMEANSPP, seed);
    compare("float64 x 16, k 100, random", PC_F64, quick ? 60000 : 200000, 16, 100, PC_INIT_RANDOM, seed + 1);
    compare("uint8 x 4, k 6, given", PC_U8, big, 4, 6, PC_INIT_GIVEN, seed + 2);
    compare("float32 x 1, k 3, k-means++ (tiny blocks)", PC_F32, 1001, 1, 3, PC_INIT_KMEANSPP, seed + 3);
    /* The GPU's nearest-centre kernels by width: a point in 4, 16 or 64 registers, or read from memory. */
    compare("float32 x 40, k 20, random", PC_F32, 30000, 40, 20, PC_INIT_RANDOM, seed + 4);
    compare("float32 x 70, k 12, random", PC_F32, 20000, 70, 12, PC_INIT_RANDOM, seed + 5);
    test_threads_and_refusal(quick ? 270000 : 600000, seed + 4);
    return check_report("kmeans_stream_cuda");
}
