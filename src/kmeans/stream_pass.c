/* The k-means stream's passes over one block: the scan (extremes, exact sums, sample keys), Lloyd's
 * pass (nearest centres, fixed-point sums, farthest points, inertia) and the labelling. Chunks of rows
 * are shared among the stream's threads; each thread gathers into its own partial state, and the
 * threads' states join the stream's only once the whole block was read without fault. */
#include "stream_internal.h"

#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int thread_index(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* Value (i, d) of a view as double, for messages. */
static double raw_value(const pc_points *v, size_t i, size_t d)
{
    size_t es = v->dtype == PC_F64 ? 8 : v->dtype == PC_F32 ? 4 : v->dtype == PC_U16 ? 2 : 1;
    const unsigned char *p = (const unsigned char *)v->data + i * (v->stride ? v->stride : v->dim * es) + d * es;
    switch (v->dtype) {
    case PC_F32: { float x; memcpy(&x, p, 4); return x; }
    case PC_F64: { double x; memcpy(&x, p, 8); return x; }
    case PC_U16: { uint16_t x; memcpy(&x, p, 2); return x; }
    default: return *p;
    }
}

/* The first faulty row a team found: each thread notes its own first, the smallest is the block's. */
typedef struct {
    size_t row, dim;
} fault;

static void note_fault(fault *f, size_t row, size_t dim)
{
#pragma omp critical(pc__km_stream_fault)
    if (row < f->row) {
        f->row = row;
        f->dim = dim;
    }
}

static long chunk_count(size_t n)
{
    return (long)((n + PC__KM_CHUNK - 1) / PC__KM_CHUNK);
}

/* ---------------------------------------------------------------- scan */

typedef struct {
    float *lo, *hi, *row;
    pc__i128 *sums;
    pc__km_sample keys; /* keys and rows of the block (dim 0) */
} scan_scratch;

pc_status pc__km_stream_scan_block(pc_kmeans_stream *s, const pc_points *b, uint64_t first)
{
    size_t n = b->n, dim = s->dim;
    int threads = s->threads;
    scan_scratch *team = pc__calloc((size_t)threads, sizeof *team, "k-means scan");
    if (!team)
        return PC_OUT_OF_MEMORY;
    uint64_t ceiling = pc__km_sample_ceiling(&s->scan.sample), seed = s->params.seed;
    size_t cap = s->scan.sample.cap < n ? s->scan.sample.cap : n;
    fault bad = {SIZE_MAX, 0};
    int failed = 0;
    long chunks = chunk_count(n);
#pragma omp parallel num_threads(threads) if (threads > 1 && chunks >= 4) reduction(| : failed)
    {
        scan_scratch *t = &team[thread_index()];
        t->lo = malloc(3 * dim * sizeof *t->lo);
        t->sums = calloc(dim * PC__KM_EXACT_BUCKETS, sizeof *t->sums);
        failed |= !t->lo || !t->sums || pc__km_sample_init(&t->keys, cap, 0) != PC_OK;
        if (!failed) {
            t->hi = t->lo + dim;
            t->row = t->hi + dim;
            for (size_t d = 0; d < dim; d++) {
                t->lo[d] = INFINITY;
                t->hi[d] = -INFINITY;
            }
        }
        size_t mine = SIZE_MAX; /* this thread's first faulty row */
#pragma omp for schedule(static)
        for (long ch = 0; ch < chunks; ch++) {
            size_t begin = (size_t)ch * PC__KM_CHUNK, end = begin + PC__KM_CHUNK < n ? begin + PC__KM_CHUNK : n, bd = 0;
            if (failed || mine != SIZE_MAX)
                continue;
            size_t r = pc__km_scan_rows(b, begin, end, t->row, t->lo, t->hi, t->sums, &bd);
            if (r < end) {
                mine = r;
                note_fault(&bad, r, bd);
                continue;
            }
            for (size_t i = begin; i < end && cap; i++) {
                uint64_t key = pc__km_sample_key(seed, first + i);
                if (key < ceiling)
                    pc__km_sample_offer(&t->keys, key, i, NULL);
            }
        }
    }
    pc_status st = PC_OK;
    if (failed)
        st = pc__fail(PC_OUT_OF_MEMORY, "k-means stream: cannot allocate the scan's per-thread sums");
    else if (bad.row != SIZE_MAX) {
        double v = raw_value(b, bad.row, bad.dim);
        st = pc__fail(PC_INVALID_ARGUMENT, "k-means stream scan: block row %zu, dimension %zu: %g is %s", bad.row,
                      bad.dim, v, isfinite(v) ? "beyond float32's range" : "not finite");
    } else { /* the block joins the stream: extremes, sums, and the rows of the keys kept */
        float *row = pc__alloc(dim, sizeof *row, "k-means scan row");
        for (int q = 0; q < threads && row; q++) {
            scan_scratch *t = &team[q];
            if (!t->lo)
                continue; /* a thread the team did not start */
            for (size_t d = 0; d < dim; d++) {
                s->scan.lo[d] = t->lo[d] < s->scan.lo[d] ? t->lo[d] : s->scan.lo[d];
                s->scan.hi[d] = t->hi[d] > s->scan.hi[d] ? t->hi[d] : s->scan.hi[d];
            }
            for (size_t e = 0; e < dim * PC__KM_EXACT_BUCKETS; e++)
                s->scan.sums[e] += t->sums[e];
            for (size_t j = 0; j < t->keys.count; j++) {
                pc__points_row_f32(b, t->keys.index[j], row);
                pc__km_sample_offer(&s->scan.sample, t->keys.key[j], first + t->keys.index[j], row);
            }
        }
        if (row)
            s->scan.n += n;
        else
            st = PC_OUT_OF_MEMORY;
        free(row);
    }
    for (int q = 0; q < threads; q++) {
        free(team[q].lo);
        free(team[q].sums);
        pc__km_sample_free(&team[q].keys);
    }
    free(team);
    return st;
}

