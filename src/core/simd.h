/* What the vectorised CPU loops share: 8-lane GCC vector types (one AVX register, or two SSE ones)
 * and the run-time choice of instruction set, so that one binary runs everywhere without
 * -march=native: target_clones (AVX2+FMA or the baseline, chosen at load time) for the loops that
 * have no AVX-512 kernel, explicit paths (cpu_path.h: baseline, AVX2, AVX-512) for those that have. */
#ifndef PC_SIMD_H
#define PC_SIMD_H

#include <stdint.h>

#define PC__LANES 8

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(PC_NO_MULTIVERSION)
#define PC__MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
/* Kernels with explicit paths (cpu_path.h): one wrapper per instruction set around the same inline
 * body, chosen at run time by pc__cpu_path(). */
#define PC__HAVE_CPU_PATHS 1
#define PC__TARGET_AVX2 __attribute__((target("arch=x86-64-v3")))
#define PC__TARGET_AVX512 __attribute__((target("arch=x86-64-v4")))
#else
#define PC__MULTIVERSION
#define PC__HAVE_CPU_PATHS 0
#define PC__TARGET_AVX2
#define PC__TARGET_AVX512
#endif
#define PC__INLINE static inline __attribute__((always_inline))

/* Passes that read an image once from front to back ask for its bytes this far ahead. A caller's
 * buffer is usually in 4 KiB pages (malloc, NumPy; transparent huge pages only where madvised), and
 * the processor's stream prefetcher stops at each page's end, so one core keeps few lines in flight:
 * on the Xeon VMs of bench/RESULTS.md (2026-11-28) a 400 MB image took 39 ms to read on 2 cores
 * and 19 ms with each 64 bytes asked for 8 KiB ahead (4 KiB: 25 ms; 16-32 KiB: 19-21 ms). A
 * prefetch never faults, so the last ones may point past the end. */
#define PC__STREAM_AHEAD 8192
PC__INLINE void pc__prefetch_stream(const void *at)
{
    __builtin_prefetch((const void *)((uintptr_t)at + PC__STREAM_AHEAD)); /* an address, no pointer past the end */
}

typedef float vfloat __attribute__((vector_size(PC__LANES * sizeof(float))));
typedef int32_t vint __attribute__((vector_size(PC__LANES * sizeof(float))));

#endif
