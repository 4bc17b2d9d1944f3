// Device discovery for the CUDA build: how many GPUs are usable and what they are. CUDA errors become
// statuses here, never crashes.
#include <cuda_runtime.h>

#include <stdio.h>

extern "C" {
#include "../core/internal.h"
}

extern "C" int pc_cuda_device_count(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError(); // a failed query (no driver, no device) must not poison later calls
        return 0;
    }
    return count;
}

extern "C" pc_status pc_cuda_device_describe(int index, char *buf, size_t size)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        cudaGetLastError();
        if (buf && size)
            snprintf(buf, size, "%s", cudaGetErrorString(err));
        return PC_NO_DEVICE;
    }
    if (index < 0 || index >= count) {
        if (buf && size)
            snprintf(buf, size, "no device %d (%d found)", index, count);
        return PC_NO_DEVICE;
    }
    cudaDeviceProp prop;
    err = cudaGetDeviceProperties(&prop, index);
    if (err != cudaSuccess) {
        if (buf && size)
            snprintf(buf, size, "%s", cudaGetErrorString(err));
        return PC_DEVICE_ERROR;
    }
    if (buf && size)
        snprintf(buf, size, "%s, compute capability %d.%d, %zu MiB, %d SMs", prop.name, prop.major,
                 prop.minor, (size_t)(prop.totalGlobalMem >> 20), prop.multiProcessorCount);
    return PC_OK;
}

extern "C" pc_status pc_cuda_select_device(int index)
{
    pc__clear_error();
    int count = pc_cuda_device_count();
    if (index < 0 || index >= count)
        return pc__fail(PC_NO_DEVICE, "no CUDA device %d (%d found)", index, count);
    cudaError_t err = cudaSetDevice(index);
    if (err != cudaSuccess) {
        cudaGetLastError();
        return pc__fail(PC_DEVICE_ERROR, "CUDA device %d: %s", index, cudaGetErrorString(err));
    }
    return PC_OK;
}
