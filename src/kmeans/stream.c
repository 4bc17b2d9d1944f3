/* k-means over points that arrive in blocks (include/parclust.h, "k-means, streamed"): the order of
 * calls, the partial states and their merges, the start (frame and initial centres) and the step
 * (centre update, empty clusters, stopping rule). The passes over blocks are stream_pass.c's.
 *
 * Why the result equals pc_kmeans's from the same initial centres, whatever the blocks: both run in
 * the frame of the exact sums (the mean of the float32 values, then 2^e), assign with the same kernel,
 * add the same fixed-point integers per cluster, update with pc__km_update, and apply the same
 * empty-cluster rule with the same order of points (internal_km.h). The stopping rules agree too:
 * pc_kmeans stops when no label changed, which leaves the sums, hence the centres, as they were: a
 * shift of 0, which the tolerance rule (shift <= tol_abs, tol_abs >= 0) stops on at the same
 * iteration; its other rule is that tolerance rule itself, on the same numbers. */
#include "stream_internal.h"

#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---------------------------------------------------------------- partial states */

pc_status pc__km_scan_part_init(pc__km_scan_part *p, size_t dim, size_t sample)
{
    memset(p, 0, sizeof *p);
    p->lo = pc__alloc(2 * dim, sizeof *p->lo, "k-means scan");
    p->sums = pc__calloc(dim * PC__KM_EXACT_BUCKETS, sizeof *p->sums, "k-means scan");
    if (!p->lo || !p->sums || pc__km_sample_init(&p->sample, sample, dim) != PC_OK) {
        pc__km_scan_part_free(p);
        return PC_OUT_OF_MEMORY;
    }
    p->hi = p->lo + dim;
    for (size_t d = 0; d < dim; d++) {
        p->lo[d] = INFINITY;
        p->hi[d] = -INFINITY;
    }
    return PC_OK;
}

void pc__km_scan_part_free(pc__km_scan_part *p)
{
    free(p->lo);
    free(p->sums);
    pc__km_sample_free(&p->sample);
    memset(p, 0, sizeof *p);
}

static void scan_part_merge(pc__km_scan_part *into, const pc__km_scan_part *from, size_t dim)
{
    into->n += from->n;
    for (size_t d = 0; d < dim; d++) {
        into->lo[d] = from->lo[d] < into->lo[d] ? from->lo[d] : into->lo[d];
        into->hi[d] = from->hi[d] > into->hi[d] ? from->hi[d] : into->hi[d];
    }
    for (size_t e = 0; e < dim * PC__KM_EXACT_BUCKETS; e++)
        into->sums[e] += from->sums[e];
    pc__km_sample_merge(&into->sample, &from->sample);
}

pc_status pc__km_pass_part_init(pc__km_pass_part *p, size_t k, size_t dim)
{
    memset(p, 0, sizeof *p);
    p->counts = pc__alloc(k, sizeof *p->counts, "k-means pass");
    p->sums = pc__alloc(k, dim * sizeof *p->sums, "k-means pass");
    p->inertia = pc__alloc(PC__KM_INERTIA_BUCKETS, sizeof *p->inertia, "k-means pass");
    p->squares = pc__alloc(dim, sizeof *p->squares, "k-means pass");
    if (!p->counts || !p->sums || !p->inertia || !p->squares || pc__km_far_init(&p->far, k - 1, dim) != PC_OK) {
        pc__km_pass_part_free(p);
        return PC_OUT_OF_MEMORY;
    }
    pc__km_pass_part_clear(p, k, dim);
    return PC_OK;
}

void pc__km_pass_part_free(pc__km_pass_part *p)
{
    free(p->counts);
    free(p->sums);
    free(p->inertia);
    free(p->squares);
    pc__km_far_free(&p->far);
    memset(p, 0, sizeof *p);
}

void pc__km_pass_part_clear(pc__km_pass_part *p, size_t k, size_t dim)
{
    p->n = 0;
    memset(p->counts, 0, k * sizeof *p->counts);
    memset(p->sums, 0, k * dim * sizeof *p->sums);
    memset(p->inertia, 0, PC__KM_INERTIA_BUCKETS * sizeof *p->inertia);
    memset(p->squares, 0, dim * sizeof *p->squares);
    pc__km_far_clear(&p->far);
}

