/* Results that do not depend on the data's units: every algorithm on every backend gives the same
 * partition for points scaled by 10^p, p = -30 .. 30 (with the bandwidths scaled alike), as for the
 * points themselves, and its centres and modes scale with them. Without an argument the CPU
 * backends run; with "cuda" the GPU backend (exit 77 without a device). */
#include "check.h"
#include "test_util.h"

#include <math.h>
#include <string.h>

#define N 300
#define DIM 2
#define K 3

typedef enum { MS_GAUSSIAN, MS_FLAT, KMEANS, HCA, ALGORITHMS } algorithm;
static const char *const names[] = {"mean shift (gaussian)", "mean shift (flat)", "k-means", "HCA"};

/* Runs one algorithm on points already in the units of `scale` (bandwidths given in unit ones). */
static pc_status run(algorithm a, const pc_points *v, double scale, pc_backend backend, pc_result **r)
{
    if (a == MS_GAUSSIAN || a == MS_FLAT) {
        pc_meanshift_params p;
        pc_meanshift_params_init(&p);
        p.kernel = a == MS_FLAT ? PC_KERNEL_FLAT : PC_KERNEL_GAUSSIAN;
        p.bandwidth = 1.5 * scale;
        p.backend = backend;
        return pc_meanshift(v, &p, r);
    }
    if (a == KMEANS) {
        pc_kmeans_params p;
        pc_kmeans_params_init(&p);
        p.k = K;
        p.seed = 7;
        p.backend = backend;
        return pc_kmeans(v, &p, r);
    }
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.clusters = K;
    p.backend = backend;
    return pc_hca(v, &p, r);
}

static double ari(const int32_t *a, const int32_t *b)
{
    double x = -1;
    if (pc_adjusted_rand_index(a, b, N, &x) != PC_OK)
        return -1;
    return x;
}

/* The largest distance between a centre of r and the matching centre of ref times scale, in units
 * of scale (clusters matched through the labels of point 0 .. N-1). */
static double centre_error(const pc_result *r, const pc_result *ref, double scale)
{
    const int32_t *l = pc_result_labels(r), *lr = pc_result_labels(ref);
    double worst = 0;
    for (size_t i = 0; i < N; i++) {
        if (l[i] < 0 || lr[i] < 0)
            continue;
        for (size_t d = 0; d < DIM; d++) {
            double c = pc_result_centers(r)[(size_t)l[i] * DIM + d] / scale;
            double cr = pc_result_centers(ref)[(size_t)lr[i] * DIM + d];
            worst = fmax(worst, fabs(c - cr));
        }
    }
    return worst;
}

static void scales_on(pc_backend backend, const float *points, const int32_t *truth)
{
    float *scaled32 = malloc(sizeof(float) * N * DIM);
    double *scaled64 = malloc(sizeof(double) * N * DIM);
    for (algorithm a = 0; a < ALGORITHMS; a++) {
        pc_points v = pc_points_f32(points, N, DIM);
        pc_result *ref = NULL;
        CHECK_STATUS(run(a, &v, 1, backend, &ref), PC_OK);
        if (!ref)
            continue;
        CHECK(ari(truth, pc_result_labels(ref)) == 1.0);
        int bad = 0;
        for (int p = -30; p <= 30 && bad < 3; p++) {
            double scale = pow(10, p);
            for (size_t i = 0; i < N * DIM; i++) {
                scaled64[i] = points[i] * scale;
                scaled32[i] = (float)scaled64[i];
            }
            for (int wide = 0; wide < 2; wide++) {
                pc_points s = wide ? pc_points_f64(scaled64, N, DIM) : pc_points_f32(scaled32, N, DIM);
                pc_result *r = NULL;
                pc_status st = run(a, &s, scale, backend, &r);
                int ok = st == PC_OK && r && pc_result_cluster_count(r) == pc_result_cluster_count(ref) &&
                         ari(pc_result_labels(ref), pc_result_labels(r)) == 1.0 && centre_error(r, ref, scale) < 1e-3;
                if (!ok) {
                    fprintf(stderr, "%s on %s, points x 1e%d (%s): %s, %zu clusters (unscaled: %zu)\n", names[a],
                            pc_backend_name(backend), p, wide ? "float64" : "float32",
                            st == PC_OK ? "different partition or centres" : pc_last_error(),
                            r ? pc_result_cluster_count(r) : 0, pc_result_cluster_count(ref));
                    bad++;
                }
                CHECK(ok);
                pc_result_free(r);
            }
        }
        pc_result_free(ref);
    }
    free(scaled32);
    free(scaled64);
}

/* Image mean shift: a float32 image of two flat halves with noise, its band values scaled. */
static void image_scales(pc_backend backend)
{
    enum { W = 24, H = 16 };
    float img[W * H], scaled[W * H];
    uint64_t s = 12345;
    for (size_t i = 0; i < W * H; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        img[i] = (i % W < W / 2 ? 10.0f : 40.0f) + (float)((s >> 40) % 1000) / 1000.0f;
    }
    pc_meanshift_image_params p;
    pc_meanshift_image_params_init(&p);
    p.spatial_bandwidth = 3;
    p.backend = backend;
    p.range_bandwidth = 5;
    pc_points v = pc_points_f32(img, W * H, 1);
    pc_result *ref = NULL;
    CHECK_STATUS(pc_meanshift_image(&v, W, H, NULL, &p, &ref), PC_OK);
    if (!ref)
        return;
    CHECK(pc_result_cluster_count(ref) == 2);
    for (int e = -30; e <= 30; e += 3) {
        double scale = pow(10, e);
        for (size_t i = 0; i < W * H; i++)
            scaled[i] = (float)(img[i] * scale);
        pc_points sv = pc_points_f32(scaled, W * H, 1);
        p.range_bandwidth = 5 * scale;
        pc_result *r = NULL;
        CHECK_STATUS(pc_meanshift_image(&sv, W, H, NULL, &p, &r), PC_OK);
        if (r) {
            double x = -1;
            pc_adjusted_rand_index(pc_result_labels(ref), pc_result_labels(r), W * H, &x);
            CHECK(x == 1.0);
            CHECK(fabs(pc_result_centers(r)[0] / scale - pc_result_centers(ref)[0]) < 1e-3);
        }
        pc_result_free(r);
    }
    pc_result_free(ref);
}

int main(int argc, char **argv)
{
    int gpu = argc > 1 && strcmp(argv[1], "cuda") == 0;
    if (gpu && !pc_backend_available(PC_BACKEND_CUDA)) {
        printf("scale: no CUDA device, skipped\n");
        return 77;
    }
    int32_t *truth = NULL;
    /* Three tight clusters 10 apart: any correct run finds them. */
    float *points = test_lattice(N, DIM, K, 0.3, 10, 3, &truth);
    if (gpu) {
        scales_on(PC_BACKEND_CUDA, points, truth);
    } else {
        scales_on(PC_BACKEND_SEQUENTIAL, points, truth);
        scales_on(PC_BACKEND_OPENMP, points, truth);
        image_scales(PC_BACKEND_SEQUENTIAL);
    }
    free(points);
    free(truth);
    return check_report("scale");
}
