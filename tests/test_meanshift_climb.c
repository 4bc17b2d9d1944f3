/* pc_meanshift_climb: the climbs of a range of the points, against pc_meanshift's modes of the same
 * points on the same backend: split into uneven ranges (one of them empty), the ranges' modes put
 * together are the whole run's (sequential and OpenMP: bit for bit; CUDA: to rounding), and the most
 * iterations of any range are the run's. Argument: the backend (seq, openmp or cuda; default the
 * first two). Then pc_meanshift_merge of the ranges' modes: the run's clusters. Exits 77 (skipped)
 * for cuda where there is no CUDA device. */
#include "check.h"
#include "test_util.h"

#include <math.h>
#include <string.h>

typedef struct {
    size_t n, dim;
    pc_kernel kernel;
    double radius; /* 0: the kernel's default */
    int fixed;     /* eps 0 and 6 iterations, else the default eps stop */
} climb_case;

static void compare(const climb_case *c, pc_backend backend, uint64_t seed)
{
    double grow = c->dim > 8 ? sqrt((double)c->dim) : 1;
    float *pts = test_lattice(c->n, c->dim, 4, 0.8, 6 * grow, seed, NULL);
    pc_meanshift_params p;
    pc_meanshift_params_init(&p);
    p.bandwidth = 1.3 * grow;
    p.kernel = c->kernel;
    p.radius = c->radius;
    p.backend = backend;
    if (c->fixed) {
        p.eps = 0;
        p.max_iter = 6;
    }
    pc_points v = pc_points_f32(pts, c->n, c->dim);
    pc_result *whole = NULL;
    CHECK_MSG(pc_meanshift(&v, &p, &whole) == PC_OK, "pc_meanshift: %s", pc_last_error());
    float *modes = calloc(c->n * c->dim, sizeof *modes);
    /* Ranges as the ranks of an uneven split cut them: a third, nothing, the rest but 7, the last 7. */
    size_t cut[5] = {0, c->n / 3, c->n / 3, c->n - 7, c->n};
    int most = 0;
    for (size_t r = 0; r < 4; r++) {
        int iterations = -1;
        pc_status st = pc_meanshift_climb(&v, cut[r], cut[r + 1] - cut[r], &p, modes + cut[r] * c->dim, &iterations);
        CHECK_MSG(st == PC_OK, "climb %zu..%zu: %s", cut[r], cut[r + 1], pc_last_error());
        CHECK(iterations >= 0 && iterations <= p.max_iter);
        CHECK(cut[r] < cut[r + 1] || iterations == 0);
        most = iterations > most ? iterations : most;
    }
    /* The ranges' modes merged as pc_meanshift merges its own: its clusters (CPU: exactly). */
    pc_result *merged = NULL;
    CHECK_MSG(pc_meanshift_merge(modes, c->n, c->dim, p.bandwidth / 2, &merged) == PC_OK, "merge: %s",
              pc_last_error());
    if (whole && merged && backend != PC_BACKEND_CUDA) {
        size_t k = pc_result_cluster_count(whole);
        CHECK_MSG(pc_result_cluster_count(merged) == k &&
                      memcmp(pc_result_labels(merged), pc_result_labels(whole), c->n * sizeof(int32_t)) == 0 &&
                      memcmp(pc_result_sizes(merged), pc_result_sizes(whole), k * sizeof(int64_t)) == 0 &&
                      memcmp(pc_result_centers(merged), pc_result_centers(whole), k * c->dim * sizeof(float)) == 0,
                  "%s, n %zu dim %zu: merged clusters differ from the run's", pc_backend_name(backend), c->n, c->dim);
        CHECK(pc_result_modes(merged) == NULL);
    }
    pc_result_free(merged);
    if (whole) {
        const float *ref = pc_result_modes(whole);
        const char *what = pc_backend_name(backend);
        if (backend != PC_BACKEND_CUDA) {
            CHECK_MSG(memcmp(modes, ref, c->n * c->dim * sizeof *modes) == 0,
                      "%s, n %zu dim %zu kernel %s radius %g: the ranges' modes differ from the run's", what, c->n,
                      c->dim, pc_kernel_name(c->kernel), c->radius);
            CHECK_MSG(most == pc_result_iterations(whole), "%s: iterations %d, the run's %d", what, most,
                      pc_result_iterations(whole));
        } else {
            /* The same sums in other chunks (the kernels split the references by the number of
             * climbing points): 1e-4 of h with a fixed number of shifts; with the eps stop a point
             * may stop one shift apart, within eps (1e-3 h). */
            double tol = (c->fixed ? 1e-4 : 2e-3) * p.bandwidth, worst = 0;
            for (size_t i = 0; i < c->n * c->dim; i++)
                worst = fmax(worst, fabs((double)modes[i] - ref[i]));
            CHECK_MSG(worst <= tol, "cuda, n %zu dim %zu kernel %s radius %g: modes %.3g apart (tolerance %.3g)",
                      c->n, c->dim, pc_kernel_name(c->kernel), c->radius, worst, tol);
            CHECK_MSG(abs(most - pc_result_iterations(whole)) <= 1, "cuda: iterations %d, the run's %d", most,
                      pc_result_iterations(whole));
        }
    }
    pc_result_free(whole);
    free(modes);
    free(pts);
}