void pc__km_pass_part_merge(pc__km_pass_part *into, const pc__km_pass_part *from, size_t k, size_t dim)
{
    into->n += from->n;
    for (size_t c = 0; c < k; c++)
        into->counts[c] += from->counts[c];
    for (size_t q = 0; q < k * dim; q++)
        into->sums[q] += from->sums[q];
    for (int e = 0; e < PC__KM_INERTIA_BUCKETS; e++)
        into->inertia[e] += from->inertia[e];
    for (size_t d = 0; d < dim; d++)
        into->squares[d] += from->squares[d];
    pc__km_far_merge(&into->far, &from->far);
}

/* ---------------------------------------------------------------- create, free */

/* The default sample: 100 points per cluster, at least 65,536, within 256 MiB of rows (never below k). */
static size_t default_sample(size_t k, size_t dim)
{
    size_t want = 100 * k > 65536 ? 100 * k : 65536, room = ((size_t)256 << 20) / (dim * sizeof(float));
    want = want < room ? want : room;
    return want > k ? want : k;
}

static pc_status check_params(const pc_kmeans_params *p, size_t dim, size_t sample)
{
    if (dim == 0 || dim > PC__KM_DIM_MAX)
        return pc__fail(PC_INVALID_ARGUMENT, "k-means stream: dim must be 1 to %d, got %zu", PC__KM_DIM_MAX, dim);
    if (p->k == 0)
        return pc__fail(PC_INVALID_ARGUMENT, "k must be >= 1, got 0");
    if (p->k > (size_t)INT32_MAX)
        return pc__fail(PC_INVALID_ARGUMENT, "k must be below 2^31, got %zu", p->k);
    if ((unsigned)p->init > PC_INIT_GIVEN)
        return pc__fail(PC_INVALID_ARGUMENT, "unknown k-means init %d", (int)p->init);
    if (p->init == PC_INIT_GIVEN) {
        if (!p->initial_centers)
            return pc__fail(PC_INVALID_ARGUMENT, "init 'given' needs initial centres");
        for (size_t i = 0; i < p->k * dim; i++)
            if (!isfinite(p->initial_centers[i]))
                return pc__fail(PC_INVALID_ARGUMENT, "initial centre %zu is not finite", i / dim);
    } else if (p->n_init != 1)
        return pc__fail(PC_INVALID_ARGUMENT, "a k-means stream runs once: n_init must be 1, got %d (a stream "
                        "cannot be rewound for other starts)", p->n_init);
    else if (sample && sample < p->k)
        return pc__fail(PC_INVALID_ARGUMENT, "the sample (%zu points) must hold at least k (%zu) points", sample, p->k);
    if (p->n_init < 1)
        return pc__fail(PC_INVALID_ARGUMENT, "n_init must be >= 1, got %d", p->n_init);
    if (p->max_iter < 1)
        return pc__fail(PC_INVALID_ARGUMENT, "max_iter must be >= 1, got %d", p->max_iter);
    if (!(p->tol >= 0) || !isfinite(p->tol))
        return pc__fail(PC_INVALID_ARGUMENT, "tol must be a finite number >= 0, got %g", p->tol);
    if (p->threads < 0)
        return pc__fail(PC_INVALID_ARGUMENT, "threads must be >= 0 (0 = OpenMP's default), got %d", p->threads);
    return PC_OK;
}

pc_status pc_kmeans_stream_create(const pc_kmeans_params *params, size_t dim, size_t sample,
                                  pc_kmeans_stream **stream)
{
    pc__clear_error();
    if (!params || !stream)
        return pc__fail(PC_INVALID_ARGUMENT, "k-means stream: params and stream must not be NULL");
    *stream = NULL;
    pc_status st = check_params(params, dim, sample);
    if (st != PC_OK)
        return st;
    pc_backend backend = params->backend;
    if (backend == PC_BACKEND_AUTO)
        backend = pc_backend_available(PC_BACKEND_OPENMP) ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
    else if ((st = pc__choose_backend(backend, 0, &backend)) != PC_OK)
        return st;
    pc_kmeans_stream *s = pc__calloc(1, sizeof *s, "k-means stream");
    if (!s)
        return PC_OUT_OF_MEMORY;
    s->params = *params;
    s->params.initial_centers = NULL;
    s->dim = dim;
    s->k = params->k;
    s->backend = backend;
    s->threads = 1;
#ifdef _OPENMP
    /* (with CUDA, the host's part of a pass runs on OpenMP's threads where it was built) */
    if (backend == PC_BACKEND_OPENMP || (backend == PC_BACKEND_CUDA && pc_backend_available(PC_BACKEND_OPENMP)))
        s->threads = params->threads > 0 ? params->threads : omp_get_max_threads();
#endif
    if (backend == PC_BACKEND_CUDA && (st = pc__km_stream_gpu_create(s->k, dim, &s->gpu)) != PC_OK) {
        pc_kmeans_stream_free(s);
        return st;
    }
    s->phase = PC__KM_SCAN;
    size_t cap = params->init == PC_INIT_GIVEN ? 0 : sample ? sample : default_sample(s->k, dim);
    if (params->init == PC_INIT_GIVEN) {
        s->given = pc__alloc(s->k, dim * sizeof *s->given, "initial centres");
        if (s->given)
            memcpy(s->given, params->initial_centers, s->k * dim * sizeof *s->given);
    }
    if ((params->init == PC_INIT_GIVEN && !s->given) || pc__km_scan_part_init(&s->scan, dim, cap) != PC_OK) {
        pc_kmeans_stream_free(s);
        return PC_OUT_OF_MEMORY;
    }
    *stream = s;
    return PC_OK;
}

