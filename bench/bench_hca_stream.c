/* The streamed HCA's own work per pixel (issue 13's throughput target), without the file reading: a
 * uint8 image (an N x B .npy, e.g. bench_cli_io.sh's image.npy) in windows of about --window-mib MiB,
 * as `parclust segment --max-memory` hands them over: the box pass, the histogram pass, the finish and
 * the label pass (with the clusters' sums, as segment's centres need them), against pc_hca on the
 * whole image in the same run. Wall and CPU seconds per phase (run with OMP_WAIT_POLICY=passive so
 * that threads waiting at a barrier do not count as work), megapixels per second, and a check that
 * the streamed labels equal pc_hca's.
 *
 *   bench_hca_stream IMAGE.npy [--window-mib 16] [--threads 2] [--repeats 3] [--m 32] [--clusters 6]
 */
#define _DEFAULT_SOURCE /* madvise */
#include "parclust.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_util.h"

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    double wall, cpu;
} span;

static span since(double w0, double c0)
{
    span s = {now() - w0, cpu_now() - c0};
    return s;
}

/* A uint8 N x B .npy (version 1 header): its rows, mapped. */
static const uint8_t *map_npy(const char *path, size_t *n, size_t *bands)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < 16)
        return NULL;
    const uint8_t *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED || memcmp(map, "\x93NUMPY\x01", 7) != 0)
        return NULL;
    size_t hlen = (size_t)map[8] | (size_t)map[9] << 8;
    const char *h = (const char *)map + 10, *shape = strstr(h, "'shape': (");
    if (!strstr(h, "'|u1'") || !shape || sscanf(shape, "'shape': (%zu, %zu)", n, bands) != 2 ||
        10 + hlen + *n * *bands > (size_t)st.st_size)
        return NULL;
    (void)madvise((void *)map, (size_t)st.st_size, MADV_WILLNEED);
    return map + 10 + hlen;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_hca_stream IMAGE.npy [--window-mib 16] [--threads 2] [--repeats 3] "
                        "[--m 32] [--clusters 6]\n");
        return 2;
    }
    double window_mib = 16;
    int threads = 2, repeats = 3, m = 32, clusters = 6;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--window-mib") == 0)
            window_mib = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--threads") == 0)
            threads = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--repeats") == 0)
            repeats = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--m") == 0)
            m = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--clusters") == 0)
            clusters = atoi(argv[i + 1]);
    }
    size_t n, B;
    const uint8_t *px = map_npy(argv[1], &n, &B);
    if (!px || B < 1 || B > 8 || repeats < 1 || repeats > 15 || threads < 1) {
        fprintf(stderr, "bench_hca_stream: %s is not an N x B uint8 .npy (B <= 8), or bad options\n", argv[1]);
        return 1;
    }
    size_t rows = (size_t)(window_mib * 1048576.0 / (double)B);
    int32_t *ref = malloc(n * sizeof *ref), *labels = malloc(rows * sizeof *labels);
    if (!ref || !labels)
        return 1;
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = m;
    p.clusters = (size_t)clusters;
    p.backend = threads == 1 ? PC_BACKEND_SEQUENTIAL : PC_BACKEND_OPENMP;
    p.threads = threads;
    double mpix = (double)n / 1e6;
    printf("# %zu x %zu uint8, windows of %zu rows, %d thread(s), m %d, %d clusters; medians of %d\n", n, B, rows,
           threads, m, clusters, repeats);
    printf("| phase | wall s | cpu s | Mpix/s (wall) |\n|---|---:|---:|---:|\n");
    span t[6][15];
    int same = 1;
    for (int r = 0; r < repeats; r++) {
        pc_points all = pc_points_u8(px, n, B);
        pc_result *res = NULL;
        double w0 = now(), c0 = cpu_now();
        if (pc_hca(&all, &p, &res) != PC_OK) {
            fprintf(stderr, "pc_hca: %s\n", pc_last_error());
            return 1;
        }
        t[0][r] = since(w0, c0);
        memcpy(ref, pc_result_labels(res), n * sizeof *ref);
        size_t k = pc_result_cluster_count(res);
        pc_result_free(res);

        pc_hca_stream *s = NULL;
        if (pc_hca_stream_create(&p, B, &s) != PC_OK)
            return 1;
        w0 = now(), c0 = cpu_now();
        for (size_t at = 0; at < n; at += rows) {
            pc_points w = pc_points_u8(px + at * B, n - at < rows ? n - at : rows, B);
            if (pc_hca_stream_bound(s, &w) != PC_OK)
                return 1;
        }
        t[1][r] = since(w0, c0);
        w0 = now(), c0 = cpu_now();
        for (size_t at = 0; at < n; at += rows) {
            pc_points w = pc_points_u8(px + at * B, n - at < rows ? n - at : rows, B);
            if (pc_hca_stream_add(s, &w) != PC_OK)
                return 1;
        }
        t[2][r] = since(w0, c0);
        w0 = now(), c0 = cpu_now();
        if (pc_hca_stream_finish(s, &res) != PC_OK || pc_result_cluster_count(res) != k)
            return 1;
        t[3][r] = since(w0, c0);
        pc_result_free(res);
        double *sums = calloc(k * (B + 1), sizeof *sums);
        t[4][r].wall = t[4][r].cpu = 0;
        for (size_t at = 0; at < n; at += rows) { /* the comparison with pc_hca's labels not timed */
            size_t c = n - at < rows ? n - at : rows;
            pc_points w = pc_points_u8(px + at * B, c, B);
            w0 = now(), c0 = cpu_now();
            if (pc_hca_stream_label(s, &w, labels, sums) != PC_OK)
                return 1;
            span one = since(w0, c0);
            t[4][r].wall += one.wall;
            t[4][r].cpu += one.cpu;
            same &= memcmp(labels, ref + at, c * sizeof *labels) == 0;
        }
        w0 = now(), c0 = cpu_now();
        for (size_t at = 0; at < n; at += rows) {
            pc_points w = pc_points_u8(px + at * B, n - at < rows ? n - at : rows, B);
            if (pc_hca_stream_label(s, &w, labels, NULL) != PC_OK)
                return 1;
        }
        t[5][r] = since(w0, c0);
        free(sums);
        pc_hca_stream_free(s);
    }
    static const char *const names[] = {"pc_hca, whole image in memory", "stream: box pass", "stream: histogram pass",
                                        "stream: finish", "stream: label pass (with sums)",
                                        "stream: label pass (labels only)"};
    for (int ph = 0; ph < 6; ph++) {
        double w[15], c[15];
        for (int r = 0; r < repeats; r++)
            w[r] = t[ph][r].wall, c[r] = t[ph][r].cpu;
        double wm = median(w, repeats), cm = median(c, repeats);
        printf("| %s | %.3f | %.3f | %.0f |\n", names[ph], wm, cm, ph == 3 ? 0.0 : mpix / wm);
    }
    printf("streamed labels %s pc_hca's\n", same ? "equal" : "DIFFER FROM");
    return same ? 0 : 1;
}
