/* HCA built without CUDA: its GPU plan cannot be made, and says so. */
#include "internal_hca.h"

pc_status pc__hca_gpu_new(const pc_hca_params *params, size_t n, size_t dim, pc_dtype dtype, pc__hca_gpu **gpu)
{
    (void)params, (void)n, (void)dim, (void)dtype;
    *gpu = NULL;
    return pc__fail(PC_UNSUPPORTED, "HCA's CUDA backend was not built into this parclust");
}

void pc__hca_gpu_free(pc__hca_gpu *gpu) { (void)gpu; }

pc_status pc__hca_gpu_run(pc__hca_gpu *gpu, const pc_points *points, int device_input, int32_t *device_labels,
                          const pc_hca_params *params, int64_t min_size, pc_result *r)
{
    (void)gpu, (void)points, (void)device_input, (void)device_labels, (void)params, (void)min_size, (void)r;
    return pc__fail(PC_UNSUPPORTED, "HCA's CUDA backend was not built into this parclust");
}
