/* parclust: fast clustering of point sets and images on one core, all cores (OpenMP) and GPUs (CUDA).
 * This is the whole public API. Every call that can fail returns pc_status; the detail of the last
 * failure on the calling thread is in pc_last_error(). The library never prints, aborts or exits. */
#ifndef PARCLUST_H
#define PARCLUST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility; everything declared here is its exported surface. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define PC_VERSION_MAJOR 0
#define PC_VERSION_MINOR 1
#define PC_VERSION_PATCH 0
#define PC_VERSION_STRING "0.1.0"

/* ---------------------------------------------------------------- status codes */

/* One list gives the codes and their text (pc_status_string). */
#define PC_STATUS_LIST(X)                                                            \
    X(PC_OK, 0, "ok")                                                                \
    X(PC_INVALID_ARGUMENT, 1, "invalid argument")                                    \
    X(PC_OUT_OF_MEMORY, 2, "out of memory")                                          \
    X(PC_UNSUPPORTED, 3, "not supported by this build")                              \
    X(PC_NO_DEVICE, 4, "no CUDA device found")                                       \
    X(PC_DEVICE_OUT_OF_MEMORY, 5, "out of GPU memory")                               \
    X(PC_DEVICE_ERROR, 6, "GPU error")                                               \
    X(PC_CANCELLED, 7, "cancelled by the progress callback")                         \
    X(PC_IO_ERROR, 8, "input/output error")                                          \
    X(PC_INTERNAL_ERROR, 9, "internal error")

typedef enum {
#define PC__STATUS_ENUM(name, value, text) name = value,
    PC_STATUS_LIST(PC__STATUS_ENUM)
#undef PC__STATUS_ENUM
} pc_status;

/* Short fixed text of a status code ("invalid argument"). Never NULL. */
const char *pc_status_string(pc_status status);

/* Detail of the last failure on the calling thread ("bandwidth must be > 0, got -1"), or "" after
 * success. Valid until the next parclust call on the same thread. Never NULL. */
const char *pc_last_error(void);

/* ---------------------------------------------------------------- version and backends */

const char *pc_version(void);

typedef enum {
    PC_BACKEND_AUTO = 0,   /* CUDA when built, a device is present and the work is large; else OpenMP */
    PC_BACKEND_SEQUENTIAL, /* one thread; the reference every other backend is tested against */
    PC_BACKEND_OPENMP,     /* all cores (or `threads`) through OpenMP */
    PC_BACKEND_CUDA        /* an NVIDIA GPU */
} pc_backend;

const char *pc_backend_name(pc_backend backend); /* "auto", "seq", "openmp", "cuda" */
/* Parses "auto", "seq"/"sequential", "openmp"/"omp", "cuda"; PC_INVALID_ARGUMENT otherwise. */
pc_status pc_backend_parse(const char *name, pc_backend *out);
/* 1 when the backend was built and can run here (for CUDA: a device is present), else 0. AUTO: 1. */
int pc_backend_available(pc_backend backend);
/* Threads OpenMP would use by default (1 without OpenMP). */
int pc_openmp_max_threads(void);
/* The instruction set the CPU kernels with several paths run (mean shift's weights, HCA's cell index):
 * "avx512", "avx2" or "baseline". The best the processor has, chosen at the first call; the
 * environment variable PARCLUST_CPU_PATH = baseline | avx2 | avx512, read then, asks for a lower one
 * (a path the processor lacks falls back to the best it has). */
const char *pc_cpu_path(void);
/* Number of CUDA devices usable (0 without CUDA or without a device). */
int pc_cuda_device_count(void);
/* Writes "NAME, CC x.y, N MiB" for device `index` into buf. PC_NO_DEVICE if there is none. */
pc_status pc_cuda_device_describe(int index, char *buf, size_t size);
/* Device `index`'s (< 0: the current device's) memory free and in all (cudaMemGetInfo) and the shared
 * memory a block may use (opt-in); any pointer may be NULL.
 * PC_NO_DEVICE for an index out of range, PC_UNSUPPORTED without CUDA. */
pc_status pc_cuda_device_memory(int index, size_t *free_bytes, size_t *total_bytes, size_t *shared_per_block);
/* Makes device `index` (0 .. pc_cuda_device_count() - 1) the calling thread's current device: the GPU
 * that later runs, plans and streams of this thread use (they take the current device). For processes
 * sharing a host's GPUs, one each (parclust-mpi: local rank modulo the devices). PC_NO_DEVICE for an
 * index out of range, PC_UNSUPPORTED without CUDA. */
pc_status pc_cuda_select_device(int index);

typedef enum {
    PC_SCHEDULE_DYNAMIC = 0, /* default: points converge at different speeds */
    PC_SCHEDULE_STATIC,
    PC_SCHEDULE_GUIDED
} pc_schedule;

/* Called by long runs now and then with the fraction done in [0, 1]. Return non-zero to stop the
 * run, which then fails with PC_CANCELLED. Called from the thread that made the call. */
typedef int (*pc_progress_fn)(void *user, double fraction);

/* ---------------------------------------------------------------- points */

typedef enum { PC_F32 = 0, PC_F64, PC_U8, PC_U16 } pc_dtype;

/* A read-only view of n rows of dim values of one type; the data are never copied by the view.
 * stride is the distance between rows in bytes (0: packed rows, dim * element size). */
typedef struct {
    const void *data;
    size_t n;
    size_t dim;
    size_t stride;
    pc_dtype dtype;
} pc_points;

pc_points pc_points_f32(const float *data, size_t n, size_t dim);
pc_points pc_points_f64(const double *data, size_t n, size_t dim);
pc_points pc_points_u8(const uint8_t *data, size_t n, size_t dim);
pc_points pc_points_u16(const uint16_t *data, size_t n, size_t dim);

/* Checks the view: data present, n >= 1, dim >= 1, stride large enough, every value finite. */
pc_status pc_points_check(const pc_points *points);

/* ---------------------------------------------------------------- results */

/* One opaque result for every algorithm. Arrays returned by the getters belong to the result and live
 * until pc_result_free. A getter returns NULL / 0 for what the algorithm does not produce. */
typedef struct pc_result pc_result;

void pc_result_free(pc_result *result); /* NULL-safe */
size_t pc_result_n(const pc_result *result);            /* points clustered */
size_t pc_result_dim(const pc_result *result);          /* dimensions */
size_t pc_result_cluster_count(const pc_result *result); /* k */
/* N labels in [0, k) or -1 (no cluster). Clusters are numbered by size, largest first. */
const int32_t *pc_result_labels(const pc_result *result);
const float *pc_result_centers(const pc_result *result); /* k x dim, row-major */
const int64_t *pc_result_sizes(const pc_result *result); /* k point counts */
/* Mean shift: where each point converged, N x dim. */
const float *pc_result_modes(const pc_result *result);
/* HCA: the dendrogram over the components in SciPy's linkage format, (components - 1) rows of
 * (left, right, height, leaves under the new node), new nodes numbered components, components + 1, ... */
const double *pc_result_dendrogram(const pc_result *result, size_t *rows);
/* HCA: the components (leaves of the dendrogram): how many, and for each its representative cell's
 * linear index (last dimension fastest), its density (points in that cell) and its point count. */
