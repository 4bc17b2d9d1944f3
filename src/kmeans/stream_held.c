/* The k-means stream's held block (pc_kmeans_stream_hold): for a caller that adds the same points in
 * every pass (a process's share of a distributed run). With CUDA its rows are centred and checked
 * once, kept in the GPU's memory, and each pass runs there (cuda_stream_held.cu); the host folds the
 * pass's integer sums, inertia buckets and candidates for the farthest points into the stream's pass,
 * where the streamed pass would have added the same numbers. Where the GPU cannot hold the rows, or on
 * the CPU backends, the held block is the caller's view and the passes read it as pc_kmeans_stream_add
 * does. */
#include "stream_internal.h"

#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* Rows [p0, p1) of the block centred into the stream's pinned piece; the first row outside the scan's
 * values (SIZE_MAX: none) and its dimension. */
static size_t centre_piece(const pc_kmeans_stream *s, const pc_points *b, size_t p0, size_t p1, float *x,
                           size_t *bad_dim)
{
    size_t dim = s->dim, first = SIZE_MAX, first_dim = 0;
    long chunks = (long)((p1 - p0 + PC__KM_CHUNK - 1) / PC__KM_CHUNK);
    int threads = s->threads;
    (void)threads;
#pragma omp parallel for num_threads(threads) if (threads > 1 && chunks >= 4) schedule(static)
    for (long ch = 0; ch < chunks; ch++) {
        size_t begin = p0 + (size_t)ch * PC__KM_CHUNK, end = begin + PC__KM_CHUNK < p1 ? begin + PC__KM_CHUNK : p1;
        float *rows = x + (begin - p0) * dim;
        pc__km_centred_rows(b, begin, end, s->frame.mean, s->frame.unit, rows);
        size_t d = 0, r = pc__km_stream_first_outside(&s->frame, rows, end - begin, dim, &d);
        if (r < end - begin) {
#pragma omp critical(pc__km_held_fault)
            if (begin + r < first) {
                first = begin + r;
                first_dim = d;
            }
        }
    }
    *bad_dim = first_dim;
    return first;
}

pc_status pc__km_stream_hold_block(pc_kmeans_stream *s, const pc_points *b)
{
    /* PC_KMEANS_STREAM_HOLD=0 leaves the rows where they are (to measure one way against the other). */
    const char *env = getenv("PC_KMEANS_STREAM_HOLD");
    int on_gpu = s->gpu && b->n > 0 && !(env && strcmp(env, "0") == 0);
    pc__km_held *h = NULL;
    pc_status st = on_gpu ? pc__km_held_create(b->n, s->dim, s->k, &h) : PC_OK;
    if (st == PC_UNSUPPORTED || st == PC_DEVICE_OUT_OF_MEMORY) { /* the passes read the caller's block */
        pc__clear_error();
        st = PC_OK;
    }
    if (st != PC_OK)
        return st;
    if (h) {
        pc__km_stream_gpu_lock(s->gpu);
        float *x = pc__km_stream_gpu_rows(s->gpu, 0);
        for (size_t p0 = 0; p0 < b->n && st == PC_OK; p0 += PC__KM_GPU_PIECE) {
            size_t p1 = b->n - p0 < PC__KM_GPU_PIECE ? b->n : p0 + PC__KM_GPU_PIECE, d = 0;
            size_t bad = centre_piece(s, b, p0, p1, x, &d);
            st = bad != SIZE_MAX ? pc__km_stream_refuse_row(b, bad, d, "hold") : pc__km_held_rows(h, p0, x, p1 - p0);
        }
        pc__km_stream_gpu_unlock(s->gpu);
        if (st != PC_OK) {
            pc__km_held_free(h);
            return st;
        }
    }
    s->held = *b;
    s->held_gpu = h;
    s->holding = 1;
    return PC_OK;
}

/* 128 bits from their low and high words. */
static pc__i128 wide(uint64_t lo, uint64_t hi)
{
    return (pc__i128)hi << 64 | (pc__i128)lo; /* hi < 2^63: the sums of q^2 stay below 2^127 */
}

pc_status pc__km_stream_add_held(pc_kmeans_stream *s)
{
    if (!s->held_gpu)
        return pc__km_stream_add_block(s, &s->held);
    size_t k = s->k, dim = s->dim;
    pc__km_held_pass out;
    pc_status st = pc__km_held_pass_run(s->held_gpu, s->layout.ct, s->layout.cc, s->layout.kpad, s->centres,
                                        s->fingerprint, s->frame.scale, s->iterations == 0, &out);
    if (st != PC_OK)
        return st;
    if (out.far == SIZE_MAX) /* too many rows tie for the farthest: the host's pass, from the caller's rows */
        return pc__km_stream_add_block(s, &s->held);
    pc__km_pass_part *p = &s->pass;
    for (size_t c = 0; c < k; c++) {
        for (size_t d = 0; d < dim; d++)
            p->sums[c * dim + d] += out.totals[c * (dim + 1) + d];
        p->counts[c] += out.totals[c * (dim + 1) + dim];
    }
    for (int e = 0; e < PC__KM_INERTIA_BUCKETS; e++)
        p->inertia[e] += (pc__i128)out.inertia[e];
    if (s->iterations == 0)
        for (size_t d = 0; d < dim; d++)
            p->squares[d] += wide(out.squares[2 * d], out.squares[2 * d + 1]);
    for (size_t i = 0; i < out.far; i++)
        pc__km_far_offer(&p->far, out.far_dist[i], out.far_label[i], out.far_x + i * dim);
    p->n += s->held.n;
    return PC_OK;
}

pc_status pc__km_stream_label_held(const pc_kmeans_stream *s, int32_t *labels)
{
    if (!s->held_gpu)
        return pc__km_stream_label_block(s, &s->held, labels);
    return pc__km_held_labels(s->held_gpu, s->layout.ct, s->layout.cc, s->layout.kpad, s->centres, s->fingerprint,
                              labels);
}
