/* Strong scaling of parclust_mpi over P ranks, one GPU each (issue 14's benchmarks): every rank makes
 * its own rows of the global data in memory (no file: the data of row r are a function of r alone, so
 * every P clusters the same data) and runs the library's MPI function on them.
 *
 *   mpirun -np P bench_mpi_gpu kmeans [--n 100000000] [--dim 16] [--k 1000] [--iters 10] [--backend cuda]
 *   mpirun -np P bench_mpi_gpu hca    [--gpix 4] [--bands 4] [--m 32] [--clusters 8] [--backend cuda]
 *                                     [--device 1] [--repeats 5]
 *   mpirun -np P bench_mpi_gpu meanshift [--n 1000000] [--dim 3] [--iters 10] [--bandwidth 2] [--backend cuda]
 *
 * One line per run on rank 0: P, the slowest rank's times (k-means: setup = scan and initialisation,
 * compute = its passes and steps, communication = the reductions, waiting included, finish = the final
 * labels and their inertia; per iteration = (compute + communication) / iterations; HCA: the whole
 * call (labels' pages touched before), and its floor (the ranks reading their pixels and writing int32
 * labels once, at once: host memory's share; with --device 1 each rank's pixels and labels are in its
 * GPU's memory, pc_mpi_hca_device, the median of --repeats calls, its parts and the finish's stages);
 * mean shift: setup = the points' check, compute = the climbs, communication = the gather of the points and the merge), and a checksum of the result
 * (k-means: the inertia; HCA and mean shift: the cluster sizes' hash) that must not depend on P. */
#include "parclust_mpi.h"
#include "bench_util.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef PC_BENCH_HAVE_CUDART
#include <cuda_runtime.h>
#endif

