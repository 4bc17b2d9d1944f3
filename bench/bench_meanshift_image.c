/* Image mean shift speed on a synthetic photo-like RGB scene: Voronoi regions of random colours under
 * a smooth shading, with Gaussian noise, segmented with sequential and OpenMP backends; medians of
 * several runs, per-stage times, iterations, region counts and the ARI against the true cells. --raw writes the image (packed RGB,
 * row-major) so peers (bench/meanshift_image_peers.py) can run on the same pixels, --modes the
 * sequential run's modes (float32, n x 3) to compare their filtered images with ours.
 *
 *   bench_meanshift_image [--size 1024x1024] [--hs 8] [--hr 16] [--min 20] [--repeats 3]
 *                         [--max-iter 20] [--threads 1,2] [--raw FILE] [--modes FILE]
 *                         [--memory 16M,4M] [--halo ROWS]
 *
 * --memory: then pc_meanshift_image_rows on the same image under each memory limit (OpenMP, the last
 * thread count of --threads; the scratch in a temporary file), its stages, strips, sweeps, climbs
 * taken up and region graph, and whether its labels are the in-memory ones (the run fails if not).
 */
#include "parclust.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_util.h"

static double uniform(uint64_t *s) { return (double)(next(s) >> 11) * 0x1.0p-53; }

/* The image by rows, from memory (the caller's I/O for pc_meanshift_image_rows). */
typedef struct {
    const uint8_t *img;
    int32_t *labels;
    size_t w;
} rows_source;

static pc_status rows_read(void *user, size_t row0, size_t rows, void *pixels, uint8_t *valid)
{
    const rows_source *src = user;
    (void)valid;
    memcpy(pixels, src->img + row0 * src->w * 3, rows * src->w * 3);
    return PC_OK;
}

static pc_status rows_write(void *user, size_t row0, size_t rows, const int32_t *labels)
{
    const rows_source *src = user;
    memcpy(src->labels + row0 * src->w, labels, rows * src->w * sizeof *labels);
    return PC_OK;
}

static double stage_of(const pc_result *r, const char *name)
{
    for (size_t g = 0; g < pc_result_stage_count(r); g++) {
        const char *n;
        double t;
        if (pc_result_stage(r, g, &n, &t) == PC_OK && !strcmp(n, name))
            return t;
    }
    return 0;
}

/* "16M", "512K", "2G" or bytes. */
static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    double unit = *end == 'K' ? 1024.0 : *end == 'M' ? 1048576.0 : *end == 'G' ? 1073741824.0 : 1;
    return v > 0 ? (size_t)(v * unit) : 0;
}

/* 300 Voronoi cells of random colours, a shading ramp of +-20% across the image, noise sigma 5. */
static uint8_t *scene(size_t w, size_t h, uint64_t seed, int32_t *truth)
{
    enum { CELLS = 300 };
    uint64_t s = seed | 1;
    double cx[CELLS], cy[CELLS], col[CELLS][3];
    for (int k = 0; k < CELLS; k++) {
        cx[k] = uniform(&s) * (double)w;
        cy[k] = uniform(&s) * (double)h;
        for (int b = 0; b < 3; b++)
            col[k][b] = 20 + 215 * uniform(&s);
    }
    uint8_t *img = malloc(w * h * 3);
    if (!img)
        return NULL;
    for (size_t r = 0; r < h; r++) {
        for (size_t c = 0; c < w; c++) {
            int best = 0;
            double bd = INFINITY;
            for (int k = 0; k < CELLS; k++) {
                double d = ((double)c - cx[k]) * ((double)c - cx[k]) + ((double)r - cy[k]) * ((double)r - cy[k]);
                if (d < bd)
                    bd = d, best = k;
            }
            truth[r * w + c] = best;
            double shade = 0.8 + 0.4 * ((double)r / (double)h + (double)c / (double)w) / 2;
            for (int b = 0; b < 3; b++) {
                /* Box-Muller */
                double g = sqrt(-2 * log(1 - uniform(&s))) * cos(6.283185307179586 * uniform(&s));
                double v = col[best][b] * shade + 5 * g;
                img[(r * w + c) * 3 + b] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : lround(v));
            }
        }
    }
    return img;
}

