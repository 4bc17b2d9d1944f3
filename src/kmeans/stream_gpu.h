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

#endif
