/* HCA-MS (refine_borders) on the CUDA backend against the sequential CPU backend: identical labels,
 * border counts, changed counts and cluster sizes (centres within float rounding: the GPU moves the
 * clusters' fixed-point sums, the CPU its double sums), for float32, float64, uint8 and uint16 rows
 * (integer rows of at most 8 bytes climb once per distinct value after a sort on the device, others
 * climb each), the dense and sparse grids, noise clusters, a wide bandwidth with one shift (climbs that
 * end in empty cells, finished on the host), a zero bandwidth (plain HCA), inputs in pieces and input
 * and labels already on the device. Exits 77 (skipped) where there is no CUDA device. */
#include "check.h"
#include "test_util.h"

#include <math.h>
#include <string.h>
#ifdef PC_TEST_HAVE_CUDART
#include <cuda_runtime.h>
#endif

static int quick; /* PC_TEST_QUICK: smaller inputs (compute-sanitizer runs) */

static void check_same(const pc_result *ref, const pc_result *gpu, const int32_t *gpu_labels, double rel,
                       const char *what)
{
    CHECK_MSG(ref && gpu, "%s: a run failed: %s", what, pc_last_error());
    if (!ref || !gpu)
        return;
    size_t n = pc_result_n(ref), k = pc_result_cluster_count(ref), dim = pc_result_dim(ref);
    CHECK_MSG(pc_result_backend(gpu) == PC_BACKEND_CUDA, "%s: ran on %s", what, pc_backend_name(pc_result_backend(gpu)));
    CHECK_MSG(k == pc_result_cluster_count(gpu), "%s: %zu clusters on the CPU, %zu on the GPU", what, k,
              pc_result_cluster_count(gpu));
    CHECK_MSG(pc_result_border_points(ref) == pc_result_border_points(gpu), "%s: border points %lld vs %lld", what,
              (long long)pc_result_border_points(ref), (long long)pc_result_border_points(gpu));
    CHECK_MSG(pc_result_changed_points(ref) == pc_result_changed_points(gpu), "%s: changed points %lld vs %lld", what,
              (long long)pc_result_changed_points(ref), (long long)pc_result_changed_points(gpu));
    if (k != pc_result_cluster_count(gpu))
        return;
    const int32_t *a = pc_result_labels(ref), *b = gpu_labels ? gpu_labels : pc_result_labels(gpu);
    size_t diff = 0, first = n;
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i] && diff++ == 0)
            first = i;
    CHECK_MSG(diff == 0, "%s: %zu of %zu labels differ (first: point %zu, %d on the CPU, %d on the GPU)", what, diff,
              n, first, first < n ? a[first] : 0, first < n ? b[first] : 0);
    CHECK_MSG(!memcmp(pc_result_sizes(ref), pc_result_sizes(gpu), k * sizeof(int64_t)), "%s: cluster sizes differ",
              what);
    double worst = 0;
    const float *ca = pc_result_centers(ref), *cb = pc_result_centers(gpu);
    for (size_t q = 0; q < k * dim; q++)
        worst = fmax(worst, fabs((double)ca[q] - cb[q]) / fmax(1.0, fabs((double)ca[q])));
    CHECK_MSG(worst <= rel, "%s: centres differ by %g (relative)", what, worst);
    printf("  %s: %zu points, %lld border, %lld changed: same labels\n", what, n,
           (long long)pc_result_border_points(ref), (long long)pc_result_changed_points(ref));
}

static pc_result *run(const pc_points *v, const pc_hca_params *base, pc_backend backend)
{
    pc_hca_params p = *base;
    p.backend = backend;
    pc_result *r = NULL;
    if (pc_hca(v, &p, &r) != PC_OK)
        fprintf(stderr, "pc_hca (%s): %s\n", pc_backend_name(backend), pc_last_error());
    return r;
}

static void compare(const pc_points *v, const pc_hca_params *p, double rel, const char *what)
{
    pc_result *ref = run(v, p, PC_BACKEND_SEQUENTIAL), *gpu = run(v, p, PC_BACKEND_CUDA);
    check_same(ref, gpu, NULL, rel, what);
    CHECK_MSG(!ref || pc_result_border_points(ref) > 0, "%s: no border points: the case tests nothing", what);
    pc_result_free(ref);
    pc_result_free(gpu);
}

static void hca_ms(pc_hca_params *p, int m, size_t clusters)
{
    pc_hca_params_init(p);
    p->m = m;
    p->clusters = clusters;
    p->refine_borders = 1;
}

