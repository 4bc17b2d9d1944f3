/* k-means built without CUDA: its GPU entry point says so (pc__choose_backend refuses the CUDA
 * backend before it is reached; this keeps the link whole). */
#include "internal_km.h"

pc_status pc__km_lloyd_cuda(const float *x, size_t n, size_t dim, size_t k, const pc__km_options *o,
                            pc_kmeans_cuda_variant variant, float *centres, int32_t *labels, int *iterations,
                            double *inertia, double *gpu_seconds)
{
    (void)x, (void)n, (void)dim, (void)k, (void)o, (void)variant, (void)centres, (void)labels, (void)iterations;
    (void)inertia, (void)gpu_seconds;
    return pc__fail(PC_UNSUPPORTED, "k-means' CUDA backend was not built into this parclust");
}
