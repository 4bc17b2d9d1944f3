/* HCA's and HECA's progress callback (pc_hca_params.progress): the fractions reported are in [0, 1],
 * never go back and end at 1; a callback that only watches changes nothing in the result; a callback
 * that says stop at its j-th call, for every j a run makes, gets PC_CANCELLED, no result and no later
 * call (the sanitizer build checks that nothing leaks). Reports come from inside the passes over the
 * points too (more calls than stages). Usage: test_hca_progress [cuda] (cuda: the GPU backend, exit 77
 * without a device). */
#include "check.h"

#include <parclust.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    double fractions[4096];
    int calls;
    int stop_at; /* 1-based call that returns non-zero; 0 = never */
    int bad;     /* a fraction outside [0, 1] or below the one before */
} watch;

static int on_progress(void *user, double fraction)
{
    watch *w = user;
    if (!(fraction >= 0 && fraction <= 1) || (w->calls > 0 && fraction < w->fractions[w->calls - 1]))
        w->bad = 1;
    if (w->calls < 4096)
        w->fractions[w->calls] = fraction;
    w->calls++;
    return w->stop_at > 0 && w->calls >= w->stop_at;
}

typedef pc_status (*run_fn)(const pc_points *points, const void *params, pc_result **result);
static pc_status run_hca(const pc_points *x, const void *p, pc_result **r) { return pc_hca(x, p, r); }
static pc_status run_heca(const pc_points *x, const void *p, pc_result **r) { return pc_heca(x, p, r); }
/* pc_hca_plan_run_u8 into label_bytes: packed uint8 pixels on the AVX-512 path go straight to bytes
 * (their own label stage). */
static uint8_t *label_bytes;
static pc_status run_hca_bytes(const pc_points *x, const void *p, pc_result **r)
{
    pc_hca_plan *plan = NULL;
    pc_status st = pc_hca_plan_create(p, x->n, x->dim, x->dtype, &plan);
    if (st == PC_OK)
        st = pc_hca_plan_run_u8(plan, x, label_bytes, r);
    pc_hca_plan_free(plan);
    return st;
}

/* One configuration: the watched run against the plain one, then a stop at every call. hca: the
 * params' HCA part (pc_hca_params itself or pc_heca_params.hca), whose progress fields are set here. */
static void check_config(const char *what, const pc_points *x, void *params, pc_hca_params *hca, run_fn run,
                         int min_calls)
{
    double t0 = now();
    hca->progress = NULL;
    pc_result *plain = NULL, *watched = NULL;
    CHECK_STATUS(run(x, params, &plain), PC_OK);
    /* labels as bytes (run_hca_bytes): the plain run's, to compare with the watched run's */
    uint8_t *plain_bytes = plain && !pc_result_labels(plain) ? malloc(x->n) : NULL;
    if (plain_bytes)
        memcpy(plain_bytes, label_bytes, x->n);
    static watch w;
    memset(&w, 0, sizeof w);
    hca->progress = on_progress;
    hca->progress_user = &w;
    CHECK_STATUS(run(x, params, &watched), PC_OK);
    CHECK_MSG(!w.bad, "%s: a fraction out of [0, 1] or going back", what);
    CHECK_MSG(w.calls >= min_calls, "%s: %d reports, expected at least %d", what, w.calls, min_calls);
    CHECK_MSG(w.calls > 0 && w.fractions[(w.calls < 4096 ? w.calls : 4096) - 1] == 1.0, "%s: the last report is not 1",
              what);
    if (plain && watched) {
        CHECK(pc_result_cluster_count(plain) == pc_result_cluster_count(watched));
        CHECK(pc_result_border_points(plain) == pc_result_border_points(watched));
        if (hca->refine_borders)
            CHECK_MSG(pc_result_border_points(plain) > 200, "%s: %lld border points", what,
                      (long long)pc_result_border_points(plain));
        size_t k = pc_result_cluster_count(plain);
        if (pc_result_labels(plain))
            CHECK_MSG(memcmp(pc_result_labels(plain), pc_result_labels(watched), x->n * sizeof(int32_t)) == 0,
                      "%s: a watching callback changed the labels", what);
        else if (k == pc_result_cluster_count(watched))
            CHECK_MSG(plain_bytes && !memcmp(plain_bytes, label_bytes, x->n) &&
                          !memcmp(pc_result_sizes(plain), pc_result_sizes(watched), k * sizeof(int64_t)) &&
                          !memcmp(pc_result_centers(plain), pc_result_centers(watched), k * x->dim * sizeof(float)),
                      "%s: a watching callback changed the clusters", what);
    }
    free(plain_bytes);
    pc_result_free(plain);
    pc_result_free(watched);
    /* A stop at call j, for every call the watched run made (the passes' reports depend on the clock:
     * a later run may make fewer, when it completes at 1 before a stop at j comes). */
    int calls = w.calls, stopped = 0;
    for (int j = 1; j <= calls; j++) {
        if (j > 10 && j < calls - 2) /* long passes report often: their first reports and the last ones */
            continue;
        memset(&w, 0, sizeof w);
        w.stop_at = j;
        pc_result *r = (pc_result *)1;
        pc_status st = run(x, params, &r);
        if (w.calls < j) { /* the clock gave this run fewer reports */
            CHECK_STATUS(st, PC_OK);
            pc_result_free(r);
            continue;
        }
        stopped++;
        CHECK_MSG(st == PC_CANCELLED, "%s: stop at report %d of %d: got %s (%s)", what, j, calls, pc_status_string(st),
                  pc_last_error());
        CHECK_MSG(r == NULL, "%s: stop at report %d: a result was left", what, j);
        CHECK_MSG(w.calls == j, "%s: stop at report %d: called %d times", what, j, w.calls);
        CHECK_MSG(strstr(pc_last_error(), "cancelled") != NULL, "%s: message '%s'", what, pc_last_error());
        if (st == PC_OK)
            pc_result_free(r);
    }
    CHECK_MSG(stopped >= (min_calls < 10 ? min_calls : 10), "%s: only %d runs were stopped", what, stopped);
    hca->progress = NULL;
    printf("%s: %d reports, %d stops checked, %.2f s\n", what, calls, stopped, now() - t0);
}

