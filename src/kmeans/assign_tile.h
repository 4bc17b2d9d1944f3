/* The nearest-centre tile of assign.c, written once for two vector widths: assign.c includes this file
 * with TILE_LANES 8 (AVX2 or the baseline, through target_clones) and 16 (AVX-512), after defining
 * TILE_F and TILE_I (float and int32 vectors of TILE_LANES lanes), TILE_INLINE (the functions'
 * attributes) and TILE_NAME(x) (x with the width's suffix). The arithmetic of a centre is the same in
 * any lane of either width, |c|^2 then one multiply-add a dimension in order, and the choice among
 * equal values is the lowest index: the labels do not depend on the width. */

TILE_INLINE TILE_F TILE_NAME(select_f)(TILE_I mask, TILE_F a, TILE_F b)
{
    return (TILE_F)(((TILE_I)a & mask) | ((TILE_I)b & ~mask));
}

TILE_INLINE TILE_I TILE_NAME(select_i)(TILE_I mask, TILE_I a, TILE_I b) { return (a & mask) | (b & ~mask); }

TILE_INLINE TILE_F TILE_NAME(load)(const float *p)
{
    TILE_F v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The lanes rotated by 8 (16 lanes only), 4, 2 and 1: one permute each. */
#if TILE_LANES == 16
#define TILE_ROT8(v) __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7)
#define TILE_ROT4(v) __builtin_shufflevector(v, v, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3)
#define TILE_ROT2(v) __builtin_shufflevector(v, v, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1)
#define TILE_ROT1(v) __builtin_shufflevector(v, v, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0)
#else
#define TILE_ROT4(v) __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3)
#define TILE_ROT2(v) __builtin_shufflevector(v, v, 2, 3, 4, 5, 6, 7, 0, 1)
#define TILE_ROT1(v) __builtin_shufflevector(v, v, 1, 2, 3, 4, 5, 6, 7, 0)
#endif

/* The smallest value of the lanes, in every lane (a rotation and a minimum per halving). */
#define TILE_ALL_MIN(T, SELECT, v)                   \
    do {                                             \
        T r_;                                        \
        if (TILE_LANES == 16) {                      \
            r_ = TILE_ROT8_OR_SELF(v);               \
            v = SELECT(r_ < v, r_, v);               \
        }                                            \
        r_ = TILE_ROT4(v);                           \
        v = SELECT(r_ < v, r_, v);                   \
        r_ = TILE_ROT2(v);                           \
        v = SELECT(r_ < v, r_, v);                   \
        r_ = TILE_ROT1(v);                           \
        v = SELECT(r_ < v, r_, v);                   \
    } while (0)
#if TILE_LANES == 16
#define TILE_ROT8_OR_SELF(v) TILE_ROT8(v)
#else
#define TILE_ROT8_OR_SELF(v) (v)
#endif

/* P points (P = 4 or 1) against all centres, two vectors of centres at a time: labels[p], and with
 * `two` (a constant where it is inlined) also first[p], the lowest value, and second[p], the lowest
 * over the other centres (Hamerly's scans, hamerly.c, need the runner-up for their lower bound). */
TILE_INLINE void TILE_NAME(tile)(const float *x, size_t dim, const pc__km_centres *c, int32_t *labels, float *first,
                                 float *second, int P, int two)
{
    TILE_F best[4], next[4];
    TILE_I best_idx[4], lane;
    for (int l = 0; l < TILE_LANES; l++)
        lane[l] = l;
    for (int p = 0; p < P; p++) {
        best[p] = next[p] = (TILE_F){0} + INFINITY;
        best_idx[p] = (TILE_I){0};
    }
    float m2[4 * M2_DIM];
    PREPARE_M2(m2, x, dim, P);
    for (size_t j = 0; j < c->kpad; j += 2 * TILE_LANES) {
        TILE_F a0[4], a1[4];
        TILE_F n0 = TILE_NAME(load)(c->cc + j), n1 = TILE_NAME(load)(c->cc + j + TILE_LANES);
        for (int p = 0; p < P; p++) {
            a0[p] = n0;
            a1[p] = n1;
        }
        for (size_t d = 0; d < dim; d++) {
            TILE_F c0 = TILE_NAME(load)(c->ct + d * c->kpad + j), c1 = TILE_NAME(load)(c->ct + d * c->kpad + j + TILE_LANES);
            for (int p = 0; p < P; p++) {
                float m2x = dim <= M2_DIM ? m2[p * dim + d] : -2.0f * x[p * dim + d];
                a0[p] += m2x * c0;
                a1[p] += m2x * c1;
            }
        }
        for (int p = 0; p < P; p++) {
            TILE_I lt0 = a0[p] < best[p];
            if (two)
                next[p] = TILE_NAME(select_f)(lt0, best[p], TILE_NAME(select_f)(a0[p] < next[p], a0[p], next[p]));
            best[p] = TILE_NAME(select_f)(lt0, a0[p], best[p]);
            best_idx[p] = TILE_NAME(select_i)(lt0, lane + (int32_t)j, best_idx[p]);
            TILE_I lt1 = a1[p] < best[p];
            if (two)
                next[p] = TILE_NAME(select_f)(lt1, best[p], TILE_NAME(select_f)(a1[p] < next[p], a1[p], next[p]));
            best[p] = TILE_NAME(select_f)(lt1, a1[p], best[p]);
            best_idx[p] = TILE_NAME(select_i)(lt1, lane + (int32_t)(j + TILE_LANES), best_idx[p]);
        }
    }
    /* Across the lanes: the lowest value, the lowest centre index among the lanes that hold it, and
     * the runner-up: the lowest of that lane's second value and the other lanes' best. */
    const TILE_I none = (TILE_I){0} + INT32_MAX;
    for (int p = 0; p < P; p++) {
        TILE_F b = best[p];
        TILE_ALL_MIN(TILE_F, TILE_NAME(select_f), b);
        TILE_I bi = TILE_NAME(select_i)(best[p] == b, best_idx[p], none);
        TILE_ALL_MIN(TILE_I, TILE_NAME(select_i), bi);
        labels[p] = bi[0];
        if (!two)
            continue;
        TILE_F rest = TILE_NAME(select_f)(best_idx[p] == bi, next[p], best[p]);
        TILE_ALL_MIN(TILE_F, TILE_NAME(select_f), rest);
        first[p] = b[0];
        second[p] = rest[0];
    }
}

/* Rows [begin, end) of x: labels (and with `two`, first and second) by tiles of 4 points. */
TILE_INLINE void TILE_NAME(rows_inline)(const float *x, size_t begin, size_t end, const pc__km_centres *c, int32_t *labels,
                                 float *first, float *second, int two)
{
    size_t dim = c->dim, i = begin;
    for (; i + 4 <= end; i += 4)
        TILE_NAME(tile)(x + i * dim, dim, c, labels + i, two ? first + i : NULL, two ? second + i : NULL, 4, two);
    for (; i < end; i++)
        TILE_NAME(tile)(x + i * dim, dim, c, labels + i, two ? first + i : NULL, two ? second + i : NULL, 1, two);
}

#undef TILE_ROT8
#undef TILE_ROT4
#undef TILE_ROT2
#undef TILE_ROT1
#undef TILE_ROT8_OR_SELF
#undef TILE_ALL_MIN
