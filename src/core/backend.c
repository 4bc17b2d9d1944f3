/* Backend names and the choice AUTO makes. */
#include "internal.h"

#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this many pair evaluations a GPU's launch and copy costs outweigh its speed. */
#define PC__GPU_MIN_WORK 5e7

const char *pc_backend_name(pc_backend b)
{
    switch (b) {
    case PC_BACKEND_AUTO: return "auto";
    case PC_BACKEND_SEQUENTIAL: return "seq";
    case PC_BACKEND_OPENMP: return "openmp";
    case PC_BACKEND_CUDA: return "cuda";
    }
    return "unknown";
}

pc_status pc_backend_parse(const char *name, pc_backend *out)
{
    static const struct {
        const char *name;
        pc_backend backend;
    } names[] = {{"auto", PC_BACKEND_AUTO},     {"seq", PC_BACKEND_SEQUENTIAL},
                 {"sequential", PC_BACKEND_SEQUENTIAL}, {"openmp", PC_BACKEND_OPENMP},
                 {"omp", PC_BACKEND_OPENMP},    {"cuda", PC_BACKEND_CUDA}};
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(name, names[i].name) == 0) {
            *out = names[i].backend;
            return PC_OK;
        }
    }
    return pc__fail(PC_INVALID_ARGUMENT, "unknown backend '%s' (expected auto, seq, openmp or cuda)",
                    name ? name : "(null)");
}

int pc_openmp_max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

int pc_backend_available(pc_backend b)
{
    switch (b) {
    case PC_BACKEND_AUTO:
    case PC_BACKEND_SEQUENTIAL:
        return 1;
    case PC_BACKEND_OPENMP:
#ifdef _OPENMP
        return 1;
#else
        return 0;
#endif
    case PC_BACKEND_CUDA:
        return pc_cuda_device_count() > 0;
    }
    return 0;
}

pc_status pc__choose_backend(pc_backend asked, double work, pc_backend *chosen)
{
    switch (asked) {
    case PC_BACKEND_AUTO:
        if (work >= PC__GPU_MIN_WORK && pc_cuda_device_count() > 0)
            *chosen = PC_BACKEND_CUDA;
        else
            *chosen = pc_backend_available(PC_BACKEND_OPENMP) ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
        return PC_OK;
    case PC_BACKEND_SEQUENTIAL:
        *chosen = asked;
        return PC_OK;
    case PC_BACKEND_OPENMP:
        if (!pc_backend_available(asked))
            return pc__fail(PC_UNSUPPORTED, "the OpenMP backend was not built (compiler without OpenMP)");
        *chosen = asked;
        return PC_OK;
    case PC_BACKEND_CUDA:
        if (pc_cuda_device_count() <= 0) {
            char detail[256];
            if (pc_cuda_device_describe(0, detail, sizeof detail) == PC_UNSUPPORTED)
                return pc__fail(PC_UNSUPPORTED, "the CUDA backend was not built into this parclust");
            return pc__fail(PC_NO_DEVICE, "the CUDA backend was asked for but no CUDA device is usable: %s",
                            detail);
        }
        *chosen = asked;
        return PC_OK;
    }
    return pc__fail(PC_INVALID_ARGUMENT, "unknown backend %d", (int)asked);
}
