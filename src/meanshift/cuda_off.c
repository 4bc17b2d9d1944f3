/* Mean shift built without CUDA: its GPU entry point says so (pc__choose_backend refuses the CUDA
 * backend before it is reached; this keeps the link whole). */
#include "internal_ms.h"

pc_status pc__meanshift_cuda(const float *points, size_t n, size_t dim, const pc__ms_setup *setup,
                             const pc__ms_cuda_options *options, float *modes, int *iterations,
                             double stage_seconds[3])
{
    (void)points, (void)n, (void)dim, (void)setup, (void)options, (void)modes, (void)iterations;
    (void)stage_seconds;
    return pc__fail(PC_UNSUPPORTED, "mean shift's CUDA backend was not built into this parclust");
}