void pc_kmeans_stream_free(pc_kmeans_stream *s)
{
    if (!s)
        return;
    pc__km_held_free(s->held_gpu);
    free(s->given);
    pc__km_scan_part_free(&s->scan);
    pc__km_frame_free(&s->frame);
    free(s->centres);
    pc__km_centres_free(&s->layout);
    pc__km_pass_part_free(&s->pass);
    for (int q = 0; s->team && q < s->threads; q++)
        pc__km_pass_part_free(&s->team[q]);
    free(s->team);
    free(s->sizes);
    pc__km_stream_gpu_free(s->gpu);
    free(s);
}

/* ---------------------------------------------------------------- the order of calls */

static const char *phase_text(int phase)
{
    switch (phase) {
    case PC__KM_SCAN: return "scanning (pc_kmeans_stream_start not called yet)";
    case PC__KM_ADD: return "iterating (the run is not done)";
    case PC__KM_DONE: return "done";
    default: return "broken by an earlier failure or cancellation";
    }
}

static pc_status in_phase(const pc_kmeans_stream *s, int phase, const char *call)
{
    if (!s)
        return pc__fail(PC_INVALID_ARGUMENT, "%s: the stream is NULL", call);
    if (s->phase == phase)
        return PC_OK;
    static const char *const wants[] = {"", "before pc_kmeans_stream_start",
                                        ("between pc_kmeans_stream_start and the step that says done"),
                                        "after the step that says done"};
    return pc__fail(PC_INVALID_ARGUMENT, "%s comes %s; the stream is %s", call, wants[phase], phase_text(s->phase));
}

static pc_status check_block(const pc_kmeans_stream *s, const pc_points *block, const char *call)
{
    if (!block)
        return pc__fail(PC_INVALID_ARGUMENT, "%s: the block is NULL", call);
    if (block->dim != s->dim)
        return pc__fail(PC_INVALID_ARGUMENT, "%s: the block has %zu values per point, the stream %zu", call,
                        block->dim, s->dim);
    if (block->n == 0)
        return PC_OK;
    return pc__points_check_shape(block);
}

/* ---------------------------------------------------------------- scan, start */

pc_status pc_kmeans_stream_scan(pc_kmeans_stream *s, const pc_points *block, uint64_t first)
{
    pc__clear_error();
    pc_status st = in_phase(s, PC__KM_SCAN, "pc_kmeans_stream_scan");
    if (st != PC_OK || (st = check_block(s, block, "pc_kmeans_stream_scan")) != PC_OK || block->n == 0)
        return st;
    if (first + block->n < first)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_scan: point indices first + n overflow 64 bits");
    double t0 = pc__now();
    st = pc__km_stream_scan_block(s, block, first);
    s->t_scan += pc__now() - t0;
    return st;
}

static uint64_t mix(uint64_t h, const void *data, size_t bytes)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ p[i]) * 0x100000001B3ull; /* FNV-1a */
    return h;
}

/* What two streams' passes must share to merge: the frame, the centres and the iteration. */
static uint64_t fingerprint(const pc_kmeans_stream *s)
{
    uint64_t h = 0xCBF29CE484222325ull;
    h = mix(h, &s->iterations, sizeof s->iterations);
    h = mix(h, &s->frame.e, sizeof s->frame.e);
    h = mix(h, &s->frame.shift, sizeof s->frame.shift);
    h = mix(h, &s->frame.n, sizeof s->frame.n);
    h = mix(h, s->frame.mean, s->dim * sizeof *s->frame.mean);
    return mix(h, s->centres, s->k * s->dim * sizeof *s->centres);
}

