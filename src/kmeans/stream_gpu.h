/* The CUDA backend of the k-means stream's passes (cuda_stream.cu; cuda_off.c where CUDA was not
 * built): the nearest centre of every point of a piece of a block, on the GPU. The rest of a pass
 * (fixed-point sums, inertia, the farthest points) stays the host's, from these labels. Plain C types
 * only: stream_pass.c (C) and cuda_stream.cu (C++) both include it. */
#ifndef PC_KMEANS_STREAM_GPU_H
#define PC_KMEANS_STREAM_GPU_H

#include "parclust.h"

#include <stddef.h>
#include <stdint.h>

/* Rows of a piece: the host and device buffers of each of the two slots hold this many centred rows
 * and labels. Two slots let a pass gather one piece's labels on the host while the GPU finds the
 * next piece's. */
#define PC__KM_GPU_PIECE ((size_t)1 << 18)
#define PC__KM_GPU_SLOTS 2

typedef struct pc__km_stream_gpu pc__km_stream_gpu;

pc_status pc__km_stream_gpu_create(size_t k, size_t dim, pc__km_stream_gpu **gpu);
void pc__km_stream_gpu_free(pc__km_stream_gpu *gpu); /* NULL-safe */
/* Calls between lock and unlock have the slots to themselves (labelling may come from several threads
 * at once); unlock first waits for the GPU's work of the holder. */
void pc__km_stream_gpu_lock(pc__km_stream_gpu *gpu);
void pc__km_stream_gpu_unlock(pc__km_stream_gpu *gpu);
/* The host buffer of slot 0 or 1: PC__KM_GPU_PIECE x dim floats, for the centred rows. Written only
 * when the slot holds no work that was submitted and not waited for. */
float *pc__km_stream_gpu_rows(pc__km_stream_gpu *gpu, int slot);
/* The centres as pc__km_assign holds them (ct: dim x kpad, transposed; cc: kpad norms, INFINITY for
 * the padding), uploaded when `version` differs from the last upload's. */
pc_status pc__km_stream_gpu_centres(pc__km_stream_gpu *gpu, const float *ct, const float *cc, size_t kpad,
                                    uint64_t version);
/* Queues the nearest centre of rows 0 .. m - 1 (m <= PC__KM_GPU_PIECE) of the slot's host buffer;
 * wait then copies them into labels. Work of the two slots runs in the order it was submitted. */
pc_status pc__km_stream_gpu_submit(pc__km_stream_gpu *gpu, int slot, size_t m);
pc_status pc__km_stream_gpu_wait(pc__km_stream_gpu *gpu, int slot, size_t m, int32_t *labels);

/* ---------------------------------------------------------------- a held block (cuda_stream_held.cu)
 *
 * pc_kmeans_stream_hold with CUDA: the block's centred rows kept in the GPU's memory, and each pass
 * over them run there whole (nearest centres, fixed-point sums, inertia, the first pass's squares, and
 * the candidates for the farthest points), the host's numbers bit for bit; only these cross the bus. */

typedef struct pc__km_held pc__km_held;

/* What a pass over the held rows gives the host (arrays the held state owns, valid until its next
 * call). */
typedef struct {
    const int64_t *totals;   /* k x (dim + 1): a cluster's dim fixed-point sums, then its count */
    const uint64_t *inertia; /* 256: the float32 distances' mantissas (hidden bit set) by biased exponent */
    const uint64_t *squares; /* first pass: dim x 2, the low and high words of each dimension's sum of q^2 */
    /* Every row at least as far from its centre as the k - 1 farthest, or SIZE_MAX when ties leave more
     * than the state holds (the host then runs the pass itself): distance, label and centred row. */
    size_t far;
    const double *far_dist;
    const int32_t *far_label;
    const float *far_x;
} pc__km_held_pass;

/* Room for n centred rows and a pass over them (k centres). PC_UNSUPPORTED or PC_DEVICE_OUT_OF_MEMORY
 * where they do not fit: the caller then passes over the block on the host. */
pc_status pc__km_held_create(size_t n, size_t dim, size_t k, pc__km_held **held);
void pc__km_held_free(pc__km_held *held); /* NULL-safe */
/* Rows begin .. begin + m - 1 of the held block, centred (host memory). */
pc_status pc__km_held_rows(pc__km_held *held, size_t begin, const float *x, size_t m);
/* One pass against the centres (ct, cc: pc__km_centres' layout; centres: k x dim), uploaded when
 * `version` differs from the last upload's; scale: the fixed-point scale. */
pc_status pc__km_held_pass_run(pc__km_held *held, const float *ct, const float *cc, size_t kpad,
                               const float *centres, uint64_t version, float scale, int first_pass,
                               pc__km_held_pass *out);
/* The held rows' nearest centres into labels (host, n); safe from several threads at once. */
pc_status pc__km_held_labels(pc__km_held *held, const float *ct, const float *cc, size_t kpad,
                             const float *centres, uint64_t version, int32_t *labels);

#endif
