/* The CUDA backend of HCA against the sequential one: identical labels, dendrogram, components and
 * cluster sizes (centres within float rounding for float inputs, identical for integer pixels) on
 * generated points and images of every type, the three grid paths (shared counters, shared hash, sparse
 * hash), many components, inputs streamed in pieces, plans reused, input already on the device, and
 * errors. Exits 77 (skipped) where there is no CUDA device. */
#include "check.h"
#include "test_util.h"

#include <math.h>
#include <string.h>
#ifdef PC_TEST_HAVE_CUDART
#include <cuda_runtime.h>
#endif

static int quick;

static int same_arrays(const void *a, const void *b, size_t bytes) { return (!a && !b) || (a && b && !memcmp(a, b, bytes)); }

/* Everything but the centres identical; centres within rel of each other. */
static void check_same(const pc_result *ref, const pc_result *gpu, double rel, const char *what)
{
    CHECK_MSG(ref && gpu, "%s: a run failed: %s", what, pc_last_error());
    if (!ref || !gpu)
        return;
    size_t n = pc_result_n(ref), k = pc_result_cluster_count(ref), dim = pc_result_dim(ref), comps;
    CHECK_MSG(pc_result_backend(gpu) == PC_BACKEND_CUDA, "%s: ran on %s", what, pc_backend_name(pc_result_backend(gpu)));
    CHECK_MSG(k == pc_result_cluster_count(gpu), "%s: %zu clusters on the CPU, %zu on the GPU", what, k,
              pc_result_cluster_count(gpu));
    CHECK_MSG(pc_result_cell_count(ref) == pc_result_cell_count(gpu), "%s: cells %zu vs %zu", what,
              pc_result_cell_count(ref), pc_result_cell_count(gpu));
    comps = pc_result_component_count(ref);
    CHECK_MSG(comps == pc_result_component_count(gpu), "%s: components %zu vs %zu", what, comps,
              pc_result_component_count(gpu));
    if (k != pc_result_cluster_count(gpu) || comps != pc_result_component_count(gpu))
        return;
    size_t diff = 0;
    const int32_t *a = pc_result_labels(ref), *b = pc_result_labels(gpu);
    for (size_t i = 0; i < n; i++)
        diff += a[i] != b[i];
    CHECK_MSG(diff == 0, "%s: %zu of %zu labels differ", what, diff, n);
    size_t ra, rb;
    const double *za = pc_result_dendrogram(ref, &ra), *zb = pc_result_dendrogram(gpu, &rb);
    CHECK_MSG(ra == rb && same_arrays(za, zb, ra * 4 * sizeof(double)), "%s: dendrograms differ (%zu, %zu rows)",
              what, ra, rb);
    CHECK_MSG(same_arrays(pc_result_component_cells(ref), pc_result_component_cells(gpu), comps * 8) &&
                  same_arrays(pc_result_component_densities(ref), pc_result_component_densities(gpu), comps * 8) &&
                  same_arrays(pc_result_component_sizes(ref), pc_result_component_sizes(gpu), comps * 8),
              "%s: components differ", what);
    CHECK_MSG(same_arrays(pc_result_sizes(ref), pc_result_sizes(gpu), k * 8), "%s: cluster sizes differ", what);
    double worst = 0;
    const float *ca = pc_result_centers(ref), *cb = pc_result_centers(gpu);
    for (size_t q = 0; q < k * dim; q++)
        worst = fmax(worst, fabs((double)ca[q] - cb[q]) / fmax(1.0, fabs((double)ca[q])));
    CHECK_MSG(worst <= rel, "%s: centres differ by %g (relative)", what, worst);
}

static pc_result *run(const pc_points *v, const pc_hca_params *base, pc_backend backend)
{
    pc_hca_params p = *base;
    p.backend = backend;
    pc_result *r = NULL;
    pc_status st = pc_hca(v, &p, &r);
    if (st != PC_OK)
        fprintf(stderr, "pc_hca (%s): %s: %s\n", pc_backend_name(backend), pc_status_string(st), pc_last_error());
    return r;
}

static void compare(const pc_points *v, const pc_hca_params *p, double rel, const char *what)
{
    pc_result *ref = run(v, p, PC_BACKEND_SEQUENTIAL), *gpu = run(v, p, PC_BACKEND_CUDA);
    check_same(ref, gpu, rel, what);
    pc_result_free(ref);
    pc_result_free(gpu);
}

