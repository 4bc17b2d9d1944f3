/* The CUDA backend under pc_hca_stream against pc_hca on the CPU, on the same points: labels,
 * dendrogram, components, cluster sizes and centres, for float32, float64, uint8 and uint16 blocks,
 * dense and sparse grids (and a dense host histogram counted in a device hash), uneven blocks in
 * shuffled order, strided rows, blocks through the GPU in pieces, the device's int32 counts folded into
 * the host's int64 histogram (forced every few hundred points, and past 2^31 points for real), merges
 * with CPU streams both ways, AUTO, labels from several threads at once, points labelled that were
 * never counted, a held block (a copy on the GPU, or the caller's rows in GPU memory with the labels
 * written there), and refusals (non-finite values, a card too small). Exits 77 (skipped) without a
 * CUDA device. PC_CUDA_TEST_QUICK (for compute-sanitizer) leaves out the large blocks and the 2.5e9
 * points, and takes dimension 2 only. The finish's component graph is made on the GPU and on the host. */
#include "check.h"
#include "parclust.h"
#include "test_util.h"
#include "hca_stream_blocks.h"

#include <pthread.h>
#include <string.h>
#ifdef PC_TEST_HAVE_CUDART
#include <cuda_runtime.h>
#endif

/* The test hook of src/hca/stream.c (in the static library, not in the public API): the stream's
 * device counts go to the host at least every `rows` points, and blocks go through in pieces of at most
 * `rows` rows. */
pc_status pc__hca_stream_fold_every(pc_hca_stream *stream, uint64_t rows);
/* ... and the finish's component graph on the GPU from `probes` neighbour probes up (0: always,
 * UINT64_MAX: never). */
void pc__hca_stream_graph_on_gpu_from(pc_hca_stream *stream, uint64_t probes);

static int quick;
static uint64_t graph_from = 1; /* make()'s streams: 1 leaves the stream's own threshold */

static pc_backend cpu_backend(void)
{
    return pc_backend_available(PC_BACKEND_OPENMP) ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
}

static pc_result *reference(const pc_points *all, const pc_hca_params *base)
{
    pc_hca_params p = *base;
    p.backend = cpu_backend();
    pc_result *r = NULL;
    CHECK_STATUS(pc_hca(all, &p, &r), PC_OK);
    return r;
}

static pc_hca_stream *make(const pc_hca_params *base, pc_backend backend, size_t dim, uint64_t fold_every)
{
    pc_hca_params p = *base;
    p.backend = backend;
    pc_hca_stream *s = NULL;
    CHECK_STATUS(pc_hca_stream_create(&p, dim, &s), PC_OK);
    if (s && fold_every)
        CHECK_STATUS(pc__hca_stream_fold_every(s, fold_every), PC_OK);
    if (s && graph_from != 1)
        pc__hca_stream_graph_on_gpu_from(s, graph_from);
    return s;
}

/* Everything but labels and centres: n, k, the dendrogram, the components, the cells, the sizes; the
 * stream's result ran on `backend` (ON_CPU: sequential or OpenMP). 1 when k agrees. */
#define ON_CPU PC_BACKEND_AUTO
static int same_results(const char *what, const pc_result *mem, const pc_result *str, pc_backend backend)
{
    size_t k = pc_result_cluster_count(mem), rows_m = 0, rows_s = 0;
    pc_backend ran = pc_result_backend(str);
    CHECK_MSG(backend == ON_CPU ? ran != PC_BACKEND_CUDA : ran == backend, "%s: ran on %s", what, pc_backend_name(ran));
    CHECK_MSG(pc_result_cluster_count(str) == k, "%s: k %zu vs %zu", what, pc_result_cluster_count(str), k);
    CHECK_MSG(pc_result_n(str) == pc_result_n(mem), "%s: n %zu vs %zu", what, pc_result_n(str), pc_result_n(mem));
    const double *zm = pc_result_dendrogram(mem, &rows_m), *zs = pc_result_dendrogram(str, &rows_s);
    CHECK_MSG(rows_m == rows_s && (rows_m == 0 || memcmp(zm, zs, rows_m * 4 * sizeof *zm) == 0),
              "%s: dendrograms differ (%zu vs %zu rows)", what, rows_m, rows_s);
    size_t comps = pc_result_component_count(mem);
    CHECK_MSG(pc_result_component_count(str) == comps && pc_result_cell_count(str) == pc_result_cell_count(mem),
              "%s: components %zu vs %zu, cells %zu vs %zu", what, pc_result_component_count(str), comps,
              pc_result_cell_count(str), pc_result_cell_count(mem));
    if (pc_result_component_count(str) == comps) {
        CHECK_MSG(memcmp(pc_result_component_cells(mem), pc_result_component_cells(str), comps * 8) == 0 &&
                      memcmp(pc_result_component_densities(mem), pc_result_component_densities(str), comps * 8) == 0 &&
                      memcmp(pc_result_component_sizes(mem), pc_result_component_sizes(str), comps * 8) == 0,
                  "%s: components differ", what);
    }
    if (pc_result_cluster_count(str) != k)
        return 0;
    CHECK_MSG(memcmp(pc_result_sizes(mem), pc_result_sizes(str), k * 8) == 0, "%s: sizes differ", what);
    return 1;
}

