/* Sums of per-thread arrays added in thread order, so that a parallel sum is the same every run. */
#include "internal.h"

#ifdef _OPENMP
#include <omp.h>
#endif

void pc__team_add_ordered(double *dst, const double *src, size_t count)
{
    int team = 1;
#ifdef _OPENMP
    team = omp_get_num_threads();
#endif
    /* Iteration t is thread t's (schedule static, 1), and ordered runs them in turn. */
#pragma omp for ordered schedule(static, 1)
    for (int t = 0; t < team; t++) {
#pragma omp ordered
        if (src)
            for (size_t q = 0; q < count; q++)
                dst[q] += src[q];
    }
}