/* A synthetic image: smooth regions (a few "land covers" with their own band values) plus noise, as
 * uint8 rows in raster order, so runs of equal cells are long as in real imagery. */
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

/* Float points of several dimensions, each grid path, cut to k and at a threshold, with noise. */
static void test_points(uint64_t seed)
{
    size_t n = quick ? 20000 : 200000;
    for (size_t dim = 1; dim <= 8; dim++) {
        float *pts = test_blobs(n, dim, 7, 1.0, 6, seed + dim, NULL);
        pc_points v = pc_points_f32(pts, n, dim);
        pc_hca_params p;
        pc_hca_params_init(&p);
        p.m = dim <= 3 ? 32 : dim == 4 ? 20 : dim <= 6 ? 8 : 5;
        p.clusters = 7;
        char what[96];
        snprintf(what, sizeof what, "f32 dim %zu, m %d", dim, p.m);
        compare(&v, &p, 1e-5, what);
        p.clusters = 0;
        p.threshold = 0.3;
        p.noise = 1;
        snprintf(what, sizeof what, "f32 dim %zu, threshold 0.3 with noise", dim);
        compare(&v, &p, 1e-5, what);
        p.noise = 0;
        p.clusters = 5;
        p.memory_budget = 64; /* no dense grid: the sparse hash */
        snprintf(what, sizeof what, "f32 dim %zu, sparse grid", dim);
        compare(&v, &p, 1e-5, what);
        if (dim == 3 || dim == 4) {
            pc_points v64;
            double *d = malloc(n * dim * sizeof *d);
            for (size_t i = 0; i < n * dim; i++)
                d[i] = pts[i] * 1.000001;
            v64 = pc_points_f64(d, n, dim);
            p.memory_budget = (size_t)512 << 20;
            snprintf(what, sizeof what, "f64 dim %zu", dim);
            compare(&v64, &p, 1e-5, what);
            free(d);
        }
        free(pts);
    }
}

/* RGB and 4-band images as uint8 and uint16 rows: the shared-counter path (32^3 cells) and the shared
 * hash (32^4), as the benchmarks run them. */
static void test_images(uint64_t seed)
{
    size_t w = quick ? 200 : 1200, h = quick ? 150 : 900;
    for (size_t bands = 3; bands <= 4; bands++) {
        uint8_t *img = image_u8(w, h, bands, seed + bands);
        pc_points v = pc_points_u8(img, w * h, bands);
        pc_hca_params p;
        pc_hca_params_init(&p);
        p.clusters = 6;
        char what[64];
        snprintf(what, sizeof what, "u8 image, %zu bands", bands);
        compare(&v, &p, 0, what);
        uint16_t *img16 = malloc(w * h * bands * sizeof *img16);
        for (size_t i = 0; i < w * h * bands; i++)
            img16[i] = (uint16_t)(img[i] * 37 + 11);
        pc_points v16 = pc_points_u16(img16, w * h, bands);
        snprintf(what, sizeof what, "u16 image, %zu bands", bands);
        compare(&v16, &p, 0, what);
        /* Rows with padding (a stride beyond the packed row). */
        uint8_t *padded = malloc(w * h * (bands + 2));
        for (size_t i = 0; i < w * h; i++)
            memcpy(padded + i * (bands + 2), img + i * bands, bands);
        pc_points vp = pc_points_u8(padded, w * h, bands);
        vp.stride = bands + 2;
        snprintf(what, sizeof what, "u8 image, %zu bands, strided rows", bands);
        compare(&vp, &p, 0, what);
        free(padded);
        free(img16);
        free(img);
    }
}

/* Uniform 4-band noise: each block meets more distinct cells than its shared hash holds, and spills
 * counts to the grid in global memory. */
static void test_shared_hash_spill(uint64_t seed)
{
    size_t n = 4000000, bands = 4;
    uint8_t *img = malloc(n * bands);
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n * bands; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        img[i] = (uint8_t)(s >> 24);
    }
    pc_points v = pc_points_u8(img, n, bands);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.clusters = 4;
    compare(&v, &p, 0, "uniform 4-band noise (shared hash spills)");
    free(img);
}