/* ---------------------------------------------------------------- Lloyd's pass */

static inline void inertia_add(pc__i128 *buckets, double dist)
{
    float f = (float)dist;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t e = u >> 23; /* dist >= 0 */
    buckets[e] += (int64_t)((u & 0x7fffffu) | (e ? 0x800000u : 0u));
}

size_t pc__km_stream_first_outside(const pc__km_frame *f, const float *x, size_t m, size_t dim, size_t *bad_dim)
{
    for (size_t i = 0; i < m; i++) {
        int out = 0;
        for (size_t d = 0; d < dim; d++)
            out |= !(x[i * dim + d] >= f->xlo[d] && x[i * dim + d] <= f->xhi[d]);
        for (size_t d = 0; out && d < dim; d++)
            if (!(x[i * dim + d] >= f->xlo[d] && x[i * dim + d] <= f->xhi[d])) {
                *bad_dim = d;
                return i;
            }
    }
    return m;
}

pc_status pc__km_stream_refuse_row(const pc_points *b, size_t row, size_t d, const char *call)
{
    double v = raw_value(b, row, d);
    if (!isfinite(v))
        return pc__fail(PC_INVALID_ARGUMENT, "k-means stream %s: block row %zu, dimension %zu is not finite (%g)", call,
                        row, d, v);
    return pc__fail(PC_INVALID_ARGUMENT, "k-means stream %s: block row %zu, dimension %zu: %g lies outside the values "
                    "the scan saw (the blocks added must be the blocks scanned)", call, row, d, v);
}

/* CUDA: queues the nearest centres of rows [p0, p1) of the block (at most a GPU piece) in the GPU's
 * slot, the rows centred here on the stream's threads into the slot's buffer. The caller holds the
 * GPU's lock and later takes the labels with pc__km_stream_gpu_wait. Rows a pass refuses are refused
 * by the pass's own check afterwards; the GPU's labels of those are not used. */
static pc_status gpu_submit(const pc_kmeans_stream *s, const pc_points *b, size_t p0, size_t p1, int slot)
{
    float *x = pc__km_stream_gpu_rows(s->gpu, slot);
    const pc__km_frame *f = &s->frame;
    long chunks = chunk_count(p1 - p0);
    int threads = s->threads;
    (void)threads;
#pragma omp parallel for num_threads(threads) if (threads > 1 && chunks >= 4) schedule(static)
    for (long ch = 0; ch < chunks; ch++) {
        size_t begin = p0 + (size_t)ch * PC__KM_CHUNK, end = begin + PC__KM_CHUNK < p1 ? begin + PC__KM_CHUNK : p1;
        pc__km_centred_rows(b, begin, end, f->mean, f->unit, x + (begin - p0) * s->dim);
    }
    pc_status st = pc__km_stream_gpu_centres(s->gpu, s->layout.ct, s->layout.cc, s->layout.kpad, s->fingerprint);
    return st != PC_OK ? st : pc__km_stream_gpu_submit(s->gpu, slot, p1 - p0);
}