pc_status pc_kmeans_stream_start(pc_kmeans_stream *s)
{
    pc__clear_error();
    pc_status st = in_phase(s, PC__KM_SCAN, "pc_kmeans_stream_start");
    if (st != PC_OK)
        return st;
    size_t k = s->k, dim = s->dim;
    if (s->scan.n < k)
        return pc__fail(PC_INVALID_ARGUMENT, "k (%zu) must not exceed the number of points scanned (%llu)", k,
                        (unsigned long long)s->scan.n);
    if (s->scan.n > ((uint64_t)1 << 62))
        return pc__fail(PC_INVALID_ARGUMENT, "k-means stream: %llu points scanned, more than 2^62",
                        (unsigned long long)s->scan.n);
    double t0 = pc__now();
    float *sample = NULL;
    s->centres = pc__alloc(k, dim * sizeof *s->centres, "centres");
    s->sizes = pc__calloc(k, sizeof *s->sizes, "cluster sizes");
    s->team = pc__calloc((size_t)s->threads, sizeof *s->team, "k-means pass");
    if (!s->centres || !s->sizes || !s->team || (st = pc__km_frame_make(&s->frame, dim, s->scan.n, s->scan.lo,
                                                                         s->scan.hi, s->scan.sums)) != PC_OK) {
        st = PC_OUT_OF_MEMORY;
        goto fail;
    }
    if (s->params.init == PC_INIT_GIVEN) {
        if ((st = pc__km_given_centres(s->given, k, dim, s->frame.mean, s->frame.e, s->centres)) != PC_OK)
            goto fail;
    } else {
        /* The initialisation runs on the sample, in the frame, as pc_kmeans's on all the points (the
         * same centres when the sample holds them all, indexed in their order). */
        size_t m = s->scan.sample.count;
        sample = pc__alloc(m, dim * sizeof *sample, "k-means sample");
        if (!sample || (st = pc__km_sample_rows(&s->scan.sample, sample)) != PC_OK) {
            st = PC_OUT_OF_MEMORY;
            goto fail;
        }
        pc_points raw = pc_points_f32(sample, m, dim);
        pc__km_centred_rows(&raw, 0, m, s->frame.mean, s->frame.unit, sample);
        if ((st = pc__km_init(sample, m, dim, k, s->params.init, s->params.seed, s->threads, s->centres)) != PC_OK)
            goto fail;
    }
    if ((st = pc__km_centres_init(&s->layout, k, dim)) != PC_OK ||
        (st = pc__km_pass_part_init(&s->pass, k, dim)) != PC_OK)
        goto fail;
    for (int q = 0; q < s->threads; q++)
        if ((st = pc__km_pass_part_init(&s->team[q], k, dim)) != PC_OK)
            goto fail;
    pc__km_centres_set(&s->layout, s->centres);
    s->fingerprint = fingerprint(s);
    s->phase = PC__KM_ADD;
    free(sample);
    s->t_init += pc__now() - t0;
    return PC_OK;
fail: /* back to where it was: the scan stays, start may be called again */
    free(sample);
    pc__km_frame_free(&s->frame);
    free(s->centres);
    free(s->sizes);
    pc__km_centres_free(&s->layout);
    pc__km_pass_part_free(&s->pass);
    for (int q = 0; s->team && q < s->threads; q++)
        pc__km_pass_part_free(&s->team[q]);
    free(s->team);
    s->centres = NULL;
    s->sizes = NULL;
    s->team = NULL;
    return st;
}

/* ---------------------------------------------------------------- iterations */

pc_status pc_kmeans_stream_add(pc_kmeans_stream *s, const pc_points *block)
{
    pc__clear_error();
    pc_status st = in_phase(s, PC__KM_ADD, "pc_kmeans_stream_add");
    if (st != PC_OK || (st = check_block(s, block, "pc_kmeans_stream_add")) != PC_OK || block->n == 0)
        return st;
    if (block->n > s->scan.n - s->pass.n)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_add: this pass would add %llu points, more than "
                        "the %llu scanned (every scanned point is added once per pass)",
                        (unsigned long long)(s->pass.n + block->n), (unsigned long long)s->scan.n);
    double t0 = pc__now();
    st = pc__km_stream_add_block(s, block);
    s->t_lloyd += pc__now() - t0;
    return st;
}