int main(int argc, char **argv)
{
    size_t w = 1024, h = 1024;
    double hs = 8, hr = 16;
    long long min_size = 20;
    int repeats = 3, max_iter = 0;
    const char *threads_list = "1,2", *raw = NULL, *modes_out = NULL, *memory_list = NULL;
    size_t halo = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--size") && sscanf(argv[i + 1], "%zux%zu", &w, &h) == 2)
            continue;
        if (!strcmp(argv[i], "--hs"))
            hs = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--hr"))
            hr = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--min"))
            min_size = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--max-iter"))
            max_iter = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeats"))
            repeats = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads"))
            threads_list = argv[i + 1];
        else if (!strcmp(argv[i], "--raw"))
            raw = argv[i + 1];
        else if (!strcmp(argv[i], "--modes"))
            modes_out = argv[i + 1];
        else if (!strcmp(argv[i], "--memory"))
            memory_list = argv[i + 1];
        else if (!strcmp(argv[i], "--halo"))
            halo = (size_t)atol(argv[i + 1]);
        else {
            fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (repeats < 1 || repeats > 50 || w == 0 || h == 0) {
        fprintf(stderr, "bad --repeats or --size\n");
        return 2;
    }
    int32_t *truth = malloc(w * h * sizeof *truth);
    uint8_t *img = truth ? scene(w, h, 2026, truth) : NULL;
    if (!img) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    if (raw) {
        FILE *f = fopen(raw, "wb");
        if (!f || fwrite(img, 1, w * h * 3, f) != w * h * 3 || fclose(f) != 0) {
            fprintf(stderr, "cannot write %s\n", raw);
            return 1;
        }
    }
    pc_points view = pc_points_u8(img, w * h, 3);
    printf("| backend | threads | image | hs | hr | min | time (s) | filter | fuse | prune | iterations | regions | ARI vs cells |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    char list[256];
    snprintf(list, sizeof list, "seq,%s", threads_list);
    int32_t *ref = NULL;
    int last_threads = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        pc_meanshift_image_params p;
        pc_meanshift_image_params_init(&p);
        p.spatial_bandwidth = hs;
        p.range_bandwidth = hr;
        p.min_region_size = min_size;
        if (max_iter > 0)
            p.max_iter = max_iter;
        p.backend = strcmp(tok, "seq") ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
        p.threads = strcmp(tok, "seq") ? atoi(tok) : 0;
        last_threads = p.threads;
        double times[50], stage[50][4];
        pc_result *r = NULL;
        for (int k = 0; k < repeats; k++) {
            pc_result_free(r);
            double t0 = now();
            if (pc_meanshift_image(&view, w, h, NULL, &p, &r) != PC_OK) {
                fprintf(stderr, "pc_meanshift_image: %s\n", pc_last_error());
                return 1;
            }
            times[k] = now() - t0;
            for (size_t g = 0; g < 4 && g < pc_result_stage_count(r); g++)
                pc_result_stage(r, g, NULL, &stage[k][g]);
        }
        double sorted[50];
        memcpy(sorted, times, sizeof(double) * (size_t)repeats);
        qsort(sorted, (size_t)repeats, sizeof(double), cmp_double);
        double med = sorted[repeats / 2];
        int mk = 0;
        for (int k = 0; k < repeats; k++)
            if (times[k] == med)
                mk = k;
        double ari = -1;
        pc_adjusted_rand_index(truth, pc_result_labels(r), w * h, &ari);
        printf("| %s | %s | %zux%zu RGB u8 | %g | %g | %lld | %.3f | %.3f | %.3f | %.3f | %d | %zu | %.4f |\n",
               p.backend == PC_BACKEND_SEQUENTIAL ? "seq" : "openmp", p.backend == PC_BACKEND_SEQUENTIAL ? "1" : tok, w, h,
               hs, hr, min_size, med, stage[mk][1], stage[mk][2], stage[mk][3], pc_result_iterations(r),
               pc_result_cluster_count(r), ari);
        /* Speed is never bought with another answer: every backend must give the sequential labels. */
        if (!ref) {
            ref = malloc(w * h * sizeof *ref);
            memcpy(ref, pc_result_labels(r), w * h * sizeof *ref);
            FILE *f = modes_out ? fopen(modes_out, "wb") : NULL;
            if (modes_out && (!f || fwrite(pc_result_modes(r), sizeof(float), w * h * 3, f) != w * h * 3 ||
                              fclose(f) != 0)) {
                fprintf(stderr, "cannot write %s\n", modes_out);
                return 1;
            }
        } else if (memcmp(ref, pc_result_labels(r), w * h * sizeof *ref) != 0) {
            fprintf(stderr, "labels differ from the sequential run\n");
            return 1;
        }
        pc_result_free(r);
    }
    if (memory_list && ref) {
        printf("\n| memory limit | strips x rows | halo | time (s) | read | filter | fuse | scratch | prune | write | sweeps "
               "| climbs taken up | strip regions | regions | graph (KiB) | labels |\n");
        printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        char mlist[256];
        snprintf(mlist, sizeof mlist, "%s", memory_list);
        rows_source src = {img, malloc(w * h * sizeof(int32_t)), w};
        for (char *tok = strtok(mlist, ","); tok && src.labels; tok = strtok(NULL, ",")) {
            pc_meanshift_image_params p;
            pc_meanshift_image_params_init(&p);
            p.spatial_bandwidth = hs;
            p.range_bandwidth = hr;
            p.min_region_size = min_size;
            if (max_iter > 0)
                p.max_iter = max_iter;
            p.backend = PC_BACKEND_OPENMP;
            p.threads = last_threads;
            pc_image_rows io;
            pc_image_rows_init(&io);
            io.read = rows_read;
            io.write = rows_write;
            io.user = &src;
            io.memory_limit = parse_size(tok);
            io.halo_rows = halo;
            pc_image_rows_report rep;
            pc_result *r = NULL;
            double t0 = now();
            if (pc_meanshift_image_rows(w, h, 3, PC_U8, &io, &p, &r, &rep) != PC_OK) {
                fprintf(stderr, "pc_meanshift_image_rows: %s\n", pc_last_error());
                return 1;
            }
            double t = now() - t0;
            int same = memcmp(ref, src.labels, w * h * sizeof *ref) == 0;
            printf("| %s | %zu x %zu | %zu | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %d | %zu | %zu | %zu | %.0f | %s |\n",
                   tok, rep.strips, rep.strip_rows, rep.halo_rows, t, stage_of(r, "read"), stage_of(r, "filter"),
                   stage_of(r, "fuse"), stage_of(r, "scratch"), stage_of(r, "prune"), stage_of(r, "write"), rep.sweeps,
                   rep.climbs_resumed, rep.strip_regions, rep.regions, (double)rep.graph_bytes / 1024,
                   same ? "same" : "DIFFERENT");
            pc_result_free(r);
            if (!same) {
                fprintf(stderr, "labels by rows differ from the in-memory run\n");
                return 1;
            }
        }
        free(src.labels);
    }
    free(ref);
    free(img);
    free(truth);
    return 0;
}