size_t pc_result_component_count(const pc_result *result);
const int64_t *pc_result_component_cells(const pc_result *result);
const int64_t *pc_result_component_densities(const pc_result *result);
const int64_t *pc_result_component_sizes(const pc_result *result);
/* HCA: non-empty grid cells. */
size_t pc_result_cell_count(const pc_result *result);
/* k-means: the sum of squared distances of the points to their centres. */
double pc_result_inertia(const pc_result *result);
/* Iterations run (mean shift: the most any point took). */
int pc_result_iterations(const pc_result *result);
/* Per-stage wall-clock timings. */
size_t pc_result_stage_count(const pc_result *result);
pc_status pc_result_stage(const pc_result *result, size_t index, const char **name, double *seconds);
/* The backend that actually ran (AUTO resolved). */
pc_backend pc_result_backend(const pc_result *result);

/* ---------------------------------------------------------------- mean shift */

typedef enum {
    PC_KERNEL_GAUSSIAN = 0, /* K(r) = exp(-r^2 / (2 h^2)) */
    PC_KERNEL_FLAT,         /* K = 1 for r <= h (scikit-learn's MeanShift) */
    PC_KERNEL_EPANECHNIKOV  /* K = 1 - (r/h)^2 for r <= h */
} pc_kernel;

const char *pc_kernel_name(pc_kernel kernel);
pc_status pc_kernel_parse(const char *name, pc_kernel *out);

/* Which CUDA kernel computes the shifts (for benchmarking the seeds' designs against the default). */
typedef enum {
    PC_CUDA_KERNEL_FAST = 0, /* default: pre-scaled coordinates, exp2, several queries per thread,
                                16-byte shared-memory loads, references split across blocks */
    PC_CUDA_KERNEL_NAIVE,    /* seed 000/001: one thread per point, references from global memory */
    PC_CUDA_KERNEL_TILED     /* seed 000/001: references staged through shared memory, TILE_WIDTH =
                                the block size */
} pc_cuda_kernel;

const char *pc_cuda_kernel_name(pc_cuda_kernel kernel);
pc_status pc_cuda_kernel_parse(const char *name, pc_cuda_kernel *out);

typedef struct {
    pc_kernel kernel;    /* default PC_KERNEL_GAUSSIAN */
    double bandwidth;    /* h, in data units, > 0. Default 1 */
    /* Cut-off distance: only references within it count. 0 = the kernel's default (unbounded for
     * gaussian, h for flat and epanechnikov); INFINITY = unbounded. A finite radius lets the
     * neighbour grid replace the all-pairs sum. */
    double radius;
    /* A point stops once one shift moves it by <= eps. < 0 = default 1e-3 h; 0 = never stop early. */
    double eps;
    int max_iter;        /* default 300; >= 1 */
    /* Modes closer than this form one cluster. < 0 = default h / 2; 0 = only identical modes. */
    double merge_radius;
    int blurring;        /* 0 (default): references are the original data; 1: the data move too */
    /* 1 (default): use the neighbour grid when the radius is finite and it pays; 0: all pairs. */
    int use_grid;
    pc_backend backend;  /* default PC_BACKEND_AUTO */
    int threads;         /* OpenMP threads, 0 = OpenMP's default */
    pc_schedule schedule; /* OpenMP loop schedule, default dynamic */
    int chunk;           /* OpenMP chunk size, 0 = the runtime's default */
    pc_cuda_kernel cuda_kernel; /* default PC_CUDA_KERNEL_FAST */
    /* CUDA threads per block (the tiled kernel's TILE_WIDTH), 32..1024 in steps of 32 (the tiled
     * kernel also takes 16); 0 = the kernel's default. */
    int cuda_block;
    pc_progress_fn progress; /* optional */
    void *progress_user;
} pc_meanshift_params;

void pc_meanshift_params_init(pc_meanshift_params *params);

/* Clusters `points` by mean shift. On success *result holds labels, centres, sizes, modes and
 * iterations; on failure *result is NULL and pc_last_error() says why. */
pc_status pc_meanshift(const pc_points *points, const pc_meanshift_params *params, pc_result **result);

/* The climbs of points first .. first + count - 1 only, every point a reference: modes (count x dim
 * float32) receives their modes, those pc_meanshift's result gives these points (the sequential and
 * OpenMP backends bit for bit; CUDA's sums may differ in rounding), and iterations the most shifts
 * any of them took. So a run's climbs can be split over processes or GPUs that each hold all the
 * points (parclust_mpi.h: pc_mpi_meanshift with CUDA), their modes then merged together. Blurring
 * (every climb moves the references) is refused. */
pc_status pc_meanshift_climb(const pc_points *points, size_t first, size_t count, const pc_meanshift_params *params,
                             float *modes, int *iterations);
/* The clusters pc_meanshift makes of its modes, for modes climbed elsewhere (pc_meanshift_climb's, put
 * together): connected components of modes closer than merge_radius (>= 0; 0: identical modes only),
 * numbered by size, largest first, ties by their first mode; each centre the mean of its modes.
 * *result holds labels, centres and sizes (no modes). */
pc_status pc_meanshift_merge(const float *modes, size_t n, size_t dim, double merge_radius, pc_result **result);

/* ---------------------------------------------------------------- mean shift on images */

/* Mean shift segmentation of an image in the joint spatial-range domain (ALGORITHMS.md section 4),
 * as EDISON and OpenCV's pyrMeanShiftFiltering + flood fill do it, in three stages:
 * 1. filter: every valid pixel, as the point (row, col, band values), climbs to the mode of a flat
 *    kernel that is the disk (r - row)^2 + (c - col)^2 <= hs^2 in position times the ball
 *    |v - values| <= hr in band values (Euclidean over the bands): each shift moves the point to the
 *    mean position and mean values of the valid pixels inside both, until a shift moves it by <= eps
 *    in bandwidth units, sqrt((drow^2 + dcol^2) / hs^2 + |dv|^2 / hr^2), or after max_iter shifts.
 *    (Flat in both, as EDISON and OpenCV: a pixel's mode is the plain mean of similar neighbours.)
 * 2. fuse: 8-connected valid pixels (diagonal neighbours too) whose modes' band values are within hr
 *    of each other join one region (connected components; the result does not depend on the order
 *    of the pixels or threads). The modes' positions take no part: connectivity already keeps regions
 *    spatially coherent.
 * 3. prune: while some region has fewer than min_region_size pixels and a neighbour (8-connected), each
 *    such region joins, all at once per round, the neighbouring region whose mean band values (over its
 *    original pixels) are closest (ties: the region whose first pixel in raster order comes first).
 *    A small region with no valid neighbour stays.
 * The sequential and OpenMP backends give identical results; there is no CUDA path (PC_UNSUPPORTED);
 * AUTO runs OpenMP. Cost: O(valid pixels x pi hs^2 x shifts) for the filter, O(pixels) for the rest. */
typedef struct {
    double spatial_bandwidth; /* hs, in pixels, finite and > 0 (need not be whole). Default 8 */
    double range_bandwidth;   /* hr, in band units (0..255 for 8-bit), finite and > 0. Default 16 */
    /* Regions smaller than this many pixels join their closest neighbour. Default 20; 0 or 1 = off */
    int64_t min_region_size;
    /* A pixel stops once a shift moves it by <= eps, in bandwidths (see 1.), finite and >= 0; 0 = only
     * when it stops moving at all. Default 0.01 */
    double eps;
    int max_iter;             /* shifts per pixel at most, >= 1. Default 20 */
    pc_backend backend;       /* PC_BACKEND_AUTO (default), _SEQUENTIAL or _OPENMP; _CUDA: PC_UNSUPPORTED */
    int threads;              /* OpenMP threads, 0 = OpenMP's default */
    /* optional; called from the calling thread with the fraction of pixels filtered; non-zero stops
     * the run with PC_CANCELLED */
    pc_progress_fn progress;
    void *progress_user;
} pc_meanshift_image_params;

