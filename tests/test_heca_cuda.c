/* HECA on the GPU (host points: members counted and labelled on the device, the cells' work on the
 * host) against the CPU: identical labels, dendrogram and components on pixel-like uint8 rows (3 and 4 bands, shifted
 * members too) and on float32 blobs; HCA-MS asked of the CUDA backend gives the CPU's labels. The same
 * with the points in GPU memory (pc_heca_device, whose members' stages, prototypes and groups run on
 * the device too): uint8, uint16 and float32 rows, labels left on the device or brought back, uniform
 * 4-band noise whose reference cells outnumber a block's shared sums, a reference coarser than the
 * other members, a single member, a plan (pc_heca_plan) run on inputs of several sizes, and non-finite
 * values refused. Exits 77 (skipped) without a device. */
#include "check.h"
#include "test_util.h"

#include <string.h>
#ifdef PC_TEST_HAVE_CUDART
#include <cuda_runtime.h>
#endif

static uint8_t *pixels(size_t n, size_t bands, uint64_t seed)
{
    uint8_t *img = malloc(n * bands);
    uint64_t s = seed | 1;
    uint8_t spectra[6][8];
    for (int c = 0; c < 6; c++)
        for (size_t b = 0; b < bands; b++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            spectra[c][b] = (uint8_t)(40 + (s >> 33) % 170);
        }
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int c = (int)((i / 4096 + (s >> 61)) % 6);
        for (size_t b = 0; b < bands; b++) {
            int v = spectra[c][b] + (int)((s >> (8 * b)) & 15) - (int)((s >> (8 * b + 4)) & 15);
            img[i * bands + b] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
    return img;
}

#ifdef PC_TEST_HAVE_CUDART
static pc_heca_plan *plan; /* on_device 3's */
#endif

/* On the device: 0 the host's points through pc_heca; 1 a copy of them in GPU memory, labels into the
 * result; 2 the same, labels into GPU memory and brought back here; 3 as 1, through `plan`. */
static pc_status run_heca(const pc_points *v, const pc_heca_params *p, int on_device, pc_result **r, int32_t **labels)
{
    *labels = NULL;
    if (!on_device)
        return pc_heca(v, p, r);
#ifdef PC_TEST_HAVE_CUDART
    size_t elem = v->dtype == PC_U8 ? 1 : v->dtype == PC_U16 ? 2 : v->dtype == PC_F32 ? 4 : 8;
    size_t bytes = v->n * (v->stride ? v->stride : v->dim * elem);
    void *d_pts = NULL;
    int32_t *d_labels = NULL;
    if (cudaMalloc(&d_pts, bytes) != cudaSuccess || cudaMemcpy(d_pts, v->data, bytes, cudaMemcpyHostToDevice) != cudaSuccess ||
        (on_device == 2 && cudaMalloc((void **)&d_labels, v->n * sizeof *d_labels) != cudaSuccess)) {
        cudaFree(d_pts);
        return PC_DEVICE_ERROR;
    }
    pc_points dv = *v;
    dv.data = d_pts;
    pc_status st = on_device == 3 ? pc_heca_plan_run_device(plan, &dv, NULL, r) : pc_heca_device(&dv, p, d_labels, r);
    if (st == PC_OK && on_device == 2) {
        CHECK_MSG(pc_result_labels(*r) == NULL, "device labels: the result has labels too");
        *labels = malloc(v->n * sizeof **labels);
        CHECK(*labels && cudaMemcpy(*labels, d_labels, v->n * sizeof **labels, cudaMemcpyDeviceToHost) == cudaSuccess);
    }
    cudaFree(d_pts);
    cudaFree(d_labels);
    return st;
#else
    (void)p, (void)r;
    return PC_UNSUPPORTED;
#endif
}

static void compare_with(const pc_points *v, pc_heca_params p, int on_device, const char *what)
{
    pc_result *a = NULL, *b = NULL;
    int32_t *device_labels = NULL;
    p.hca.backend = PC_BACKEND_OPENMP;
    CHECK_STATUS(pc_heca(v, &p, &a), PC_OK);
    p.hca.backend = PC_BACKEND_CUDA;
    CHECK_STATUS(run_heca(v, &p, on_device, &b, &device_labels), PC_OK);
    if (a && b) {
        CHECK(pc_result_backend(b) == PC_BACKEND_CUDA);
        size_t n = pc_result_n(a), ra, rb;
        size_t diff = 0;
        const int32_t *lb = device_labels ? device_labels : pc_result_labels(b);
        for (size_t i = 0; i < n; i++)
            diff += pc_result_labels(a)[i] != lb[i];
        CHECK_MSG(diff == 0, "%s: %zu of %zu labels differ", what, diff, n);
        const double *za = pc_result_dendrogram(a, &ra), *zb = pc_result_dendrogram(b, &rb);
        CHECK_MSG(ra == rb && (ra == 0 || memcmp(za, zb, ra * 4 * sizeof *za) == 0), "%s: dendrograms differ", what);
        size_t c = pc_result_component_count(a);
        CHECK(c == pc_result_component_count(b) && pc_result_cell_count(a) == pc_result_cell_count(b));
        CHECK(c == pc_result_component_count(b) &&
              memcmp(pc_result_component_sizes(a), pc_result_component_sizes(b), c * sizeof(int64_t)) == 0);
        for (size_t l = 0; l < pc_result_member_count(a); l++)
            CHECK(pc_result_member_components(a, l) == pc_result_member_components(b, l));
        CHECK(pc_result_cluster_count(a) == pc_result_cluster_count(b) &&
              memcmp(pc_result_sizes(a), pc_result_sizes(b), pc_result_cluster_count(a) * sizeof(int64_t)) == 0);
        printf("%s%s: %zu points, %zu cells, %zu groups, %zu clusters, %zu labels differ\n", what,
               on_device == 3   ? " (device in, a plan)"
               : on_device == 2 ? " (device in, device labels)"
               : on_device      ? " (device in)"
                                : "",
               n,
               pc_result_cell_count(a), c, pc_result_cluster_count(a), diff);
    }
    free(device_labels);
    pc_result_free(a);
    pc_result_free(b);
}

static void compare_on(const pc_points *v, int shifts, size_t clusters, int on_device, const char *what)
{
    pc_heca_params p;
    pc_heca_params_init(&p);
    p.shifts = shifts;
    p.hca.clusters = clusters;
    compare_with(v, p, on_device, what);
}

static void compare(const pc_points *v, int shifts, size_t clusters, const char *what)
{
    compare_on(v, shifts, clusters, 0, what);
#ifdef PC_TEST_HAVE_CUDART
    compare_on(v, shifts, clusters, 1 + shifts, what); /* both ways of the labels, one a case */
#endif
}

#ifdef PC_TEST_HAVE_CUDART
/* Device input beyond the pixels above: uint16 rows, uniform noise (tens of thousands of reference cells:
 * the cells' sums in several ranges of shared memory), and a NaN refused. */
static void device_only_cases(uint64_t seed, size_t n)
{
    uint16_t *w = malloc(n * 3 * sizeof *w);
    uint8_t *noise = malloc(n * 4);
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int c = (int)((i / 2048 + (s >> 62)) % 4);
        for (size_t b = 0; b < 3; b++)
            w[i * 3 + b] = (uint16_t)(9000 * c + 3000 * b + ((s >> (16 * b)) & 2047));
        for (size_t b = 0; b < 4; b++)
            noise[i * 4 + b] = (uint8_t)(s >> (8 * b + 24));
    }
    pc_points v16 = pc_points_u16(w, n, 3);
    compare_on(&v16, 0, 4, 1, "uint16 x 3");
    pc_points vn = pc_points_u8(noise, n, 4);
    compare_on(&vn, 0, 6, 2, "uniform uint8 x 4");
    /* Rows 4 bytes apart, 3 bands read of each (the noise's 4th band skipped). */
    pc_points v3 = vn;
    v3.dim = 3;
    v3.stride = 4;
    compare_on(&v3, 0, 6, 1, "uint8 x 3 in rows of 4 bytes");
    /* A coarse reference: the finer member's cell holding a prototype's mean, and every cell around it,
     * may be empty (blobs apart within one coarse cell), so that the nearest cell centre decides; and a
     * single member, whose dendrogram is HCA's own. */
    int32_t *truth = NULL;
    size_t nb = 20000;
    float *blobs = test_data(PC_DATASET_BLOBS, nb, 3, 6, 1.0, 10, seed + 7, &truth);
    pc_points vb = pc_points_f32(blobs, nb, 3);
    pc_heca_params p;
    pc_heca_params_init(&p);
    p.hca.clusters = 4;
    p.members = 3;
    p.m[0] = 5;
    p.m[1] = 40;
    p.m[2] = 23;
    p.reference = 0;
    compare_with(&vb, p, 1, "float32 blobs, coarse reference");
    p.shifts = 1;
    compare_with(&vb, p, 2, "float32 blobs, coarse reference, shifts");
    pc_heca_params_init(&p);
    p.hca.clusters = 5;
    p.members = 1;
    p.m[0] = 24;
    compare_with(&vb, p, 1, "float32 blobs, one member");
    compare_with(&vn, p, 2, "uniform uint8 x 4, one member");
    free(blobs);
    free(truth);
    /* Host memory where GPU memory is expected, a stride shorter than a row: refused, not a fault. */
    pc_heca_params q;
    pc_heca_params_init(&q);
    q.hca.clusters = 4;
    pc_result *none = NULL;
    CHECK_STATUS(pc_heca_device(&v16, &q, NULL, &none), PC_INVALID_ARGUMENT);
    CHECK(none == NULL && strstr(pc_last_error(), "not GPU memory"));
    pc_points short_rows = v3;
    short_rows.stride = 2;
    CHECK_STATUS(pc_heca_device(&short_rows, &q, NULL, &none), PC_INVALID_ARGUMENT);
    CHECK(none == NULL && strstr(pc_last_error(), "stride"));
    float bad[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    bad[7] = 0.0f / 0.0f;
    float *d_bad = NULL;
    pc_result *r = NULL;
    if (cudaMalloc((void **)&d_bad, sizeof bad) == cudaSuccess &&
        cudaMemcpy(d_bad, bad, sizeof bad, cudaMemcpyHostToDevice) == cudaSuccess) {
        pc_points dv = pc_points_f32(d_bad, 4, 3);
        pc_heca_params_init(&p);
        p.hca.clusters = 2;
        CHECK_STATUS(pc_heca_device(&dv, &p, NULL, &r), PC_INVALID_ARGUMENT);
        CHECK(r == NULL && strstr(pc_last_error(), "non-finite"));
    }
    cudaFree(d_bad);
    free(w);
    free(noise);
}

/* A plan run on inputs of its shape, one after the other, the first larger: its buffers are kept and
 * grow, and every run gives pc_heca's labels. Points beyond its rows, or of another type, are refused. */
static void plan_cases(uint64_t seed, size_t n)
{
    uint8_t *noise = malloc(n * 4);
    uint16_t *w = calloc(n * 3, sizeof *w);
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n * 4; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        noise[i] = (uint8_t)(s >> 40);
    }
    pc_points v16 = pc_points_u16(w, n, 3);
    pc_heca_params p;
    pc_heca_params_init(&p);
    p.hca.clusters = 6;
    CHECK_STATUS(pc_heca_plan_create(&p, n, 4, PC_U8, &plan), PC_OK);
    if (plan) {
        uint8_t *img = pixels(n, 4, seed + 11);
        pc_points a = pc_points_u8(img, n, 4), b = pc_points_u8(noise, n / 3, 4);
        compare_with(&a, p, 3, "uint8 x 4");
        compare_with(&b, p, 3, "uniform uint8 x 4, a third of the rows");
        compare_with(&a, p, 3, "uint8 x 4 again");
        pc_result *none = NULL;
        pc_points more = pc_points_u8(img, n, 4);
        more.n = n + 1;
        CHECK_STATUS(pc_heca_plan_run_device(plan, &more, NULL, &none), PC_INVALID_ARGUMENT);
        CHECK(none == NULL && strstr(pc_last_error(), "up to"));
        CHECK_STATUS(pc_heca_plan_run_device(plan, &v16, NULL, &none), PC_INVALID_ARGUMENT);
        CHECK(none == NULL && strstr(pc_last_error(), "plan was made for rows"));
        free(img);
    }
    pc_heca_plan_free(plan);
    plan = NULL;
    free(noise);
    free(w);
}
#endif