/* Regions of a few "land covers" plus noise, raster order (long runs of equal cells, as images have). */
static void *image(size_t w, size_t h, size_t bands, int wide, uint64_t seed)
{
    unsigned char *img = malloc(w * h * bands * (wide ? 2 : 1));
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t y = 0; y < h; y++)
        for (size_t x = 0; x < w; x++) {
            int cover = (int)((x * 5 / w + (y * 3 / h) * 2 + (x + y) % 97 / 90) % 5);
            /* In 5 and more bands, covers 3 apart in the band pattern would leave two classes 90 apart in
             * every band, whose cells never touch (no border: the case would test nothing); 1 apart,
             * neighbouring covers overlap in every band. */
            int step = bands >= 5 ? 1 : 3;
            for (size_t j = 0; j < bands; j++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                double noise = ((double)(s >> 40) / 16777216.0 - 0.5) * 40;
                double v = 40 + 30 * ((cover * step + (int)j) % 6) + noise;
                v = v < 0 ? 0 : v > 255 ? 255 : v;
                size_t at = (y * w + x) * bands + j;
                if (wide)
                    ((uint16_t *)img)[at] = (uint16_t)(v * 200);
                else
                    img[at] = (uint8_t)v;
            }
        }
    return img;
}

/* Blobs whose clusters touch somewhere at the parameters p: with 5 blobs in a box of 10, about one seed
 * in 30 sets them so far apart (3 dimensions) that no cell borders another cluster's and the case would
 * test nothing (seed 1795821800); the next seeds are tried, in a fixed sequence. */
static float *touching_blobs(size_t n, size_t dim, uint64_t seed, const pc_hca_params *p)
{
    for (uint64_t attempt = 0;; attempt++) {
        float *pts = test_blobs(n, dim, 5, 1.5, 10, seed + 1000003 * attempt, NULL);
        pc_points v = pc_points_f32(pts, n, dim);
        pc_result *probe = attempt < 20 ? run(&v, p, PC_BACKEND_SEQUENTIAL) : NULL;
        int64_t border = probe ? pc_result_border_points(probe) : 1;
        pc_result_free(probe);
        if (border > 0)
            return pts;
        free(pts);
    }
}

static void test_floats(uint64_t seed)
{
    pc_hca_params p;
    static const size_t dims[] = {2, 3, 5};
    for (size_t d = 0; d < 3; d++) {
        size_t n = quick ? 20000 : 40000, dim = dims[d];
        hca_ms(&p, dim == 5 ? 8 : 20, 5);
        float *pts = touching_blobs(n, dim, seed + d, &p);
        pc_points v = pc_points_f32(pts, n, dim);
        char what[64];
        snprintf(what, sizeof what, "f32 blobs, %zu dims", dim);
        compare(&v, &p, 1e-5, what);
        if (dim == 2) {
            /* A bandwidth of 16 cells (frames of 48 cells, whose float offsets are
             * the least precise), two shifts to keep the CPU's reference quick. */
            hca_ms(&p, 100, 5);
            p.refine_bandwidth = 16 * 10.0 / 100;
            p.refine_max_iter = 2;
            compare(&v, &p, 1e-5, "f32 blobs, m = 100, bandwidth 16 cells");
        }
        if (dim == 3) {
            p.memory_budget = 64; /* the sparse grid */
            compare(&v, &p, 1e-5, "f32 blobs, sparse grid");
            hca_ms(&p, 20, 5);
            p.min_cluster_size = 3000;
            p.noise = 1;
            compare(&v, &p, 1e-5, "f32 blobs, noise clusters");
            hca_ms(&p, 20, 5);
            p.refine_bandwidth = 4.0; /* wide, one shift: climbs that stop between clusters */
            p.refine_max_iter = 1;
            compare(&v, &p, 1e-5, "f32 blobs, wide bandwidth, one shift");
            /* A zero bandwidth moves nothing: plain HCA's labels. */
            hca_ms(&p, 20, 5);
            p.refine_bandwidth = 0;
            pc_result *gpu = run(&v, &p, PC_BACKEND_CUDA);
            p.refine_borders = 0;
            pc_result *plain = run(&v, &p, PC_BACKEND_CUDA);
            CHECK_MSG(gpu && plain && pc_result_changed_points(gpu) == 0 && pc_result_border_points(gpu) > 0 &&
                          !memcmp(pc_result_labels(gpu), pc_result_labels(plain), n * sizeof(int32_t)),
                      "zero bandwidth: not plain HCA's labels");
            pc_result_free(gpu);
            pc_result_free(plain);
            /* In pieces: the card's budget far below the input. */
            hca_ms(&p, 20, 5);
            p.device_memory = (size_t)800 << 10; /* the grid and ~1/3 of the points */
            compare(&v, &p, 1e-5, "f32 blobs in pieces");
        }
        free(pts);
    }
    size_t n = quick ? 20000 : 40000, dim = 3;
    float *pts = test_blobs(n, dim, 4, 2.0, 10, seed + 9, NULL);
    double *p64 = malloc(n * dim * sizeof *p64);
    for (size_t i = 0; i < n * dim; i++)
        p64[i] = pts[i] + 1e-3 * (double)(i % 7);
    pc_points v = pc_points_f64(p64, n, dim);
    hca_ms(&p, 16, 4);
    compare(&v, &p, 1e-5, "f64 blobs");
    for (size_t i = 0; i < n * dim; i++) /* far from the origin: the climbs' frames keep the offsets */
        p64[i] += 1e6;
    compare(&v, &p, 1e-5, "f64 blobs at 1e6");
    free(pts);
    free(p64);
}