/* Uniform noise on a fine grid: tens of thousands of components (the paper's one-block SLINK stopped
 * near 6,100), a deep spanning forest, many ties in density. */
static void test_many_components(uint64_t seed)
{
    size_t n = quick ? 30000 : 400000, dim = 2;
    float *pts = test_blobs(n, dim, 1, 1000, 1, seed, NULL);
    pc_points v = pc_points_f32(pts, n, dim);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = quick ? 200 : 700;
    p.clusters = 12;
    p.min_cluster_size = 0;
    pc_result *ref = run(&v, &p, PC_BACKEND_SEQUENTIAL), *gpu = run(&v, &p, PC_BACKEND_CUDA);
    CHECK_MSG(ref && pc_result_component_count(ref) > (quick ? 1000u : 10000u), "only %zu components",
              ref ? pc_result_component_count(ref) : 0);
    check_same(ref, gpu, 1e-5, "many components");
    pc_result_free(ref);
    pc_result_free(gpu);
    /* 300 clusters: labels come back as int32, not as bytes. */
    p.clusters = 300;
    ref = run(&v, &p, PC_BACKEND_SEQUENTIAL);
    gpu = run(&v, &p, PC_BACKEND_CUDA);
    CHECK(ref && pc_result_cluster_count(ref) == 300);
    check_same(ref, gpu, 1e-5, "many components, 300 clusters");
    pc_result_free(ref);
    pc_result_free(gpu);
    free(pts);
}

/* Copies of 8 MiB and more go through pinned staging buffers in chunks, both ways: a 9- or 36-MB image
 * (labels back as bytes) and 2.2M or 2.5M float points in 300 clusters (labels back as int32). */
static void test_large_transfers(uint64_t seed)
{
    size_t w = quick ? 2000 : 4000, h = quick ? 1500 : 3000, bands = 3;
    uint8_t *img = image_u8(w, h, bands, seed + 11);
    pc_points v = pc_points_u8(img, w * h, bands);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.clusters = 6;
    compare(&v, &p, 0, "36-MB image through the staging buffers");
    /* Issue 17: host to host with the copies overlapped (PC_HCA_CUDA_OVERLAP=1; round one's way is
     * the default until it has run on a GPU): the same image, and one band, where a chunk's label
     * bytes land where its own rows were (9 or 20 MB: 2 or 3 chunks). */
    setenv("PC_HCA_CUDA_OVERLAP", "1", 1);
    compare(&v, &p, 0, "36-MB image, copies overlapped");
    free(img);
    size_t h1 = 2000, w1 = (quick ? 9000000 : 20000000) / h1;
    uint8_t *one = image_u8(w1, h1, 1, seed + 13);
    pc_points v1 = pc_points_u8(one, w1 * h1, 1);
    compare(&v1, &p, 0, "one-band image, copies overlapped");
    free(one);
    unsetenv("PC_HCA_CUDA_OVERLAP");
    size_t n = quick ? 2200000 : 2500000;
    float *pts = test_blobs(n, 2, 1, 1000, 1, seed + 12, NULL);
    pc_points vf = pc_points_f32(pts, n, 2);
    p.m = 700;
    p.clusters = 300;
    p.min_cluster_size = 0;
    compare(&vf, &p, 1e-5, "2.5M points, int32 labels through the staging buffers");
    free(pts);
}

/* Runs one case with the device limited to device_memory bytes (host input goes through in pieces) and
 * compares with the sequential backend. With the CUDA runtime at hand, also checks that the plan held
 * no more than that (plus allocation granularity). */
static void pieces_case(const pc_points *v, pc_hca_params p, size_t device_memory, double rel, const char *what)
{
    pc_result *ref = run(v, &p, PC_BACKEND_SEQUENTIAL), *gpu = NULL;
    p.device_memory = device_memory;
    p.backend = PC_BACKEND_CUDA;
#ifdef PC_TEST_HAVE_CUDART
    size_t free_before = 0, free_after = 0, total = 0;
    cudaMemGetInfo(&free_before, &total);
#endif
    pc_hca_plan *plan = NULL;
    CHECK_MSG(pc_hca_plan_create(&p, v->n, v->dim, v->dtype, &plan) == PC_OK, "%s: %s", what, pc_last_error());
#ifdef PC_TEST_HAVE_CUDART
    cudaMemGetInfo(&free_after, &total);
    size_t held = free_before > free_after ? free_before - free_after : 0;
    CHECK_MSG(held <= device_memory + ((size_t)24 << 20), "%s: the plan holds %zu MiB, limit %zu MiB", what, held >> 20,
              device_memory >> 20);
#endif
    CHECK(plan && pc_hca_plan_run(plan, v, &gpu) == PC_OK);
    check_same(ref, gpu, rel, what);
    pc_result_free(gpu);
    pc_result_free(ref);
    pc_hca_plan_free(plan);
}

