/* The nearest-centre kernel of k-means on the CPU: |c|^2 - 2 x.c for tiles of 4 points against 16
 * centres at a time in vector registers (one FMA per point, centre and dimension), compiled for
 * AVX2 + FMA and the x86-64 baseline with run-time dispatch. */
#include "internal_km.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../core/simd.h"

_Static_assert(PC__KM_LANES == PC__LANES, "k-means lanes are the shared vector width");



PC__INLINE vfloat select_f(vint mask, vfloat a, vfloat b) { return (vfloat)(((vint)a & mask) | ((vint)b & ~mask)); }
PC__INLINE vint select_i(vint mask, vint a, vint b) { return (a & mask) | (b & ~mask); }

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
    c->kpad = (k + 2 * PC__KM_LANES - 1) / (2 * PC__KM_LANES) * (2 * PC__KM_LANES);
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

/* P points (P = 4 or 1) against all centres, two vectors of centres at a time. */
PC__INLINE void assign_tile(const float *x, size_t dim, const pc__km_centres *c, int32_t *labels, int P)
{
    vfloat best[4];
    vint best_idx[4];
    const vint lane = {0, 1, 2, 3, 4, 5, 6, 7};
    for (int p = 0; p < P; p++) {
        best[p] = (vfloat){0} + INFINITY;
        best_idx[p] = (vint){0};
    }
    float m2[4 * M2_DIM];
    PREPARE_M2(m2, x, dim, P);
    for (size_t j = 0; j < c->kpad; j += 2 * PC__KM_LANES) {
        vfloat a0[4], a1[4];
        vfloat n0 = load(c->cc + j), n1 = load(c->cc + j + PC__KM_LANES);
        for (int p = 0; p < P; p++) {
            a0[p] = n0;
            a1[p] = n1;
        }
        for (size_t d = 0; d < dim; d++) {
            vfloat c0 = load(c->ct + d * c->kpad + j), c1 = load(c->ct + d * c->kpad + j + PC__KM_LANES);
            for (int p = 0; p < P; p++) {
                float m2x = dim <= M2_DIM ? m2[p * dim + d] : -2.0f * x[p * dim + d];
                a0[p] += m2x * c0;
                a1[p] += m2x * c1;
            }
        }
        for (int p = 0; p < P; p++) {
            vint lt0 = a0[p] < best[p];
            best[p] = select_f(lt0, a0[p], best[p]);
            best_idx[p] = select_i(lt0, lane + (int32_t)j, best_idx[p]);
            vint lt1 = a1[p] < best[p];
            best[p] = select_f(lt1, a1[p], best[p]);
            best_idx[p] = select_i(lt1, lane + (int32_t)(j + PC__KM_LANES), best_idx[p]);
        }
    }
    for (int p = 0; p < P; p++) {
        float b = best[p][0];
        int32_t bi = best_idx[p][0];
        for (int l = 1; l < PC__KM_LANES; l++)
            if (best[p][l] < b || (best[p][l] == b && best_idx[p][l] < bi)) {
                b = best[p][l];
                bi = best_idx[p][l];
            }
        labels[p] = bi;
    }
}

PC__MULTIVERSION
void pc__km_assign(const float *x, size_t begin, size_t end, const pc__km_centres *c, int32_t *labels)
{
    size_t dim = c->dim, i = begin;
    for (; i + 4 <= end; i += 4)
        assign_tile(x + i * dim, dim, c, labels + i, 4);
    for (; i < end; i++)
        assign_tile(x + i * dim, dim, c, labels + i, 1);
}

/* assign_tile's labels (the same arithmetic, lane for lane, and the same choice among equal values) and
 * beside them the smallest value and the second smallest over the other centres: Hamerly's full scan
 * (hamerly.c) needs the labels exactly as Lloyd's, and the runner-up for its lower bound. */
PC__INLINE void assign_tile_two(const float *x, size_t dim, const pc__km_centres *c, int32_t *labels, float *first,
                                float *second, int P)
{
    vfloat best[4], next[4];
    vint best_idx[4];
    const vint lane = {0, 1, 2, 3, 4, 5, 6, 7};
    for (int p = 0; p < P; p++) {
        best[p] = next[p] = (vfloat){0} + INFINITY;
        best_idx[p] = (vint){0};
    }
    float m2[4 * M2_DIM];
    PREPARE_M2(m2, x, dim, P);
    for (size_t j = 0; j < c->kpad; j += 2 * PC__KM_LANES) {
        vfloat a0[4], a1[4];
        vfloat n0 = load(c->cc + j), n1 = load(c->cc + j + PC__KM_LANES);
        for (int p = 0; p < P; p++) {
            a0[p] = n0;
            a1[p] = n1;
        }
        for (size_t d = 0; d < dim; d++) {
            vfloat c0 = load(c->ct + d * c->kpad + j), c1 = load(c->ct + d * c->kpad + j + PC__KM_LANES);
            for (int p = 0; p < P; p++) {
                float m2x = dim <= M2_DIM ? m2[p * dim + d] : -2.0f * x[p * dim + d];
                a0[p] += m2x * c0;
                a1[p] += m2x * c1;
            }
        }
        for (int p = 0; p < P; p++) {
            vint lt0 = a0[p] < best[p];
            next[p] = select_f(lt0, best[p], select_f(a0[p] < next[p], a0[p], next[p]));
            best[p] = select_f(lt0, a0[p], best[p]);
            best_idx[p] = select_i(lt0, lane + (int32_t)j, best_idx[p]);
            vint lt1 = a1[p] < best[p];
            next[p] = select_f(lt1, best[p], select_f(a1[p] < next[p], a1[p], next[p]));
            best[p] = select_f(lt1, a1[p], best[p]);
            best_idx[p] = select_i(lt1, lane + (int32_t)(j + PC__KM_LANES), best_idx[p]);
        }
    }
    for (int p = 0; p < P; p++) {
        float b = best[p][0];
        int32_t bi = best_idx[p][0];
        int bl = 0;
        for (int l = 1; l < PC__KM_LANES; l++)
            if (best[p][l] < b || (best[p][l] == b && best_idx[p][l] < bi)) {
                b = best[p][l];
                bi = best_idx[p][l];
                bl = l;
            }
        float s = next[p][bl];
        for (int l = 0; l < PC__KM_LANES; l++)
            if (l != bl && best[p][l] < s)
                s = best[p][l];
        labels[p] = bi;
        first[p] = b;
        second[p] = s;
    }
}

PC__MULTIVERSION
void pc__km_assign_two(const float *x, size_t count, const pc__km_centres *c, int32_t *labels, float *first,
                       float *second)
{
    size_t dim = c->dim, i = 0;
    for (; i + 4 <= count; i += 4)
        assign_tile_two(x + i * dim, dim, c, labels + i, first + i, second + i, 4);
    for (; i < count; i++)
        assign_tile_two(x + i * dim, dim, c, labels + i, first + i, second + i, 1);
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