static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static const char *arg(int argc, char **argv, const char *name, const char *fallback)
{
    for (int i = 2; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return argv[i + 1];
    return fallback;
}

/* This rank's first row and row count of n rows split as evenly as can be. */
static void my_rows(size_t n, int rank, int size, size_t *first, size_t *count)
{
    size_t base = n / (size_t)size, extra = n % (size_t)size, r = (size_t)rank;
    *first = r * base + (r < extra ? r : extra);
    *count = base + (r < extra ? 1 : 0);
}

static void select_gpu(pc_backend backend, int rank)
{
    if (backend != PC_BACKEND_CUDA)
        return;
    MPI_Comm local;
    int local_rank = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);
    int count = pc_cuda_device_count();
    if (count <= 0 || pc_cuda_select_device(local_rank % count) != PC_OK) {
        fprintf(stderr, "rank %d: no GPU: %s\n", rank, pc_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static double slowest(double t)
{
    double m = 0;
    MPI_Reduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    return m;
}

/* Blobs: k centres in [0, 100)^dim (the same on every rank), row r near centre mix(r) % k. */
static int bench_kmeans(int argc, char **argv, int rank, int size, pc_backend backend)
{
    size_t n = strtoull(arg(argc, argv, "--n", "100000000"), NULL, 10);
    size_t dim = strtoull(arg(argc, argv, "--dim", "16"), NULL, 10);
    size_t k = strtoull(arg(argc, argv, "--k", "1000"), NULL, 10);
    int iters = atoi(arg(argc, argv, "--iters", "10"));
    size_t first, count;
    my_rows(n, rank, size, &first, &count);
    float *centres = malloc(k * dim * sizeof *centres), *pts = malloc((count ? count : 1) * dim * sizeof *pts);
    int32_t *labels = malloc((count ? count : 1) * sizeof *labels);
    if (!centres || !pts || !labels) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t q = 0; q < k * dim; q++)
        centres[q] = (float)(mix(q ^ 0xC0FFEEull) % 100000) / 1000.0f;
    double t0 = MPI_Wtime();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < count; i++) {
        uint64_t r = first + i, c = mix(r) % k;
        for (size_t j = 0; j < dim; j++) {
            uint64_t h = mix(r * 64 + j);
            double u = (double)(h >> 11) / 9007199254740992.0, v = (double)(mix(h) >> 11) / 9007199254740992.0;
            pts[i * dim + j] = centres[c * dim + j] + (float)((u + v - 1.0) * 3.0);
        }
    }
    double gen = slowest(MPI_Wtime() - t0);
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    p.k = k;
    p.init = PC_INIT_RANDOM;
    p.max_iter = iters;
    p.tol = 0;
    p.seed = 1;
    p.backend = backend;
    pc_points v = pc_points_f32(pts, count, dim);
    pc_result *res = NULL;
    pc_mpi_report rep;
    memset(&rep, 0, sizeof rep);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    pc_status st = pc_mpi_kmeans(MPI_COMM_WORLD, &v, &p, labels, &res, &rep);
    double wall = slowest(MPI_Wtime() - t0);
    if (st != PC_OK) {
        fprintf(stderr, "rank %d: pc_mpi_kmeans: %s\n", rank, pc_mpi_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double setup = slowest(rep.setup), compute = slowest(rep.compute), comm = slowest(rep.communication);
    double finish = slowest(rep.finish);
    int it = pc_result_iterations(res);
    if (rank == 0)
        printf("| kmeans | %zu x %zu, k %zu | %d | %s | %d | %.3f | %.3f | %.3f | %.3f | %.4f | %.3f | %.9g (finish %.3f s) |\n",
               n, dim, k, size, pc_backend_name(backend), it, gen, wall, setup, compute, comm,
               (compute + comm) / (it ? it : 1), rep.inertia, finish);
    pc_result_free(res);
    free(centres);
    free(pts);
    free(labels);
    return 0;
}

/* A scene of 64 x 64-pixel fields of 8 land covers with noise, width 65536: pixel r's values are a
 * function of r alone. */
static int bench_hca(int argc, char **argv, int rank, int size, pc_backend backend)
{
    double gpix = atof(arg(argc, argv, "--gpix", "4"));
    size_t bands = strtoull(arg(argc, argv, "--bands", "4"), NULL, 10);
    size_t width = 65536, height = (size_t)(gpix * 1e9) / width, n = width * height;
    size_t first, count;
    my_rows(height, rank, size, &first, &count);
    first *= width;
    count *= width;
    uint8_t *img = malloc((count ? count : 1) * bands);
    int32_t *labels = malloc((count ? count : 1) * sizeof *labels);
    if (!img || !labels) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    uint8_t spectra[8][8];
    for (int c = 0; c < 8; c++)
        for (size_t b = 0; b < bands; b++)
            spectra[c][b] = (uint8_t)(30 + mix((uint64_t)(c * 8 + (int)b)) % 196);
    double t0 = MPI_Wtime();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < count; i++) {
        uint64_t px = first + i, row = px / width, col = px % width;
        int c = (int)(mix((row / 64) << 32 | col / 64) % 8);
        uint64_t r = mix(px ^ 0xABCDEFull);
        for (size_t b = 0; b < bands; b++) {
            int val = spectra[c][b] + (int)((r >> (8 * b)) & 15) - (int)((r >> (8 * b + 4)) & 15) + (int)((r >> 40) % 9) - 4;
            img[i * bands + b] = (uint8_t)(val < 0 ? 0 : val > 255 ? 255 : val);
        }
    }
    /* The labels' pages touched first: the kernel's zeroing of 16 GB of fresh pages at their first
     * write (0.6 s of P = 1's 1.5 s, 2026-11-26) is the same for any program, not HCA's. */
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < count; i++)
        labels[i] = -1;
    double gen = slowest(MPI_Wtime() - t0);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = atoi(arg(argc, argv, "--m", "32"));
    p.clusters = strtoull(arg(argc, argv, "--clusters", "8"), NULL, 10);
    p.backend = backend;
    pc_points v = pc_points_u8(img, count, bands);
    int device = atoi(arg(argc, argv, "--device", "0")), repeats = atoi(arg(argc, argv, "--repeats", "1"));
    repeats = repeats < 1 ? 1 : repeats > 15 ? 15 : repeats;
    int32_t *run_labels = labels;
    if (device) {
#ifdef PC_BENCH_HAVE_CUDART
        void *d_img = NULL, *d_labels = NULL;
        if (backend != PC_BACKEND_CUDA || cudaMalloc(&d_img, (count ? count : 1) * bands) != cudaSuccess ||
            cudaMalloc(&d_labels, (count ? count : 1) * sizeof(int32_t)) != cudaSuccess ||
            cudaMemcpy(d_img, img, count * bands, cudaMemcpyHostToDevice) != cudaSuccess ||
            cudaMemset(d_labels, 0xff, (count ? count : 1) * sizeof(int32_t)) != cudaSuccess) {
            fprintf(stderr, "rank %d: --device 1 needs --backend cuda and room for the pixels and labels on the GPU\n",
                    rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        v.data = d_img;
        run_labels = d_labels;
#else
        fprintf(stderr, "bench_mpi_gpu: --device 1 needs a CUDA build\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
#endif
    }
    pc_result *res = NULL;
    float *centres = NULL;
    double walls[15];
    pc_mpi_report report;
    memset(&report, 0, sizeof report);
    for (int rep = 0; rep < repeats; rep++) {
        pc_result_free(res);
        free(centres);
        res = NULL;
        centres = NULL;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        pc_status st = device ? pc_mpi_hca_device(MPI_COMM_WORLD, &v, &p, run_labels, &res, &centres, &report)
                              : pc_mpi_hca(MPI_COMM_WORLD, &v, &p, run_labels, &res, &centres);
        walls[rep] = slowest(MPI_Wtime() - t0);
        if (st != PC_OK) {
            fprintf(stderr, "rank %d: pc_mpi_hca%s: %s\n", rank, device ? "_device" : "", pc_mpi_last_error());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    double wall = median(walls, repeats); /* (the calls' slowest-rank times, sorted) */
    /* The last call's parts, each the slowest rank's. */
    double setup = slowest(report.setup), compute = slowest(report.compute);
    double communication = slowest(report.communication), finish = slowest(report.finish);
    if (rank == 0) {
        if (device)
            printf("hca parts (last call, slowest rank): setup %.4f compute %.4f communication %.4f finish %.4f s\n",
                   setup, compute, communication, finish);
        printf("hca stages (rank 0, last call):");
        for (size_t q = 0; q < pc_result_stage_count(res); q++) {
            const char *name;
            double sec;
            if (pc_result_stage(res, q, &name, &sec) == PC_OK)
                printf(" %s %.4f", name, sec);
        }
        printf("; calls %.4f .. %.4f s\n", walls[0], walls[repeats - 1]);
    }
#ifdef PC_BENCH_HAVE_CUDART
    if (device) {
        cudaFree((void *)v.data);
        cudaFree(run_labels);
        v.data = img;
    }
#endif
    uint64_t h = 0;
    size_t k = pc_result_cluster_count(res);
    const int64_t *sizes = pc_result_sizes(res);
    for (size_t c = 0; sizes && c < k; c++)
        h = mix(h ^ (uint64_t)sizes[c]);
    /* The floor of any clustering of host pixels into host labels: each rank reads its pixels once
     * and writes their int32 labels once (here a label from a hash of the pixel's values), on its threads, all the
     * ranks at once: the host's memory bandwidth shared by the ranks. */
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    if (bands == 4) { /* a pixel a word: vector loads and stores, the memory's pace */
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < count; i++) {
            uint32_t px;
            memcpy(&px, img + 4 * i, 4);
            labels[i] = (int32_t)((px ^ px >> 13) & 7);
        }
    } else {
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < count; i++) {
            uint32_t sum = 0;
            for (size_t b = 0; b < bands; b++)
                sum += img[i * bands + b];
            labels[i] = (int32_t)(sum & 7);
        }
    }
    double floor = slowest(MPI_Wtime() - t0);
    if (rank == 0)
        printf("| hca%s | %.2f Gpix x %zu, m %d | %d | %s | %zu clusters | %.3f | %.4f | %016llx (floor %.3f s) |\n",
               device ? " (GPU memory)" : "", (double)n / 1e9, bands, p.m, size, pc_backend_name(backend), k, gen, wall,
               (unsigned long long)h, floor);
    pc_result_free(res);
    free(centres);
    free(img);
    free(labels);
    return 0;
}

/* Gaussian blobs: 16 centres in [0, 100)^dim (the same on every rank), row r near centre mix(r) % 16
 * with spread about 1.7 a dimension; bandwidth 2, eps 0 and `iters` shifts, so every P does the same
 * work, all pairs every iteration. */
static int bench_meanshift(int argc, char **argv, int rank, int size, pc_backend backend)
{
    size_t n = strtoull(arg(argc, argv, "--n", "1000000"), NULL, 10);
    size_t dim = strtoull(arg(argc, argv, "--dim", "3"), NULL, 10);
    int iters = atoi(arg(argc, argv, "--iters", "10"));
    size_t first, count, k = 16;
    my_rows(n, rank, size, &first, &count);
    float *pts = malloc((count ? count : 1) * dim * sizeof *pts), *modes = malloc((count ? count : 1) * dim * sizeof *modes);
    int32_t *labels = malloc((count ? count : 1) * sizeof *labels);
    if (!pts || !modes || !labels) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double t0 = MPI_Wtime();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < count; i++) {
        uint64_t r = first + i, c = mix(r) % k;
        for (size_t j = 0; j < dim; j++) {
            uint64_t h = mix(r * 64 + j);
            double u = (double)(h >> 11) / 9007199254740992.0, v = (double)(mix(h) >> 11) / 9007199254740992.0;
            pts[i * dim + j] = (float)(mix(c * 64 + j) % 100000) / 1000.0f + (float)((u + v - 1.0) * 3.0);
        }
    }
    double gen = slowest(MPI_Wtime() - t0);
    pc_meanshift_params p;
    pc_meanshift_params_init(&p);
    p.bandwidth = atof(arg(argc, argv, "--bandwidth", "2"));
    p.eps = 0;
    p.max_iter = iters;
    p.backend = backend;
    pc_points v = pc_points_f32(pts, count, dim);
    pc_mpi_clusters cl;
    pc_mpi_report rep;
    memset(&rep, 0, sizeof rep);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    pc_status st = pc_mpi_meanshift(MPI_COMM_WORLD, &v, &p, labels, modes, &cl, &rep);
    double wall = slowest(MPI_Wtime() - t0);
    if (st != PC_OK) {
        fprintf(stderr, "rank %d: pc_mpi_meanshift: %s\n", rank, pc_mpi_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double setup = slowest(rep.setup), compute = slowest(rep.compute), comm = slowest(rep.communication);
    uint64_t h = 0;
    for (size_t c = 0; c < cl.k; c++)
        h = mix(h ^ (uint64_t)cl.sizes[c]);
    if (rank == 0)
        printf("| meanshift %s | %zu x %zu, h %g | %d | %s | %d, %zu clusters | %.3f | %.3f | %.3f | %.3f | %.3f | %.4f | "
               "%016llx |\n", rep.method, n, dim, p.bandwidth, size, pc_backend_name(backend), cl.iterations, cl.k, gen,
               wall, setup, compute, comm, (compute + comm) / (cl.iterations ? cl.iterations : 1), (unsigned long long)h);
    pc_mpi_clusters_free(&cl);
    free(pts);
    free(modes);
    free(labels);
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, rc = 2;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *what = argc > 1 ? argv[1] : "";
    pc_backend backend = PC_BACKEND_CUDA;
    if (pc_backend_parse(arg(argc, argv, "--backend", "cuda"), &backend) != PC_OK) {
        if (rank == 0)
            fprintf(stderr, "bench_mpi_gpu: unknown --backend\n");
    } else {
        select_gpu(backend, rank);
        if (strcmp(what, "kmeans") == 0)
            rc = bench_kmeans(argc, argv, rank, size, backend);
        else if (strcmp(what, "hca") == 0)
            rc = bench_hca(argc, argv, rank, size, backend);
        else if (strcmp(what, "meanshift") == 0)
            rc = bench_meanshift(argc, argv, rank, size, backend);
        else if (rank == 0)
            fprintf(stderr, "usage: mpirun -np P bench_mpi_gpu kmeans|hca|meanshift [options] (see the source's "
                    "comment)\n");
    }
    MPI_Finalize();
    return rc;
}