/* A device too small for the whole input: pieces give the same result, on every grid path, strided
 * rows, float rows, labels back as bytes and as int32. */
static void test_pieces(uint64_t seed)
{
    size_t w = quick ? 600 : 6000, h = quick ? 200 : 5000, bands = 3; /* 30 Mpix: 90 MB + 120 MB labels */
    uint8_t *img = image_u8(w, h, bands, seed + 5);
    pc_points v = pc_points_u8(img, w * h, bands);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.clusters = 6;
    pieces_case(&v, p, quick ? (size_t)5 << 19 : (size_t)40 << 20, 0, "u8 image in pieces");
    /* Every other pixel through a stride of two rows (the 2D copy). */
    pc_points strided = pc_points_u8(img, w * h / 2, bands);
    strided.stride = 2 * bands;
    pieces_case(&strided, p, quick ? (size_t)5 << 19 : (size_t)30 << 20, 0, "strided u8 image in pieces");
    free(img);
    size_t n = quick ? 100000 : 1000000;
    float *pts = test_blobs(n, 3, 6, 1.0, 6, seed + 6, NULL);
    pc_points vf = pc_points_f32(pts, n, 3);
    pc_hca_params_init(&p);
    p.clusters = 6;
    p.memory_budget = 64; /* the sparse hash */
    pieces_case(&vf, p, (quick ? 10 : 95) * ((size_t)1 << 20), 1e-5, "f32 points, sparse grid, in pieces");
    free(pts);
    n = quick ? 400000 : 3000000;
    pts = test_blobs(n, 2, 1, 1000, 1, seed + 7, NULL);
    pc_points vu = pc_points_f32(pts, n, 2);
    pc_hca_params_init(&p);
    p.m = 64;
    p.clusters = 300;
    p.min_cluster_size = 0;
    pieces_case(&vu, p, quick ? (size_t)2 << 20 : (size_t)12 << 20, 1e-5, "300 clusters (int32 labels) in pieces");
    /* Too little for the grid itself: a clear status, no crash; with AUTO, the CPU. */
    p.device_memory = 1000;
    p.backend = PC_BACKEND_CUDA;
    pc_result *none = NULL;
    CHECK(pc_hca(&vu, &p, &none) == PC_DEVICE_OUT_OF_MEMORY && none == NULL);
    CHECK_MSG(strstr(pc_last_error(), "MiB") != NULL, "message: %s", pc_last_error());
    p.backend = PC_BACKEND_AUTO;
    pc_hca_plan *plan = NULL;
    CHECK(pc_hca_plan_create(&p, (size_t)4 << 20, 2, PC_F32, &plan) == PC_OK);
    CHECK(plan && pc_hca_plan_backend(plan) != PC_BACKEND_CUDA);
    pc_hca_plan_free(plan);
    free(pts);
}

