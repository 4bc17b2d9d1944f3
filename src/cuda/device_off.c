/* Device discovery when parclust is built without CUDA: there are no devices. */
#include "../core/internal.h"

#include <stdio.h>

int pc_cuda_device_count(void) { return 0; }

pc_status pc_cuda_device_describe(int index, char *buf, size_t size)
{
    (void)index;
    if (buf && size)
        snprintf(buf, size, "built without CUDA");
    return PC_UNSUPPORTED;
}

pc_status pc_cuda_select_device(int index)
{
    (void)index;
    return pc__fail(PC_UNSUPPORTED, "this parclust was built without CUDA: no device to select");
}

pc_status pc_cuda_device_memory(int index, size_t *free_bytes, size_t *total_bytes, size_t *shared_per_block)
{
    (void)index;
    (void)free_bytes;
    (void)total_bytes;
    (void)shared_per_block;
    return pc__fail(PC_UNSUPPORTED, "this parclust was built without CUDA: no device memory");
}