void pc_meanshift_image_params_init(pc_meanshift_image_params *params);

/* Segments a width x height image whose pixels are the rows of `pixels` (pixel (row y, col x) is row
 * y * width + x, one value per band, any element type; width x height must equal pixels->n, at most
 * INT32_MAX). valid: NULL (every pixel valid), or width x height bytes where 0 marks a nodata pixel:
 * it gets label -1 and a NaN mode, and is neither in any window nor anyone's neighbour, so what it
 * holds (NaN included) changes nothing. Valid pixels must hold finite values (in float range).
 * An image with no valid pixel is an error. The result has:
 *   labels   n region numbers in [0, k), numbered by size, largest first (ties: first pixel first), or -1;
 *   k, sizes regions and their pixel counts; centres: each region's mean original band values (k x bands);
 *   modes    n x bands: each pixel's filtered band values (its mode), NaN for nodata; positions are
 *            not reported;
 *   iterations  the most shifts any pixel took;
 *   stages   "prepare" (copy and checks), "filter", "fuse", "prune", in seconds. */
pc_status pc_meanshift_image(const pc_points *pixels, size_t width, size_t height, const uint8_t *valid,
                             const pc_meanshift_image_params *params, pc_result **result);

/* ---------------------------------------------------------------- mean shift on images, by rows */

/* pc_meanshift_image on an image read row window by row window (a raster larger than memory), in
 * bounded memory. On an image that also fits in memory the labels, k, sizes, centres and iterations
 * are pc_meanshift_image's, bit for bit, whatever the strips' height and halos, on either backend
 * (the same float operations in the same order on the same pixels; src/meanshift/image_rows.c says
 * why). The image may have more than 2^31 pixels (regions: fewer). The caller supplies the I/O:
 *   read   rows row0 .. row0 + rows - 1: rows x width pixels of `bands` values of `dtype`, pixel
 *          interleaved, row-major (as pc_points), into `pixels`; `valid` (rows x width bytes, all 1
 *          on entry) may be set to 0 for nodata pixels, whose values are then ignored. Called for
 *          each pass over the image, in increasing rows within a pass, never from two threads at once,
 *          and must give the same rows every time;
 *   regions  optional: k, the regions' sizes and centres, once, before the first write;
 *   write  the final labels of rows row0 .. row0 + rows - 1 (as pc_meanshift_image's labels), once
 *          per row, in increasing rows, in the last pass;
 *   scratch_write, scratch_read: optional, both or neither: storage for width x height int32 values
 *          that the library writes once (strip by strip, in increasing rows) and reads back (the
 *          regions' numbers within their strip, 4 bytes a pixel). Without them the library keeps
 *          them in a temporary file in scratch_dir (NULL: $TMPDIR, else /tmp; removed at once, so
 *          nothing is left behind; mind that a tmpfs /tmp is memory).
 * A callback's status other than PC_OK stops the run, which returns that status.
 *
 * How it runs: strips of strip_rows rows are filtered with halo_rows rows more either side held in
 * memory. A pixel's window moves with its climb, by up to hs a shift, so a window may reach beyond
 * any halo: such a climb stops before that window and is taken up later, from the same state, where
 * the rows it needs are held (later in the same sweep down the image, or in another sweep over the
 * strips that have some), so every pixel climbs exactly as in memory. Strips are fused as they are
 * filtered, and across each seam; fused regions, their sizes, sums and neighbours (the region graph)
 * are kept, not the pixels; pruning and numbering run on that graph; the last pass writes the labels.
 * Passes over the image: float32/float64 pixels 3 (the largest magnitude, which fixes the scaling as
 * in pc_meanshift_image; filtering; the regions' sums in raster order), uint8/uint16 1 (sums of
 * integers are exact in any order), each plus the (usually few) strips of further sweeps; the scratch
 * labels are read once more per pass after filtering, and the labels written once.
 *
 * Memory: the strips' buffers take at most half of memory_limit (report.buffer_bytes: the rows held,
 * 4 x bands + 1 bytes a pixel, and the strip's raw rows, modes and regions, about 14 + 5 x bands
 * more); the rest is meant for the region graph, which memory_limit does not bound: while filtering
 * 16 bytes per region of each strip (a region crossing s strips counts s times; + 8 x bands for
 * uint8/uint16 pixels, whose sums are kept), 16 per pair of touching regions one of which is smaller
 * than min_region_size within its strip, 48 + 4 x bands per climb that left its strip's rows, and
 * 32 + 8 x bands per fusion test that waits for one; while pruning about 80 + 16 x bands per fused
 * region, 8 per region of a strip and 32 per pair of touching regions. An image of tiny regions
 * (noise), or strips of very few rows, may need more than memory_limit; report.graph_bytes says what
 * the graph took at most. pc_meanshift_image itself takes about 25 + 8 x bands bytes a pixel beyond
 * the pixels (float planes, modes, labels, union-find): what a caller weighs to choose between them. */
typedef pc_status (*pc_rows_read_fn)(void *user, size_t row0, size_t rows, void *pixels, uint8_t *valid);
typedef pc_status (*pc_labels_write_fn)(void *user, size_t row0, size_t rows, const int32_t *labels);
typedef pc_status (*pc_labels_read_fn)(void *user, size_t row0, size_t rows, int32_t *labels);
/* The regions found (k, their sizes and centres, as the result will hold them), before the first
 * label is written: e.g. to create the label file in the smallest type that holds k. */
typedef pc_status (*pc_regions_fn)(void *user, size_t k, const int64_t *sizes, const float *centres);

typedef struct {
    pc_rows_read_fn read;              /* required */
    pc_labels_write_fn write;          /* required */
    pc_labels_write_fn scratch_write;  /* optional (with scratch_read) */
    pc_labels_read_fn scratch_read;
    pc_regions_fn regions;             /* optional */
    void *user;                        /* passed to every callback */
    const char *scratch_dir;           /* without scratch callbacks: where the temporary file goes */
    /* Bytes the run may take (strips and region graph; not the caller's buffers). 0 = no limit: one
     * strip, the whole image. Too small for one row and its halos: PC_INVALID_ARGUMENT */
    size_t memory_limit;
    size_t strip_rows; /* rows filtered per strip; 0 = as many as memory_limit allows */
    /* Rows held either side of a strip; 0 = the default, twice the window's reach (hs rounded, or the
     * image's height + width when hs is larger), or the reach where that does not fit memory_limit.
     * At least the reach (smaller: PC_INVALID_ARGUMENT). */
    size_t halo_rows;
} pc_image_rows;

void pc_image_rows_init(pc_image_rows *io); /* zeroes: no callbacks, no limit */

/* What a run did (or, from pc_meanshift_image_rows_plan, will do as far as known in advance). */
typedef struct {
    size_t strip_rows, halo_rows, strips;
    size_t buffer_bytes;    /* the strips' buffers */
    int image_passes;       /* passes over the whole image (rows read in each: every row once) */
    int sweeps;             /* filtering sweeps: 1, plus those that took up climbs that left their rows */
    size_t rows_read;       /* rows read in all, halos and further sweeps included */
    size_t climbs_resumed;  /* pixels whose climb left its strip's rows and was taken up later */
    size_t strip_regions;   /* regions of the strips (before joining across seams) */
    size_t regions;         /* fused regions, before pruning */
    size_t adjacencies;     /* pairs of touching regions kept for pruning */
    size_t graph_bytes;     /* the most the region graph (and stopped climbs) took */
    uint64_t scratch_bytes; /* written to scratch storage */
} pc_image_rows_report;