/* One plan, a stream of frames of one size (and a smaller one): each result equals a fresh pc_hca. */
static void test_plan(uint64_t seed)
{
    size_t w = quick ? 160 : 640, h = quick ? 120 : 480, bands = 4;
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.clusters = 5;
    p.backend = PC_BACKEND_CUDA;
    pc_hca_plan *plan = NULL;
    CHECK(pc_hca_plan_create(&p, w * h, bands, PC_U8, &plan) == PC_OK && plan);
    CHECK(pc_hca_plan_backend(plan) == PC_BACKEND_CUDA);
    for (int frame = 0; plan && frame < 4; frame++) {
        uint8_t *img = image_u8(w, h, bands, seed + 100 + (uint64_t)frame);
        size_t n = frame == 3 ? w * h / 3 : w * h;
        pc_points v = pc_points_u8(img, n, bands);
        pc_result *r = NULL, *ref = run(&v, &p, PC_BACKEND_SEQUENTIAL);
        CHECK(pc_hca_plan_run(plan, &v, &r) == PC_OK);
        check_same(ref, r, 0, frame == 3 ? "plan, smaller frame" : "plan, frame");
        pc_result_free(r);
        pc_result_free(ref);
        free(img);
    }
    /* The plan's shape is enforced. */
    uint8_t px[8] = {0};
    pc_points wrong = pc_points_u8(px, 2, 3);
    pc_result *r = NULL;
    CHECK(pc_hca_plan_run(plan, &wrong, &r) == PC_INVALID_ARGUMENT && r == NULL);
    pc_hca_plan_free(plan);
    /* AUTO takes the GPU from a megapixel on. */
    p.backend = PC_BACKEND_AUTO;
    CHECK(pc_hca_plan_create(&p, (size_t)1 << 20, 3, PC_U8, &plan) == PC_OK);
    CHECK(pc_hca_plan_backend(plan) == PC_BACKEND_CUDA);
    pc_hca_plan_free(plan);
    CHECK(pc_hca_plan_create(&p, 1000, 3, PC_U8, &plan) == PC_OK);
    CHECK(pc_hca_plan_backend(plan) != PC_BACKEND_CUDA);
    pc_hca_plan_free(plan);
}

/* One byte-labels case: pc_hca_plan_run_u8 on a CUDA plan against the sequential backend's labels. */
static void bytes_case(const pc_points *v, pc_hca_params p, const char *what)
{
    pc_result *ref = run(v, &p, PC_BACKEND_SEQUENTIAL), *r = NULL;
    p.backend = PC_BACKEND_CUDA;
    pc_hca_plan *plan = NULL;
    uint8_t *bytes = malloc(v->n);
    CHECK_MSG(pc_hca_plan_create(&p, v->n, v->dim, v->dtype, &plan) == PC_OK, "%s: %s", what, pc_last_error());
    CHECK_MSG(plan && pc_hca_plan_run_u8(plan, v, bytes, &r) == PC_OK, "%s: %s", what, pc_last_error());
    if (ref && r) {
        CHECK_MSG(pc_result_backend(r) == PC_BACKEND_CUDA && pc_result_labels(r) == NULL, "%s: result", what);
        CHECK_MSG(pc_result_cluster_count(r) == pc_result_cluster_count(ref) &&
                      !memcmp(pc_result_sizes(r), pc_result_sizes(ref), pc_result_cluster_count(r) * sizeof(int64_t)),
                  "%s: clusters differ", what);
        size_t differ = test_label_bytes_differ(pc_result_labels(ref), bytes, v->n);
        CHECK_MSG(differ == 0, "%s: %zu of %zu label bytes differ", what, differ, v->n);
    }
    pc_result_free(ref);
    pc_result_free(r);
    pc_hca_plan_free(plan);
    free(bytes);
}

/* Labels as bytes (issue 17 item 4): through the staging buffers, overlapped (their default) and round
 * one's way; a frame too small for them; pieces; HCA-MS (narrowed on the host); 255 clusters refused. */
static void test_label_bytes(uint64_t seed)
{
    size_t w = quick ? 2000 : 4000, h = quick ? 1500 : 3000, bands = 3;
    uint8_t *img = image_u8(w, h, bands, seed + 41);
    pc_points v = pc_points_u8(img, w * h, bands);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.clusters = 6;
    bytes_case(&v, p, "bytes, 36-MB image (copies overlapped: the default for bytes)");
    setenv("PC_HCA_CUDA_OVERLAP", "0", 1);
    bytes_case(&v, p, "bytes, 36-MB image, round one's copies");
    unsetenv("PC_HCA_CUDA_OVERLAP");
    pc_hca_params pieces = p;
    pieces.device_memory = (size_t)5 << 20;
    bytes_case(&v, pieces, "bytes, 36-MB image in pieces");
    pc_points small = pc_points_u8(img, 160 * 120, bands);
    bytes_case(&small, p, "bytes, small frame");
    pc_hca_params ms = p;
    ms.refine_borders = 1;
    pc_points mid = pc_points_u8(img, 400 * 300, bands);
    bytes_case(&mid, ms, "bytes, HCA-MS");
    free(img);
    size_t n = quick ? 400000 : 2500000;
    float *pts = test_blobs(n, 2, 1, 1000, 1, seed + 42, NULL);
    pc_points vf = pc_points_f32(pts, n, 2);
    pc_hca_params_init(&p);
    p.m = 256;
    p.clusters = 300;
    p.min_cluster_size = 0;
    p.backend = PC_BACKEND_CUDA;
    pc_hca_plan *plan = NULL;
    uint8_t *bytes = malloc(n);
    pc_result *r = NULL;
    CHECK(pc_hca_plan_create(&p, n, 2, PC_F32, &plan) == PC_OK);
    CHECK_MSG(plan && pc_hca_plan_run_u8(plan, &vf, bytes, &r) == PC_UNSUPPORTED && r == NULL,
              "300 clusters as bytes: %s", pc_last_error());
    pc_hca_plan_free(plan);
    free(bytes);
    free(pts);
}

