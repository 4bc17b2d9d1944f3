/* k-means with Hamerly's bounds against Lloyd's iterations (the reference: every point against every
 * centre), from the same initial centres, at every iteration: runs of max_iter = 1, 2, ... with tol 0
 * give the labels and centres after each iteration, which must be the same bit for bit. Data with exact
 * ties (lattice points, duplicated centres, which empty clusters), near-ties (points a few ulps off the
 * plane between two centres; tight clusters far apart, where Lloyd's float32 |c|^2 - 2 x.c is mostly
 * rounding), float32 and float64 inputs, one and two threads. On well-separated blobs the bounds must
 * also skip most of the distances (or they would be a no-op that passes trivially).
 *
 * `test_kmeans_hamerly cuda` (ctest kmeans_hamerly_cuda, on a GPU) runs the same cases on the CUDA
 * backend, Hamerly's bounds against the DIRECT variant's Lloyd (fixed-point sums, so its centres are
 * the same from run to run), and blobs in 16 dimensions at k = 300 against the TENSOR variant (the
 * tensor screen's labels), each small case twice: the fused kernel and the lists' kernels
 * (PC_KMEANS_CUDA_HAMERLY=lists). Exits 77 (skipped) without a device. */
#include "check.h"
#include "test_util.h"

#include <math.h>
#include <string.h>

static int on_gpu; /* the CUDA backend instead of the CPU's two */
/* On the GPU: Lloyd's runs take lloyd_variant, the others hamerly_variant. Where they differ, the
 * inertia kernel's blocks may differ and with them the inertia's last bits. */
static pc_kmeans_cuda_variant lloyd_variant = PC_KMEANS_CUDA_DIRECT, hamerly_variant = PC_KMEANS_CUDA_DIRECT;

static pc_result *run(const pc_points *v, const pc_kmeans_params *base, pc_kmeans_algorithm algo, int max_iter,
                      double tol, pc_backend backend)
{
    pc_kmeans_params p = *base;
    p.cuda_variant = algo == PC_KMEANS_LLOYD ? lloyd_variant : hamerly_variant;
    p.algorithm = algo;
    p.max_iter = max_iter;
    p.tol = tol;
    p.backend = backend;
    p.threads = backend == PC_BACKEND_OPENMP ? 2 : 0;
    pc_result *r = NULL;
    pc_status st = pc_kmeans(v, &p, &r);
    CHECK_MSG(st == PC_OK, "pc_kmeans: %s", pc_last_error());
    return r;
}

/* 1 when both results are the same: labels, centres (bits), iterations, inertia. */
static int same(const pc_result *a, const pc_result *b, const char *what, int it)
{
    size_t n = pc_result_n(a), k = pc_result_cluster_count(a), dim = pc_result_dim(a);
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (pc_result_labels(a)[i] != pc_result_labels(b)[i] && bad++ == 0)
            first = i;
    double ia = pc_result_inertia(a), ib = pc_result_inertia(b);
    int same_inertia = lloyd_variant == hamerly_variant ? ia == ib : fabs(ia - ib) <= 1e-12 * fabs(ia);
    int ok = bad == 0 && memcmp(pc_result_centers(a), pc_result_centers(b), k * dim * sizeof(float)) == 0 &&
             pc_result_iterations(a) == pc_result_iterations(b) && same_inertia;
    CHECK_MSG(ok, "%s, max_iter %d: %zu labels differ (first: point %zu, %d against %d), centres %s, iterations %d "
              "and %d, inertia %.17g and %.17g", what, it, bad, first, pc_result_labels(a)[first],
              pc_result_labels(b)[first], memcmp(pc_result_centers(a), pc_result_centers(b),
                                                  k * dim * sizeof(float)) ? "differ" : "equal",
              pc_result_iterations(a), pc_result_iterations(b), pc_result_inertia(a), pc_result_inertia(b));
    return ok;
}

/* Every iteration 1..iters, then to convergence (tol 1e-4 and 0); returns Hamerly's share of Lloyd's
 * distance evaluations over the converged run. */
