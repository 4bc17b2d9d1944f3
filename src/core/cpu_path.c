/* The CPU kernels' instruction-set path; see cpu_path.h. */
#include "cpu_path.h"

#include "parclust.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* -1 until the first call; the kernels read it once per call (relaxed: any thread computing it
 * computes the same value). */
static _Atomic int chosen = -1;

pc__cpu_path_id pc__cpu_path_best(void)
{
#if PC__HAVE_CPU_PATHS
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("bmi2"))
        return PC__CPU_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2"))
        return PC__CPU_AVX2;
#endif
    return PC__CPU_BASELINE;
}

int pc__cpu_has_vbmi(void)
{
#if PC__HAVE_CPU_PATHS
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vbmi");
#else
    return 0;
#endif
}

pc__cpu_path_id pc__cpu_path_force(pc__cpu_path_id path)
{
    pc__cpu_path_id best = pc__cpu_path_best();
    if (path > best)
        path = best;
    atomic_store_explicit(&chosen, (int)path, memory_order_relaxed);
    return path;
}

pc__cpu_path_id pc__cpu_path(void)
{
    int c = atomic_load_explicit(&chosen, memory_order_relaxed);
    if (c >= 0)
        return (pc__cpu_path_id)c;
    pc__cpu_path_id path = pc__cpu_path_best();
    const char *want = getenv("PARCLUST_CPU_PATH");
    if (want && !strcmp(want, "baseline"))
        path = PC__CPU_BASELINE;
    else if (want && !strcmp(want, "avx2"))
        path = PC__CPU_AVX2;
    else if (want && !strcmp(want, "avx512"))
        path = PC__CPU_AVX512;
    /* An unknown value is ignored: the best path, as without the variable. */
    return pc__cpu_path_force(path);
}

const char *pc__cpu_path_name(pc__cpu_path_id path)
{
    return path == PC__CPU_AVX512 ? "avx512" : path == PC__CPU_AVX2 ? "avx2" : "baseline";
}

const char *pc_cpu_path(void) { return pc__cpu_path_name(pc__cpu_path()); }