pc_status pc_kmeans_stream_hold(pc_kmeans_stream *s, const pc_points *block)
{
    pc__clear_error();
    pc_status st = in_phase(s, PC__KM_ADD, "pc_kmeans_stream_hold");
    if (st != PC_OK || (st = check_block(s, block, "pc_kmeans_stream_hold")) != PC_OK)
        return st;
    if (s->holding)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_hold: the stream holds a block already (one at most)");
    if (block->n > s->scan.n)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_hold: a block of %zu points, more than the %llu "
                        "scanned", block->n, (unsigned long long)s->scan.n);
    double t0 = pc__now();
    st = pc__km_stream_hold_block(s, block);
    s->t_lloyd += pc__now() - t0;
    return st;
}

static pc_status check_held(const pc_kmeans_stream *s, int phase, const char *call)
{
    pc_status st = in_phase(s, phase, call);
    if (st == PC_OK && !s->holding)
        st = pc__fail(PC_INVALID_ARGUMENT, "%s: the stream holds no block (pc_kmeans_stream_hold)", call);
    return st;
}

pc_status pc_kmeans_stream_add_held(pc_kmeans_stream *s)
{
    pc__clear_error();
    pc_status st = check_held(s, PC__KM_ADD, "pc_kmeans_stream_add_held");
    if (st != PC_OK || s->held.n == 0)
        return st;
    if (s->held.n > s->scan.n - s->pass.n)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_add_held: this pass would add %llu points, more "
                        "than the %llu scanned (every scanned point is added once per pass)",
                        (unsigned long long)(s->pass.n + s->held.n), (unsigned long long)s->scan.n);
    double t0 = pc__now();
    st = pc__km_stream_add_held(s);
    s->t_lloyd += pc__now() - t0;
    return st;
}

pc_status pc_kmeans_stream_label_held(const pc_kmeans_stream *s, int32_t *labels)
{
    pc__clear_error();
    pc_status st = check_held(s, PC__KM_DONE, "pc_kmeans_stream_label_held");
    if (st != PC_OK || s->held.n == 0)
        return st;
    if (!labels)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_label_held: labels must not be NULL");
    return pc__km_stream_label_held(s, labels);
}

static double inertia_of(const pc__i128 *buckets)
{
    double v = 0;
    for (int e = 0; e < PC__KM_INERTIA_BUCKETS; e++)
        v += ldexp((double)buckets[e], (e ? e : 1) - 150);
    return v;
}

pc_status pc_kmeans_stream_step(pc_kmeans_stream *s, int *done)
{
    pc__clear_error();
    pc_status st = in_phase(s, PC__KM_ADD, "pc_kmeans_stream_step");
    if (st != PC_OK)
        return st;
    if (!done)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_step: done must not be NULL");
    *done = 0;
    if (s->pass.n != s->scan.n)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_step: this pass added %llu points, the scan %llu "
                        "(every scanned point is added once per pass, in any blocks and order)",
                        (unsigned long long)s->pass.n, (unsigned long long)s->scan.n);
    double t0 = pc__now();
    size_t k = s->k, dim = s->dim;
    pc__km_pass_part *p = &s->pass;
    double *sums = pc__alloc(k, dim * sizeof *sums, "centre sums");
    float *next = pc__alloc(k, dim * sizeof *next, "centres");
    if (!sums || !next) {
        free(sums);
        free(next);
        return PC_OUT_OF_MEMORY;
    }
    if (s->iterations == 0) { /* scikit-learn's tolerance, from the first pass's exact sums */
        int64_t *t1 = pc__calloc(dim, sizeof *t1, "k-means variance");
        if (!t1) {
            free(sums);
            free(next);
            return PC_OUT_OF_MEMORY;
        }
        for (size_t c = 0; c < k; c++)
            for (size_t d = 0; d < dim; d++)
                t1[d] += p->sums[c * dim + d];
        s->tol_abs = pc__km_tolerance(s->params.tol, s->scan.n, dim, t1, p->squares, s->frame.shift);
        free(t1);
    }
    s->inertia = inertia_of(p->inertia);
    /* scikit-learn's empty-cluster rule. pc_kmeans ranks every point by its distance to its centre when
     * a cluster is empty; the stream kept, in each pass, the k - 1 farthest in the same order (at most
     * k - 1 clusters are empty): the same points move, into the same clusters. */
    pc__km_far_sort(&p->far);
    pc__km_relocate_fixed(&p->far, k, dim, s->frame.scale, p->sums, p->counts);
    pc__km_fixed_to_double(p->sums, k * dim, s->frame.shift, sums);
    double shift = pc__km_update(sums, p->counts, k, dim, s->centres, next);
    memcpy(s->sizes, p->counts, k * sizeof *s->sizes);
    memcpy(s->centres, next, k * dim * sizeof *next);
    free(sums);
    free(next);
    s->iterations++;
    s->t_lloyd += pc__now() - t0;
    if (s->params.progress && s->params.progress(s->params.progress_user, (double)s->iterations / s->params.max_iter)) {
        s->phase = PC__KM_BROKEN;
        return pc__fail(PC_CANCELLED, "k-means stream cancelled after %d iterations", s->iterations);
    }
    /* pc_kmeans's "no label changed" leaves the centres where they were: shift 0, within tol_abs. */
    if (shift <= s->tol_abs || s->iterations >= s->params.max_iter) {
        s->phase = PC__KM_DONE;
        *done = 1;
    } else
        pc__km_pass_part_clear(p, k, dim);
    pc__km_centres_set(&s->layout, s->centres);
    s->fingerprint = fingerprint(s);
    return PC_OK;
}

