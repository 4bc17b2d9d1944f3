/* --backend auto, when the GPU it took cannot do the run: one line on stderr says so, with the
 * library's reason (how much memory was needed and how much was free), and the run goes to the CPU. */
#include "cli.h"

#include <stdio.h>

int cli_gpu_fallback(const char *cmd, pc_backend *backend, pc_status st, const pc_result *r)
{
    if (*backend != PC_BACKEND_AUTO || pc_cuda_device_count() < 1)
        return 0;
    pc_backend cpu = pc_backend_available(PC_BACKEND_OPENMP) ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
    const char *why = pc_last_error()[0] ? pc_last_error() : pc_status_string(st);
    size_t free_bytes = 0, total = 0;
    char now[96] = "";
    if (pc_cuda_device_memory(-1, &free_bytes, &total, NULL) == PC_OK)
        snprintf(now, sizeof now, "; %zu of %zu MiB free now", free_bytes >> 20, total >> 20);
    if (st == PC_DEVICE_OUT_OF_MEMORY || st == PC_DEVICE_ERROR) {
        /* The library gave up on the GPU: the same run again on the CPU. */
        fprintf(stderr, "parclust %s: the GPU could not run this (%s%s): running it on the CPU (%s) instead\n", cmd,
                why, now, pc_backend_name(cpu));
        fflush(stderr);
        *backend = cpu;
        return 1;
    }
    /* The library went to the CPU by itself (AUTO), leaving the GPU's reason as its last error. */
    if (st == PC_OK && r && pc_result_backend(r) != PC_BACKEND_CUDA && pc_last_error()[0])
        fprintf(stderr, "parclust %s: the GPU could not run this (%s%s): ran on the CPU (%s) instead\n", cmd, why, now,
                pc_backend_name(pc_result_backend(r)));
    return 0;
}