static void test_images(uint64_t seed)
{
    pc_hca_params p;
    static const size_t bands[] = {3, 4, 8, 5};
    for (size_t b = 0; b < 4; b++) {
        size_t w = quick ? 300 : 500, h = quick ? 200 : 300;
        int wide = bands[b] == 5;
        void *img = image(w, h, bands[b], wide, seed + 20 + b);
        pc_points v = wide ? pc_points_u16(img, w * h, bands[b]) : pc_points_u8(img, w * h, bands[b]);
        char what[64];
        snprintf(what, sizeof what, "%s image, %zu bands", wide ? "u16" : "u8", bands[b]);
        /* In 5 and 8 bands the classes' cells touch only on coarser grids: the finest m with a border. */
        int m = bands[b] >= 5 ? 8 : 12;
        for (;; m--) {
            hca_ms(&p, m, 5);
            pc_result *probe = m > 2 ? run(&v, &p, PC_BACKEND_SEQUENTIAL) : NULL;
            int64_t border = probe ? pc_result_border_points(probe) : 0;
            pc_result_free(probe);
            if (border > 0 || m <= 2)
                break;
        }
        compare(&v, &p, 1e-6, what);
        if (bands[b] == 3) {
            /* In pieces (the grid and ~21k pixels at a time: 3 pieces quick, 8 in full): each piece's
             * border points gathered at their own rows' numbers. */
            p.device_memory = (size_t)256 << 10;
            compare(&v, &p, 1e-6, "u8 image, 3 bands, in pieces");
        }
        free(img);
    }
    size_t w = quick ? 300 : 500, h = quick ? 200 : 300;
    uint16_t *img = image(w, h, 2, 1, seed + 30);
    pc_points v = pc_points_u16(img, w * h, 2);
    hca_ms(&p, 24, 4);
    compare(&v, &p, 1e-6, "u16 image, 2 bands");
    free(img);
}

#ifdef PC_TEST_HAVE_CUDART
/* Points and labels on the device (the benchmark's case), and device points with host labels. */
static void test_device_input(uint64_t seed)
{
    size_t w = quick ? 300 : 500, h = quick ? 200 : 300, bands = 4, n = w * h;
    uint8_t *img = image(w, h, bands, 0, seed + 40);
    pc_points v = pc_points_u8(img, n, bands);
    pc_hca_params p;
    hca_ms(&p, 12, 5);
    pc_result *ref = run(&v, &p, PC_BACKEND_SEQUENTIAL);
    uint8_t *d_pts = NULL;
    int32_t *d_labels = NULL, *labels = malloc(n * sizeof *labels);
    CHECK(cudaMalloc((void **)&d_pts, n * bands) == cudaSuccess);
    CHECK(cudaMalloc((void **)&d_labels, n * sizeof(int32_t)) == cudaSuccess);
    CHECK(cudaMemcpy(d_pts, img, n * bands, cudaMemcpyHostToDevice) == cudaSuccess);
    pc_points dev = pc_points_u8(d_pts, n, bands);
    p.backend = PC_BACKEND_CUDA;
    pc_hca_plan *plan = NULL;
    CHECK(pc_hca_plan_create(&p, n, bands, PC_U8, &plan) == PC_OK);
    pc_result *r = NULL;
    CHECK(pc_hca_plan_run_device(plan, &dev, d_labels, &r) == PC_OK);
    CHECK(cudaMemcpy(labels, d_labels, n * sizeof(int32_t), cudaMemcpyDeviceToHost) == cudaSuccess);
    check_same(ref, r, labels, 1e-6, "u8 4 bands on the device, device labels");
    pc_result_free(r);
    r = NULL;
    CHECK(pc_hca_plan_run_device(plan, &dev, NULL, &r) == PC_OK);
    check_same(ref, r, NULL, 1e-6, "u8 4 bands on the device, host labels");
    pc_result_free(r);
    pc_hca_plan_free(plan);
    pc_result_free(ref);
    cudaFree(d_pts);
    cudaFree(d_labels);
    free(labels);
    free(img);
}
#endif

int main(void)
{
    if (pc_cuda_device_count() <= 0) {
        printf("test_refine_cuda: no CUDA device, skipped\n");
        return 77;
    }
    quick = getenv("PC_TEST_QUICK") != NULL;
    uint64_t seed = test_seed("test_refine_cuda");
    test_floats(seed);
    test_images(seed);
    /* The cells' sums through the pass's shared table (floats always; integer rows, which HCA's dense
     * cell sums pass takes by default, when asked): a cell its block's table cannot place is summed in
     * global memory. One probe a cell: many such cells, beside the placed ones. */
    setenv("PC_HCA_REFINE_TABLE_PROBES", "1", 1);
    setenv("PC_HCA_REFINE_TABLE_SUMS", "1", 1);
    test_floats(seed + 1000);
    test_images(seed + 1000);
    unsetenv("PC_HCA_REFINE_TABLE_PROBES");
    unsetenv("PC_HCA_REFINE_TABLE_SUMS");
#ifdef PC_TEST_HAVE_CUDART
    test_device_input(seed);
#endif
    return check_report("test_refine_cuda");
}
