/* What the k-means files share: the nearest-centre kernel, initialisations and Lloyd's loop. */
#ifndef PC_KMEANS_INTERNAL_H
#define PC_KMEANS_INTERNAL_H

#include "../core/internal.h"

#include <math.h>
#include <string.h>

#define PC__KM_LANES 8 /* = PC__LANES of src/core/simd.h */

/* Centres laid out for the nearest-centre kernel: transposed (dim x kpad, kpad a multiple of the
 * lanes) with |c|^2 beside them; padding centres have |c|^2 = +inf and are never nearest. */
typedef struct {
    size_t k, kpad, dim;
    float *ct; /* dim x kpad */
    float *cc; /* kpad */
} pc__km_centres;

pc_status pc__km_centres_init(pc__km_centres *c, size_t k, size_t dim);
void pc__km_centres_set(pc__km_centres *c, const float *centres);
void pc__km_centres_free(pc__km_centres *c);

/* labels[i] for points begin..end-1 of x (n x dim): the centre minimising |c|^2 - 2 x.c (the squared
 * distance less |x|^2), ties to the lower index. */
void pc__km_assign(const float *x, size_t begin, size_t end, const pc__km_centres *c, int32_t *labels);

/* Rows 0..count-1 of x: labels[i] as pc__km_assign gives them (the same values, the same ties), first[i]
 * its value |c|^2 - 2 x.c and second[i] the smallest value of the other centres (+inf with k = 1). */
/* An upper bound on the Euclidean distance between a and b (dim values each), in float32 lanes. */
double pc__km_dist_up(const float *a, const float *b, size_t dim);
void pc__km_assign_two(const float *x, size_t count, const pc__km_centres *c, int32_t *labels, float *first,
                       float *second);

/* Blocks for sums that must not depend on the thread count: each block's partial sum is added in
 * block order (an OpenMP reduction adds in whatever order threads finish). */
#define PC__KM_SUM_BLOCKS 256

/* Squared Euclidean distance in double. Inline in every file, compiled with the same (default)
 * floating-point flags where it ranks points for the empty-cluster rule (cpu.c, stream_pass.c): the
 * stream's ranking is then pc_kmeans's. */
static inline double pc__km_dist2(const float *a, const float *b, size_t dim)
{
    double s = 0;
    for (size_t d = 0; d < dim; d++) {
        double t = (double)a[d] - b[d];
        s += t * t;
    }
    return s;
}

/* Asks the kernel for huge pages over a large buffer not yet touched (Linux; a hint, nothing else):
 * the first touch of the points' copy and of Hamerly's bounds costs a page fault every 4 KiB, which on
 * the virtual machines these run on was about a tenth of a run. */
void pc__km_huge_pages(void *p, size_t bytes);

/* Initial centres (k x dim) from `seed`. threads: OpenMP threads for the distance passes (1 = none). */
pc_status pc__km_init(const float *x, size_t n, size_t dim, size_t k, pc_kmeans_init init, uint64_t seed,
                      int threads, float *centres);

typedef struct {
    int max_iter;
    double tol_abs; /* tol x mean feature variance */
    int threads;
    pc_progress_fn progress;
    void *progress_user;
    int fixed_shift; /* the CPU's fixed-point sums: x x 2^fixed_shift (pc__km_fixed_shift) */
    double distances; /* out: point-to-centre (and centre-to-centre) distances evaluated, added to */
} pc__km_options;

/* Where Lloyd's iterations run: the loop (lloyd.c) is the same for every backend. */
typedef struct {
    void *ctx;
    /* Assigns every point to its nearest centre and sums each cluster's points; *changed: how many
     * labels differ from the previous step's (all of them at the first). */
    pc_status (*step)(void *ctx, const float *centres, double *sums, int64_t *counts, size_t *changed);
    /* The current labels, on the host. */
    pc_status (*labels)(void *ctx, int32_t *labels);
    /* With relabel, assigns the points to `centres` once more; then the inertia. */
    pc_status (*finish)(void *ctx, const float *centres, int relabel, double *inertia);
    /* 1: step applies the empty-cluster rule itself, to its exact sums (the CPU engine); 0: the loop
     * applies pc__km_relocate_empty to the double sums step returned (the CUDA engine). */
    int relocates;
} pc__km_engine;