/* Segments a width x height image of `bands` values of `dtype` per pixel, read through io, with
 * params as pc_meanshift_image (params->progress: the fraction of the first sweep's rows filtered).
 * The result has k, sizes, centres, iterations and stages ("scan" for float pixels, "read", "filter",
 * "fuse", "scratch", "sums" for float pixels, "prune", "write"; seconds), but no labels (they go to
 * io->write) and no modes. report: NULL, or what the run did (also, as far as it got, on failure). */
pc_status pc_meanshift_image_rows(size_t width, size_t height, size_t bands, pc_dtype dtype, const pc_image_rows *io,
                                  const pc_meanshift_image_params *params, pc_result **result,
                                  pc_image_rows_report *report);

/* The strips a run with these arguments would use (report's strip_rows, halo_rows, strips,
 * buffer_bytes and image_passes), without reading anything; PC_INVALID_ARGUMENT as the run would
 * (memory_limit too small, ...). io's callbacks are not needed. */
pc_status pc_meanshift_image_rows_plan(size_t width, size_t height, size_t bands, pc_dtype dtype,
                                       const pc_image_rows *io, const pc_meanshift_image_params *params,
                                       pc_image_rows_report *report);

/* ---------------------------------------------------------------- k-means */

typedef enum {
    PC_INIT_KMEANSPP = 0,    /* default: greedy k-means++ with 2 + ln k trials a step (as scikit-learn) */
    PC_INIT_RANDOM,          /* k distinct data points (seed 002) */
    PC_INIT_KMEANS_PARALLEL, /* k-means|| (Bahmani et al.): 5 rounds oversampling 2k, then k-means++ */
    PC_INIT_GIVEN            /* initial_centers */
} pc_kmeans_init;

const char *pc_kmeans_init_name(pc_kmeans_init init); /* "kmeans++", "random", "kmeans-par", "given" */

/* How the CUDA backend runs an iteration (for comparing the seed's design with the default). */
typedef enum {
    PC_KMEANS_CUDA_FAST = 0, /* default: assignment and (fixed-point) accumulation fused in one pass
                                while k x (dim + 1) <= 4096; else the tensor assignment (8 <= dim <= 64)
                                or the seed's assignment, then float sums by groups of lanes */
    PC_KMEANS_CUDA_SEED,     /* seed 002: an assignment kernel, then per-block per-cluster sums, then a
                                final sum */
    PC_KMEANS_CUDA_GEMM,     /* register-tiled distances (points x centres tiles, exact FP32), then sums */
    PC_KMEANS_CUDA_DIRECT,   /* a point per thread against every centre, then sums in a second pass */
    PC_KMEANS_CUDA_TENSOR    /* (the CLI's names follow this order: fast, seed, gemm, direct, tensor)
                                a screen on the tensor cores (split BF16 products, a rigorous error
                                bound) settles most points, the rest are scanned in FP32: the direct
                                kernel's labels bit for bit; fixed-point sums. dim <= 64 (else direct) */
} pc_kmeans_cuda_variant;
pc_status pc_kmeans_init_parse(const char *name, pc_kmeans_init *out);

/* How the iterations find each point's nearest centre. On the CPU every choice gives the same labels,
 * centres, iterations and inertia (Lloyd's, bit for bit): the bounds only skip work they prove
 * unneeded. On CUDA the bounds give those of Lloyd with fixed-point sums (the DIRECT and TENSOR
 * variants); FAST's Lloyd sums in float from k x (dim + 1) > 4096, and there the two differ. */
typedef enum {
    PC_KMEANS_AUTO = 0, /* default: Hamerly where it wins (k >= 8; on CUDA with the FAST variant, the
                           others being Lloyd's kernels asked for by name), else Lloyd */
    PC_KMEANS_LLOYD,    /* every point against every centre, every iteration */
    PC_KMEANS_HAMERLY   /* Hamerly's bounds: a point is scanned only when its bounds no longer prove
                           its centre nearest with a margin above the float32 rounding of Lloyd's
                           distances. On CUDA: the labels, centres and iterations of the chosen
                           variant with fixed-point sums (the float sums of FAST at large k x dim vary
                           from run to run); Lloyd's kernels where k x (dim + 1) sums or the centres
                           do not fit a block's shared memory (pc_result_kmeans_algorithm says) */
} pc_kmeans_algorithm;
const char *pc_kmeans_algorithm_name(pc_kmeans_algorithm algorithm); /* "auto", "lloyd", "hamerly" */
pc_status pc_kmeans_algorithm_parse(const char *name, pc_kmeans_algorithm *out);

typedef struct {
    size_t k;                     /* clusters, 1 <= k <= n. No default (0 is an error) */
    pc_kmeans_init init;          /* default PC_INIT_KMEANSPP */
    const float *initial_centers; /* k x dim, with PC_INIT_GIVEN */
    int n_init;                   /* runs from different seeds; the lowest inertia wins. Default 1 */
    int max_iter;                 /* default 300 */
    /* Stop when the centres' total squared movement is <= tol x the mean variance of the features
     * (scikit-learn's rule), or when no label changed. Default 1e-4; 0 = only the latter. */
    double tol;
    uint64_t seed;                /* the same seed gives the same initial centres on every backend. Default 0 */
    pc_backend backend;           /* default PC_BACKEND_AUTO */
    int threads;                  /* OpenMP threads, 0 = OpenMP's default */
    pc_kmeans_cuda_variant cuda_variant; /* default PC_KMEANS_CUDA_FAST */
    pc_progress_fn progress;      /* optional, called after each iteration */
    void *progress_user;
    pc_kmeans_algorithm algorithm; /* default PC_KMEANS_AUTO */
} pc_kmeans_params;

void pc_kmeans_params_init(pc_kmeans_params *params);

/* Lloyd's k-means. The result has labels, centres (cluster c is centre c, in the order the
 * initialisation chose), sizes, iterations and inertia. */
pc_status pc_kmeans(const pc_points *points, const pc_kmeans_params *params, pc_result **result);
/* k-means: the point-to-centre distances the iterations evaluated (Lloyd: n k an iteration; Hamerly:
 * those of the points scanned, the bounds tightened, and the centre-to-centre ones); 0 for others. */
double pc_result_distance_evaluations(const pc_result *result);
/* k-means: the algorithm that ran (PC_KMEANS_AUTO resolved). */
pc_kmeans_algorithm pc_result_kmeans_algorithm(const pc_result *result);

/* ---------------------------------------------------------------- HCA */

/* HCA, the grid-based hierarchical clustering of ALGORITHMS.md section 3: a grid of m cells per
 * dimension over the bounding box, each non-empty cell linked to its densest neighbour, components
 * = cells reaching the same local maximum, single linkage between adjacent components. */
