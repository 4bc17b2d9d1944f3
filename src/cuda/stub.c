/* Stands in for the CUDA runtime pieces when parclust is built without CUDA: no devices, and every
 * GPU entry point says the backend was not built. */
#include "../core/internal.h"
#include "../meanshift/internal_ms.h"
#include "../kmeans/internal_km.h"
#include "../hca/internal_hca.h"

#include <stdio.h>

int pc_cuda_device_count(void) { return 0; }

pc_status pc_cuda_device_describe(int index, char *buf, size_t size)
{
    (void)index;
    if (buf && size)
        snprintf(buf, size, "built without CUDA");
    return PC_UNSUPPORTED;
}

pc_status pc__meanshift_cuda(const float *points, size_t n, size_t dim, const pc__ms_setup *setup,
                             const pc__ms_cuda_options *options, float *modes, int *iterations,
                             double stage_seconds[3])
{
    (void)points, (void)n, (void)dim, (void)setup, (void)options, (void)modes, (void)iterations;
    (void)stage_seconds;
    return pc__fail(PC_UNSUPPORTED, "the CUDA backend was not built into this parclust");
}

pc_status pc__km_lloyd_cuda(const float *x, size_t n, size_t dim, size_t k, const pc__km_options *o,
                            pc_kmeans_cuda_variant variant, float *centres, int32_t *labels, int *iterations,
                            double *inertia, double *gpu_seconds)
{
    (void)x, (void)n, (void)dim, (void)k, (void)o, (void)variant, (void)centres, (void)labels, (void)iterations;
    (void)inertia, (void)gpu_seconds;
    return pc__fail(PC_UNSUPPORTED, "the CUDA backend was not built into this parclust");
}

pc_status pc__hca_gpu_new(const pc_hca_params *params, size_t n, size_t dim, pc_dtype dtype, pc__hca_gpu **gpu)
{
    (void)params, (void)n, (void)dim, (void)dtype;
    *gpu = NULL;
    return pc__fail(PC_UNSUPPORTED, "the CUDA backend was not built into this parclust");
}

void pc__hca_gpu_free(pc__hca_gpu *gpu) { (void)gpu; }

pc_status pc__hca_gpu_run(pc__hca_gpu *gpu, const pc_points *points, int device_input, int32_t *device_labels,
                          const pc_hca_params *params, int64_t min_size, pc_result *r)
{
    (void)gpu, (void)points, (void)device_input, (void)device_labels, (void)params, (void)min_size, (void)r;
    return pc__fail(PC_UNSUPPORTED, "the CUDA backend was not built into this parclust");
}
