/* The k-means stream's state (stream.c: the calls and merges; stream_pass.c: the passes over a block;
 * stream_sample.c: the sample). */
#ifndef PC_KMEANS_STREAM_INTERNAL_H
#define PC_KMEANS_STREAM_INTERNAL_H

#include "internal_km.h"
#include "stream_gpu.h"

#define PC__KM_CHUNK 1024 /* rows converted, assigned and summed while they are in cache */

/* ---------------------------------------------------------------- the sample (stream_sample.c) */

typedef struct {
    size_t cap, count, dim; /* dim 0: keys and indices only */
    uint64_t *key, *index;  /* by slot */
    float *rows;            /* cap x dim: the points' float32 values */
    size_t *heap;           /* slots, a max-heap of keys: the largest kept on top */
} pc__km_sample;

uint64_t pc__km_sample_key(uint64_t seed, uint64_t index);
pc_status pc__km_sample_init(pc__km_sample *s, size_t cap, size_t dim);
void pc__km_sample_free(pc__km_sample *s);
/* Keys below this may enter (UINT64_MAX while not full). */
uint64_t pc__km_sample_ceiling(const pc__km_sample *s);
void pc__km_sample_offer(pc__km_sample *s, uint64_t key, uint64_t index, const float *row);
void pc__km_sample_merge(pc__km_sample *into, const pc__km_sample *from);
/* The rows (count x dim), by increasing index. */
pc_status pc__km_sample_rows(const pc__km_sample *s, float *out);

/* ---------------------------------------------------------------- partial states
 *
 * What a stream gathers from its blocks, and what two streams merge (stream.c; exported as bytes by
 * pc_kmeans_stream_partial). Every member is a plain array; all but the sample and the farthest points
 * merge by addition, those two by keeping the smallest keys / the farthest of both. */

/* The scan: point count, per-dimension extremes (merged by min / max) and exact sums, the sample. */
typedef struct {
    uint64_t n;
    float *lo, *hi;  /* dim */
    pc__i128 *sums;  /* dim x PC__KM_EXACT_BUCKETS */
    pc__km_sample sample;
} pc__km_scan_part;

/* Squared distances to the centres, rounded to float32 and summed exactly: by biased exponent, the
 * mantissas. */
#define PC__KM_INERTIA_BUCKETS 256

/* One pass of Lloyd's iterations. */
typedef struct {
    uint64_t n;         /* points added */
    int64_t *counts;    /* k */
    int64_t *sums;      /* k x dim, fixed point */
    pc__i128 *inertia;  /* PC__KM_INERTIA_BUCKETS */
    pc__i128 *squares;  /* dim: sums of q^2 (first pass only: the tolerance) */
    pc__km_far far;     /* the k - 1 points farthest from their centres */
} pc__km_pass_part;

enum { PC__KM_SCAN = 1, PC__KM_ADD, PC__KM_DONE, PC__KM_BROKEN };

struct pc_kmeans_stream {
    pc_kmeans_params params; /* initial_centers: NULL (the copy is `given`) */
    float *given;            /* k x dim, PC_INIT_GIVEN */
    size_t dim, k;
    int threads;             /* 1: sequential */
    pc_backend backend;
    pc__km_stream_gpu *gpu;  /* CUDA: the nearest centres of the passes' pieces */
    int holding;             /* pc_kmeans_stream_hold was called: `held` is the caller's block */
    pc_points held;
    pc__km_held *held_gpu;   /* CUDA, where it fits: the held block's rows on the GPU */
    int phase;
    int iterations;          /* passes stepped */
    pc__km_scan_part scan;
    pc__km_frame frame;      /* from the scan, at start */
    double tol_abs;
    float *centres;          /* k x dim, in the frame */
    pc__km_centres layout;   /* the same, for pc__km_assign */
    uint64_t fingerprint;    /* of frame, centres and iteration: passes merge only when equal */
    pc__km_pass_part pass;
    pc__km_pass_part *team;  /* one per thread: a block's sums before they join `pass` */
    int64_t *sizes;          /* the last pass's counts */
    double inertia;          /* the last pass's, in the frame */
    double t_scan, t_init, t_lloyd;
};

pc_status pc__km_scan_part_init(pc__km_scan_part *p, size_t dim, size_t sample);
void pc__km_scan_part_free(pc__km_scan_part *p);
pc_status pc__km_pass_part_init(pc__km_pass_part *p, size_t k, size_t dim);
void pc__km_pass_part_free(pc__km_pass_part *p);
void pc__km_pass_part_clear(pc__km_pass_part *p, size_t k, size_t dim);
void pc__km_pass_part_merge(pc__km_pass_part *into, const pc__km_pass_part *from, size_t k, size_t dim);

/* The passes over one block (stream_pass.c), on the stream's threads. Each checks the block's values
 * and changes nothing when it refuses them. */
pc_status pc__km_stream_scan_block(pc_kmeans_stream *s, const pc_points *block, uint64_t first);
pc_status pc__km_stream_add_block(pc_kmeans_stream *s, const pc_points *block);
pc_status pc__km_stream_label_block(const pc_kmeans_stream *s, const pc_points *block, int32_t *labels);
/* Refuses a block's row whose value (dimension d) lies outside the scan's: "k-means stream <call>:
 * block row ...". */
pc_status pc__km_stream_refuse_row(const pc_points *block, size_t row, size_t d, const char *call);
/* The first of rows 0 .. m - 1 of x (centred) with a value outside the scan's (*d: its dimension), or m. */
size_t pc__km_stream_first_outside(const pc__km_frame *f, const float *x, size_t m, size_t dim, size_t *d);

/* The held block (stream_held.c): its rows kept on the GPU where the backend is CUDA and they fit,
 * else read from the caller's memory by the passes above. */
pc_status pc__km_stream_hold_block(pc_kmeans_stream *s, const pc_points *block);
pc_status pc__km_stream_add_held(pc_kmeans_stream *s);
pc_status pc__km_stream_label_held(const pc_kmeans_stream *s, int32_t *labels);

#endif