typedef struct {
    int m;                /* cells per dimension, >= 2; 0 = pc_hca_auto_m(n, dim) (pc_hca and plans, where n
                             is the plan's; the stream needs m >= 2). Default 32 */
    size_t clusters;      /* cut the dendrogram to this many clusters (>= 1); 0 = cut at threshold */
    double threshold;     /* with clusters == 0: merges at heights <= threshold, in [0, 1]. Default 0.5 */
    /* Clusters smaller than this many points do not count as clusters: their cells join the nearest
     * kept cluster (by its mean), or become noise (-1) with `noise`. < 0 = default: 0.1% of the
     * points, at least 2; 0 = off. */
    int64_t min_cluster_size;
    int noise;            /* 1: points of too-small clusters get label -1. Default 0 */
    size_t memory_budget; /* bytes the dense grid arrays may take (m^d cells); beyond, only the
                             non-empty cells are stored. Default 512 MiB */
    pc_backend backend;   /* default PC_BACKEND_AUTO: CUDA when a device is present and n >= 2^20 */
    int threads;          /* OpenMP threads, 0 = OpenMP's default */
    /* CUDA: bytes of GPU memory the backend sizes its grid, cell arrays and pieces of points to;
     * 0 (default) = what is free, less 512 MiB left for edges and sort scratch. Host inputs larger
     * than that are streamed through the GPU in pieces. */
    size_t device_memory;
    /* HCA-MS (ALGORITHMS.md section 3b), after the cut: points of border cells (cells with a non-empty
     * neighbour of another cluster) climb the density of the non-empty cells' means, weighted by their
     * points, by Gaussian mean shift cut off at 3 h, and take the cluster of the cell they reach (of the
     * nearest non-empty cell's mean where that cell is empty). The result says how many points were
     * border points and how many changed cluster (pc_result_border_points). */
    int refine_borders;      /* 1: refine. Default 0 (plain HCA) */
    double refine_bandwidth; /* h in data units; < 0 (default) = one cell width (the largest side) of the
                                finer of the grid and pc_hca_auto_m's (docs/heca.md); 0 = no move */
    double refine_eps;       /* a climb stops once a shift is below this; < 0 (default) = 1e-3 h */
    int refine_max_iter;     /* shifts per point at most, >= 1. Default 100. The refinement runs on the plan's
                                backend: on the GPU, labels identical to the CPU's (docs/heca.md) */
    /* Optional: called from the calling thread with the fraction done, between the stages (grid,
     * components, dendrogram, cut, refinement, labelling; the CUDA backend from the host between its
     * stages) and within the CPU's passes over the points every 2^16 points or so; non-zero stops the
     * run with PC_CANCELLED and no result. pc_heca calls it too; pc_hca_stream does not. */
    pc_progress_fn progress;
    void *progress_user;
} pc_hca_params;

void pc_hca_params_init(pc_hca_params *params);

/* Clusters points of 1 to 8 dimensions (float32, float64, uint8 or uint16 rows, read in place). The
 * result has labels, cluster centres and sizes (clusters numbered by size, largest first), the
 * dendrogram, the components and per-stage timings. */
pc_status pc_hca(const pc_points *points, const pc_hca_params *params, pc_result **result);

/* A plan for a stream of inputs of one shape (video frames, tiles of one size): the backend is chosen
 * once and, on the GPU, device buffers are kept from one run to the next instead of being allocated
 * every time. Plans are not shared between threads; results are independent of the plan. */
typedef struct pc_hca_plan pc_hca_plan;

/* n, dim and dtype: the shape of the inputs to come (runs have this dim and dtype and at most n
 * rows). The params are copied. With the CUDA backend the grid and the buffers for the points are
 * allocated here (a card too small even for the grid and a piece of 4,096 rows: PC_DEVICE_OUT_OF_MEMORY;
 * with AUTO, the CPU is taken instead, and pc_last_error() says why after the call); host inputs larger
 * than the card go through it in pieces.
 * Buffers for cells, components and edges grow during runs as needed and are kept. The plan's GPU
 * is the current device at creation; its stream waits for work on the legacy default stream. */
pc_status pc_hca_plan_create(const pc_hca_params *params, size_t n, size_t dim, pc_dtype dtype,
                             pc_hca_plan **plan);
void pc_hca_plan_free(pc_hca_plan *plan); /* NULL-safe */
pc_backend pc_hca_plan_backend(const pc_hca_plan *plan); /* the backend AUTO resolved to */
/* Clusters points on the host, as pc_hca does. */
pc_status pc_hca_plan_run(pc_hca_plan *plan, const pc_points *points, pc_result **result);
/* The same, with the labels written to `labels` (n bytes of host memory; 255: no cluster) instead of
 * into the result, which then has none (pc_result_labels gives NULL). On the GPU a quarter of the
 * int32 labels' bytes cross the bus and none are widened, the labels' form a uint8 raster or .npy
 * takes anyway. On the CPU, packed 3- or 4-band uint8 pixels (AVX-512 with VBMI, m <= 127, m^bands
 * int32 within memory_budget, no border refinement) go straight to bytes, without int32 labels in
 * between (the result's stage "label to bytes"). 255 clusters or more do not fit: PC_UNSUPPORTED, and
 * no result. Whatever fails or is cancelled leaves the buffer's contents unspecified. */
pc_status pc_hca_plan_run_u8(pc_hca_plan *plan, const pc_points *points, uint8_t *labels, pc_result **result);
/* CUDA plans only: points->data is device memory (cudaMalloc'd or managed), aligned to its element
 * size, filled before the call (on the legacy default stream, or synchronised). device_labels: n int32
 * in device memory receiving the labels (the result then has no host labels), or NULL to have the
 * labels copied into the result. Values are checked on the device (non-finite ones are refused). */
pc_status pc_hca_plan_run_device(pc_hca_plan *plan, const pc_points *points, int32_t *device_labels,
                                 pc_result **result);

/* ---------------------------------------------------------------- HCA's grid rule, HECA, HCA-MS */

/* m for n points of dim values when the user gives none (`-m auto`): the largest m up to 32 with
 * n / m^dim >= 4 points per cell of the box, at least 4 (docs/heca.md argues the rule). Images of
 * millions of pixels in 3 or 4 bands get 32, the paper's value. */
int pc_hca_auto_m(uint64_t n, size_t dim);
/* The m a run of HCA used (the auto rule's where the params asked for it); HECA: the reference grid's. */
int pc_result_grid_m(const pc_result *result);
/* HCA-MS: the points of border cells and how many of them changed cluster (0 without refinement). */
int64_t pc_result_border_points(const pc_result *result);
int64_t pc_result_changed_points(const pc_result *result);

/* HECA (ALGORITHMS.md section 3a): an ensemble of HCA grids. Each member clusters the points with its
 * own m (and, with shifts, its grid's origin moved by half a cell) over the box of all the points;
 * prototypes are the non-empty cells of the reference grid with their means; adjacent prototypes are
 * at the mean over the members of the height at which the members' components holding them join;
 * single linkage over that graph gives the dendrogram, cut as HCA's (clusters or threshold, minimum
 * cluster size). The dendrogram's leaves are the groups of prototypes that every member puts in one
 * component (joined at height 0: the prototype dendrogram with its zero-height merges collapsed); they
 * are the result's components (representative: the group's densest cell of the reference grid). With
 * one member and no shift the result is pc_hca's (labels, dendrogram, components). Packed uint8 rows
 * of 1 or 2 bands are counted once by value, the members' histograms taken from the values' counts. */
