/* k-means built without CUDA: its GPU entry point says so (pc__choose_backend refuses the CUDA
 * backend before it is reached; this keeps the link whole). */
#include "internal_km.h"
#include "stream_gpu.h"

pc_status pc__km_lloyd_cuda(const float *x, size_t n, size_t dim, size_t k, pc__km_options *o,
                            pc_kmeans_cuda_variant variant, int *bounded, float *centres, int32_t *labels,
                            int *iterations, double *inertia, double *gpu_seconds)
{
    (void)x, (void)n, (void)dim, (void)k, (void)o, (void)variant, (void)bounded, (void)centres, (void)labels;
    (void)iterations;
    (void)inertia, (void)gpu_seconds;
    return pc__fail(PC_UNSUPPORTED, "k-means' CUDA backend was not built into this parclust");
}

/* The stream's GPU pieces: never created without CUDA (pc_kmeans_stream_create refuses the backend
 * first), so only the creation says why. */
pc_status pc__km_stream_gpu_create(size_t k, size_t dim, pc__km_stream_gpu **gpu)
{
    (void)k, (void)dim;
    *gpu = NULL;
    return pc__fail(PC_UNSUPPORTED, "k-means' CUDA backend was not built into this parclust");
}
void pc__km_stream_gpu_free(pc__km_stream_gpu *gpu) { (void)gpu; }
void pc__km_stream_gpu_lock(pc__km_stream_gpu *gpu) { (void)gpu; }
void pc__km_stream_gpu_unlock(pc__km_stream_gpu *gpu) { (void)gpu; }
float *pc__km_stream_gpu_rows(pc__km_stream_gpu *gpu, int slot)
{
    (void)gpu, (void)slot;
    return NULL;
}
pc_status pc__km_stream_gpu_centres(pc__km_stream_gpu *gpu, const float *ct, const float *cc, size_t kpad,
                                    uint64_t version)
{
    (void)gpu, (void)ct, (void)cc, (void)kpad, (void)version;
    return PC_UNSUPPORTED;
}
pc_status pc__km_stream_gpu_submit(pc__km_stream_gpu *gpu, int slot, size_t m)
{
    (void)gpu, (void)slot, (void)m;
    return PC_UNSUPPORTED;
}
pc_status pc__km_stream_gpu_wait(pc__km_stream_gpu *gpu, int slot, size_t m, int32_t *labels)
{
    (void)gpu, (void)slot, (void)m, (void)labels;
    return PC_UNSUPPORTED;
}

/* A held block: never on the GPU without CUDA (there is no stream GPU to hold it). */
pc_status pc__km_held_create(size_t n, size_t dim, size_t k, pc__km_held **held)
{
    (void)n, (void)dim, (void)k;
    *held = NULL;
    return PC_UNSUPPORTED;
}
void pc__km_held_free(pc__km_held *held) { (void)held; }
pc_status pc__km_held_rows(pc__km_held *held, size_t begin, const float *x, size_t m)
{
    (void)held, (void)begin, (void)x, (void)m;
    return PC_UNSUPPORTED;
}
pc_status pc__km_held_pass_run(pc__km_held *held, const float *ct, const float *cc, size_t kpad,
                               const float *centres, uint64_t version, float scale, int first_pass,
                               pc__km_held_pass *out)
{
    (void)held, (void)ct, (void)cc, (void)kpad, (void)centres, (void)version, (void)scale, (void)first_pass, (void)out;
    return PC_UNSUPPORTED;
}
pc_status pc__km_held_labels(pc__km_held *held, const float *ct, const float *cc, size_t kpad,
                             const float *centres, uint64_t version, int32_t *labels)
{
    (void)held, (void)ct, (void)cc, (void)kpad, (void)centres, (void)version, (void)labels;
    return PC_UNSUPPORTED;
}
