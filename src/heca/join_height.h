/* HECA's join height (ALGORITHMS.md section 3a step 3), one text for the host (heca.c) and the GPU
 * (cuda_heca.cu): comparisons of the stored heights only, so both give the same double. */
#ifndef PC_HECA_JOIN_HEIGHT_H
#define PC_HECA_JOIN_HEIGHT_H

#include <stdint.h>

#if defined(__CUDACC__)
#define PC__HECA_FN __host__ __device__ static __forceinline__
#else
#define PC__HECA_FN static inline
#endif

/* The height at which components a and b join in a member's dendrogram, held as a union-by-rank forest
 * over its components (up: the parent or -1; up_h: the height of the link to it; heca.c's
 * member_forest): the largest link on the path between them (the link their merge made is on it,
 * every other is older, so lower), 0 when a == b. The forest is O(log n) deep. */
PC__HECA_FN double pc__heca_join_height(const int32_t *up, const double *up_h, int32_t a, int32_t b)
{
    if (a == b)
        return 0;
    int32_t path[64];
    double high[64];
    int len = 0;
    double h = 0;
    for (int32_t x = a; x >= 0 && len < 64; x = up[x]) {
        path[len] = x;
        high[len++] = h;
        if (up[x] >= 0)
            h = up_h[x] > h ? up_h[x] : h;
    }
    double hb = 0;
    for (int32_t y = b; y >= 0; y = up[y]) {
        for (int i = 0; i < len; i++)
            if (path[i] == y)
                return high[i] > hb ? high[i] : hb;
        hb = up_h[y] > hb ? up_h[y] : hb;
    }
    return 1; /* not reached: the dendrogram joins everything */
}

#endif