#define PC_HECA_MAX_MEMBERS 16
typedef struct {
    int m[PC_HECA_MAX_MEMBERS]; /* the members' cells per dimension (each 2 to 65536) */
    size_t members;      /* 1 to PC_HECA_MAX_MEMBERS; 0 (default) = 5 members, m_max * 2^(-i/4) for i = 4..0
                            rounded (16, 19, 23, 27, 32 for m_max = 32), m_max = pc_hca_auto_m(n, dim) */
    int shifts;          /* 1: members 1, 3, ... have their grid origin shifted by half a cell (m + 1 cells
                            of the same width over the box widened by half a cell). Default 0 */
    int reference;       /* the member whose grid gives the prototypes; < 0 (default) = the finest
                            (largest m, the first of equals) */
    /* The cut (clusters, threshold, min_cluster_size, noise), memory_budget, backend, threads and
     * device_memory as for HCA; m and the refine fields are not used. */
    pc_hca_params hca;
} pc_heca_params;

void pc_heca_params_init(pc_heca_params *params);
/* The result: labels, centres, sizes (numbered by size), the dendrogram and components over the
 * prototype groups, the cell count of the reference grid, the members (pc_result_member_count, _m and
 * _components) and per-stage timings. Backends: sequential, OpenMP, and CUDA: host points, each member
 * counted into its grid on the GPU (the HCA stream's device state), the reference member's device state
 * labelling every point with its cell and summing the cells; the cells' work (links, components,
 * dendrograms, the averaging, the cut) on the host's cores. The same labels and dendrogram as the CPU's
 * (tested for uint8 pixels and float32 points). AUTO: CUDA from 2^20 points where a device is present
 * (the CPU where the device is busy or full). */
pc_status pc_heca(const pc_points *points, const pc_heca_params *params, pc_result **result);
/* HECA on points already in GPU memory (CUDA builds; else PC_UNSUPPORTED): points->data is device memory
 * of the current GPU, aligned to its element size, filled before the call (on the legacy default stream,
 * or synchronised), read in place and never changed; its values are checked there (a non-finite one is
 * refused). The box, the members' counts, the prototypes' sums and the labels are passes on the GPU, and
 * so are the cells' work of the members of many cells (HCA's stages 2-5 by the plan's own passes) and
 * section 3a's steps over the prototypes (their components, averaged distances, groups); the host's
 * cores run the stages of the members of few cells, the dendrograms and the cut. For integer rows the labels,
 * dendrogram and components are pc_heca's on the same points; for floats the prototypes' means are summed
 * in fixed point (2^30 steps across the box), as pc_heca's CUDA backend does. device_labels: n int32 of
 * device memory that receive the labels (the result then has none), or NULL to have them in the result.
 * params->hca.backend: AUTO or CUDA. Each member's grid is a dense m^dim array within memory_budget
 * (images of up to 5 bands at the default members): a member beyond that is PC_UNSUPPORTED. Besides the
 * caller's rows the GPU holds every member's m^dim int32 counters at once (device_memory is not used).
 * Host pointers, misaligned ones and a stride shorter than a row are refused before any kernel reads
 * them. Whatever fails or is cancelled leaves device_labels' contents unspecified. */
pc_status pc_heca_device(const pc_points *points, const pc_heca_params *params, int32_t *device_labels,
                         pc_result **result);
/* A plan for HECA on points in GPU memory, run after run on inputs of one shape (frames, tiles): the GPU
 * state (its streams, the members' counters, cells, components and edges, the prototypes' pairs) is
 * kept from one run to the next instead of being made every time, as pc_hca_plan keeps HCA's: the first
 * run allocates its buffers, later runs reuse them (they grow, with a quarter to spare, where an input
 * needs more). n, dim and dtype: the inputs to come (this dim and dtype, at most n rows; n sizes
 * nothing in advance); the params are copied (hca.backend AUTO or CUDA; hca.threads, or the OpenMP
 * default, is also how many members find their cells at once, each on a stream of its own, up to 8).
 * CUDA builds only (else PC_UNSUPPORTED); the plan's GPU is the current device at creation. Plans are
 * not shared between threads. A run takes what pc_heca_device takes and gives its result. */
typedef struct pc_heca_plan pc_heca_plan;
pc_status pc_heca_plan_create(const pc_heca_params *params, size_t n, size_t dim, pc_dtype dtype,
                              pc_heca_plan **plan);
void pc_heca_plan_free(pc_heca_plan *plan); /* NULL-safe */
pc_status pc_heca_plan_run_device(pc_heca_plan *plan, const pc_points *points, int32_t *device_labels,
                                  pc_result **result);
size_t pc_result_member_count(const pc_result *result);
int pc_result_member_m(const pc_result *result, size_t member);
size_t pc_result_member_components(const pc_result *result, size_t member);

/* ---------------------------------------------------------------- HCA, streamed */

/* HCA over points that arrive in blocks (tiles or row windows of a raster larger than memory, or the
 * parts held by several processes): the blocks are counted into a grid histogram, the clustering is
 * computed from the histogram alone, and blocks are then labelled from the cell-to-cluster map.
 * Given the same bounding box, the result is the one pc_hca gives on all the points at once, whatever
 * the blocks' number, sizes and order. The state's parts are plain arrays (a box, a histogram of
 * non-empty cells) that two streams, in one process or sent between machines, merge by addition.
 *
 * The order of calls:
 *   1. the box: pc_hca_stream_set_box (e.g. from the pixel type's range or the bands' statistics), or
 *      pc_hca_stream_bound over every block (a first pass; pc_hca finds it this way);
 *   2. pc_hca_stream_add over every block (the first call fixes the box);
 *   3. pc_hca_stream_finish, once: a result with the dendrogram, components, cluster count and sizes,
 *      cell count and timings, but no labels and no centres;
 *   4. pc_hca_stream_label over any blocks, from any threads at once (it does not change the stream).
 * Totals may exceed pc_hca's limit of 2^31 - 1 points; labels and counts are per block. The memory
 * taken is the histogram's: m^dim int64 counts when that fits params->memory_budget, else 16 bytes
 * per non-empty cell (and, from a read of the histogram to the next add, its list of non-empty cells,
 * 16 bytes each); blocks are read in place and never kept (but a held block's copy on the GPU,
 * pc_hca_stream_hold). The backend runs the box, the counting
 * and the labelling of each block: sequential, OpenMP, or CUDA. With CUDA a block goes to the GPU (in
 * pieces when it exceeds params->device_memory) and is counted there in int32 counts that are added to
 * the host's histogram before they could overflow and whenever it is read (pc_hca_stream_histogram,
 * merge, finish), so that histograms stay plain host arrays; the GPU holds its counts, a buffer for
 * pieces and, from the first label call on, the cell-to-cluster map. AUTO sends blocks of 2^20 rows or
 * more to the GPU where a device is present (pc_hca's rule, per block), smaller ones to OpenMP. The
 * finish reads the histogram on the host; where the stream has a GPU, its component graph (links,
 * components, the spanning forest of the touching components) is made there from the histogram's
 * cells when they are many, with pc_hca's kernels (a cell of more than 2^31 - 1 points keeps it on the
 * CPU), and the dendrogram and cut follow on the CPU. Results are the same either way. */
typedef struct pc_hca_stream pc_hca_stream;