/* ---------------------------------------------------------------- merges */

pc_status pc_kmeans_stream_merge(pc_kmeans_stream *into, const pc_kmeans_stream *from)
{
    pc__clear_error();
    if (!into || !from)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_merge: the streams must not be NULL");
    if (into == from)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_merge: a stream cannot be merged into itself");
    if (into->dim != from->dim || into->k != from->k)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_merge: streams of %zu and %zu dimensions, k %zu and "
                        "%zu", into->dim, from->dim, into->k, from->k);
    if (into->phase != from->phase || (into->phase != PC__KM_SCAN && into->phase != PC__KM_ADD))
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_merge: streams merge while both scan or both iterate; "
                        "one is %s, the other %s", phase_text(into->phase), phase_text(from->phase));
    if (into->phase == PC__KM_SCAN) {
        if (into->params.seed != from->params.seed || into->scan.sample.cap != from->scan.sample.cap)
            return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_merge: the streams' samples differ (seed or "
                            "size): they were created with other parameters");
        scan_part_merge(&into->scan, &from->scan, into->dim);
        into->t_scan += from->t_scan;
        return PC_OK;
    }
    if (into->fingerprint != from->fingerprint)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_merge: the streams are at different iterations (%d, "
                        "%d) or centres: passes merge only between streams that scanned the same points and "
                        "stepped alike", into->iterations, from->iterations);
    if (from->pass.n > into->scan.n - into->pass.n)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_merge: the passes hold %llu points together, more "
                        "than the %llu scanned", (unsigned long long)(into->pass.n + from->pass.n),
                        (unsigned long long)into->scan.n);
    pc__km_pass_part_merge(&into->pass, &from->pass, into->k, into->dim);
    into->t_lloyd += from->t_lloyd;
    return PC_OK;
}

/* ---------------------------------------------------------------- partial states as bytes */

#define PART_MAGIC "PCKMPART"
#define PART_VERSION 1u

typedef struct {
    char magic[8];
    uint32_t version, phase;
    uint64_t dim, k, sample, seed, fingerprint, n;
    int32_t iterations, pad;
} part_header;

typedef struct {
    unsigned char *p; /* NULL: only count */
    size_t at;
} writer;

static void put(writer *w, const void *src, size_t bytes)
{
    if (w->p)
        memcpy(w->p + w->at, src, bytes);
    w->at += bytes;
}

static size_t write_partial(const pc_kmeans_stream *s, unsigned char *buf)
{
    writer w = {buf, 0};
    size_t dim = s->dim, k = s->k;
    part_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, PART_MAGIC, 8);
    h.version = PART_VERSION;
    h.phase = (uint32_t)s->phase;
    h.dim = dim;
    h.k = k;
    h.sample = s->scan.sample.cap;
    h.seed = s->params.seed;
    h.fingerprint = s->phase == PC__KM_ADD ? s->fingerprint : 0;
    h.n = s->phase == PC__KM_ADD ? s->pass.n : s->scan.n;
    h.iterations = s->iterations;
    put(&w, &h, sizeof h);
    if (s->phase == PC__KM_SCAN) {
        const pc__km_scan_part *p = &s->scan;
        put(&w, p->lo, dim * sizeof *p->lo);
        put(&w, p->hi, dim * sizeof *p->hi);
        put(&w, p->sums, dim * PC__KM_EXACT_BUCKETS * sizeof *p->sums);
        uint64_t m = p->sample.count;
        put(&w, &m, sizeof m);
        for (size_t i = 0; i < p->sample.count; i++) {
            put(&w, &p->sample.key[i], sizeof(uint64_t));
            put(&w, &p->sample.index[i], sizeof(uint64_t));
            put(&w, p->sample.rows + i * dim, dim * sizeof(float));
        }
    } else {
        const pc__km_pass_part *p = &s->pass;
        put(&w, p->counts, k * sizeof *p->counts);
        put(&w, p->sums, k * dim * sizeof *p->sums);
        put(&w, p->inertia, PC__KM_INERTIA_BUCKETS * sizeof *p->inertia);
        put(&w, p->squares, dim * sizeof *p->squares);
        uint64_t m = p->far.count;
        put(&w, &m, sizeof m);
        for (size_t i = 0; i < p->far.count; i++) {
            size_t slot = p->far.heap[i];
            put(&w, &p->far.dist[slot], sizeof(double));
            put(&w, &p->far.label[slot], sizeof(int32_t));
            put(&w, p->far.x + slot * dim, dim * sizeof(float));
        }
    }
    return w.at;
}