#ifdef PC_TEST_HAVE_CUDART
/* Points already on the GPU, labels left there or brought back; non-finite values refused. */
static void test_device_input(uint64_t seed)
{
    size_t n = quick ? 20000 : 300000, dim = 3;
    float *pts = test_blobs(n, dim, 5, 1.0, 6, seed + 9, NULL);
    pc_points host = pc_points_f32(pts, n, dim);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.clusters = 5;
    p.backend = PC_BACKEND_CUDA;
    pc_result *ref = run(&host, &p, PC_BACKEND_SEQUENTIAL);
    float *d_pts = NULL;
    int32_t *d_labels = NULL;
    CHECK(cudaMalloc((void **)&d_pts, n * dim * sizeof(float)) == cudaSuccess);
    CHECK(cudaMalloc((void **)&d_labels, n * sizeof(int32_t)) == cudaSuccess);
    cudaMemcpy(d_pts, pts, n * dim * sizeof(float), cudaMemcpyHostToDevice);
    pc_hca_plan *plan = NULL;
    CHECK(pc_hca_plan_create(&p, n, dim, PC_F32, &plan) == PC_OK);
    pc_points dev = pc_points_f32(d_pts, n, dim);
    pc_result *r = NULL;
    CHECK(pc_hca_plan_run_device(plan, &dev, NULL, &r) == PC_OK);
    check_same(ref, r, 1e-5, "device input, labels to the host");
    pc_result_free(r);
    CHECK(pc_hca_plan_run_device(plan, &dev, d_labels, &r) == PC_OK);
    CHECK(r && pc_result_labels(r) == NULL);
    int32_t *labels = malloc(n * sizeof *labels);
    cudaMemcpy(labels, d_labels, n * sizeof(int32_t), cudaMemcpyDeviceToHost);
    CHECK_MSG(ref && !memcmp(labels, pc_result_labels(ref), n * sizeof *labels), "device labels differ");
    pc_result_free(r);
    float nan_value = NAN;
    cudaMemcpy(d_pts + 3 * dim + 1, &nan_value, sizeof nan_value, cudaMemcpyHostToDevice);
    CHECK(pc_hca_plan_run_device(plan, &dev, d_labels, &r) == PC_INVALID_ARGUMENT && r == NULL);
    CHECK_MSG(strstr(pc_last_error(), "non-finite") != NULL, "message: %s", pc_last_error());
    /* Bad device input: a host pointer, a misaligned one, a stride shorter than a row. */
    pc_points wrong = pc_points_f32(pts, n, dim);
    CHECK(pc_hca_plan_run_device(plan, &wrong, d_labels, &r) == PC_INVALID_ARGUMENT && r == NULL);
    CHECK_MSG(strstr(pc_last_error(), "not GPU memory") != NULL, "message: %s", pc_last_error());
    wrong = pc_points_f32(d_pts, n - 1, dim);
    wrong.data = (const char *)d_pts + 2;
    CHECK(pc_hca_plan_run_device(plan, &wrong, d_labels, &r) == PC_INVALID_ARGUMENT);
    wrong = pc_points_f32(d_pts, n, dim);
    wrong.stride = 4;
    CHECK(pc_hca_plan_run_device(plan, &wrong, d_labels, &r) == PC_INVALID_ARGUMENT);
    pc_hca_plan_free(plan);
    /* A CPU plan takes no device input. */
    p.backend = PC_BACKEND_SEQUENTIAL;
    CHECK(pc_hca_plan_create(&p, n, dim, PC_F32, &plan) == PC_OK);
    CHECK(pc_hca_plan_run_device(plan, &dev, d_labels, &r) == PC_INVALID_ARGUMENT);
    pc_hca_plan_free(plan);
    cudaFree(d_pts);
    cudaFree(d_labels);
    free(labels);
    /* uint8 pixels on the device with padded rows (4 bytes a row, 3 bands). */
    size_t w = quick ? 300 : 2000, h = quick ? 200 : 1500;
    uint8_t *img = image_u8(w, h, 3, seed + 21), *padded = malloc(w * h * 4), *d_img = NULL;
    for (size_t i = 0; i < w * h; i++) {
        memcpy(padded + 4 * i, img + 3 * i, 3);
        padded[4 * i + 3] = 77;
    }
    pc_points host8 = pc_points_u8(img, w * h, 3);
    p.backend = PC_BACKEND_CUDA;
    p.clusters = 6;
    pc_result *ref8 = run(&host8, &p, PC_BACKEND_SEQUENTIAL);
    CHECK(cudaMalloc((void **)&d_img, w * h * 4) == cudaSuccess);
    cudaMemcpy(d_img, padded, w * h * 4, cudaMemcpyHostToDevice);
    CHECK(pc_hca_plan_create(&p, w * h, 3, PC_U8, &plan) == PC_OK);
    pc_points dev8 = pc_points_u8(d_img, w * h, 3);
    dev8.stride = 4;
    CHECK(pc_hca_plan_run_device(plan, &dev8, NULL, &r) == PC_OK);
    check_same(ref8, r, 0, "u8 device input, padded rows");
    pc_result_free(r);
    pc_result_free(ref8);
    pc_hca_plan_free(plan);
    cudaFree(d_img);
    free(img);
    free(padded);
    pc_result_free(ref);
    free(pts);
}
#endif