static void test_refusals(pc_backend backend)
{
    float pts[12] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5}, modes[12];
    pc_points v = pc_points_f32(pts, 6, 2);
    pc_meanshift_params p;
    pc_meanshift_params_init(&p);
    p.backend = backend;
    int iterations = 5;
    CHECK(pc_meanshift_climb(&v, 4, 3, &p, modes, &iterations) == PC_INVALID_ARGUMENT);
    CHECK_MSG(strstr(pc_last_error(), "4 .. 7") != NULL, "message: %s", pc_last_error());
    CHECK(pc_meanshift_climb(&v, 7, 0, &p, modes, &iterations) == PC_INVALID_ARGUMENT);
    CHECK(pc_meanshift_climb(&v, 0, 2, &p, NULL, &iterations) == PC_INVALID_ARGUMENT);
    CHECK(pc_meanshift_climb(&v, 0, 2, &p, modes, NULL) == PC_INVALID_ARGUMENT);
    CHECK(pc_meanshift_climb(&v, 6, 0, &p, NULL, &iterations) == PC_OK && iterations == 0);
    p.blurring = 1;
    CHECK(pc_meanshift_climb(&v, 0, 6, &p, modes, &iterations) == PC_INVALID_ARGUMENT);
    CHECK_MSG(strstr(pc_last_error(), "blurring") != NULL, "message: %s", pc_last_error());
    p.blurring = 0;
    p.bandwidth = -1;
    CHECK(pc_meanshift_climb(&v, 0, 6, &p, modes, &iterations) == PC_INVALID_ARGUMENT);
    pc_result *r = NULL;
    CHECK(pc_meanshift_merge(pts, 6, 2, -1, &r) == PC_INVALID_ARGUMENT && r == NULL);
    CHECK(pc_meanshift_merge(NULL, 6, 2, 1, &r) == PC_INVALID_ARGUMENT);
    float bad[4] = {0, 1, NAN, 2};
    CHECK(pc_meanshift_merge(bad, 2, 2, 1, &r) == PC_INVALID_ARGUMENT);
    CHECK_MSG(strstr(pc_last_error(), "mode 1, dimension 0") != NULL, "message: %s", pc_last_error());
    /* Identical modes only (radius 0), and one within 1.5 of the next: a chain of 6 is one cluster. */
    CHECK(pc_meanshift_merge(pts, 6, 2, 0, &r) == PC_OK && pc_result_cluster_count(r) == 6);
    pc_result_free(r);
    CHECK(pc_meanshift_merge(pts, 6, 2, 1.5, &r) == PC_OK && pc_result_cluster_count(r) == 1 &&
          fabs(pc_result_centers(r)[0] - 2.5) < 1e-6);
    pc_result_free(r);
}

static void test_backend(pc_backend backend, uint64_t seed)
{
    const climb_case cases[] = {
        {2000, 3, PC_KERNEL_GAUSSIAN, 0, 1},   /* all pairs, dimension-major */
        {2000, 3, PC_KERNEL_GAUSSIAN, 0, 0},   /* the eps stop */
        {3001, 2, PC_KERNEL_FLAT, 0, 1},       /* finite radius: the neighbour grid */
        {1500, 4, PC_KERNEL_EPANECHNIKOV, 0, 0},
        {700, 12, PC_KERNEL_GAUSSIAN, 0, 1},   /* point-major references (CPU), many dimensions */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        compare(&cases[c], backend, seed + c);
    test_refusals(backend);
}

int main(int argc, char **argv)
{
    uint64_t seed = test_seed("meanshift_climb");
    if (argc > 1) {
        pc_backend backend;
        if (pc_backend_parse(argv[1], &backend) != PC_OK) {
            fprintf(stderr, "usage: %s [seq|openmp|cuda]\n", argv[0]);
            return 2;
        }
        if (backend == PC_BACKEND_CUDA && pc_cuda_device_count() <= 0) {
            printf("meanshift_climb: no CUDA device, skipped\n");
            return 77;
        }
        test_backend(backend, seed);
    } else {
        test_backend(PC_BACKEND_SEQUENTIAL, seed);
        test_backend(PC_BACKEND_OPENMP, seed);
    }
    return check_report("meanshift_climb");
}
