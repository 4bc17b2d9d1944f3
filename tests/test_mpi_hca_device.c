/* pc_mpi_hca_device (each rank's rows and labels in its GPU's memory) against pc_hca on all the rows in
 * one process, on the CPU: labels, dendrogram, components and cluster sizes identical, centres equal to
 * rounding; and against pc_mpi_hca on the same rows from the host (labels identical). uint8 pixels
 * (the default m) and float32 points, split evenly and unevenly (rank 1 with no rows from P = 2 on).
 * Refusals reach every rank: host rows, a CPU backend. Run under mpirun with P = 1..4
 * (tests/mpi_device_test.sh); every rank exits 77 (skipped) without a CUDA device. */
#include <mpi.h>
#include <cuda_runtime.h>
#include <string.h>

#include "check.h"
#include "parclust_mpi.h"
#include "test_util.h"

static int rank, size;

/* This rank's rows of n: even shares, or (uneven) rank 1 none and rank 0 its share too. */
static void share(size_t n, int uneven, size_t *first, size_t *count)
{
    size_t base = n / (size_t)size, extra = n % (size_t)size, r = (size_t)rank;
    *first = r * base + (r < extra ? r : extra);
    *count = base + (r < extra ? 1 : 0);
    if (uneven && size > 1) {
        size_t one = n / (size_t)size + (1 < extra ? 1 : 0);
        if (rank == 0)
            *count += one;
        else if (rank == 1)
            *first += *count, *count = 0;
    }
}

static uint8_t *pixels(size_t n, uint64_t seed)
{
    uint8_t *img = malloc(n * 4);
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int c = (int)((i / 4096 + (s >> 62)) % 5);
        for (int b = 0; b < 4; b++)
            img[i * 4 + b] = (uint8_t)(30 + 40 * c + 9 * b + ((s >> (8 * b + 20)) & 15));
    }
    return img;
}

static void compare(const char *what, const pc_result *ref, const pc_result *got, const int32_t *labels, size_t first,
                    size_t count, const float *centres, size_t dim)
{
    CHECK_MSG(got != NULL, "%s: no result", what);
    if (!got)
        return;
    size_t k = pc_result_cluster_count(ref), rows_r = 0, rows_g = 0, diff = 0;
    for (size_t i = 0; i < count; i++)
        diff += labels[i] != pc_result_labels(ref)[first + i];
    CHECK_MSG(diff == 0, "%s: rank %d: %zu of %zu labels differ", what, rank, diff, count);
    CHECK_MSG(pc_result_cluster_count(got) == k, "%s: k %zu vs %zu", what, pc_result_cluster_count(got), k);
    const double *zr = pc_result_dendrogram(ref, &rows_r), *zg = pc_result_dendrogram(got, &rows_g);
    CHECK_MSG(rows_r == rows_g && (rows_r == 0 || memcmp(zr, zg, rows_r * 4 * sizeof *zr) == 0),
              "%s: dendrograms differ", what);
    size_t comps = pc_result_component_count(ref);
    CHECK_MSG(pc_result_component_count(got) == comps &&
                  memcmp(pc_result_component_cells(ref), pc_result_component_cells(got), comps * 8) == 0 &&
                  memcmp(pc_result_component_sizes(ref), pc_result_component_sizes(got), comps * 8) == 0,
              "%s: components differ", what);
    if (pc_result_cluster_count(got) != k)
        return;
    CHECK_MSG(memcmp(pc_result_sizes(ref), pc_result_sizes(got), k * 8) == 0, "%s: sizes differ", what);
    const float *cr = pc_result_centers(ref);
    for (size_t q = 0; centres && q < k * dim; q++)
        CHECK_NEAR(centres[q], cr[q], 1e-5 * (1 + fabs(cr[q])));
}