/* Degenerate inputs: one point, all points equal, one dimension constant. */
static void test_degenerate(void)
{
    float one[3] = {1, 2, 3};
    pc_points v = pc_points_f32(one, 1, 3);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.clusters = 1;
    compare(&v, &p, 0, "one point");
    size_t n = 5000;
    float *same = malloc(n * 4 * sizeof *same);
    for (size_t i = 0; i < n * 4; i++)
        same[i] = (i % 4 == 2) ? 7.0f : (float)(i % 97);
    pc_points vs = pc_points_f32(same, n, 4);
    p.clusters = 3;
    compare(&vs, &p, 1e-6, "a constant dimension");
    for (size_t i = 0; i < n * 4; i++)
        same[i] = 5;
    compare(&vs, &p, 0, "all points equal");
    /* Host values are checked on the GPU as it reads them: NaN, and float64 beyond float's range. */
    same[7] = NAN;
    p.backend = PC_BACKEND_CUDA;
    pc_result *none = NULL;
    CHECK(pc_hca(&vs, &p, &none) == PC_INVALID_ARGUMENT && none == NULL);
    CHECK_MSG(strstr(pc_last_error(), "non-finite") != NULL, "message: %s", pc_last_error());
    double big[6] = {1, 2, 3, 4e38, 5, 6};
    pc_points vb = pc_points_f64(big, 3, 2);
    CHECK(pc_hca(&vb, &p, &none) == PC_INVALID_ARGUMENT && none == NULL);
    p.backend = PC_BACKEND_SEQUENTIAL;
    CHECK(pc_hca(&vb, &p, &none) == PC_INVALID_ARGUMENT && none == NULL);
    free(same);
}

int main(void)
{
    if (pc_cuda_device_count() <= 0) {
        printf("test_hca_cuda: no CUDA device, skipped\n");
        return 77;
    }
    quick = getenv("PC_CUDA_TEST_QUICK") != NULL;
    uint64_t seed = test_seed("test_hca_cuda");
    test_degenerate();
    test_points(seed);
    test_images(seed);
    test_many_components(seed);
    test_shared_hash_spill(seed);
    test_pieces(seed);
    test_large_transfers(seed);
    test_plan(seed);
    test_label_bytes(seed);
#ifdef PC_TEST_HAVE_CUDART
    test_device_input(seed);
#endif
    return check_report("test_hca_cuda");
}