int main(int argc, char **argv)
{
    int cuda = argc > 1 && strcmp(argv[1], "cuda") == 0;
    if (cuda && pc_cuda_device_count() < 1) {
        printf("test_hca_progress: no CUDA device: skipped\n");
        return 77;
    }
    pc_generate_params gp;
    pc_generate_params_init(&gp);
    gp.n = 150000;
    gp.dim = 3;
    gp.clusters = 6;
    gp.seed = 11;
    gp.spread = 3; /* blobs that touch: HCA-MS has border points to climb */
    float *data = malloc(gp.n * gp.dim * sizeof *data);
    int32_t *truth = malloc(gp.n * sizeof *truth);
    if (!data || !truth || pc_generate(&gp, data, truth) != PC_OK) {
        fprintf(stderr, "cannot generate the points\n");
        return 1;
    }
    pc_points x = {data, gp.n, gp.dim, 0, PC_F32};
    /* The same blobs as 3-band uint8 pixels, repeated to 4 Mpix (passes long enough to report). */
    const size_t pixel_count = 4000000;
    uint8_t *u8 = malloc(pixel_count * 3);
    for (size_t i = 0; u8 && i < pixel_count * 3; i++) {
        float v = 128.0f + 4.0f * data[i % (gp.n * gp.dim)];
        u8[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    label_bytes = malloc(pixel_count);
    pc_backend backends[2] = {PC_BACKEND_SEQUENTIAL, PC_BACKEND_OPENMP};
    int nb = 2;
    if (cuda) {
        backends[0] = PC_BACKEND_CUDA;
        nb = 1;
    }
    for (int b = 0; b < nb; b++) {
        if (!pc_backend_available(backends[b]))
            continue;
        char what[128];
        pc_hca_params p;
        pc_hca_params_init(&p);
        p.m = 16;
        p.clusters = 6;
        p.backend = backends[b];
        /* Stages: grid (box, cells), components, dendrogram, cut, refinement (none), labelling, the end:
         * 7 reports on the CPU, and one at least from inside the labelling pass. GPU: 4. */
        snprintf(what, sizeof what, "hca %s", pc_backend_name(backends[b]));
        check_config(what, &x, &p, &p, run_hca, cuda ? 4 : 8);
        /* HCA-MS's climbs are slower: every 16th point (a row stride of 16 rows). */
        pc_points every16 = {data, gp.n / 16, gp.dim, 16 * gp.dim * sizeof(float), PC_F32};
        p.refine_borders = 1;
        snprintf(what, sizeof what, "hca-ms %s", pc_backend_name(backends[b]));
        /* one report at least from the climbs where the calling thread climbs first (sequential) */
        check_config(what, &every16, &p, &p, run_hca, cuda ? 4 : backends[b] == PC_BACKEND_SEQUENTIAL ? 9 : 8);
        /* 3-band uint8 pixels with the labels as bytes. */
        if (u8 && label_bytes) {
            pc_points pixels = pc_points_u8(u8, pixel_count, 3);
            p.refine_borders = 0;
            snprintf(what, sizeof what, "hca uint8 as bytes %s", pc_backend_name(backends[b]));
            check_config(what, &pixels, &p, &p, run_hca_bytes, cuda ? 4 : 8);
            /* HCA-MS on uint8 pixels: on the AVX-512 path 3 bands climb their values in the label
             * pass, 4 bands list their points in it and climb after (hca.c): the fraction never goes
             * back, and a stop anywhere ends the run. */
            p.refine_borders = 1;
            /* 16 levels a band, so that the 3 M rows of 4 bands climb few distinct values while their
             * label pass is long enough to report from */
            uint8_t *levels = malloc(pixel_count * 3);
            for (size_t q = 0; levels && q < pixel_count * 3; q++)
                levels[q] = (uint8_t)(u8[q] & 0xf0);
            for (size_t bands = 3; levels && bands <= 4; bands++) {
                pc_points rows = pc_points_u8(bands == 3 ? u8 : levels, bands == 3 ? 40000 : pixel_count * 3 / 4, bands);
                snprintf(what, sizeof what, "hca-ms uint8 %zu bands %s", bands, pc_backend_name(backends[b]));
                check_config(what, &rows, &p, &p, run_hca, cuda ? 4 : 8);
            }
            free(levels);
            /* 3 bands of noise: nearly every border pixel a value of its own, so that the label pass
             * is mostly climbs (two blocks of 65,536 pixels, ~1 s on the development machine). It
             * reports between them (15 times at least; 9-10 when it reported only between blocks), and
             * a stop there ends the run. */
            uint8_t *noise = malloc(100000 * 3);
            uint64_t z = 0x9e3779b97f4a7c15ull;
            for (size_t q = 0; noise && q < 100000 * 3; q++) {
                z ^= z << 13, z ^= z >> 7, z ^= z << 17;
                noise[q] = (uint8_t)(z >> 24);
            }
            if (noise) {
                pc_points rows = pc_points_u8(noise, 100000, 3);
                snprintf(what, sizeof what, "hca-ms uint8 noise %s", pc_backend_name(backends[b]));
                check_config(what, &rows, &p, &p, run_hca, cuda ? 4 : 15);
            }
            free(noise);
        }
        pc_heca_params hp;
        pc_heca_params_init(&hp);
        hp.members = 2;
        hp.m[0] = 12;
        hp.m[1] = 16;
        hp.hca.clusters = 6;
        hp.hca.backend = backends[b];
        /* box, two members, distances, dendrogram, cut, the end; the labelling pass on the CPU */
        snprintf(what, sizeof what, "heca %s", pc_backend_name(backends[b]));
        check_config(what, &x, &hp, &hp.hca, run_heca, cuda ? 7 : 8);
        /* 3-band uint8 pixels, 3 members: on the AVX-512 path the two members other than the
         * reference are counted in one pass (grid_refined.c), whose reports and stops are its own. */
        if (u8) {
            pc_points pixels = pc_points_u8(u8, pixel_count, 3);
            hp.members = 3;
            hp.m[2] = 20;
            snprintf(what, sizeof what, "heca uint8 %s", pc_backend_name(backends[b]));
            check_config(what, &pixels, &hp, &hp.hca, run_heca, cuda ? 8 : 9);
            /* The reference (the finest) first: its own pass comes after the shared one. */
            hp.m[0] = 20;
            hp.m[2] = 12;
            snprintf(what, sizeof what, "heca uint8, reference first, %s", pc_backend_name(backends[b]));
            check_config(what, &pixels, &hp, &hp.hca, run_heca, cuda ? 8 : 9);
            hp.m[0] = 12;
        }
    }
    free(u8);
    free(label_bytes);
    free(data);
    free(truth);
    return check_report("test_hca_progress");
}
