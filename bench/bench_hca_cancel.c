/* How soon HCA stops once its progress callback says stop (issue 16 item 3: Ctrl-C in Python within
 * ~0.1 s on 100 Mpix), and what reporting costs: on a generated W x H RGB uint8 image (a gradient with
 * noise), a run with a callback that only watches (its reports, the largest gap between two, each
 * stage's time), then runs stopped at the first report at or past each fraction (the time from the
 * callback's answer to pc_hca's return), then REPS runs without and with a watching callback,
 * alternated (wall time, median).
 * Usage: bench_hca_cancel [W H [REFINE [BACKEND [REPS]]]]  (default 10000 10000 0 auto 3; BACKEND:
 * auto, seq, openmp or cuda) */
#include <parclust.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
    double last, max_gap, gap_end, stop_at, stopped;
    int calls;
} watch;

static int on_progress(void *user, double f)
{
    watch *w = user;
    double t = now();
    if (t - w->last > w->max_gap) {
        w->max_gap = t - w->last;
        w->gap_end = f;
    }
    w->last = t;
    w->calls++;
    if (w->stop_at >= 0 && f >= w->stop_at) {
        w->stopped = t;
        return 1;
    }
    return 0;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    size_t w = argc > 2 ? strtoul(argv[1], NULL, 10) : 10000, h = argc > 2 ? strtoul(argv[2], NULL, 10) : 10000;
    int refine = argc > 3 ? atoi(argv[3]) : 0, reps = argc > 5 ? atoi(argv[5]) : 3;
    size_t n = w * h;
    unsigned char *img = malloc(n * 3);
    if (!img)
        return 1;
    unsigned s = 1;
    for (size_t y = 0; y < h; y++)
        for (size_t x = 0; x < w; x++) {
            size_t i = (y * w + x) * 3;
            s = s * 1103515245u + 12345u;
            img[i] = (unsigned char)(x * 200 / w + (s >> 28));
            img[i + 1] = (unsigned char)(y * 200 / h + ((s >> 24) & 15));
            img[i + 2] = (unsigned char)((x + y) * 100 / w + ((s >> 20) & 15));
        }
    pc_points p = {img, n, 3, 0, PC_U8};
    pc_hca_params hp;
    pc_hca_params_init(&hp);
    hp.m = 32;
    hp.clusters = 6;
    hp.refine_borders = refine;
    if (argc > 4 && pc_backend_parse(argv[4], &hp.backend) != PC_OK)
        return 2;
    watch wt;
    memset(&wt, 0, sizeof wt);
    wt.stop_at = -1;
    hp.progress = on_progress;
    hp.progress_user = &wt;
    pc_result *r = NULL;
    double t0 = now();
    wt.last = t0;
    pc_status st = pc_hca(&p, &hp, &r);
    printf("%zu x %zu RGB, refine %d: %s in %.3f s on %s, %d reports, largest gap %.3f s (ending at %.2f)\n", w, h,
           refine, pc_status_string(st), now() - t0, r ? pc_backend_name(pc_result_backend(r)) : "-", wt.calls,
           wt.max_gap, wt.gap_end);
    for (size_t i = 0; r && i < pc_result_stage_count(r); i++) {
        const char *name;
        double sec;
        pc_result_stage(r, i, &name, &sec);
        printf("  stage %-12s %.3f s\n", name, sec);
    }
    pc_result_free(r);
    const double at[] = {0.05, 0.2, 0.35, 0.45, 0.56, 0.65, 0.76, 0.9};
    for (size_t k = 0; k < sizeof at / sizeof *at; k++) {
        memset(&wt, 0, sizeof wt);
        wt.stop_at = at[k];
        r = NULL;
        t0 = now();
        wt.last = t0;
        st = pc_hca(&p, &hp, &r);
        double t1 = now();
        printf("stop at >= %.2f: %s after %.3f s, %.4f s from the stop\n", at[k], pc_status_string(st), t1 - t0,
               wt.stopped > 0 ? t1 - wt.stopped : -1.0);
        pc_result_free(r);
    }
    double *plain = malloc((size_t)reps * sizeof *plain), *watched = malloc((size_t)reps * sizeof *watched);
    for (int i = 0; i < reps; i++)
        for (int with = 0; with < 2; with++) {
            memset(&wt, 0, sizeof wt);
            wt.stop_at = -1;
            hp.progress = with ? on_progress : NULL;
            t0 = now();
            wt.last = t0;
            st = pc_hca(&p, &hp, &r);
            (with ? watched : plain)[i] = now() - t0;
            pc_result_free(r);
        }
    qsort(plain, (size_t)reps, sizeof *plain, by_value);
    qsort(watched, (size_t)reps, sizeof *watched, by_value);
    printf("%d runs each: median %.3f s without a callback, %.3f s with one watching\n", reps, plain[reps / 2],
           watched[reps / 2]);
    free(plain);
    free(watched);
    free(img);
    return 0;
}