static double compare(const pc_points *v, const pc_kmeans_params *base, int iters, const char *what)
{
    double share = 0;
    for (int b = 0; b < 2; b++) {
        pc_backend backend = on_gpu ? PC_BACKEND_CUDA : b ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
        if (on_gpu && b)
            break;
        if (backend == PC_BACKEND_OPENMP && !pc_backend_available(PC_BACKEND_OPENMP))
            continue;
        for (int it = 1; it <= iters; it++) {
            pc_result *l = run(v, base, PC_KMEANS_LLOYD, it, 0, backend), *h = run(v, base, PC_KMEANS_HAMERLY, it, 0,
                                                                                  backend);
            int ok = l && h && same(l, h, what, it);
            pc_result_free(l);
            pc_result_free(h);
            if (!ok)
                break;
        }
        for (int t = 0; t < 2; t++) {
            pc_result *l = run(v, base, PC_KMEANS_LLOYD, 300, t ? 0 : 1e-4, backend);
            pc_result *h = run(v, base, PC_KMEANS_HAMERLY, 300, t ? 0 : 1e-4, backend);
            if (l && h) {
                same(l, h, what, 300);
                CHECK(pc_result_kmeans_algorithm(l) == PC_KMEANS_LLOYD);
                CHECK(pc_result_kmeans_algorithm(h) == PC_KMEANS_HAMERLY);
                CHECK(pc_result_distance_evaluations(l) > 0);
                share = pc_result_distance_evaluations(h) / pc_result_distance_evaluations(l);
            }
            pc_result_free(l);
            pc_result_free(h);
        }
    }
    return share;
}

/* Float32 blobs from random initial centres: every iteration and convergence as compare() checks,
 * and the bounds must skip over half of Lloyd's distances. */
static void blobs_case(size_t n, size_t dim, size_t blobs, double box, size_t k, int iters, uint64_t seed,
                       const char *what, float **points, pc_kmeans_params *params)
{
    float *x = test_blobs(n, dim, blobs, 1.0, box, seed, NULL);
    pc_kmeans_params_init(params);
    params->k = k;
    params->init = PC_INIT_RANDOM;
    params->seed = seed;
    pc_points v = pc_points_f32(x, n, dim);
    double share = compare(&v, params, iters, what);
    CHECK_MSG(share > 0 && share < 0.5, "%s: Hamerly evaluated %.3f of Lloyd's distances", what, share);
    *points = x;
}

static void test_blobs_f32(uint64_t seed)
{
    size_t n = 4000, dim = 5;
    float *x;
    pc_kmeans_params p;
    blobs_case(n, dim, 24, 40, 24, 8, seed, "blobs float32, random init", &x, &p);
    pc_points v = pc_points_f32(x, n, dim);
    /* k-means++ and two runs: AUTO picks Hamerly at this k and gives Lloyd's result */
    pc_backend backend = on_gpu ? PC_BACKEND_CUDA : PC_BACKEND_SEQUENTIAL;
    p.init = PC_INIT_KMEANSPP;
    p.n_init = 2;
    pc_result *l = run(&v, &p, PC_KMEANS_LLOYD, 300, 1e-4, backend);
    pc_kmeans_cuda_variant kept = hamerly_variant;
    hamerly_variant = PC_KMEANS_CUDA_FAST; /* on CUDA, AUTO takes the bounds with the default variant */
    pc_result *a = run(&v, &p, PC_KMEANS_AUTO, 300, 1e-4, backend);
    hamerly_variant = kept;
    if (l && a) {
        same(l, a, "blobs, k-means++, n_init 2, auto", 300);
        CHECK(pc_result_kmeans_algorithm(a) == PC_KMEANS_HAMERLY);
    }
    pc_result_free(l);
    pc_result_free(a);
    free(x);
}

/* Exact ties: points of a small integer lattice (many duplicates), initial centres on the lattice and
 * two pairs of them equal (the higher of each pair loses every tie, empties, and the empty-cluster rule
 * moves it), float64 input. */
static void test_lattice_ties(uint64_t seed)
{
    size_t n = 3000, dim = 3, k = 12;
    double *x = malloc(n * dim * sizeof *x);
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n * dim; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (double)((s >> 33) % 5) - 2.0;
    }
    float c[12 * 3];
    for (size_t j = 0; j < k * dim; j++)
        c[j] = (float)x[(j / dim) * 97 * dim + j % dim];
    memcpy(c + 5 * dim, c + 2 * dim, dim * sizeof *c); /* centre 5 = centre 2 */
    memcpy(c + 9 * dim, c + 0 * dim, dim * sizeof *c); /* centre 9 = centre 0 */
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    p.k = k;
    p.init = PC_INIT_GIVEN;
    p.initial_centers = c;
    pc_points v = pc_points_f64(x, n, dim);
    compare(&v, &p, 6, "lattice ties, float64");
    free(x);
}

/* Near-ties: two centres at -1 and +1 on the first axis, points on the plane between them moved by a
 * few ulps either way, beside blobs elsewhere; float32. */