int main(void)
{
    if (!pc_backend_available(PC_BACKEND_CUDA)) {
        printf("heca_cuda: no CUDA device (or built without CUDA): skipped\n");
        return 77;
    }
    uint64_t seed = test_seed("heca_cuda");
    size_t n = getenv("PC_TEST_QUICK") ? 200000 : 1500000; /* quick: under compute-sanitizer */
    for (size_t bands = 3; bands <= 4; bands++) {
        uint8_t *img = pixels(n, bands, seed + bands);
        pc_points v = pc_points_u8(img, n, bands);
        compare(&v, 0, 6, bands == 3 ? "uint8 x 3" : "uint8 x 4");
        compare(&v, 1, 6, bands == 3 ? "uint8 x 3, shifts" : "uint8 x 4, shifts");
        if (bands == 3) { /* HCA-MS asked of the GPU runs on the CPU: the same labels */
            pc_hca_params h;
            pc_hca_params_init(&h);
            h.clusters = 6;
            h.refine_borders = 1;
            pc_result *a = NULL, *b = NULL;
            h.backend = PC_BACKEND_OPENMP;
            CHECK_STATUS(pc_hca(&v, &h, &a), PC_OK);
            h.backend = PC_BACKEND_CUDA;
            CHECK_STATUS(pc_hca(&v, &h, &b), PC_OK);
            CHECK(a && b && memcmp(pc_result_labels(a), pc_result_labels(b), n * 4) == 0 &&
                  pc_result_changed_points(a) == pc_result_changed_points(b));
            pc_result_free(a);
            pc_result_free(b);
        }
        free(img);
    }
    int32_t *truth;
    size_t nf = getenv("PC_TEST_QUICK") ? 50000 : 200000;
    float *x = test_data(PC_DATASET_BLOBS, nf, 3, 6, 1.0, 10, seed, &truth);
    pc_points v = pc_points_f32(x, nf, 3);
    compare(&v, 0, 6, "float32 blobs");
    free(x);
    free(truth);
#ifdef PC_TEST_HAVE_CUDART
    /* Every member's stages on the device, however few its cells (above, members of few cells have
     * theirs on the host). */
    setenv("PC_HECA_DEVICE_STAGES_FROM", "0", 1);
    device_only_cases(seed, getenv("PC_TEST_QUICK") ? 100000 : 400000);
    unsetenv("PC_HECA_DEVICE_STAGES_FROM"); /* the plan's members: both ways */
    plan_cases(seed, getenv("PC_TEST_QUICK") ? 100000 : 400000);
#endif
    return check_report("heca_cuda");
}
