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

extern "C" pc_status pc_cuda_device_memory(int index, size_t *free_bytes, size_t *total_bytes,
                                           size_t *shared_per_block)
{
    int count = pc_cuda_device_count(), previous = 0, smem = 0;
    if (index < 0 && count > 0 && cudaGetDevice(&index) != cudaSuccess) { // < 0: the current device
        cudaGetLastError();
        index = 0;
    }
    if (index < 0 || index >= count)
        return pc__fail(PC_NO_DEVICE, "no CUDA device %d (%d found)", index, count);
    // cudaMemGetInfo answers for the current device: switch to it for the query, then back.
    size_t f = 0, t = 0;
    cudaError_t err = cudaGetDevice(&previous);
    if (err == cudaSuccess)
        err = cudaSetDevice(index);
    if (err == cudaSuccess)
        err = cudaMemGetInfo(&f, &t);
    if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, index);
    cudaSetDevice(previous);
    if (err != cudaSuccess) {
        cudaGetLastError();
        return pc__fail(PC_DEVICE_ERROR, "CUDA device %d: %s", index, cudaGetErrorString(err));
    }
    if (free_bytes)
        *free_bytes = f;
    if (total_bytes)
        *total_bytes = t;
    if (shared_per_block)
        *shared_per_block = (size_t)smem;
    return PC_OK;
}