/* Lloyd's iterations from `centres` (updated in place), scikit-learn's loop and stopping rules. */
pc_status pc__km_lloyd(const pc__km_engine *e, const float *x, size_t n, size_t dim, size_t k, const pc__km_options *o,
                       float *centres, int *iterations, double *inertia);

/* The CPU engine over labels[] (n), sequential or OpenMP by o->threads. */
pc_status pc__km_lloyd_cpu(const float *x, size_t n, size_t dim, size_t k, pc__km_options *o, float *centres,
                           int32_t *labels, int *iterations, double *inertia);

/* The same iterations with Hamerly's bounds (hamerly.c): the labels, centres, iterations and inertia of
 * pc__km_lloyd_cpu, most points settled by their bounds without a scan of the centres. */
pc_status pc__km_hamerly_cpu(const float *x, size_t n, size_t dim, size_t k, pc__km_options *o, float *centres,
                             int32_t *labels, int *iterations, double *inertia);

/* Shared by the CPU engines (cpu.c): the inertia of labels[] under `centres`, in blocks added in order;
 * the fixed-point sums and counts of the clusters of labels[]. */
double pc__km_inertia_cpu(const float *x, size_t n, size_t dim, const float *centres, const int32_t *labels,
                          int threads);
pc_status pc__km_empty_rule_cpu(const float *x, size_t n, size_t dim, size_t k, const float *centres,
                                const int32_t *labels, float scale, int64_t *sums, int64_t *counts);

/* The CUDA backend of Lloyd's iterations (cuda.cu; cuda_off.c without CUDA): the same loop and
 * rules as pc__km_lloyd_cpu, iterations on the GPU. *bounded: 1 asks for Hamerly's bounds
 * (cuda_hamerly.cu: the labels, centres and iterations of `variant`'s Lloyd with fixed-point sums),
 * 0 on return where they could not be used and Lloyd's passes ran. Lloyd's passes leave o->distances
 * to the caller; the bounds add theirs. */
pc_status pc__km_lloyd_cuda(const float *x, size_t n, size_t dim, size_t k, pc__km_options *o,
                            pc_kmeans_cuda_variant variant, int *bounded, float *centres, int32_t *labels,
                            int *iterations, double *inertia, double *gpu_seconds);

/* scikit-learn's empty-cluster rule on per-cluster double sums (the CUDA loop's). */
pc_status pc__km_relocate_empty(const float *x, size_t n, size_t dim, size_t k, const float *old,
                                const int32_t *labels, double *sums, int64_t *counts);

/* The centre update every loop shares (lloyd.c, the stream): centre j = sums_j / counts_j rounded to
 * float (an empty cluster keeps its old centre); returns the total squared shift of the centres. */
double pc__km_update(const double *sums, const int64_t *counts, size_t k, size_t dim, const float *old,
                     float *centres);

/* The user's initial centres (k x dim) in the centred, scaled frame (mean, 2^e) of the points; centres
 * more than 2^40 spreads away are refused (float32's |c|^2 would overflow). */
pc_status pc__km_given_centres(const float *given, size_t k, size_t dim, const double *mean, int e, float *centres);

/* ---------------------------------------------------------------- exact sums (stream_exact.c)
 *
 * What makes a run independent of the order the points come in (blocks, threads, processes): every
 * sum over points is a sum of integers, which any order adds to the same total.
 *  - Before the frame is known (the scan), float32 values are summed exactly: v = M 2^(E - 150)
 *    (E the biased exponent, at least 1), bucket E / 32 gathers M << (E mod 32) in 128 bits.
 *  - After it, Lloyd's per-cluster sums are fixed point: q = llrintf(x 2^s), the same conversion as the
 *    CUDA backend's, s = 62 - ex - en with max|x| < 2^ex and n < 2^en, so that no partial sum, in any
 *    order, exceeds 2^62. */
__extension__ typedef __int128 pc__i128;

#define PC__KM_EXACT_BUCKETS 8
#define PC__KM_DIM_MAX 4096

static inline void pc__km_exact_add(pc__i128 *buckets, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    uint32_t e = (u >> 23) & 0xffu;
    int64_t m = (int64_t)((u & 0x7fffffu) | (e ? 0x800000u : 0u));
    e = e ? e : 1;
    m <<= e & 31u;
    buckets[e >> 5] += (u >> 31) ? -m : m;
}

