/* The nearest-centre kernel of k-means on the CPU: |c|^2 - 2 x.c for tiles of 4 points against two
 * vectors of centres at a time (one FMA per point, centre and dimension): 16-lane vectors with AVX-512,
 * 8-lane ones compiled for AVX2 + FMA and the x86-64 baseline, chosen at run time (cpu_path.h). */
#include "internal_km.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../core/cpu_path.h"
#include "../core/simd.h"

_Static_assert(PC__KM_LANES == PC__LANES, "k-means lanes are the shared vector width");



PC__INLINE vfloat load(const float *p)
{
    vfloat v;
    memcpy(&v, p, sizeof v);
    return v;
}

pc_status pc__km_centres_init(pc__km_centres *c, size_t k, size_t dim)
{
    c->k = k;
    c->dim = dim;
    c->kpad = (k + 4 * PC__KM_LANES - 1) / (4 * PC__KM_LANES) * (4 * PC__KM_LANES); /* two 16-lane vectors */
    c->ct = pc__alloc(dim * c->kpad, sizeof *c->ct, "transposed centres");
    c->cc = pc__alloc(c->kpad, sizeof *c->cc, "centre norms");
    if (!c->ct || !c->cc) {
        pc__km_centres_free(c);
        return PC_OUT_OF_MEMORY;
    }
    return PC_OK;
}

void pc__km_centres_set(pc__km_centres *c, const float *centres)
{
    for (size_t j = 0; j < c->kpad; j++) {
        double norm = 0;
        for (size_t d = 0; d < c->dim; d++) {
            float v = j < c->k ? centres[j * c->dim + d] : 0.0f;
            c->ct[d * c->kpad + j] = v;
            norm += (double)v * v;
        }
        c->cc[j] = j < c->k ? (float)norm : INFINITY;
    }
}

void pc__km_centres_free(pc__km_centres *c)
{
    free(c->ct);
    free(c->cc);
    c->ct = c->cc = NULL;
}

/* -2 x of a tile's points (exact: a power of two), made once for every block of centres rather than
 * in the loop over them, where the multiplications took issue slots from the multiply-adds; points of
 * more than M2_DIM values are multiplied in the loop. */
#define M2_DIM 64
#define PREPARE_M2(m2, x, dim, P)                               \
    do {                                                        \
        if ((dim) <= M2_DIM)                                    \
            for (size_t q = 0; q < (size_t)(P) * (dim); q++)    \
                (m2)[q] = -2.0f * (x)[q];                       \
    } while (0)

/* The tile at 8 lanes (AVX2 or the baseline, the clone target_clones picks) ... */
#define TILE_LANES 8
#define TILE_F vfloat
#define TILE_I vint
#define TILE_INLINE PC__INLINE
#define TILE_NAME(x) x##8
#include "assign_tile.h"
#undef TILE_LANES
#undef TILE_F
#undef TILE_I
#undef TILE_INLINE
#undef TILE_NAME

PC__MULTIVERSION static void rows8(const float *x, size_t begin, size_t end, const pc__km_centres *c,
                                   int32_t *labels, float *first, float *second, int two)
{
    if (two)
        rows_inline8(x, begin, end, c, labels, first, second, 1);
    else
        rows_inline8(x, begin, end, c, labels, NULL, NULL, 0);
}

#if PC__HAVE_CPU_PATHS
/* ... and at 16 (AVX-512: twice the centres a multiply-add, 32 registers for the tile's accumulators). */
typedef float vfloat16 __attribute__((vector_size(16 * sizeof(float))));
typedef int32_t vint16 __attribute__((vector_size(16 * sizeof(float))));
#define TILE_LANES 16
#define TILE_F vfloat16
#define TILE_I vint16
#define TILE_INLINE static inline __attribute__((always_inline, target("arch=x86-64-v4")))
#define TILE_NAME(x) x##16
#include "assign_tile.h"

PC__TARGET_AVX512 static void rows16(const float *x, size_t begin, size_t end, const pc__km_centres *c,
                                     int32_t *labels, float *first, float *second, int two)
{
    if (two)
        rows_inline16(x, begin, end, c, labels, first, second, 1);
    else
        rows_inline16(x, begin, end, c, labels, NULL, NULL, 0);
}
#endif

static void assign_rows(const float *x, size_t begin, size_t end, const pc__km_centres *c, int32_t *labels,
                        float *first, float *second, int two)
{
#if PC__HAVE_CPU_PATHS
    if (pc__cpu_path() == PC__CPU_AVX512) {
        rows16(x, begin, end, c, labels, first, second, two);
        return;
    }
#endif
    rows8(x, begin, end, c, labels, first, second, two);
}

void pc__km_assign(const float *x, size_t begin, size_t end, const pc__km_centres *c, int32_t *labels)
{
    assign_rows(x, begin, end, c, labels, NULL, NULL, 0);
}

void pc__km_assign_two(const float *x, size_t count, const pc__km_centres *c, int32_t *labels, float *first,
                       float *second)
{
    assign_rows(x, 0, count, c, labels, first, second, 1);
}

/* An upper bound on |a - b| (dim values), for Hamerly's bounds: float32 differences and squares in
 * vector lanes (all the terms are >= 0, so in any order the sum's relative error is at most
 * (dim + 1) 2^-24, and the differences' 2^-24 each doubles when squared), then widened by that bound. */
PC__MULTIVERSION
double pc__km_dist_up(const float *a, const float *b, size_t dim)
{
    vfloat acc = {0};
    size_t d = 0;
    for (; d + PC__KM_LANES <= dim; d += PC__KM_LANES) {
        vfloat t = load(a + d) - load(b + d);
        acc += t * t;
    }
    /* the lanes' sum by halves (any order bounds the same way) */
    acc += __builtin_shufflevector(acc, acc, 4, 5, 6, 7, 0, 1, 2, 3);
    acc += __builtin_shufflevector(acc, acc, 2, 3, 0, 1, 6, 7, 4, 5);
    acc += __builtin_shufflevector(acc, acc, 1, 0, 3, 2, 5, 4, 7, 6);
    float s = acc[0];
    for (; d < dim; d++) {
        float t = a[d] - b[d];
        s += t * t;
    }
    double bound = (double)s * (1.0 + (double)(dim + 4) * 0x1.02p-23) + 0x1p-120;
    return sqrt(bound) * (1.0 + 0x1p-50);
}
