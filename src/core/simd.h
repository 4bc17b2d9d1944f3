/* What the vectorised CPU loops share: 8-lane GCC vector types (one AVX register, or two SSE ones)
 * and the run-time choice between AVX2+FMA code and the baseline (target_clones), so that one binary
 * runs everywhere without -march=native. */
#ifndef PC_SIMD_H
#define PC_SIMD_H

#include <stdint.h>

#define PC__LANES 8

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(PC_NO_MULTIVERSION)
#define PC__MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define PC__MULTIVERSION
#endif
#define PC__INLINE static inline __attribute__((always_inline))

typedef float vfloat __attribute__((vector_size(PC__LANES * sizeof(float))));
typedef int32_t vint __attribute__((vector_size(PC__LANES * sizeof(float))));

#endif