/* dim: values per point (1 to 8), every block's; dtype may differ from block to block. */
pc_status pc_hca_stream_create(const pc_hca_params *params, size_t dim, pc_hca_stream **stream);
void pc_hca_stream_free(pc_hca_stream *stream); /* NULL-safe */
/* lo[dim], hi[dim]: the box; values outside it fall into the border cells, as they would in pc_hca. */
pc_status pc_hca_stream_set_box(pc_hca_stream *stream, const double *lo, const double *hi);
/* Widens the box to the block's values (checking them: all finite). Before the first add only. */
pc_status pc_hca_stream_bound(pc_hca_stream *stream, const pc_points *block);
/* The box so far (after bound or set_box). PC_INVALID_ARGUMENT while there is none. */
pc_status pc_hca_stream_box(const pc_hca_stream *stream, double *lo, double *hi);
/* Counts the block's points into the histogram (checking them: all finite). */
pc_status pc_hca_stream_add(pc_hca_stream *stream, const pc_points *block);
/* The histogram as plain arrays: *cells non-empty cells, their linear indices (last dimension fastest,
 * increasing) and point counts. keys and counts NULL: only *cells is set; else they have room for
 * *cells entries (as the call with NULL gave). */
pc_status pc_hca_stream_histogram(const pc_hca_stream *stream, size_t *cells, uint64_t *keys, int64_t *counts);
/* Adds a histogram (from pc_hca_stream_histogram of a stream with the same params, dim and box). */
pc_status pc_hca_stream_add_histogram(pc_hca_stream *stream, size_t cells, const uint64_t *keys,
                                      const int64_t *counts);
/* into += from: before adds, the boxes are joined; after, the histograms are added (the boxes must
 * then be equal). */
pc_status pc_hca_stream_merge(pc_hca_stream *into, const pc_hca_stream *from);
/* Components, dendrogram and cut from the histogram. Once; no adds after it. */
pc_status pc_hca_stream_finish(pc_hca_stream *stream, pc_result **result);
/* After finish: labels[block->n] receive each point's cluster (or -1, as pc_hca). sums: NULL, or
 * k x (dim + 1) doubles to which each labelled point's values and a count of 1 are added (the
 * caller zeroes them once; sums of several blocks, threads or machines add up to the clusters'
 * centres: sum / count). Thread-safe: the stream is only read (labelling on the GPU is serialised by a
 * mutex: threads take turns on the device). */
pc_status pc_hca_stream_label(const pc_hca_stream *stream, const pc_points *block, int32_t *labels, double *sums);
/* A held block: for a caller that bounds, adds and labels the same points (a process's share of a
 * distributed run). Where the stream runs the block on the GPU (CUDA; AUTO's large blocks, but not
 * after a finish that ran on the CPU), its rows are copied to the GPU's memory once, here, and its
 * float values checked once (a non-finite one is refused, nothing kept); the calls below then read
 * that copy, and cross the bus only with the labels. Elsewhere, where the card cannot hold the rows
 * beside the stream's buffers, or where they exceed params->device_memory (when set), the held block
 * is the caller's view, read as the plain calls read a block; so too from the first label call on if
 * the cell-to-cluster map needs the copy's room. One block at most; its memory must stay valid and
 * unchanged until the stream is freed. */
pc_status pc_hca_stream_hold(pc_hca_stream *stream, const pc_points *block);
/* pc_hca_stream_bound, _add and _label of the held block. */
pc_status pc_hca_stream_bound_held(pc_hca_stream *stream);
pc_status pc_hca_stream_add_held(pc_hca_stream *stream);
pc_status pc_hca_stream_label_held(const pc_hca_stream *stream, int32_t *labels, double *sums);
/* A held block already in GPU memory (CUDA streams only; else PC_INVALID_ARGUMENT): block->data is
 * device memory of the stream's GPU (the current device at pc_hca_stream_create), aligned to its
 * element size, filled before the call (on the legacy default stream, or synchronised), read in place
 * and never changed: no copy is made. Host pointers, another GPU's memory, misaligned rows and a stride
 * shorter than a row are refused before any kernel reads them; float values are checked here, once.
 * The block may then be bounded, added and labelled by the _held calls only (never passed to the
 * plain calls, which read host memory), and must stay valid and unchanged until the stream is freed. */
pc_status pc_hca_stream_hold_device(pc_hca_stream *stream, const pc_points *block);
/* After finish: the labels of a block held by pc_hca_stream_hold_device into device_labels (n int32
 * of the same GPU's memory, aligned; else PC_INVALID_ARGUMENT before any kernel runs; the labels never
 * cross the bus), sums as pc_hca_stream_label's (host
 * memory). Whatever fails leaves device_labels' contents unspecified. */
pc_status pc_hca_stream_label_held_device(const pc_hca_stream *stream, int32_t *device_labels, double *sums);

/* ---------------------------------------------------------------- k-means, streamed */

/* Lloyd's k-means over points that arrive in blocks (row windows of a raster larger than memory, or
 * the parts held by several processes), in one pass over the blocks per iteration. From the same
 * initial centres (PC_INIT_GIVEN) the labels, centres and iterations are those of pc_kmeans on all the
 * points at once on the CPU, bit for bit, whatever the blocks' number, sizes and order, the threads,
 * and which stream added which block: every sum over points is a sum of integers (the scan's exact
 * sums of the float32 values; per-cluster sums in 64-bit fixed point, as pc_kmeans's own), the same in
 * any order.
 * The initialisations (k-means++, random, k-means||) run on a uniform sample drawn during the scan,
 * which depends only on the points' indices: the same on any blocking, and, when it holds every point,
 * the points themselves, so that the initial centres are then pc_kmeans's too.
 *
 * The order of calls:
 *   1. pc_kmeans_stream_scan over every block: the points' mean and spread (the frame the iterations
 *      run in, as pc_kmeans's) and the sample;
 *   2. pc_kmeans_stream_start, once: the initial centres (given, or params->init on the sample);
 *   3. per iteration: pc_kmeans_stream_add over every block scanned (in any blocks and order), then
 *      pc_kmeans_stream_step, until it says done (the centres moved by at most params->tol's bound,
 *      as pc_kmeans's rule, or max_iter);
 *   4. pc_kmeans_stream_label over any blocks, from any threads at once (the stream is only read), and
 *      pc_kmeans_stream_result: centres, iterations, and the last pass's sizes and inertia (those of
 *      the assignment to the centres before the last update), no labels.
 * Several streams (threads, processes) can each take some of the blocks: in the scan or after each
 * pass, each one's partial state (pc_kmeans_stream_partial, plain arrays as bytes) is merged into the
 * others (pc_kmeans_stream_merge_partial; pc_kmeans_stream_merge in one process), and every stream then
 * starts or steps by itself to the same centres. Sums and counts merge by addition, the extremes by
 * min / max, the sample and the farthest points (the empty-cluster rule) by keeping those of both that
 * a single stream would have kept.
 * n_init is 1 (a stream is not rewound for other starts). The memory taken: the sample (default
 * max(100 k, 65536) points, within 256 MiB), and per thread k x dim sums and the k - 1 points
 * farthest from their centres; blocks are read in place and never kept (but a held block's copy on the
 * GPU, pc_kmeans_stream_hold). Backends: sequential, OpenMP,
 * and CUDA: the nearest centres of a block's points (the k x dim work a point) are found on the GPU
 * in pieces of 2^18 rows, by the CPU's own arithmetic (its |c|^2, then one fused multiply-add a
 * dimension in order), so the labels and the whole stream equal the CPU backends' bit for bit; the
 * rest of a pass runs on the host's OpenMP threads; the GPU holds a piece and the centres. AUTO takes
 * OpenMP. */
typedef struct pc_kmeans_stream pc_kmeans_stream;

/* dim: values per point (1 to 4096), every block's; dtype may differ from block to block. sample:
 * points kept for the initialisation, >= k (0 = the default above; unused with PC_INIT_GIVEN). The
 * params (and given centres) are copied. */