static void test_bisector(uint64_t seed)
{
    size_t n = 4000, dim = 4, k = 10;
    float *x = malloc(n * dim * sizeof *x);
    uint64_t s = seed ^ 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < n; i++)
        for (size_t d = 0; d < dim; d++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            double r = (double)(s >> 11) * 0x1p-53;
            float v;
            if (i < n / 2)
                v = d == 0 ? (float)((int)(r * 9) - 4) * 0x1p-23f : (float)(r * 6 - 3);
            else
                v = (float)(r * 2 - 1) + (float)(10 * (i % 7)) * (d == 1);
            x[i * dim + d] = v;
        }
    float c[10 * 4] = {0};
    c[0] = -1.0f;
    c[dim] = 1.0f;
    for (size_t j = 2; j < k; j++)
        memcpy(c + j * dim, x + (n / 2 + 37 * j) * dim, dim * sizeof *c);
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    p.k = k;
    p.init = PC_INIT_GIVEN;
    p.initial_centers = c;
    pc_points v = pc_points_f32(x, n, dim);
    compare(&v, &p, 6, "bisector near-ties, float32");
    free(x);
}

/* Tight clusters (spread 1e-4) far apart (box 1e3), several initial centres inside one cluster: there
 * the differences of |c|^2 - 2 x.c are below its float32 rounding, Lloyd's labels are the rounding's,
 * and the bounds must leave those points to the scan. float64 input. */
static void test_rounding_regime(uint64_t seed)
{
    size_t n = 5000, dim = 3, k = 16;
    float *xf = test_blobs(n, dim, 6, 1e-4, 1e3, seed + 5, NULL);
    double *x = malloc(n * dim * sizeof *x);
    for (size_t i = 0; i < n * dim; i++)
        x[i] = (double)xf[i] + 1e-9 * (double)(i % 3);
    float c[16 * 3];
    for (size_t j = 0; j < k; j++)
        for (size_t d = 0; d < dim; d++)
            c[j * dim + d] = (float)x[(j < 6 ? j : j % 3) * dim + d] + (j >= 6 ? 1e-5f * (float)j : 0.0f);
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    p.k = k;
    p.init = PC_INIT_GIVEN;
    p.initial_centers = c;
    pc_points v = pc_points_f64(x, n, dim);
    compare(&v, &p, 6, "tight clusters far apart, float64");
    free(x);
    free(xf);
}

static void test_names(void)
{
    pc_kmeans_algorithm a;
    CHECK_STATUS(pc_kmeans_algorithm_parse("hamerly", &a), PC_OK);
    CHECK(a == PC_KMEANS_HAMERLY);
    CHECK(strcmp(pc_kmeans_algorithm_name(PC_KMEANS_LLOYD), "lloyd") == 0);
    CHECK_STATUS(pc_kmeans_algorithm_parse("elkan", &a), PC_INVALID_ARGUMENT);
    float x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    pc_points v = pc_points_f32(x, 8, 1);
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    CHECK(p.algorithm == PC_KMEANS_AUTO);
    p.k = 2;
    p.algorithm = (pc_kmeans_algorithm)7;
    pc_result *r = NULL;
    CHECK_STATUS(pc_kmeans(&v, &p, &r), PC_INVALID_ARGUMENT);
    p.algorithm = PC_KMEANS_AUTO; /* k < 8: Lloyd */
    CHECK_STATUS(pc_kmeans(&v, &p, &r), PC_OK);
    CHECK(r && pc_result_kmeans_algorithm(r) == PC_KMEANS_LLOYD);
    pc_result_free(r);
}

/* Where the GPU's Lloyd runs the tensor screen (k x (dim + 1) > 4096, 8 <= dim <= 64): 16 dimensions,
 * k = 300, float32 blobs; Hamerly's rescans must give the screen's labels. */
static void test_tensor_sized(uint64_t seed)
{
    float *x;
    pc_kmeans_params p;
    lloyd_variant = PC_KMEANS_CUDA_TENSOR;
    blobs_case(30000, 16, 40, 20, 300, 4, seed + 11, "16-D blobs, k 300, against the tensor screen", &x, &p);
    lloyd_variant = PC_KMEANS_CUDA_DIRECT;
    free(x);
}

/* GPU only: the bounds under the FAST variant's set-up (fused sums or the tensor screen for Lloyd, which
 * the bounds do not use); dimensions 1, 2 and 8; 1.2M points (blocks take several rounds of the
 * grid-stride loops); k = 5000 (beyond the candidate lists and the centre-to-centre distances); k = 1;
 * sums too large for the bounds (Lloyd's passes instead). */