/* The rows of a piece: a whole block on the CPU, a GPU piece with CUDA (a multiple of the chunk). */
static size_t piece_rows(const pc_kmeans_stream *s, size_t n)
{
    _Static_assert(PC__KM_GPU_PIECE % PC__KM_CHUNK == 0, "GPU pieces are whole chunks");
    return s->gpu ? PC__KM_GPU_PIECE : n > 0 ? n : 1;
}

pc_status pc__km_stream_add_block(pc_kmeans_stream *s, const pc_points *b)
{
    size_t n = b->n, dim = s->dim, k = s->k;
    int threads = s->threads, first_pass = s->iterations == 0;
    const pc__km_frame *f = &s->frame;
    const float *centres = s->centres;
    float scale = f->scale;
    fault bad = {SIZE_MAX, 0};
    int failed = 0;
    pc_status st = PC_OK;
    for (int q = 0; q < threads; q++)
        pc__km_pass_part_clear(&s->team[q], k, dim);
    int32_t *pre = s->gpu ? pc__alloc(PC__KM_GPU_PIECE, sizeof *pre, "k-means GPU labels") : NULL;
    if (s->gpu && !pre)
        return PC_OUT_OF_MEMORY;
    if (s->gpu)
        pc__km_stream_gpu_lock(s->gpu);
    /* With the GPU, piece i + 1 is queued before piece i's labels are gathered here: the GPU finds the
     * next labels while the host adds up these. */
    size_t piece = piece_rows(s, n);
    int slot = 0;
    if (pre && n > 0)
        st = gpu_submit(s, b, 0, n < piece ? n : piece, slot);
    for (size_t p0 = 0; p0 < n && !failed && bad.row == SIZE_MAX && st == PC_OK; p0 += piece, slot ^= 1) {
        size_t p1 = n - p0 < piece ? n : p0 + piece;
        if (pre && p1 < n && (st = gpu_submit(s, b, p1, n - p1 < piece ? n : p1 + piece, slot ^ 1)) != PC_OK)
            break;
        if (pre && (st = pc__km_stream_gpu_wait(s->gpu, slot, p1 - p0, pre)) != PC_OK)
            break;
        long c0 = (long)(p0 / PC__KM_CHUNK), c1 = chunk_count(p1);
        /* With the GPU the piece's rows are centred already, in the slot's buffer (the next piece is
         * being centred into the other slot's). */
        const float *centred = pre ? pc__km_stream_gpu_rows(s->gpu, slot) : NULL;
#pragma omp parallel num_threads(threads) if (threads > 1 && c1 - c0 >= 4) reduction(| : failed)
        {
            pc__km_pass_part *t = &s->team[thread_index()];
            float *own = pre ? NULL : malloc(PC__KM_CHUNK * dim * sizeof *own);
            int32_t *labels = pre ? NULL : malloc(PC__KM_CHUNK * sizeof *labels);
            failed |= !pre && (!own || !labels);
            size_t mine = SIZE_MAX;
#pragma omp for schedule(static)
            for (long ch = c0; ch < c1; ch++) {
                size_t begin = (size_t)ch * PC__KM_CHUNK, end = begin + PC__KM_CHUNK < p1 ? begin + PC__KM_CHUNK : p1;
                size_t m = end - begin;
                if (failed || mine != SIZE_MAX)
                    continue;
                const float *x = centred ? centred + (begin - p0) * dim : own;
                if (!centred)
                    pc__km_centred_rows(b, begin, end, f->mean, f->unit, own);
                /* Values the scan did not see could overflow the fixed-point sums: the blocks added must be
                 * those scanned (NaN fails the test too). */
                size_t bd = 0, r = pc__km_stream_first_outside(f, x, m, dim, &bd);
                if (r < m) {
                    mine = begin + r;
                    note_fault(&bad, mine, bd);
                    continue;
                }
                const int32_t *label = pre ? pre + (begin - p0) : labels;
                if (!pre)
                    pc__km_assign(x, 0, m, &s->layout, labels);
                for (size_t i = 0; i < m; i++) {
                    const float *xi = x + i * dim;
                    size_t c = (size_t)label[i];
                    int64_t *sum = t->sums + c * dim;
                    for (size_t d = 0; d < dim; d++) {
                        int64_t qv = pc__km_fixed(xi[d], scale);
                        sum[d] += qv;
                        if (first_pass)
                            t->squares[d] += (pc__i128)qv * qv;
                    }
                    t->counts[c]++;
                    double dist = pc__km_dist2(xi, centres + c * dim, dim);
                    inertia_add(t->inertia, dist);
                    pc__km_far_offer(&t->far, dist, (int32_t)c, xi);
                }
            }
            free(own);
            free(labels);
        }
    }
    if (s->gpu)
        pc__km_stream_gpu_unlock(s->gpu);
    free(pre);
    if (st != PC_OK)
        return st;
    if (failed)
        return pc__fail(PC_OUT_OF_MEMORY, "k-means stream: cannot allocate a thread's chunk buffers");
    if (bad.row != SIZE_MAX)
        return pc__km_stream_refuse_row(b, bad.row, bad.dim, "add");
    for (int q = 0; q < threads; q++)
        pc__km_pass_part_merge(&s->pass, &s->team[q], k, dim);
    s->pass.n += n;
    return PC_OK;
}