pc_status pc_kmeans_stream_create(const pc_kmeans_params *params, size_t dim, size_t sample,
                                  pc_kmeans_stream **stream);
void pc_kmeans_stream_free(pc_kmeans_stream *stream); /* NULL-safe */
/* Scans a block (checking its values: all finite in float32). first: the index of the block's first
 * point among all the points, the others following (row i is point first + i): e.g. a window's first
 * pixel's index in the raster. Indices must not repeat across blocks (gaps are fine: a window's pixels
 * left out as nodata); the sample is drawn from them. */
pc_status pc_kmeans_stream_scan(pc_kmeans_stream *stream, const pc_points *block, uint64_t first);
/* The frame and the initial centres. k larger than the points scanned is refused here. */
pc_status pc_kmeans_stream_start(pc_kmeans_stream *stream);
/* Adds a block to this iteration's sums. Values the scan did not see are refused (with their row). */
pc_status pc_kmeans_stream_add(pc_kmeans_stream *stream, const pc_points *block);
/* A block held by the stream for passes that add the same points every time (a process's share of a
 * distributed run, points that fit in memory): with CUDA its rows are centred, checked and copied to
 * the GPU once, and each pass over them then runs on the GPU whole (nearest centres, fixed-point sums,
 * inertia, the farthest points), the numbers of pc_kmeans_stream_add bit for bit; only the k x
 * (dim + 1) sums and the candidates for the k - 1 farthest points (those rows, and rows tied with them)
 * cross the bus. Where the GPU cannot hold them, and on the CPU backends, the passes read the block
 * where it is. After pc_kmeans_stream_start, one block at most; the block's memory must stay valid and
 * unchanged until the stream is freed. Values the scan did not see are refused (with their row) here
 * where the GPU keeps the rows, else by pc_kmeans_stream_add_held. */
pc_status pc_kmeans_stream_hold(pc_kmeans_stream *stream, const pc_points *block);
/* Adds the held block to this pass: pc_kmeans_stream_add(stream, block) without the block's reading. */
pc_status pc_kmeans_stream_add_held(pc_kmeans_stream *stream);
/* After done: the held block's labels, as pc_kmeans_stream_label gives them. */
pc_status pc_kmeans_stream_label_held(const pc_kmeans_stream *stream, int32_t *labels);
/* New centres from the pass's sums (after every scanned point was added once); *done = 1 when the run
 * is over. */
pc_status pc_kmeans_stream_step(pc_kmeans_stream *stream, int *done);
/* After done: each point's nearest centre (any points, not only those scanned). Thread-safe. */
pc_status pc_kmeans_stream_label(const pc_kmeans_stream *stream, const pc_points *block, int32_t *labels);
pc_status pc_kmeans_stream_result(const pc_kmeans_stream *stream, pc_result **result);
/* into += from, both scanning, or both iterating at the same iteration from the same scan. */
pc_status pc_kmeans_stream_merge(pc_kmeans_stream *into, const pc_kmeans_stream *from);
/* The partial state of the current phase (the scan's, or this pass's) as bytes, for another process:
 * buf NULL sets *size to the bytes needed; else *size is the room in buf, then the bytes written. The
 * layout is this build's (host byte order). */
pc_status pc_kmeans_stream_partial(const pc_kmeans_stream *stream, void *buf, size_t *size);
/* into += a partial state from pc_kmeans_stream_partial of a stream created with the same params, in
 * the same phase (and iteration, from the same scan). Refused, changing nothing, when it does not fit. */
pc_status pc_kmeans_stream_merge_partial(pc_kmeans_stream *into, const void *buf, size_t size);
/* While iterating: where a partial state's bytes hold the pass's counts and sums, *count int64 values
 * (the k counts, then the k x dim fixed-point sums) from byte *offset (a multiple of 8). Why public:
 * they are integers that add exactly in any order, so processes can sum them with one reduction
 * (MPI_SUM on int64, as parclust_mpi does) and exchange only the rest of their partial states (point
 * count, inertia, farthest points), then merge each other's with those values replaced by zeros, and
 * one of them by the reduced totals less their own: merge_partial adds them as given. */
pc_status pc_kmeans_stream_partial_sums(const pc_kmeans_stream *stream, size_t *offset, size_t *count);

/* ---------------------------------------------------------------- metrics */

/* Compare two labelings of n points. Labels < 0 are a class of their own ("noise"). */
pc_status pc_adjusted_rand_index(const int32_t *truth, const int32_t *pred, size_t n, double *ari);
/* Normalized mutual information, arithmetic-mean normalisation (scikit-learn's default). */
pc_status pc_normalized_mutual_info(const int32_t *truth, const int32_t *pred, size_t n, double *nmi);
/* Share of points correctly classified after matching each true class to at most one predicted
 * cluster so that the matched points are as many as possible (Hungarian method). */
pc_status pc_matched_accuracy(const int32_t *truth, const int32_t *pred, size_t n, double *accuracy);
/* The three scores above of labelings given as (truth, pred) pairs and how many points have each
 * (counts >= 0, some > 0; a pair may repeat): for labelings held in pieces, whose pair counts add
 * up (parclust-mpi segment --truth sums each rank's). Any output pointer may be NULL. Equal to the
 * calls above on the points the pairs stand for. On failure every non-NULL output is NaN. */
pc_status pc_label_scores(const int32_t *truth, const int32_t *pred, const int64_t *counts, size_t pairs,
                          double *accuracy, double *ari, double *nmi);

/* ---------------------------------------------------------------- synthetic data */

typedef enum {
    PC_DATASET_BLOBS = 0, /* isotropic Gaussian blobs, centres uniform in a box */
    PC_DATASET_RINGS,     /* concentric rings in the first two dimensions, noise in the rest */
    PC_DATASET_AGNOLUCCI, /* seed 000's workload: 3D Gaussian blobs */
    PC_DATASET_BINDI,     /* seed 001's workload: 3 blobs, make_blobs style */
    PC_DATASET_GRID,      /* many small tight clusters on a regular lattice (neighbour-grid benchmark) */
    PC_DATASET_HCA8,      /* the HCA paper's first model set: 8 Gaussian classes in 3 isolated groups,
                             one group of 3 with heavy overlaps (dim 2; fixed layout in [0, 100]^2,
                             n sets the total; clusters, spread and box are not used) */
    PC_DATASET_HCA5       /* the HCA paper's second model set: 5 classes of different shape, size and
                             density, two of them rings (dim 2; fixed layout as hca8) */
} pc_dataset;

const char *pc_dataset_name(pc_dataset dataset);
pc_status pc_dataset_parse(const char *name, pc_dataset *out);

typedef struct {
    pc_dataset dataset; /* default blobs */
    size_t n;           /* points, default 1000 */
    size_t dim;         /* dimensions, default 2 */
    size_t clusters;    /* default 3 */
    double spread;      /* standard deviation of each cluster, default 1 */
    double box;         /* centres drawn in [-box, box]^dim, default 10 */
    uint64_t seed;      /* default 42 */
} pc_generate_params;

void pc_generate_params_init(pc_generate_params *params);

/* Fills points (n x dim float32, caller-allocated) and labels (n, may be NULL) deterministically
 * from the seed: the same parameters give the same data on every machine. */
pc_status pc_generate(const pc_generate_params *params, float *points, int32_t *labels);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* PARCLUST_H */