static void one_case(const char *name, const pc_points *all, const pc_hca_params *base, int uneven)
{
    size_t elem = all->dtype == PC_U8 ? 1 : 4, row = all->dim * elem, first, count;
    share(all->n, uneven, &first, &count);
    pc_hca_params p = *base;
    p.backend = PC_BACKEND_OPENMP;
    pc_result *ref = NULL, *dev = NULL, *host = NULL;
    CHECK_STATUS(pc_hca(all, &p, &ref), PC_OK);
    void *d_rows = NULL;
    int32_t *d_labels = NULL, *labels = malloc((count + 1) * sizeof *labels), *host_labels = malloc((count + 1) * 4);
    CHECK(cudaMalloc(&d_rows, count * row + 1) == cudaSuccess &&
          cudaMalloc((void **)&d_labels, (count + 1) * sizeof *d_labels) == cudaSuccess &&
          cudaMemcpy(d_rows, (const unsigned char *)all->data + first * row, count * row, cudaMemcpyHostToDevice) ==
              cudaSuccess);
    pc_points mine = *all, on_gpu = *all;
    mine.data = (const unsigned char *)all->data + first * row;
    mine.n = count;
    on_gpu.data = d_rows;
    on_gpu.n = count;
    float *centres = NULL, *host_centres = NULL;
    p.backend = PC_BACKEND_CUDA;
    char what[96];
    snprintf(what, sizeof what, "%s, P=%d%s, rows in GPU memory", name, size, uneven ? " uneven" : "");
    pc_status st = pc_mpi_hca_device(MPI_COMM_WORLD, &on_gpu, &p, d_labels, &dev, &centres, NULL);
    CHECK_MSG(st == PC_OK, "%s: %s", what, pc_mpi_last_error());
    CHECK(cudaMemcpy(labels, d_labels, count * sizeof *labels, cudaMemcpyDeviceToHost) == cudaSuccess);
    if (ref && st == PC_OK)
        compare(what, ref, dev, labels, first, count, centres, all->dim);
    snprintf(what, sizeof what, "%s, P=%d%s, rows on the host", name, size, uneven ? " uneven" : "");
    CHECK_MSG(pc_mpi_hca(MPI_COMM_WORLD, &mine, &p, host_labels, &host, &host_centres) == PC_OK, "%s: %s", what,
              pc_mpi_last_error());
    CHECK_MSG(count == 0 || memcmp(labels, host_labels, count * sizeof *labels) == 0, "%s: labels differ from the "
              "device run's", what);
    if (ref && host)
        compare(what, ref, host, host_labels, first, count, host_centres, all->dim);
    pc_result_free(ref);
    pc_result_free(dev);
    pc_result_free(host);
    free(centres);
    free(host_centres);
    free(labels);
    free(host_labels);
    cudaFree(d_rows);
    cudaFree(d_labels);
}

/* Refused on every rank with the lowest failing rank's message. */
static void refusals(const pc_points *all)
{
    size_t first, count;
    share(all->n, 0, &first, &count);
    pc_points mine = *all;
    mine.data = (const unsigned char *)all->data + first * all->dim * 4;
    mine.n = count;
    int32_t *d_labels = NULL;
    CHECK(cudaMalloc((void **)&d_labels, (count + 1) * sizeof *d_labels) == cudaSuccess);
    pc_hca_params p;
    pc_hca_params_init(&p);
    pc_result *r = NULL;
    CHECK_STATUS(pc_mpi_hca_device(MPI_COMM_WORLD, &mine, &p, d_labels, &r, NULL, NULL), PC_INVALID_ARGUMENT);
    CHECK_MSG(strstr(pc_mpi_last_error(), "rank 0") && strstr(pc_mpi_last_error(), "not GPU memory"), "message: %s",
              pc_mpi_last_error());
    CHECK(r == NULL);
    p.backend = PC_BACKEND_OPENMP;
    CHECK_STATUS(pc_mpi_hca_device(MPI_COMM_WORLD, &mine, &p, d_labels, &r, NULL, NULL), PC_INVALID_ARGUMENT);
    CHECK_MSG(strstr(pc_mpi_last_error(), "CUDA backend") != NULL, "message: %s", pc_mpi_last_error());
    cudaFree(d_labels);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int devices = pc_cuda_device_count(), fewest = 0;
    MPI_Allreduce(&devices, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (fewest <= 0) {
        if (rank == 0)
            printf("test_mpi_hca_device: no CUDA device, skipped\n");
        MPI_Finalize();
        return 77;
    }
    MPI_Comm local;
    int local_rank = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);
    CHECK_STATUS(pc_cuda_select_device(local_rank % devices), PC_OK);
    unsigned long long seed = rank == 0 ? test_seed("test_mpi_hca_device") : 0;
    MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    size_t n_px = 300007, n_pts = 120011;
    uint8_t *img = pixels(n_px, seed);
    float *x = test_blobs(n_pts, 3, 5, 1.5, 12, seed + 5, NULL);
    pc_points px = pc_points_u8(img, n_px, 4), pts = pc_points_f32(x, n_pts, 3);
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.clusters = 5;
    for (int uneven = 0; uneven < 2; uneven++)
        one_case("uint8 pixels, default m", &px, &p, uneven);
    p.m = 24;
    p.clusters = 4;
    for (int uneven = 0; uneven < 2; uneven++)
        one_case("float32 points, m 24", &pts, &p, uneven);
    refusals(&pts);
    int failures = pc_test_failures, all_failures = 0, checks = pc_test_checks, all_checks = 0;
    MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&checks, &all_checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("test_mpi_hca_device: P=%d: %d checks, %d failed\n", size, all_checks, all_failures);
    free(img);
    free(x);
    MPI_Finalize();
    return all_failures ? 1 : 0;
}
