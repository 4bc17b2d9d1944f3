/* What the mean shift files share: the checked, resolved setup of one run and the backends' entry
 * points. */
#ifndef PC_MEANSHIFT_INTERNAL_H
#define PC_MEANSHIFT_INTERNAL_H

#include "../core/internal.h"
#include "refs.h"

typedef struct {
    pc__shift_refs shift; /* kernel, scale, h2, r2 (references filled in later) */
    double bandwidth;
    double radius;        /* cut-off, INFINITY when unbounded */
    float eps2;           /* squared stop distance */
    int max_iter;
    int blurring;
    int use_grid;
    /* The points that climb: first .. first + count - 1, every point a reference either way; their
     * modes are the backends' count x dim output. pc_meanshift: all of them (0, n); blurring: always
     * all, since the climbs move the references. */
    size_t first, count;
    pc_progress_fn progress;
    void *progress_user;
} pc__ms_setup;

typedef struct {
    int parallel; /* 0: sequential backend */
    int threads;
    pc_schedule schedule;
    int chunk;
} pc__ms_cpu_options;

/* Moves the climbing points (setup->first, count) to their modes: modes (count x dim) receives the
 * final positions. */
pc_status pc__meanshift_cpu(const float *points, size_t n, size_t dim, const pc__ms_setup *setup,
                            const pc__ms_cpu_options *options, float *modes, int *iterations);

typedef struct {
    pc_cuda_kernel kernel;
    int block; /* threads per block, 0 = the kernel's default */
} pc__ms_cuda_options;

/* The CUDA backend (cuda.cu; cuda_off.c when CUDA is not built), with pc__meanshift_cpu's inputs and
 * output. stage_seconds receives the
 * upload, shift (GPU time of the iterations) and download times. */
pc_status pc__meanshift_cuda(const float *points, size_t n, size_t dim, const pc__ms_setup *setup,
                             const pc__ms_cuda_options *options, float *modes, int *iterations,
                             double stage_seconds[3]);

/* Groups modes closer than merge_radius into clusters (connected components), numbers them by size,
 * largest first, and fills labels, centres and sizes of the result. threads: OpenMP threads (0: OpenMP's
 * default, 1: this thread alone); the result is the same for any. */
pc_status pc__merge_modes(const float *modes, size_t n, size_t dim, double merge_radius, int threads,
                          pc_result *result);
/* Distances between two modes that the calling thread's last pc__merge_modes computed (tests check
 * that merging stays near linear in the modes). */
#ifndef __cplusplus
extern _Thread_local size_t pc__merge_distances;
#endif

#endif