/* The stream's result, labels and sums against pc_hca's on the same points. */
static void compare(const char *what, const pc_result *mem, const pc_result *str, const int32_t *labels,
                    const double *sums, size_t n, size_t dim, int exact_centres, pc_backend backend)
{
    CHECK_MSG(mem && str, "%s: a run failed", what);
    if (!mem || !str)
        return;
    size_t k = pc_result_cluster_count(mem), diff = 0;
    for (size_t i = 0; i < n; i++)
        diff += labels[i] != pc_result_labels(mem)[i];
    CHECK_MSG(diff == 0, "%s: %zu of %zu labels differ", what, diff, n);
    if (!same_results(what, mem, str, backend) || !sums)
        return;
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

/* Bound, count and label `all` through one stream, blocks in the order given (counted in the reverse
 * order); labels and sums (room for 64 clusters) filled. */
static pc_result *stream_all(const pc_hca_params *p, pc_backend backend, uint64_t fold_every, const pc_points *all,
                             const size_t *start, const size_t *order, size_t blocks, int32_t *labels, double *sums)
{
    pc_hca_stream *s = make(p, backend, all->dim, fold_every);
    pc_result *r = NULL;
    if (!s)
        return NULL;
    for (size_t b = 0; b < blocks; b++) {
        pc_points v = rows_of(all, start[order[b]], start[order[b] + 1]);
        CHECK_STATUS(pc_hca_stream_bound(s, &v), PC_OK);
    }
    for (size_t b = 0; b < blocks; b++) {
        pc_points v = rows_of(all, start[order[blocks - 1 - b]], start[order[blocks - 1 - b] + 1]);
        CHECK_STATUS(pc_hca_stream_add(s, &v), PC_OK);
    }
    CHECK_STATUS(pc_hca_stream_finish(s, &r), PC_OK);
    size_t k = r ? pc_result_cluster_count(r) : 0;
    memset(sums, 0, (k ? k : 1) * (all->dim + 1) * sizeof *sums);
    for (size_t b = 0; b < blocks && r; b++) {
        pc_points v = rows_of(all, start[order[b]], start[order[b] + 1]);
        CHECK_STATUS(pc_hca_stream_label(s, &v, labels + start[order[b]], sums), PC_OK);
    }
    pc_hca_stream_free(s);
    return r;
}

/* Every type, dense and sparse, in one piece a block and in pieces of 997 rows with a fold before
 * every 997 points. */
static void same_as_pc_hca(uint64_t seed)
{
    const pc_dtype types[] = {PC_F32, PC_F64, PC_U8, PC_U16};
    const char *names[] = {"f32", "f64", "u8", "u16"};
    uint64_t rng = seed;
    size_t start[70], order[70];
    for (size_t dim = 2; dim <= (quick ? 2u : 4u); dim++)
        for (int ti = 0; ti < 4; ti++)
            for (int sparse = 0; sparse < 2; sparse++) {
                size_t n = 70000 + (size_t)(rng % 1000);
                float *x = test_blobs(n, dim, 5, 1.5, 12, seed + dim, NULL);
                void *data = convert(x, n * dim, types[ti], 20);
                pc_hca_params p;
                pc_hca_params_init(&p);
                p.m = dim == 4 ? 12 : 40;
                p.clusters = 4;
                if (sparse)
                    p.memory_budget = 1024; /* the sparse histogram, and the device's hash */
                pc_points all = view(data, n, dim, types[ti]);
                pc_result *mem = reference(&all, &p);
                size_t blocks = make_blocks(n, &rng, start, order, 64);
                int32_t *labels = malloc(n * sizeof *labels);
                double *sums = malloc(64 * (dim + 1) * sizeof *sums);
                int exact = types[ti] == PC_U8 || types[ti] == PC_U16;
                /* The finish's graph on the GPU, then on the host (each way with and without folds). */
                for (int way = 0; way < 4; way++) {
                    int folds = way & 1;
                    char what[112];
                    snprintf(what, sizeof what, "%s dim %zu %s, %zu blocks%s, graph on the %s", names[ti], dim,
                             sparse ? "sparse" : "dense", blocks, folds ? ", pieces of 997 and folds" : "",
                             way < 2 ? "GPU" : "host");
                    graph_from = way < 2 ? 0 : UINT64_MAX;
                    pc_result *str =
                        stream_all(&p, PC_BACKEND_CUDA, folds ? 997 : 0, &all, start, order, blocks, labels, sums);
                    graph_from = 1;
                    compare(what, mem, str, labels, sums, n, dim, exact, PC_BACKEND_CUDA);
                    pc_result_free(str);
                }
                /* One block, the whole input. */
                size_t one[2] = {0, n}, first = 0;
                pc_result *whole = stream_all(&p, PC_BACKEND_CUDA, 0, &all, one, &first, 1, labels, sums);
                compare("one block", mem, whole, labels, sums, n, dim, exact, PC_BACKEND_CUDA);
                pc_result_free(whole);
                pc_result_free(mem);
                free(labels);
                free(sums);
                free(data);
                free(x);
            }
}

/* Rows with padding (the 2D copy), and a dense host histogram counted in a device hash (a card too
 * small for m^d counters: the hash is emptied into the host every 131,072 points). */
static void strided_and_device_hash(uint64_t seed)
{
    size_t n = 300000, dim = 4;
    float *x = test_blobs(n, dim, 6, 1.2, 10, seed + 31, NULL);
    uint8_t *u8 = convert(x, n * dim, PC_U8, 12), *padded = malloc(n * (dim + 3));
    for (size_t i = 0; i < n; i++) {
        memcpy(padded + i * (dim + 3), u8 + i * dim, dim);
        memset(padded + i * (dim + 3) + dim, 0xee, 3);
    }
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = 40; /* 2.56M cells: the host's histogram is dense */
    p.clusters = 5;
    pc_points all = view(u8, n, dim, PC_U8), strided = view(padded, n, dim, PC_U8);
    strided.stride = dim + 3;
    pc_result *mem = reference(&all, &p);
    int32_t *labels = malloc(n * sizeof *labels);
    double sums[64 * 5];
    size_t start[4] = {0, 100000, 170001, n}, order[3] = {2, 0, 1};
    pc_result *r = stream_all(&p, PC_BACKEND_CUDA, 0, &strided, start, order, 3, labels, sums);
    compare("u8 strided rows", mem, r, labels, sums, n, dim, 1, PC_BACKEND_CUDA);
    pc_result_free(r);
    p.device_memory = (size_t)12 << 20;
    r = stream_all(&p, PC_BACKEND_CUDA, 0, &all, start, order, 3, labels, sums);
    compare("dense host histogram, device hash", mem, r, labels, sums, n, dim, 1, PC_BACKEND_CUDA);
    pc_result_free(r);
    /* float32 rows with padding, through the device hash too */
    float *f = convert(x, n * dim, PC_F32, 0), *fpad = malloc(n * (dim + 1) * sizeof *fpad);
    for (size_t i = 0; i < n; i++) {
        memcpy(fpad + i * (dim + 1), f + i * dim, dim * sizeof *f);
        fpad[i * (dim + 1) + dim] = NAN; /* padding is never read */
    }
    pc_points fall = view(f, n, dim, PC_F32), fstrided = view(fpad, n, dim, PC_F32);
    fstrided.stride = (dim + 1) * sizeof *fpad;
    pc_result *fmem = reference(&fall, &p);
    r = stream_all(&p, PC_BACKEND_CUDA, 0, &fstrided, start, order, 3, labels, sums);
    compare("f32 strided rows, device hash", fmem, r, labels, sums, n, dim, 0, PC_BACKEND_CUDA);
    pc_result_free(r);
    pc_result_free(fmem);
    pc_result_free(mem);
    free(labels);
    free(fpad);
    free(f);
    free(padded);
    free(u8);
    free(x);
}

/* A synthetic image (smooth regions plus noise) as uint8 rows in raster order. */
static uint8_t *image_u8(size_t width, size_t height, size_t bands, uint64_t seed)
{
    uint8_t *img = malloc(width * height * bands);
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    double cx[6], cy[6];
    for (int c = 0; c < 6; c++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        cx[c] = (double)(s >> 11) / 9007199254740992.0 * width;
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        cy[c] = (double)(s >> 11) / 9007199254740992.0 * height;
    }
    for (size_t y = 0; y < height; y++)
        for (size_t x = 0; x < width; x++) {
            int best = 0;
            double bd = INFINITY;
            for (int c = 0; c < 6; c++) {
                double d = (x - cx[c]) * (x - cx[c]) + (y - cy[c]) * (y - cy[c]);
                if (d < bd) {
                    bd = d;
                    best = c;
                }
            }
            for (size_t j = 0; j < bands; j++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                double noise = ((double)(s >> 40) / 16777216.0 - 0.5) * 30;
                double v = 30 + 35 * ((best * 7 + (int)j * 3) % 6) + noise;
                img[(y * width + x) * bands + j] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
    return img;
}

/* Large blocks: copies of 8 MiB and more through the pinned staging buffers (labels back as bytes, and
 * as int32 with 300 clusters), the same image through a card limited to 8 MiB (pieces), and AUTO. */
static void large_blocks(uint64_t seed)
{
    size_t w = 2000, h = 1750, bands = 3, n = w * h;
    uint8_t *img = image_u8(w, h, bands, seed + 41);
    pc_points all = view(img, n, bands, PC_U8);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.clusters = 6;
    pc_result *mem = reference(&all, &p);
    int32_t *labels = malloc(n * sizeof *labels);
    double sums[64 * 4];
    size_t start[4] = {0, 1200000, 1300000, n}, order[3] = {1, 2, 0}, one[2] = {0, n}, first = 0;
    pc_result *r = stream_all(&p, PC_BACKEND_CUDA, 0, &all, one, &first, 1, labels, sums);
    compare("10-MB image, one block", mem, r, labels, sums, n, bands, 1, PC_BACKEND_CUDA);
    pc_result_free(r);
    p.device_memory = (size_t)8 << 20;
    r = stream_all(&p, PC_BACKEND_CUDA, 0, &all, start, order, 3, labels, sums);
    compare("image through 8 MiB of GPU memory", mem, r, labels, sums, n, bands, 1, PC_BACKEND_CUDA);
    pc_result_free(r);
    /* AUTO: the blocks of 1.2M and 2.2M rows on the GPU, the one of 100,000 on the CPU. */
    p.device_memory = 0;
    r = stream_all(&p, PC_BACKEND_AUTO, 0, &all, start, order, 3, labels, sums);
    compare("AUTO, large and small blocks", mem, r, labels, sums, n, bands, 1, PC_BACKEND_CUDA);
    pc_result_free(r);
    /* AUTO with blocks below 2^20 rows only: the CPU. */
    size_t small[5] = {0, 1000000, 2000000, 3000000, n}, small_order[4] = {3, 1, 0, 2};
    r = stream_all(&p, PC_BACKEND_AUTO, 0, &all, small, small_order, 4, labels, sums);
    compare("AUTO, small blocks", mem, r, labels, sums, n, bands, 1, ON_CPU);
    pc_result_free(r);
    /* AUTO with a card too small for it: the CPU too. */
    p.device_memory = 1000;
    r = stream_all(&p, PC_BACKEND_AUTO, 0, &all, start, order, 3, labels, sums);
    compare("AUTO, card too small", mem, r, labels, sums, n, bands, 1, ON_CPU);
    pc_result_free(r);
    pc_result_free(mem);
    free(labels);
    free(img);

    /* 300 clusters of uniform noise: labels back as int32 (8.8 MB, staged). */
    n = 2200000;
    float *x = test_blobs(n, 2, 1, 1000, 1, seed + 42, NULL);
    pc_points fall = view(x, n, 2, PC_F32);
    pc_hca_params_init(&p);
    p.m = 700;
    p.clusters = 300;
    p.min_cluster_size = 0;
    mem = reference(&fall, &p);
    labels = malloc(n * sizeof *labels);
    double *many = malloc(300 * 3 * sizeof *many);
    CHECK(mem && pc_result_cluster_count(mem) == 300);
    size_t halves[3] = {0, 1700000, n}, halves_order[2] = {1, 0};
    one[1] = n;
    r = stream_all(&p, PC_BACKEND_CUDA, 0, &fall, one, &first, 1, labels, many);
    compare("300 clusters, one block", mem, r, labels, many, n, 2, 0, PC_BACKEND_CUDA);
    pc_result_free(r);
    r = stream_all(&p, PC_BACKEND_CUDA, 0, &fall, halves, halves_order, 2, labels, many);
    compare("300 clusters, two blocks", mem, r, labels, many, n, 2, 0, PC_BACKEND_CUDA);
    pc_result_free(r);
    pc_result_free(mem);
    free(many);
    free(labels);
    free(x);
}

/* The same 2^24-row block counted 150 times: 2.5e9 points, 2.36e9 of them in one cell. The device's
 * int32 counters are folded into the host's int64 histogram before the 128th block (its own rule, no
 * hook): the histogram is 150 times one block's, and the result is that of a CPU stream given it (the
 * finish's graph asked of the GPU, which leaves counts past int32 to the host). */
static void past_int32(void)
{
    size_t n = (size_t)1 << 24, times = 150;
    uint8_t *v = malloc(n);
    for (size_t i = 0; i < n; i++)
        v[i] = i % 1000 == 0 ? (uint8_t)(i / 1000) : i % 16 == 0 ? 60 : 7;
    pc_points block = view(v, n, 1, PC_U8);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = 32;
    p.clusters = 2;
    double lo = 0, hi = 255;
    pc_hca_stream *one = make(&p, cpu_backend(), 1, 0), *cpu = make(&p, cpu_backend(), 1, 0);
    graph_from = 0; /* the finish tries the GPU's graph, whose int32 densities leave it to the host */
    pc_hca_stream *gpu = make(&p, PC_BACKEND_CUDA, 1, 0);
    graph_from = 1;
    if (!one || !gpu || !cpu)
        return;
    CHECK_STATUS(pc_hca_stream_set_box(one, &lo, &hi), PC_OK);
    CHECK_STATUS(pc_hca_stream_set_box(gpu, &lo, &hi), PC_OK);
    CHECK_STATUS(pc_hca_stream_set_box(cpu, &lo, &hi), PC_OK);
    CHECK_STATUS(pc_hca_stream_add(one, &block), PC_OK);
    for (size_t t = 0; t < times; t++)
        CHECK_STATUS(pc_hca_stream_add(gpu, &block), PC_OK);
    size_t cells = 0, gpu_cells = 0;
    CHECK_STATUS(pc_hca_stream_histogram(one, &cells, NULL, NULL), PC_OK);
    uint64_t *keys = malloc(cells * sizeof *keys), *gpu_keys = malloc(cells * sizeof *gpu_keys);
    int64_t *counts = malloc(cells * sizeof *counts), *gpu_counts = malloc(cells * sizeof *gpu_counts);
    CHECK_STATUS(pc_hca_stream_histogram(one, &cells, keys, counts), PC_OK);
    CHECK_STATUS(pc_hca_stream_histogram(gpu, &gpu_cells, NULL, NULL), PC_OK);
    CHECK_MSG(gpu_cells == cells, "%zu cells on the GPU, %zu on the CPU", gpu_cells, cells);
    int64_t most = 0;
    if (gpu_cells == cells) {
        CHECK_STATUS(pc_hca_stream_histogram(gpu, &gpu_cells, gpu_keys, gpu_counts), PC_OK);
        size_t wrong = 0;
        for (size_t c = 0; c < cells; c++) {
            wrong += gpu_keys[c] != keys[c] || gpu_counts[c] != (int64_t)times * counts[c];
            most = gpu_counts[c] > most ? gpu_counts[c] : most;
        }
        CHECK_MSG(wrong == 0, "%zu of %zu cells differ from %zu x one block's", wrong, cells, times);
    }
    CHECK_MSG(most > (int64_t)INT32_MAX, "the fullest cell has %lld points", (long long)most);
    for (size_t c = 0; c < cells; c++)
        counts[c] *= (int64_t)times;
    CHECK_STATUS(pc_hca_stream_add_histogram(cpu, cells, keys, counts), PC_OK);
    pc_result *rg = NULL, *rc = NULL;
    CHECK_STATUS(pc_hca_stream_finish(gpu, &rg), PC_OK);
    CHECK_STATUS(pc_hca_stream_finish(cpu, &rc), PC_OK);
    CHECK(rg && pc_result_n(rg) == n * times);
    int32_t *lg = malloc(n * sizeof *lg), *lc = malloc(n * sizeof *lc);
    double sg[4 * 2] = {0}, sc[4 * 2] = {0};
    if (rg && rc) {
        CHECK_STATUS(pc_hca_stream_label(gpu, &block, lg, sg), PC_OK);
        CHECK_STATUS(pc_hca_stream_label(cpu, &block, lc, sc), PC_OK);
        same_results("2.5e9 points", rc, rg, PC_BACKEND_CUDA);
        CHECK(memcmp(lg, lc, n * sizeof *lg) == 0);
        CHECK(pc_result_cluster_count(rg) <= 4 && memcmp(sg, sc, sizeof sg) == 0);
    }
    pc_result_free(rg);
    pc_result_free(rc);
    pc_hca_stream_free(one);
    pc_hca_stream_free(gpu);
    pc_hca_stream_free(cpu);
    free(lg);
    free(lc);
    free(keys);
    free(counts);
    free(gpu_keys);
    free(gpu_counts);
    free(v);
}

/* A GPU stream and a CPU stream fed halves: boxes joined, histograms exported, merged either way, a
 * CPU stream's histogram added to a GPU stream: all equal pc_hca on everything. */
static void merges(uint64_t seed)
{
    size_t n = 90000, dim = 3, half = 33333;
    float *x = test_blobs(n, dim, 4, 1, 10, seed + 51, NULL);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = 24;
    p.clusters = 3;
    pc_points a = view(x, half, dim, PC_F32), b = view(x + half * dim, n - half, dim, PC_F32), all = view(x, n, dim, PC_F32);
    pc_result *mem = reference(&all, &p);
    pc_hca_stream *ga = make(&p, PC_BACKEND_CUDA, dim, 0), *cb = make(&p, cpu_backend(), dim, 0),
                  *ca = make(&p, cpu_backend(), dim, 0), *gb = make(&p, PC_BACKEND_CUDA, dim, 777);
    if (!ga || !cb || !ca || !gb)
        return;
    CHECK_STATUS(pc_hca_stream_bound(ga, &a), PC_OK);
    CHECK_STATUS(pc_hca_stream_bound(cb, &b), PC_OK);
    CHECK_STATUS(pc_hca_stream_merge(ga, cb), PC_OK); /* a GPU box joined with a CPU one */
    double lo[3], hi[3];
    CHECK_STATUS(pc_hca_stream_box(ga, lo, hi), PC_OK);
    CHECK_STATUS(pc_hca_stream_set_box(cb, lo, hi), PC_OK);
    CHECK_STATUS(pc_hca_stream_set_box(ca, lo, hi), PC_OK);
    CHECK_STATUS(pc_hca_stream_set_box(gb, lo, hi), PC_OK);
    CHECK_STATUS(pc_hca_stream_add(ga, &a), PC_OK);
    CHECK_STATUS(pc_hca_stream_add(ca, &a), PC_OK);
    CHECK_STATUS(pc_hca_stream_add(cb, &b), PC_OK);
    CHECK_STATUS(pc_hca_stream_add(gb, &b), PC_OK);
    /* The GPU's histogram of b (counted in pieces of 777 with folds) is the CPU's, array for array. */
    size_t cells = 0, gcells = 0;
    CHECK_STATUS(pc_hca_stream_histogram(cb, &cells, NULL, NULL), PC_OK);
    CHECK_STATUS(pc_hca_stream_histogram(gb, &gcells, NULL, NULL), PC_OK);
    CHECK(cells == gcells);
    uint64_t *keys = malloc(cells * sizeof *keys), *gkeys = malloc(cells * sizeof *gkeys);
    int64_t *counts = malloc(cells * sizeof *counts), *gcounts = malloc(cells * sizeof *gcounts);
    CHECK_STATUS(pc_hca_stream_histogram(cb, &cells, keys, counts), PC_OK);
    if (cells == gcells) {
        CHECK_STATUS(pc_hca_stream_histogram(gb, &gcells, gkeys, gcounts), PC_OK);
        CHECK(memcmp(keys, gkeys, cells * sizeof *keys) == 0 && memcmp(counts, gcounts, cells * sizeof *counts) == 0);
    }
    pc_hca_stream *gc = make(&p, PC_BACKEND_CUDA, dim, 0);
    if (gc) {
        CHECK_STATUS(pc_hca_stream_set_box(gc, lo, hi), PC_OK);
        CHECK_STATUS(pc_hca_stream_add(gc, &a), PC_OK);
        CHECK_STATUS(pc_hca_stream_add_histogram(gc, cells, keys, counts), PC_OK); /* b counted by the CPU */
    }
    CHECK_STATUS(pc_hca_stream_merge(ga, cb), PC_OK); /* into the GPU stream from a CPU one */
    CHECK_STATUS(pc_hca_stream_merge(ca, gb), PC_OK); /* into a CPU stream from a GPU one */
    pc_result *rga = NULL, *rca = NULL, *rgc = NULL;
    CHECK_STATUS(pc_hca_stream_finish(ga, &rga), PC_OK);
    CHECK_STATUS(pc_hca_stream_finish(ca, &rca), PC_OK);
    if (gc)
        CHECK_STATUS(pc_hca_stream_finish(gc, &rgc), PC_OK);
    int32_t *labels = malloc(n * sizeof *labels);
    double sums[64 * 4];
    if (rga) {
        memset(sums, 0, sizeof sums);
        CHECK_STATUS(pc_hca_stream_label(ga, &b, labels + half, sums), PC_OK);
        CHECK_STATUS(pc_hca_stream_label(ga, &a, labels, sums), PC_OK);
        compare("GPU stream, CPU stream merged into it", mem, rga, labels, sums, n, dim, 0, PC_BACKEND_CUDA);
    }
    if (rca) {
        memset(sums, 0, sizeof sums);
        CHECK_STATUS(pc_hca_stream_label(ca, &all, labels, sums), PC_OK);
        compare("CPU stream, GPU stream merged into it", mem, rca, labels, sums, n, dim, 0, ON_CPU);
    }
    if (rgc) {
        memset(sums, 0, sizeof sums);
        CHECK_STATUS(pc_hca_stream_label(gc, &all, labels, sums), PC_OK);
        compare("GPU stream, CPU histogram added", mem, rgc, labels, sums, n, dim, 0, PC_BACKEND_CUDA);
    }
    pc_result_free(rga);
    pc_result_free(rca);
    pc_result_free(rgc);
    pc_result_free(mem);
    pc_hca_stream_free(ga);
    pc_hca_stream_free(gb);
    pc_hca_stream_free(gc);
    pc_hca_stream_free(ca);
    pc_hca_stream_free(cb);
    free(keys);
    free(gkeys);
    free(counts);
    free(gcounts);
    free(labels);
    free(x);
}

typedef struct {
    const pc_hca_stream *s;
    pc_points all;
    size_t from, to;
    int32_t *labels;
    double sums[64 * 4];
    int failures;
} label_job;

static void *label_thread(void *arg)
{
    label_job *job = arg;
    size_t step = (job->to - job->from + 4) / 5;
    for (size_t i = job->from; i < job->to; i += step) {
        pc_points v = rows_of(&job->all, i, i + step < job->to ? i + step : job->to);
        job->failures += pc_hca_stream_label(job->s, &v, job->labels + i, job->sums) != PC_OK;
    }
    return NULL;
}

/* Four threads label quarters at once (taking turns on the GPU); and points that were never counted,
 * some outside the box, get the labels a CPU stream with the same histogram gives them (-1 for cells
 * that are empty). */
static void threads_and_new_points(uint64_t seed)
{
    size_t n = 200000, dim = 3;
    float *x = test_blobs(n, dim, 5, 1, 8, seed + 61, NULL);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = 48;
    p.clusters = 5;
    pc_points all = view(x, n, dim, PC_F32);
    pc_result *mem = reference(&all, &p), *rg = NULL, *rc = NULL;
    pc_hca_stream *gs = make(&p, PC_BACKEND_CUDA, dim, 0), *cs = make(&p, cpu_backend(), dim, 0);
    if (!gs || !cs)
        return;
    CHECK_STATUS(pc_hca_stream_bound(gs, &all), PC_OK);
    double lo[3], hi[3];
    CHECK_STATUS(pc_hca_stream_box(gs, lo, hi), PC_OK);
    CHECK_STATUS(pc_hca_stream_set_box(cs, lo, hi), PC_OK);
    CHECK_STATUS(pc_hca_stream_add(gs, &all), PC_OK);
    CHECK_STATUS(pc_hca_stream_add(cs, &all), PC_OK);
    CHECK_STATUS(pc_hca_stream_finish(gs, &rg), PC_OK);
    CHECK_STATUS(pc_hca_stream_finish(cs, &rc), PC_OK);
    int32_t *labels = malloc(n * sizeof *labels);
    label_job jobs[4];
    pthread_t tid[4];
    for (int t = 0; t < 4; t++) {
        memset(&jobs[t], 0, sizeof jobs[t]);
        jobs[t] = (label_job){gs, all, n * (size_t)t / 4, n * (size_t)(t + 1) / 4, labels, {0}, 0};
        CHECK(pthread_create(&tid[t], NULL, label_thread, &jobs[t]) == 0);
    }
    double sums[64 * 4] = {0};
    for (int t = 0; t < 4; t++) {
        pthread_join(tid[t], NULL);
        CHECK_MSG(jobs[t].failures == 0, "thread %d: %d label calls failed", t, jobs[t].failures);
        for (size_t q = 0; q < 64 * 4; q++)
            sums[q] += jobs[t].sums[q];
    }
    compare("four threads labelling at once", mem, rg, labels, sums, n, dim, 0, PC_BACKEND_CUDA);
    /* New points: wider blobs, offset, so that many fall in empty cells or beyond the box. */
    size_t fresh_n = 150000;
    float *y = test_blobs(fresh_n, dim, 5, 3, 12, seed + 62, NULL);
    double *y64 = malloc(fresh_n * dim * sizeof *y64);
    for (size_t i = 0; i < fresh_n * dim; i++)
        y64[i] = y[i] + 1.5;
    int32_t *lg = malloc(fresh_n * sizeof *lg), *lc = malloc(fresh_n * sizeof *lc);
    const pc_points fresh[2] = {view(y, fresh_n, dim, PC_F32), view(y64, fresh_n, dim, PC_F64)};
    for (int f = 0; f < 2 && rg && rc; f++) {
        double sg[64 * 4] = {0}, sc[64 * 4] = {0};
        CHECK_STATUS(pc_hca_stream_label(gs, &fresh[f], lg, sg), PC_OK);
        CHECK_STATUS(pc_hca_stream_label(cs, &fresh[f], lc, sc), PC_OK);
        size_t diff = 0, none = 0;
        for (size_t i = 0; i < fresh_n; i++) {
            diff += lg[i] != lc[i];
            none += lc[i] < 0;
        }
        CHECK_MSG(diff == 0, "new points (%s): %zu labels differ", f ? "f64" : "f32", diff);
        CHECK_MSG(none > 0 && none < fresh_n, "new points: %zu of %zu in no cluster", none, fresh_n);
        for (size_t c = 0; c < pc_result_cluster_count(rc); c++) {
            double count = sc[c * (dim + 1) + dim];
            CHECK(sg[c * (dim + 1) + dim] == count);
            /* the GPU's fixed point: within 2^-31 of the piece's range a point */
            for (size_t j = 0; j < dim; j++)
                CHECK_NEAR(sg[c * (dim + 1) + j], sc[c * (dim + 1) + j], 1e-6 * (1 + count));
        }
    }
    pc_result_free(mem);
    pc_result_free(rg);
    pc_result_free(rc);
    pc_hca_stream_free(gs);
    pc_hca_stream_free(cs);
    free(labels);
    free(lg);
    free(lc);
    free(y64);
    free(y);
    free(x);
}

/* Non-finite values are refused before a block changes anything, in one piece (the GPU's check) and in
 * several (the host's); a card too small for the counts and a piece is refused at create. */
static void refusals(uint64_t seed)
{
    size_t n = 20000, dim = 2;
    float *x = test_blobs(n, dim, 3, 1, 10, seed + 71, NULL);
    float *bad = malloc(n * dim * sizeof *bad);
    memcpy(bad, x, n * dim * sizeof *bad);
    bad[2 * (n - 10) + 1] = NAN;
    double big[4] = {1, 2, 4e38, 3};
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.clusters = 3;
    pc_points all = view(x, n, dim, PC_F32), nan_block = view(bad, n, dim, PC_F32), far = view(big, 2, dim, PC_F64);
    pc_result *mem = reference(&all, &p);
    for (int pieces = 0; pieces < 2; pieces++) {
        pc_hca_stream *s = make(&p, PC_BACKEND_CUDA, dim, pieces ? 1000 : 0);
        if (!s)
            continue;
        CHECK_STATUS(pc_hca_stream_bound(s, &all), PC_OK);
        double lo[2], hi[2], lo2[2], hi2[2];
        CHECK_STATUS(pc_hca_stream_box(s, lo, hi), PC_OK);
        CHECK_STATUS(pc_hca_stream_bound(s, &nan_block), PC_INVALID_ARGUMENT);
        CHECK_MSG(strstr(pc_last_error(), "finite") != NULL, "message: %s", pc_last_error());
        CHECK_STATUS(pc_hca_stream_bound(s, &far), PC_INVALID_ARGUMENT);
        CHECK_STATUS(pc_hca_stream_box(s, lo2, hi2), PC_OK);
        CHECK(memcmp(lo, lo2, sizeof lo) == 0 && memcmp(hi, hi2, sizeof hi) == 0); /* the box as it was */
        CHECK_STATUS(pc_hca_stream_add(s, &nan_block), PC_INVALID_ARGUMENT);
        CHECK_MSG(strstr(pc_last_error(), "finite") != NULL, "message: %s", pc_last_error());
        CHECK_STATUS(pc_hca_stream_add(s, &far), PC_INVALID_ARGUMENT);
        CHECK_STATUS(pc_hca_stream_add(s, &all), PC_OK); /* nothing of the refused blocks was counted */
        pc_result *r = NULL;
        CHECK_STATUS(pc_hca_stream_finish(s, &r), PC_OK);
        int32_t *labels = malloc(n * sizeof *labels);
        double sums[64 * 3] = {0};
        CHECK_STATUS(pc_hca_stream_label(s, &nan_block, labels, sums), PC_INVALID_ARGUMENT);
        CHECK_STATUS(pc_hca_stream_label(s, &all, labels, sums), PC_OK);
        compare(pieces ? "after refusals, in pieces" : "after refusals", mem, r, labels, sums, n, dim, 0,
                PC_BACKEND_CUDA);
        free(labels);
        pc_result_free(r);
        pc_hca_stream_free(s);
    }
    p.backend = PC_BACKEND_CUDA;
    p.device_memory = 1000;
    pc_hca_stream *none = NULL;
    CHECK_STATUS(pc_hca_stream_create(&p, dim, &none), PC_DEVICE_OUT_OF_MEMORY);
    CHECK(none == NULL);
    CHECK_MSG(strstr(pc_last_error(), "MiB") != NULL, "message: %s", pc_last_error());
    /* The hook needs a GPU state. */
    pc_hca_stream *cpu = make(&p, cpu_backend(), dim, 0);
    CHECK_STATUS(pc__hca_stream_fold_every(cpu, 10), PC_INVALID_ARGUMENT);
    pc_hca_stream_free(cpu);
    pc_result_free(mem);
    free(bad);
    free(x);
}

/* The held blocks' parameters: m 30, 4 clusters; sparse: a budget that keeps the histograms sparse. */
static pc_hca_params held_params(int sparse)
{
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = 30;
    p.clusters = 4;
    if (sparse)
        p.memory_budget = 1024;
    return p;
}

/* n rows of `row` bytes copied `stride` bytes apart, the gaps 0xff (NaN for floats: never read). */
static unsigned char *strided_copy(const void *data, size_t n, size_t row, size_t stride)
{
    unsigned char *out = malloc(n * stride);
    for (size_t i = 0; i < n; i++) {
        memcpy(out + i * stride, (const unsigned char *)data + i * row, row);
        memset(out + i * stride + row, 0xff, stride - row);
    }
    return out;
}

/* Finish a stream that holds a block, then label the held block: the result, labels and sums (room
 * for 64 clusters, zeroed first). */
static pc_result *finish_and_label_held(pc_hca_stream *s, int32_t *labels, double *sums, size_t dim)
{
    pc_result *r = NULL;
    CHECK_STATUS(pc_hca_stream_finish(s, &r), PC_OK);
    memset(sums, 0, 64 * (dim + 1) * sizeof *sums);
    if (r)
        CHECK_STATUS(pc_hca_stream_label_held(s, labels, sums), PC_OK);
    return r;
}

/* The held block (pc_hca_stream_hold) against pc_hca: every type, dense and sparse, in one piece and
 * in pieces of 997 rows, packed and strided rows, the box set after bound_held (parclust_mpi's order),
 * and refusals: a non-finite value at hold (nothing kept: a good block is held after it), a second
 * hold, the held calls without one. PC_HCA_STREAM_HOLD=0 (the caller's view) gives the same. */
static void held(uint64_t seed)
{
    const pc_dtype types[] = {PC_F32, PC_F64, PC_U8, PC_U16};
    const char *names[] = {"f32", "f64", "u8", "u16"};
    size_t dim = 3, n = 60000 + (size_t)(seed % 1000);
    float *x = test_blobs(n, dim, 5, 1.5, 12, seed + 91, NULL);
    int32_t *labels = malloc(n * sizeof *labels);
    double *sums = malloc(64 * (dim + 1) * sizeof *sums);
    for (int ti = 0; ti < 4; ti++)
        for (int form = 0; form < 5; form++) { /* dense, sparse, pieces, strided, the caller's view */
            void *data = convert(x, n * dim, types[ti], 20);
            size_t size = type_size(types[ti]), pad = 2 * size;
            unsigned char *padded = strided_copy(data, n, dim * size, dim * size + pad);
            pc_hca_params p = held_params(form == 1);
            pc_points all = view(data, n, dim, types[ti]), block = all;
            if (form == 3) {
                block = view(padded, n, dim, types[ti]);
                block.stride = dim * size + pad;
            }
            pc_result *mem = reference(&all, &p), *r = NULL;
            if (form == 4)
                setenv("PC_HCA_STREAM_HOLD", "0", 1);
            pc_hca_stream *s = make(&p, PC_BACKEND_CUDA, dim, form == 2 ? 997 : 0);
            double lo[3], hi[3];
            if (s) {
                CHECK_STATUS(pc_hca_stream_hold(s, &block), PC_OK);
                CHECK_STATUS(pc_hca_stream_hold(s, &block), PC_INVALID_ARGUMENT);
                /* The GPU's copy is what the calls read: the caller's rows changed after the hold (which
                 * the API forbids) change nothing. */
                if (form == 0)
                    memset(data, 0, n * dim * size);
                CHECK_STATUS(pc_hca_stream_bound_held(s), PC_OK);
                CHECK_STATUS(pc_hca_stream_box(s, lo, hi), PC_OK);
                CHECK_STATUS(pc_hca_stream_set_box(s, lo, hi), PC_OK);
                CHECK_STATUS(pc_hca_stream_add_held(s), PC_OK);
                r = finish_and_label_held(s, labels, sums, dim);
            }
            unsetenv("PC_HCA_STREAM_HOLD");
            char what[64];
            snprintf(what, sizeof what, "held %s, %s", names[ti],
                     (const char *[]){"dense", "sparse", "pieces of 997", "strided", "the caller's view"}[form]);
            compare(what, mem, r, labels, sums, n, dim, types[ti] == PC_U8 || types[ti] == PC_U16, PC_BACKEND_CUDA);
            pc_result_free(r);
            pc_result_free(mem);
            pc_hca_stream_free(s);
            free(padded);
            free(data);
        }
    /* AUTO: counted on the CPU in blocks below 2^20 rows, then a block of 2^20 rows and more held after
     * the finish: no GPU state is made then, and the labels are pc_hca's. */
    {
        size_t big = ((size_t)1 << 20) + 3;
        float *xb = test_blobs(big, dim, 5, 1.5, 12, seed + 93, NULL);
        uint8_t *u8 = convert(xb, big * dim, PC_U8, 20);
        pc_hca_params p;
        pc_hca_params_init(&p);
        p.m = 30;
        p.clusters = 4;
        pc_points all = view(u8, big, dim, PC_U8);
        pc_result *mem = reference(&all, &p), *r = NULL;
        pc_hca_stream *s = make(&p, PC_BACKEND_AUTO, dim, 0);
        int32_t *lb = malloc(big * sizeof *lb);
        size_t cut[5] = {0, big / 4, big / 2, 3 * big / 4, big};
        for (int pass = 0; s && pass < 2; pass++)
            for (int b = 0; b < 4; b++) {
                pc_points v = rows_of(&all, cut[b], cut[b + 1]);
                CHECK_STATUS(pass ? pc_hca_stream_add(s, &v) : pc_hca_stream_bound(s, &v), PC_OK);
            }
        if (s)
            CHECK_STATUS(pc_hca_stream_finish(s, &r), PC_OK);
        memset(sums, 0, 64 * (dim + 1) * sizeof *sums);
        if (r) {
            CHECK_STATUS(pc_hca_stream_hold(s, &all), PC_OK);
            CHECK_STATUS(pc_hca_stream_label_held(s, lb, sums), PC_OK);
        }
        compare("AUTO, held after the finish", mem, r, lb, sums, big, dim, 1, ON_CPU);
        pc_result_free(r);
        pc_result_free(mem);
        pc_hca_stream_free(s);
        free(lb);
        free(u8);
        free(xb);
    }
    /* Refusals. */
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.clusters = 4;
    float *bad = malloc(n * dim * sizeof *bad);
    memcpy(bad, x, n * dim * sizeof *bad);
    bad[dim * (n - 3) + 2] = INFINITY;
    pc_points good = view(x, n, dim, PC_F32), nan_block = view(bad, n, dim, PC_F32);
    pc_result *mem = reference(&good, &p), *r = NULL;
    pc_hca_stream *s = make(&p, PC_BACKEND_CUDA, dim, 0);
    if (s) {
        CHECK_STATUS(pc_hca_stream_bound_held(s), PC_INVALID_ARGUMENT);
        CHECK_MSG(strstr(pc_last_error(), "holds no block") != NULL, "message: %s", pc_last_error());
        CHECK_STATUS(pc_hca_stream_add_held(s), PC_INVALID_ARGUMENT);
        CHECK_STATUS(pc_hca_stream_hold(s, &nan_block), PC_INVALID_ARGUMENT);
        CHECK_MSG(strstr(pc_last_error(), "pc_hca_stream_hold") && strstr(pc_last_error(), "finite"), "message: %s",
                  pc_last_error());
        CHECK_STATUS(pc_hca_stream_hold(s, &good), PC_OK);
        CHECK_STATUS(pc_hca_stream_bound_held(s), PC_OK);
        CHECK_STATUS(pc_hca_stream_add_held(s), PC_OK);
        r = finish_and_label_held(s, labels, sums, dim);
        compare("held after a refused hold", mem, r, labels, sums, n, dim, 0, PC_BACKEND_CUDA);
    }
    pc_result_free(r);
    pc_result_free(mem);
    pc_hca_stream_free(s);
    free(bad);
    free(labels);
    free(sums);
    free(x);
}

#ifdef PC_TEST_HAVE_CUDART
/* The rows already in GPU memory (pc_hca_stream_hold_device) against pc_hca: every type, dense and
 * sparse, packed and strided rows, in pieces of 997 with folds, the labels written to GPU memory
 * (pc_hca_stream_label_held_device) and to the host (pc_hca_stream_label_held) from the same hold; and
 * refusals: host pointers for rows or labels, misaligned labels, labels on another GPU (where there are
 * two), a CPU stream, a non-finite value (nothing kept: a good block is held after it), the device
 * labels of a block held from the host, labels before the finish. */
static void held_on_device(uint64_t seed)
{
    const pc_dtype types[] = {PC_F32, PC_F64, PC_U8, PC_U16};
    const char *names[] = {"f32", "f64", "u8", "u16"};
    size_t dim = 3, n = 50000 + (size_t)(seed % 1000);
    float *x = test_blobs(n, dim, 5, 1.5, 12, seed + 97, NULL);
    int32_t *labels = malloc(n * sizeof *labels), *host_labels = malloc(n * sizeof *host_labels), *d_labels = NULL;
    double *sums = malloc(64 * (dim + 1) * sizeof *sums), *host_sums = malloc(64 * (dim + 1) * sizeof *host_sums);
    CHECK(cudaMalloc((void **)&d_labels, n * sizeof *d_labels) == cudaSuccess);
    for (int ti = 0; ti < 4 && d_labels; ti++)
        for (int form = 0; form < 4; form++) { /* dense, sparse, strided, pieces of 997 */
            void *data = convert(x, n * dim, types[ti], 20);
            size_t size = type_size(types[ti]), row = dim * size, stride = form == 2 ? row + 2 * size : row;
            unsigned char *rows = strided_copy(data, n, row, stride), *d_rows = NULL;
            CHECK(cudaMalloc((void **)&d_rows, n * stride) == cudaSuccess &&
                  cudaMemcpy(d_rows, rows, n * stride, cudaMemcpyHostToDevice) == cudaSuccess);
            pc_hca_params p = held_params(form == 1);
            pc_points all = view(data, n, dim, types[ti]), block = view(d_rows, n, dim, types[ti]);
            block.stride = stride;
            pc_result *mem = reference(&all, &p), *r = NULL;
            pc_hca_stream *s = make(&p, PC_BACKEND_CUDA, dim, form == 3 ? 997 : 0);
            double lo[3], hi[3];
            if (s && d_rows) {
                CHECK_STATUS(pc_hca_stream_hold_device(s, &block), PC_OK);
                CHECK_STATUS(pc_hca_stream_label_held_device(s, d_labels, sums), PC_INVALID_ARGUMENT);
                CHECK_MSG(strstr(pc_last_error(), "finish") != NULL, "message: %s", pc_last_error());
                CHECK_STATUS(pc_hca_stream_bound_held(s), PC_OK);
                CHECK_STATUS(pc_hca_stream_box(s, lo, hi), PC_OK);
                CHECK_STATUS(pc_hca_stream_set_box(s, lo, hi), PC_OK);
                CHECK_STATUS(pc_hca_stream_add_held(s), PC_OK);
                CHECK_STATUS(pc_hca_stream_finish(s, &r), PC_OK);
                memset(sums, 0, 64 * (dim + 1) * sizeof *sums);
                memset(host_sums, 0, 64 * (dim + 1) * sizeof *host_sums);
                CHECK(cudaMemset(d_labels, 0x7f, n * sizeof *d_labels) == cudaSuccess);
                CHECK_STATUS(pc_hca_stream_label_held_device(s, labels, sums), PC_INVALID_ARGUMENT);
                CHECK_MSG(strstr(pc_last_error(), "device_labels") != NULL, "message: %s", pc_last_error());
                if (r) {
                    memset(sums, 0, 64 * (dim + 1) * sizeof *sums);
                    CHECK_STATUS(pc_hca_stream_label_held_device(s, d_labels, sums), PC_OK);
                    CHECK_STATUS(pc_hca_stream_label_held(s, host_labels, host_sums), PC_OK);
                }
                CHECK(cudaMemcpy(labels, d_labels, n * sizeof *labels, cudaMemcpyDeviceToHost) == cudaSuccess);
            }
            char what[80];
            const char *form_name = (const char *[]){"dense", "sparse", "strided", "pieces of 997"}[form];
            int exact = types[ti] == PC_U8 || types[ti] == PC_U16;
            snprintf(what, sizeof what, "held on the device %s, %s, device labels", names[ti], form_name);
            compare(what, mem, r, labels, sums, n, dim, exact, PC_BACKEND_CUDA);
            snprintf(what, sizeof what, "held on the device %s, %s, host labels", names[ti], form_name);
            compare(what, mem, r, host_labels, host_sums, n, dim, exact, PC_BACKEND_CUDA);
            pc_result_free(r);
            pc_result_free(mem);
            pc_hca_stream_free(s);
            cudaFree(d_rows);
            free(rows);
            free(data);
        }
    /* Refusals. */
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.clusters = 4;
    float *bad = malloc(n * dim * sizeof *bad), *d_bad = NULL, *d_good = NULL;
    memcpy(bad, x, n * dim * sizeof *bad);
    bad[dim * (n / 2) + 1] = NAN;
    CHECK(cudaMalloc((void **)&d_bad, n * dim * sizeof *d_bad) == cudaSuccess &&
          cudaMalloc((void **)&d_good, n * dim * sizeof *d_good) == cudaSuccess &&
          cudaMemcpy(d_bad, bad, n * dim * sizeof *bad, cudaMemcpyHostToDevice) == cudaSuccess &&
          cudaMemcpy(d_good, x, n * dim * sizeof *x, cudaMemcpyHostToDevice) == cudaSuccess);
    pc_points host = view(x, n, dim, PC_F32), nan_block = view(d_bad, n, dim, PC_F32), good = view(d_good, n, dim, PC_F32);
    pc_result *mem = reference(&host, &p), *r = NULL;
    pc_hca_stream *cpu = make(&p, cpu_backend(), dim, 0);
    if (cpu) {
        CHECK_STATUS(pc_hca_stream_hold_device(cpu, &good), PC_INVALID_ARGUMENT);
        CHECK_MSG(strstr(pc_last_error(), "CUDA backend") != NULL, "message: %s", pc_last_error());
    }
    pc_hca_stream_free(cpu);
    pc_hca_stream *s = make(&p, PC_BACKEND_CUDA, dim, 0);
    if (s && d_bad && d_good) {
        CHECK_STATUS(pc_hca_stream_hold_device(s, &host), PC_INVALID_ARGUMENT);
        CHECK_MSG(strstr(pc_last_error(), "not GPU memory") != NULL, "message: %s", pc_last_error());
        CHECK_STATUS(pc_hca_stream_hold_device(s, &nan_block), PC_INVALID_ARGUMENT);
        CHECK_MSG(strstr(pc_last_error(), "pc_hca_stream_hold") && strstr(pc_last_error(), "finite"), "message: %s",
                  pc_last_error());
        CHECK_STATUS(pc_hca_stream_label_held_device(s, d_labels, sums), PC_INVALID_ARGUMENT);
        CHECK_STATUS(pc_hca_stream_hold_device(s, &good), PC_OK);
        CHECK_STATUS(pc_hca_stream_hold_device(s, &good), PC_INVALID_ARGUMENT);
        CHECK_STATUS(pc_hca_stream_bound_held(s), PC_OK);
        CHECK_STATUS(pc_hca_stream_add_held(s), PC_OK);
        CHECK_STATUS(pc_hca_stream_finish(s, &r), PC_OK);
        memset(sums, 0, 64 * (dim + 1) * sizeof *sums);
        /* Labels misaligned, or in another GPU's memory, are refused before any kernel writes them. */
        CHECK_STATUS(pc_hca_stream_label_held_device(s, (int32_t *)((char *)d_labels + 2), sums), PC_INVALID_ARGUMENT);
        CHECK_MSG(strstr(pc_last_error(), "aligned") != NULL, "message: %s", pc_last_error());
        int32_t *other = NULL;
        if (pc_cuda_device_count() > 1 && pc_cuda_select_device(1) == PC_OK &&
            cudaMalloc((void **)&other, n * sizeof *other) == cudaSuccess) {
            CHECK_STATUS(pc_cuda_select_device(0), PC_OK);
            CHECK_STATUS(pc_hca_stream_label_held_device(s, other, sums), PC_INVALID_ARGUMENT);
            CHECK_MSG(strstr(pc_last_error(), "GPU 1") != NULL, "message: %s", pc_last_error());
            CHECK_STATUS(pc_cuda_select_device(1), PC_OK);
            cudaFree(other);
        }
        CHECK_STATUS(pc_cuda_select_device(0), PC_OK);
        CHECK(cudaMemset(d_labels, 0x7f, n * sizeof *d_labels) == cudaSuccess);
        if (r && d_labels)
            CHECK_STATUS(pc_hca_stream_label_held_device(s, d_labels, sums), PC_OK);
        CHECK(cudaMemcpy(labels, d_labels, n * sizeof *labels, cudaMemcpyDeviceToHost) == cudaSuccess);
        compare("held on the device after a refused hold", mem, r, labels, sums, n, dim, 0, PC_BACKEND_CUDA);
    }
    pc_result_free(r);
    pc_hca_stream_free(s);
    /* Device labels of a block held from the host are refused (its rows may be the caller's view). */
    r = NULL;
    s = make(&p, PC_BACKEND_CUDA, dim, 0);
    if (s) {
        CHECK_STATUS(pc_hca_stream_hold(s, &host), PC_OK);
        CHECK_STATUS(pc_hca_stream_bound_held(s), PC_OK);
        CHECK_STATUS(pc_hca_stream_add_held(s), PC_OK);
        CHECK_STATUS(pc_hca_stream_finish(s, &r), PC_OK);
        CHECK_STATUS(pc_hca_stream_label_held_device(s, d_labels, sums), PC_INVALID_ARGUMENT);
        CHECK_MSG(strstr(pc_last_error(), "hold_device") != NULL, "message: %s", pc_last_error());
    }
    pc_result_free(r);
    pc_hca_stream_free(s);
    pc_result_free(mem);
    cudaFree(d_bad);
    cudaFree(d_good);
    cudaFree(d_labels);
    free(bad);
    free(labels);
    free(host_labels);
    free(sums);
    free(host_sums);
    free(x);
}
#endif

int main(void)
{
    if (pc_cuda_device_count() <= 0) {
        printf("test_hca_stream_cuda: no CUDA device, skipped\n");
        return 77;
    }
    uint64_t seed = test_seed("test_hca_stream_cuda");
    quick = getenv("PC_CUDA_TEST_QUICK") != NULL;
    refusals(seed);
    held(seed);
#ifdef PC_TEST_HAVE_CUDART
    held_on_device(seed);
#endif
    same_as_pc_hca(seed);
    strided_and_device_hash(seed);
    merges(seed);
    threads_and_new_points(seed);
    if (!quick) {
        large_blocks(seed);
        past_int32();
    }
    return check_report("test_hca_stream_cuda");
}
