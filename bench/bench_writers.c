/* The CLI's array writers alone (tools/fileio/points_io.c), in process: labels and float matrices
 * in each output format, wall and CPU time (user + system) of the fastest of a few runs. CPU time
 * says what the writer itself costs even on a machine that other work is loading.
 *
 * usage: bench_writers OUT_DIR [LABELS] [ROWS] [RUNS]
 *   LABELS   labels to write (default 10^8, the 100-Mpix image of issue 12), values -1..5
 *   ROWS     rows of the 3-column float32 matrix (default 2 * 10^6), values as generate blobs makes */
#define _POSIX_C_SOURCE 200809L

#include "points_io.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

static double wall_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double cpu_now(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_sec +
           1e-6 * (double)u.ru_stime.tv_usec;
}

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t next_u64(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

typedef int (*writer)(const char *path, const void *data, size_t n, size_t dim, char *err, size_t errsize);

static int write_labels(const char *path, const void *data, size_t n, size_t dim, char *err, size_t errsize)
{
    (void)dim;
    return pcli_write_labels(path, data, n, 6, err, errsize); /* the labels below: -1 .. 5 */
}

static int write_matrix(const char *path, const void *data, size_t n, size_t dim, char *err, size_t errsize)
{
    return pcli_write_matrix(path, data, n, dim, err, errsize);
}

static void run(const char *name, writer w, const char *dir, const char *ext, const void *data, size_t n,
                size_t dim, int runs)
{
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/bench_writers%s", dir, ext);
    double best_wall = 1e30, best_cpu = 1e30;
    for (int r = 0; r < runs; r++) {
        remove(path);
        if (getenv("BENCH_WRITERS_STAGED")) { /* as the CLI: the target exists, empty (output_files.c) */
            FILE *fp = fopen(path, "wb");
            if (fp)
                fclose(fp);
        }
        double w0 = wall_now(), c0 = cpu_now();
        if (w(path, data, n, dim, err, sizeof err)) {
            fprintf(stderr, "bench_writers: %s\n", err);
            exit(1);
        }
        double wt = wall_now() - w0, ct = cpu_now() - c0;
        if (wt < best_wall)
            best_wall = wt;
        if (ct < best_cpu)
            best_cpu = ct;
    }
    struct stat st;
    double mib = stat(path, &st) == 0 ? (double)st.st_size / 1048576.0 : 0;
    printf("%-28s %-5s %10zu x %zu %9.3f %9.3f %9.0f\n", name, ext, n, dim, best_wall, best_cpu, mib);
    remove(path);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_writers OUT_DIR [LABELS] [ROWS] [RUNS]\n");
        return 2;
    }
    const char *dir = argv[1];
    size_t n_labels = argc > 2 ? strtoull(argv[2], NULL, 10) : 100000000u;
    size_t rows = argc > 3 ? strtoull(argv[3], NULL, 10) : 2000000u;
    int runs = argc > 4 ? atoi(argv[4]) : 3;
    int32_t *labels = malloc(n_labels * sizeof *labels);
    float *m = malloc(rows * 3 * sizeof *m);
    if (!labels || !m)
        return 1;
    for (size_t i = 0; i < n_labels; i++) /* runs of a label, as neighbouring pixels have */
        labels[i] = (int32_t)((i / 37 + (next_u64() % 4 == 0)) % 7) - 1;
    for (size_t i = 0; i < rows * 3; i++) { /* about N(0, 1) around centres in [-10, 10] */
        double u = (double)(next_u64() >> 11) * 0x1p-53, v = (double)(next_u64() >> 11) * 0x1p-53;
        m[i] = (float)(20.0 * ((double)(i / 3 % 8) / 7.0 - 0.5) +
                       sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v));
    }
    printf("# writer                     format     values       wall_s    cpu_s      MiB\n");
    run("pcli_write_labels", write_labels, dir, ".npy", labels, n_labels, 1, runs);
    run("pcli_write_labels", write_labels, dir, ".csv", labels, n_labels, 1, runs);
    run("pcli_write_labels (10^7)", write_labels, dir, ".txt", labels, n_labels / 10, 1, runs);
    run("pcli_write_matrix float32", write_matrix, dir, ".npy", m, rows, 3, runs);
    run("pcli_write_matrix float32", write_matrix, dir, ".csv", m, rows, 3, runs);
    free(labels);
    free(m);
    return 0;
}