/* ---------------------------------------------------------------- labels */

pc_status pc__km_stream_label_block(const pc_kmeans_stream *s, const pc_points *b, int32_t *labels)
{
    size_t n = b->n, dim = s->dim;
    int threads = s->threads;
    (void)threads;
    const pc__km_frame *f = &s->frame;
    fault bad = {SIZE_MAX, 0};
    int failed = 0;
    pc_status st = PC_OK;
    if (s->gpu)
        pc__km_stream_gpu_lock(s->gpu);
    for (size_t p0 = 0, piece = piece_rows(s, n); p0 < n && !failed && bad.row == SIZE_MAX && st == PC_OK;
         p0 += piece) {
        size_t p1 = n - p0 < piece ? n : p0 + piece;
        int on_gpu = s->gpu != NULL; /* the labels are in place: the loop below only checks the rows */
        if (on_gpu && ((st = gpu_submit(s, b, p0, p1, 0)) != PC_OK ||
                       (st = pc__km_stream_gpu_wait(s->gpu, 0, p1 - p0, labels + p0)) != PC_OK))
            break;
        long c0 = (long)(p0 / PC__KM_CHUNK), c1 = chunk_count(p1);
#pragma omp parallel num_threads(threads) if (threads > 1 && c1 - c0 >= 4) reduction(| : failed)
        {
            float *x = malloc(PC__KM_CHUNK * dim * sizeof *x);
            failed |= !x;
            size_t mine = SIZE_MAX;
#pragma omp for schedule(static)
            for (long ch = c0; ch < c1; ch++) {
                size_t begin = (size_t)ch * PC__KM_CHUNK, end = begin + PC__KM_CHUNK < p1 ? begin + PC__KM_CHUNK : p1;
                if (failed || mine != SIZE_MAX)
                    continue;
                pc__km_centred_rows(b, begin, end, f->mean, f->unit, x);
                /* Any points may be labelled, not only those scanned, but float32's |c|^2 - 2 x.c needs them
                 * within 2^40 of the points' spread (as given centres). */
                int out = 0;
                for (size_t q = 0; q < (end - begin) * dim; q++)
                    out |= !(fabsf(x[q]) <= 0x1p40f);
                for (size_t q = 0; out && q < (end - begin) * dim; q++)
                    if (!(fabsf(x[q]) <= 0x1p40f)) {
                        mine = begin + q / dim;
                        note_fault(&bad, mine, q % dim);
                        break;
                    }
                if (mine == SIZE_MAX && !on_gpu)
                    pc__km_assign(x, 0, end - begin, &s->layout, labels + begin);
            }
            free(x);
        }
    }
    if (s->gpu)
        pc__km_stream_gpu_unlock(s->gpu);
    if (st != PC_OK)
        return st;
    if (failed)
        return pc__fail(PC_OUT_OF_MEMORY, "k-means stream: cannot allocate a thread's chunk buffer");
    if (bad.row != SIZE_MAX) {
        double v = raw_value(b, bad.row, bad.dim);
        if (!isfinite(v))
            return pc__fail(PC_INVALID_ARGUMENT, "k-means stream label: block row %zu, dimension %zu is not finite "
                            "(%g)", bad.row, bad.dim, v);
        return pc__fail(PC_INVALID_ARGUMENT, "k-means stream label: block row %zu, dimension %zu: %g is too far from "
                        "the points scanned (over 1e12 times their spread) for float32 arithmetic", bad.row, bad.dim,
                        v);
    }
    return PC_OK;
}
