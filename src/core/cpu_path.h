/* Which instruction set the CPU kernels run: the x86-64 baseline, AVX2 + FMA (x86-64-v3) or AVX-512
 * (x86-64-v4: F, BW, CD, DQ, VL). Chosen once per process from the processor; PARCLUST_CPU_PATH =
 * baseline | avx2 | avx512 asks for a path (tests, benchmarks), granted only as far as the processor
 * goes, so that a request never ends in an illegal instruction.
 *
 * Why explicit paths and not a third target_clones clone ("arch=x86-64-v4"): target_clones picks its
 * clone in an ifunc resolver when the program is loaded, which nothing can steer afterwards, so a test
 * could not run the AVX2 clone on a processor that has AVX-512; and a v4 clone of the 8-lane loops
 * would still work in 256-bit registers (GCC's vector types are as wide as the source says), so the
 * 16-lane kernels have to be written as such anyway. A kernel that has paths therefore keeps one
 * function per path, compiled from the same inline body (PC__TARGET_AVX2 / PC__TARGET_AVX512 on the
 * wrapper), and a switch on pc__cpu_path() per call: one predictable branch, no function pointer
 * that a test could not reset. */
#ifndef PC_CPU_PATH_H
#define PC_CPU_PATH_H

#include "simd.h"

typedef enum { PC__CPU_BASELINE = 0, PC__CPU_AVX2 = 1, PC__CPU_AVX512 = 2 } pc__cpu_path_id;

/* The path the kernels take now (the first call decides, reading the processor and the variable). */
pc__cpu_path_id pc__cpu_path(void);
/* The best path this processor and this build can run. */
pc__cpu_path_id pc__cpu_path_best(void);
/* Tests: makes the kernels take `path` from now on, or the best one below it that can run here;
 * returns the path set. Not for use while kernels run on other threads. */
pc__cpu_path_id pc__cpu_path_force(pc__cpu_path_id path);
/* "baseline", "avx2", "avx512". */
const char *pc__cpu_path_name(pc__cpu_path_id path);
/* AVX-512 VBMI (byte permutes), which x86-64-v4 does not include: HCA's AVX-512 cell index needs it. */
int pc__cpu_has_vbmi(void);

#endif