/* The exact sum as a double (a fixed function of the buckets: the same for any order of adds). */
double pc__km_exact_value(const pc__i128 *buckets);

/* The frame k-means runs in (ARCHITECTURE.md, "Numbers in any units"): x = (v - mean) 2^e rounded to
 * float, mean and e from the points, and the fixed-point scale of the sums. */
typedef struct {
    size_t dim;
    uint64_t n;
    double *mean;     /* dim */
    int e;            /* points scaled by 2^e once centred */
    double unit;      /* 2^e */
    float *xlo, *xhi; /* dim: the smallest and largest centred, scaled value of each dimension */
    int shift;        /* fixed point: q = llrintf(x scale), scale = 2^shift */
    float scale;
} pc__km_frame;

/* From n points' per-dimension lo, hi (float32) and exact sums. */
pc_status pc__km_frame_make(pc__km_frame *f, size_t dim, uint64_t n, const float *lo, const float *hi,
                            const pc__i128 *sums);
void pc__km_frame_free(pc__km_frame *f);

/* The fixed-point exponent for n points whose centred, scaled values lie within [-amax, amax]. */
int pc__km_fixed_shift(float amax, uint64_t n);

static inline int64_t pc__km_fixed(float x, float scale) { return llrintf(x * scale); }

/* Rows begin..end-1 of a view as float32, then centred and scaled: out[(i - begin) dim + d]. */
void pc__km_centred_rows(const pc_points *v, size_t begin, size_t end, const double *mean, double unit, float *out);

/* Rows begin..end-1 into the scan sums (lo, hi, exact sums). Returns end, or the first row holding a
 * value that is not finite in float32 (*bad_dim: its dimension). */
size_t pc__km_scan_rows(const pc_points *v, size_t begin, size_t end, float *row, float *lo, float *hi,
                        pc__i128 *sums, size_t *bad_dim);

/* scikit-learn's tolerance, tol x the mean over dimensions of the variance, from the fixed-point
 * values' sums t1[dim] and sums of squares t2[dim] over n points: n t2 - t1^2 is exact in 128 bits. */
double pc__km_tolerance(double tol, uint64_t n, size_t dim, const int64_t *t1, const pc__i128 *t2, int shift);

/* Fixed-point sums to double ones: (double)q 2^-shift, as the CUDA backend's reduction does. */
void pc__km_fixed_to_double(const int64_t *fixed, size_t count, int shift, double *out);

/* ---------------------------------------------------------------- farthest points (stream_far.c)
 *
 * scikit-learn's empty-cluster rule: the e empty clusters, in index order, take the e points farthest
 * from their (old) centres. The points are ranked by that distance, then by their coordinates
 * (smallest first, dimension by dimension): a total order of what matters (two points equal in both
 * are the same point under the same centres, in the same cluster), so the e chosen do not depend on
 * the order the points were offered in. A bounded list keeps the `cap` farthest. */
typedef struct {
    size_t cap, count, dim;
    double *dist;  /* cap, by slot */
    int32_t *label;
    float *x;      /* cap x dim */
    size_t *heap;  /* slots, a min-heap: the nearest of the kept at the top */
    double floor;  /* with a full list, the top's distance: points nearer are not kept */
} pc__km_far;

pc_status pc__km_far_init(pc__km_far *f, size_t cap, size_t dim);
void pc__km_far_free(pc__km_far *f);
void pc__km_far_clear(pc__km_far *f);
void pc__km_far_push(pc__km_far *f, double dist, int32_t label, const float *x);
static inline void pc__km_far_offer(pc__km_far *f, double dist, int32_t label, const float *x)
{
    if (f->count < f->cap || dist >= f->floor)
        pc__km_far_push(f, dist, label, x);
}
void pc__km_far_merge(pc__km_far *into, const pc__km_far *from);
/* Orders f->heap farthest first (the list is then read, not offered to). */
void pc__km_far_sort(pc__km_far *f);
/* The rule on fixed-point sums: the empty clusters take the farthest points of the sorted list. */
void pc__km_relocate_fixed(const pc__km_far *sorted, size_t k, size_t dim, float scale, int64_t *sums,
                           int64_t *counts);

#endif