static void test_gpu_shapes(uint64_t seed)
{
    float *x;
    pc_kmeans_params p;
    hamerly_variant = PC_KMEANS_CUDA_FAST;
    blobs_case(4000, 5, 24, 40, 24, 4, seed + 21, "FAST variant's set-up, small k x dim", &x, &p);
    free(x);
    lloyd_variant = PC_KMEANS_CUDA_TENSOR;
    blobs_case(30000, 16, 40, 20, 300, 3, seed + 22, "FAST variant's set-up, 16-D, k 300", &x, &p);
    free(x);
    lloyd_variant = hamerly_variant = PC_KMEANS_CUDA_DIRECT;
    const size_t dims[] = {1, 2, 8};
    for (int d = 0; d < 3; d++) {
        char what[64];
        snprintf(what, sizeof what, "dimension %zu", dims[d]);
        blobs_case(20000, dims[d], 12, 30, 12, 4, seed + 23 + (uint64_t)d, what, &x, &p);
        free(x);
    }
    size_t n = 1200000;
    x = test_blobs(n, 3, 20, 1.0, 30, seed + 27, NULL);
    pc_points v = pc_points_f32(x, n, 3);
    pc_kmeans_params_init(&p);
    p.k = 20;
    p.init = PC_INIT_RANDOM;
    p.seed = seed;
    compare(&v, &p, 3, "1.2M points");
    setenv("PC_KMEANS_CUDA_HAMERLY", "lists", 1);
    compare(&v, &p, 3, "1.2M points, the lists' kernels");
    unsetenv("PC_KMEANS_CUDA_HAMERLY");
    free(x);
    n = 40000;
    x = test_blobs(n, 2, 100, 1.0, 100, seed + 28, NULL);
    v = pc_points_f32(x, n, 2);
    p.k = 5000;
    compare(&v, &p, 2, "k 5000");
    p.k = 1;
    compare(&v, &p, 2, "k 1");
    free(x);
    /* k x (dim + 1) fixed-point sums beyond a block's shared memory (272 KiB here; FAST's Lloyd sums in
     * float, 136 KiB): Lloyd's passes with their own float sums, and the result says so. Float sums
     * land in any order, so the two runs are compared by their inertia. */
    n = 20000;
    x = test_blobs(n, 16, 40, 1.0, 20, seed + 29, NULL);
    v = pc_points_f32(x, n, 16);
    p.k = 2000;
    lloyd_variant = hamerly_variant = PC_KMEANS_CUDA_FAST;
    pc_result *l = run(&v, &p, PC_KMEANS_LLOYD, 2, 0, PC_BACKEND_CUDA);
    pc_result *h = run(&v, &p, PC_KMEANS_HAMERLY, 2, 0, PC_BACKEND_CUDA);
    lloyd_variant = hamerly_variant = PC_KMEANS_CUDA_DIRECT;
    if (l && h) {
        CHECK(pc_result_kmeans_algorithm(h) == PC_KMEANS_LLOYD);
        CHECK_MSG(fabs(pc_result_inertia(l) - pc_result_inertia(h)) <= 1e-6 * pc_result_inertia(l),
                  "k 2000: inertia %.9g and %.9g", pc_result_inertia(l), pc_result_inertia(h));
    }
    pc_result_free(l);
    pc_result_free(h);
    free(x);
}

int main(int argc, char **argv)
{
    uint64_t seed = test_seed("kmeans_hamerly");
    on_gpu = argc > 1 && strcmp(argv[1], "cuda") == 0;
    if (on_gpu && pc_cuda_device_count() <= 0) {
        printf("kmeans_hamerly cuda: no CUDA device, skipped\n");
        return 77;
    }
    if (on_gpu) {
        test_tensor_sized(seed);
        test_gpu_shapes(seed);
    } else
        test_names();
    /* On the GPU, small k x dim runs one fused kernel a pass; the second round forces the lists'
     * kernels (sweep, candidate lists, scan) on the same cases. */
    for (int round = 0; round < (on_gpu ? 2 : 1); round++) {
        if (round == 1)
            setenv("PC_KMEANS_CUDA_HAMERLY", "lists", 1);
        test_blobs_f32(seed);
        test_lattice_ties(seed);
        test_bisector(seed);
        test_rounding_regime(seed);
    }
    return check_report("kmeans_hamerly");
}
