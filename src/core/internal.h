/* What the library's source files share and users never see: error reporting, timing, the result
 * object's layout, allocation helpers. */
#ifndef PC_INTERNAL_H
#define PC_INTERNAL_H

#include "parclust.h"

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define PC__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PC__PRINTF(f, a)
#endif

/* Records the detail of a failure for pc_last_error() and returns `status`, so that error paths read
 * `return pc__fail(PC_INVALID_ARGUMENT, "k must be >= 1, got %d", k);`. */
pc_status pc__fail(pc_status status, const char *fmt, ...) PC__PRINTF(2, 3);
void pc__clear_error(void);

/* Allocation that records PC_OUT_OF_MEMORY with what was asked for; n * size overflow checked. */
void *pc__alloc(size_t n, size_t size, const char *what);
void *pc__calloc(size_t n, size_t size, const char *what);
/* For arrays of hundreds of MB (labels of an image): like pc__alloc, in huge pages where available. */
void *pc__alloc_large(size_t n, size_t size, const char *what);

double pc__now(void); /* monotonic seconds */

/* Called by every thread of an OpenMP team (or outside one): adds each thread's src (NULL: nothing)
 * into dst in thread order, so that the total does not depend on which thread finished first. */
void pc__team_add_ordered(double *dst, const double *src, size_t count);

/* Resolves AUTO and checks that the asked backend was built. work: pair evaluations expected,
 * used by AUTO to decide whether a GPU pays. */
pc_status pc__choose_backend(pc_backend asked, double work, pc_backend *chosen);

#define PC__MAX_STAGES 16

struct pc_result {
    size_t n, dim, k;
    int32_t *labels;  /* n */
    float *centers;   /* k x dim */
    int64_t *sizes;   /* k */
    float *modes;     /* n x dim, mean shift only */
    double *dendrogram;          /* HCA: (components - 1) x 4, SciPy linkage format */
    size_t components, cells;    /* HCA */
    int64_t *component_cells, *component_densities, *component_sizes; /* HCA: per component */
    /* HCA / HECA / HCA-MS (src/hca/refine.c, src/heca/): the grid's m (HECA: the reference grid's), the
     * members' m and component counts, the border points the refinement moved and those that changed
     * cluster. Fixed arrays: nothing more for pc_result_free to free. */
    int grid_m;
    size_t members;
    int member_m[16];
    size_t member_components[16];
    int64_t border_points, changed_points;
    int iterations;
    double inertia;   /* k-means */
    double distance_evaluations; /* k-means */
    int kmeans_algorithm;        /* k-means: pc_kmeans_algorithm */
    pc_backend backend;
    size_t stage_count;
    const char *stage_names[PC__MAX_STAGES]; /* static strings */
    double stage_seconds[PC__MAX_STAGES];
};

/* The start every algorithm shares: result and parameters present, *result cleared, the last error
 * reset, the points checked. */
pc_status pc__begin(const pc_points *points, const void *params, pc_result **result);
/* The same without the pass over the values (for backends that check them as they read them, and
 * for views of device memory, which the host cannot read). */
pc_status pc__begin_shape(const pc_points *points, const void *params, pc_result **result);
/* A plan's start (`what` names it): parameters present, the last error reset, n and dim >= 1, a known
 * type. The caller has checked its plan pointer and cleared *plan. */
pc_status pc__begin_plan(const void *params, size_t n, size_t dim, pc_dtype dtype, const char *what);
/* The view's shape: present, a type, n and dim >= 1, data, a stride at least a row. */
pc_status pc__points_check_shape(const pc_points *points);

pc_result *pc__result_new(size_t n, size_t dim);
void pc__result_add_stage(pc_result *result, const char *name, double seconds);

/* Converts row i of any view to float32. */
void pc__points_row_f32(const pc_points *points, size_t i, float *out);
/* Data in any units. The float32 kernels square coordinate differences, which overflow beyond about
 * 1e19 and lose every bit below about 1e-19, so mean shift and k-means work on the points times 2^e,
 * e chosen from the largest magnitude. Scaling by a power of two is exact in binary floating point:
 * every sum, product and comparison of the scaled run equals the unscaled one times a power of two,
 * so inside the safe range nothing changes, and outside it the result is the one the same data in
 * ordinary units would give (ARCHITECTURE.md, "Numbers in any units").
 * The exponent: 0 while max_abs is within [2^-24, 2^24] (0 included), else the e that brings it
 * into [1, 2). */
int pc__scale_exponent(double max_abs);
/* The largest magnitude of the view's values (the values are finite: checked before). */
double pc__points_max_abs(const pc_points *points);
/* The view times 2^e as packed float32 rows: the caller's memory when it already is that (e = 0,
 * packed float32), else a new copy that *owned receives (free it). */
pc_status pc__points_scaled_f32(const pc_points *points, int e, const float **data, float **owned);
/* Scales count float32 values in place by 2^e (e may be negative: results back to the user's units). */
void pc__scale_f32(float *values, size_t count, int e);

#endif