pc_status pc_kmeans_stream_partial(const pc_kmeans_stream *s, void *buf, size_t *size)
{
    pc__clear_error();
    if (!s || !size)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_partial: stream and size must not be NULL");
    if (s->phase != PC__KM_SCAN && s->phase != PC__KM_ADD)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_partial: a stream has a partial state while it scans "
                        "or iterates; it is %s", phase_text(s->phase));
    size_t need = write_partial(s, NULL);
    if (!buf) {
        *size = need;
        return PC_OK;
    }
    if (*size < need)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_partial: the buffer holds %zu bytes, the partial "
                        "state takes %zu", *size, need);
    *size = write_partial(s, buf);
    return PC_OK;
}

pc_status pc_kmeans_stream_partial_sums(const pc_kmeans_stream *s, size_t *offset, size_t *count)
{
    pc__clear_error();
    pc_status st = in_phase(s, PC__KM_ADD, "pc_kmeans_stream_partial_sums");
    if (st != PC_OK)
        return st;
    if (!offset || !count)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_partial_sums: offset and count must not be NULL");
    _Static_assert(sizeof(part_header) % 8 == 0, "the sums are int64-aligned in a partial state");
    *offset = sizeof(part_header); /* write_partial: the header, then counts and sums back to back */
    *count = s->k * (s->dim + 1);
    return PC_OK;
}

typedef struct {
    const unsigned char *p;
    size_t at, size;
} reader;

static int get(reader *r, void *dst, size_t bytes)
{
    if (bytes > r->size - r->at)
        return 0;
    memcpy(dst, r->p + r->at, bytes);
    r->at += bytes;
    return 1;
}

