// What the .cu files share: CUDA errors turned into statuses with the failing call named, and a
// device buffer that frees itself on every exit path.
#ifndef PC_CUDA_COMMON_CUH
#define PC_CUDA_COMMON_CUH

#include <cuda_runtime.h>

extern "C" {
#include "../core/internal.h"
}

// Maps a CUDA error to a status and records the detail ("cudaMalloc(references): out of memory").
static inline pc_status pc__cuda_status(cudaError_t err, const char *what)
{
    if (err == cudaSuccess)
        return PC_OK;
    cudaGetLastError(); // clear sticky-free errors so later calls start clean
    pc_status st = PC_DEVICE_ERROR;
    if (err == cudaErrorMemoryAllocation)
        st = PC_DEVICE_OUT_OF_MEMORY;
    else if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver)
        st = PC_NO_DEVICE;
    return pc__fail(st, "%s: %s", what, cudaGetErrorString(err));
}

#define PC_CUDA_TRY(call, what)                                   \
    do {                                                          \
        pc_status pc__st = pc__cuda_status((call), (what));       \
        if (pc__st != PC_OK)                                      \
            return pc__st;                                        \
    } while (0)

// Checks the last launch (configuration errors) without waiting for the kernel.
#define PC_CUDA_LAUNCHED(what) PC_CUDA_TRY(cudaGetLastError(), what)

template <typename T> struct pc__device_buffer {
    T *ptr = nullptr;
    size_t count = 0;
    pc__device_buffer() = default;
    pc__device_buffer(const pc__device_buffer &) = delete;
    pc__device_buffer &operator=(const pc__device_buffer &) = delete;
    ~pc__device_buffer() { release(); }
    void release()
    {
        if (ptr)
            cudaFree(ptr);
        ptr = nullptr;
        count = 0;
    }
    pc_status alloc(size_t n, const char *what)
    {
        release();
        if (n == 0)
            n = 1;
        cudaError_t err = cudaMalloc((void **)&ptr, n * sizeof(T));
        if (err != cudaSuccess) {
            ptr = nullptr;
            size_t free_bytes = 0, total = 0;
            cudaGetLastError();
            cudaMemGetInfo(&free_bytes, &total);
            cudaGetLastError();
            return pc__fail(err == cudaErrorMemoryAllocation ? PC_DEVICE_OUT_OF_MEMORY : PC_DEVICE_ERROR,
                            "GPU allocation for %s (%zu MiB) failed: %s (%zu of %zu MiB free)", what,
                            (n * sizeof(T)) >> 20, cudaGetErrorString(err), free_bytes >> 20, total >> 20);
        }
        count = n;
        return PC_OK;
    }
};

#endif