pc_status pc_kmeans_stream_merge_partial(pc_kmeans_stream *into, const void *buf, size_t size)
{
    pc__clear_error();
    if (!into || !buf)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_merge_partial: stream and buffer must not be NULL");
    reader r = {buf, 0, size};
    part_header h;
    if (!get(&r, &h, sizeof h) || memcmp(h.magic, PART_MAGIC, 8) != 0 || h.version != PART_VERSION)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_merge_partial: the buffer is not a k-means stream's "
                        "partial state (of this version)");
    size_t dim = into->dim, k = into->k;
    if (h.dim != dim || h.k != k)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_merge_partial: a partial state of %llu dimensions and "
                        "k %llu, the stream's %zu and %zu", (unsigned long long)h.dim, (unsigned long long)h.k, dim, k);
    if ((int)h.phase != into->phase || (into->phase != PC__KM_SCAN && into->phase != PC__KM_ADD))
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_merge_partial: the partial state is of a stream %s, "
                        "this one is %s", phase_text((int)h.phase), phase_text(into->phase));
    pc_status st = PC_OK;
    int whole = 1;
    if (into->phase == PC__KM_SCAN) {
        if (h.seed != into->params.seed || h.sample != into->scan.sample.cap)
            return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_merge_partial: the samples differ (seed or size): "
                            "the streams were created with other parameters");
        pc__km_scan_part p;
        if (pc__km_scan_part_init(&p, dim, (size_t)h.sample) != PC_OK)
            return PC_OUT_OF_MEMORY;
        uint64_t m = 0;
        p.n = h.n;
        whole = get(&r, p.lo, dim * sizeof *p.lo) && get(&r, p.hi, dim * sizeof *p.hi) &&
                get(&r, p.sums, dim * PC__KM_EXACT_BUCKETS * sizeof *p.sums) && get(&r, &m, sizeof m) &&
                m <= p.sample.cap;
        for (uint64_t i = 0; whole && i < m; i++) {
            uint64_t key, index;
            float row[PC__KM_DIM_MAX];
            whole = get(&r, &key, sizeof key) && get(&r, &index, sizeof index) && get(&r, row, dim * sizeof(float));
            if (whole)
                pc__km_sample_offer(&p.sample, key, index, row);
        }
        if (whole && r.at == size)
            scan_part_merge(&into->scan, &p, dim);
        pc__km_scan_part_free(&p);
    } else {
        if (h.fingerprint != into->fingerprint || h.iterations != into->iterations)
            return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_merge_partial: the partial state is of iteration "
                            "%d or other centres, the stream at iteration %d: passes merge only between streams "
                            "that scanned the same points and stepped alike", h.iterations, into->iterations);
        if (h.n > into->scan.n - into->pass.n)
            return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_merge_partial: the passes hold %llu points "
                            "together, more than the %llu scanned", (unsigned long long)(into->pass.n + h.n),
                            (unsigned long long)into->scan.n);
        pc__km_pass_part p;
        if (pc__km_pass_part_init(&p, k, dim) != PC_OK)
            return PC_OUT_OF_MEMORY;
        uint64_t m = 0;
        p.n = h.n;
        whole = get(&r, p.counts, k * sizeof *p.counts) && get(&r, p.sums, k * dim * sizeof *p.sums) &&
                get(&r, p.inertia, PC__KM_INERTIA_BUCKETS * sizeof *p.inertia) &&
                get(&r, p.squares, dim * sizeof *p.squares) && get(&r, &m, sizeof m) && m <= p.far.cap;
        for (uint64_t i = 0; whole && i < m; i++) {
            double dist;
            int32_t label;
            float tmp[PC__KM_DIM_MAX];
            whole = get(&r, &dist, sizeof dist) && get(&r, &label, sizeof label) && get(&r, tmp, dim * sizeof(float)) &&
                    label >= 0 && (size_t)label < k;
            if (whole)
                pc__km_far_offer(&p.far, dist, label, tmp);
        }
        if (whole && r.at == size)
            pc__km_pass_part_merge(&into->pass, &p, k, dim);
        pc__km_pass_part_free(&p);
    }
    if (!whole || r.at != size)
        st = pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_merge_partial: the buffer (%zu bytes) is cut short or "
                      "longer than its partial state", size);
    return st;
}

/* ---------------------------------------------------------------- labels, result */

pc_status pc_kmeans_stream_label(const pc_kmeans_stream *s, const pc_points *block, int32_t *labels)
{
    pc__clear_error();
    pc_status st = in_phase(s, PC__KM_DONE, "pc_kmeans_stream_label");
    if (st != PC_OK || (st = check_block(s, block, "pc_kmeans_stream_label")) != PC_OK || block->n == 0)
        return st;
    if (!labels)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_label: labels must not be NULL");
    return pc__km_stream_label_block(s, block, labels);
}

pc_status pc_kmeans_stream_result(const pc_kmeans_stream *s, pc_result **result)
{
    pc__clear_error();
    pc_status st = in_phase(s, PC__KM_DONE, "pc_kmeans_stream_result");
    if (st != PC_OK)
        return st;
    if (!result)
        return pc__fail(PC_INVALID_ARGUMENT, "pc_kmeans_stream_result: result must not be NULL");
    *result = NULL;
    size_t k = s->k, dim = s->dim;
    pc_result *r = pc__result_new((size_t)s->scan.n, dim);
    if (!r)
        return PC_OUT_OF_MEMORY;
    r->centers = pc__alloc(k, dim * sizeof *r->centers, "centres");
    r->sizes = pc__alloc(k, sizeof *r->sizes, "cluster sizes");
    if (!r->centers || !r->sizes) {
        pc_result_free(r);
        return PC_OUT_OF_MEMORY;
    }
    r->k = k;
    for (size_t q = 0; q < k * dim; q++) /* back from the centred, scaled frame, as pc_kmeans */
        r->centers[q] = (float)(ldexp(s->centres[q], -s->frame.e) + s->frame.mean[q % dim]);
    memcpy(r->sizes, s->sizes, k * sizeof *r->sizes);
    r->inertia = ldexp(s->inertia, -2 * s->frame.e);
    r->iterations = s->iterations;
    r->backend = s->backend;
    pc__result_add_stage(r, "scan", s->t_scan);
    pc__result_add_stage(r, "init", s->t_init);
    pc__result_add_stage(r, "lloyd", s->t_lloyd);
    *result = r;
    return PC_OK;
}
