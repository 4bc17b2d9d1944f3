/* Mean shift iterations on the CPU, sequential or OpenMP: the same loop body either way, so both
 * backends give bit-identical modes. Points that stopped are dropped from the active list. */
#include "internal_ms.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct {
    const pc__ms_refs *refs;
    const float *current; /* positions read this iteration */
    float *next;          /* positions written this iteration */
    const size_t *active;
    size_t active_count;
    unsigned char *stopped; /* per point: 1 once its shift was <= eps or it had no neighbours */
    float eps2;
} step_args;

/* Stores point i's new position (or keeps q where nothing moved it) and stops it once it settles. */
static void finish_one(const step_args *a, size_t i, const float *q, const float *shifted, int moved)
{
    size_t dim = a->refs->shift.dim;
    double d2 = 0;
    for (size_t k = 0; moved && k < dim; k++) {
        double d = (double)shifted[k] - q[k];
        d2 += d * d;
    }
    /* Non-blurring runs update in place: q is read in full before its row is overwritten. */
    memcpy(a->next + i * dim, moved ? shifted : q, dim * sizeof(float));
    if (!moved || d2 <= a->eps2)
        a->stopped[i] = 1;
}

static void step_one(const step_args *a, pc__ms_scratch *s, size_t t)
{
    size_t dim = a->refs->shift.dim;
    size_t i = a->active[t];
    const float *q = a->current + i * dim;
    size_t ranges = pc__ms_ranges(a->refs, q, s);
    int moved = ranges && pc__shift_point(&a->refs->shift, q, s->begin, s->end, ranges, &s->work, s->shifted);
    finish_one(a, i, q, s->shifted, moved);
}

/* The active points t0 .. t0+block-1 (fewer at the end). Point-major references without a grid are
 * the same single range for every query, so the block is shifted in one pass over them
 * (pc__shift_points: the same numbers as one by one). */
static void step_block(const step_args *a, pc__ms_scratch *s, size_t t0, size_t block)
{
    size_t dim = a->refs->shift.dim;
    size_t t1 = a->active_count - t0 < block ? a->active_count : t0 + block;
    if (t1 - t0 == 1 || a->refs->use_grid || !pc__shift_point_major(dim)) {
        for (size_t t = t0; t < t1; t++)
            step_one(a, s, t);
        return;
    }
    const float *q[PC__SHIFT_MAX_BLOCK];
    int moved[PC__SHIFT_MAX_BLOCK];
    for (size_t j = 0; j < t1 - t0; j++)
        q[j] = a->current + a->active[t0 + j] * dim;
    size_t ranges = pc__ms_ranges(a->refs, a->current + a->active[t0] * dim, s);
    pc__shift_points(&a->refs->shift, q, t1 - t0, s->begin, s->end, ranges, &s->work, s->shifted, moved);
    for (size_t j = 0; j < t1 - t0; j++)
        finish_one(a, a->active[t0 + j], q[j], s->shifted + j * dim, moved[j]);
}

/* Runs one iteration over the active points; returns PC_OUT_OF_MEMORY if a thread's scratch could
 * not be allocated. */
static pc_status step_all(const step_args *a, const pc__ms_cpu_options *o)
{
    int failed = 0;
    size_t block = pc__shift_block(a->refs->shift.dim);
#ifdef _OPENMP
    int threads = o->threads > 0 ? o->threads : omp_get_max_threads();
    /* Few points: smaller blocks, so that every thread has one (blocks change no result). */
    size_t share = (a->active_count + (size_t)threads - 1) / (size_t)threads;
    if (o->parallel && share < block)
        block = share > 0 ? share : 1;
    size_t blocks = (a->active_count + block - 1) / block;
    int parallel = o->parallel && threads > 1 && blocks > 1;
    long count = (long)blocks;
    int chunk = o->chunk > 0 ? o->chunk : 1;
#pragma omp parallel num_threads(threads) if (parallel) reduction(| : failed)
    {
        pc__ms_scratch s;
        if (pc__ms_scratch_init(&s, a->refs) != PC_OK)
            failed = 1;
        /* A thread without scratch still reaches every worksharing loop, as OpenMP requires. */
        switch (o->schedule) {
        case PC_SCHEDULE_STATIC:
            if (o->chunk > 0) {
#pragma omp for schedule(static, chunk)
                for (long b = 0; b < count; b++)
                    if (!failed)
                        step_block(a, &s, (size_t)b * block, block);
            } else {
#pragma omp for schedule(static)
                for (long b = 0; b < count; b++)
                    if (!failed)
                        step_block(a, &s, (size_t)b * block, block);
            }
            break;
        case PC_SCHEDULE_GUIDED:
#pragma omp for schedule(guided, chunk)
            for (long b = 0; b < count; b++)
                if (!failed)
                    step_block(a, &s, (size_t)b * block, block);
            break;
        default:
#pragma omp for schedule(dynamic, chunk)
            for (long b = 0; b < count; b++)
                if (!failed)
                    step_block(a, &s, (size_t)b * block, block);
            break;
        }
        pc__ms_scratch_free(&s);
    }
#else
    (void)o;
    size_t blocks = (a->active_count + block - 1) / block;
    pc__ms_scratch s;
    if (pc__ms_scratch_init(&s, a->refs) != PC_OK)
        return PC_OUT_OF_MEMORY;
    for (size_t b = 0; b < blocks; b++)
        step_block(a, &s, b * block, block);
    pc__ms_scratch_free(&s);
#endif
    return failed ? pc__fail(PC_OUT_OF_MEMORY, "cannot allocate per-thread scratch") : PC_OK;
}

pc_status pc__meanshift_cpu(const float *points, size_t n, size_t dim, const pc__ms_setup *setup,
                            const pc__ms_cpu_options *o, float *modes, int *iterations)
{
    pc_status st = PC_OK;
    pc__ms_refs refs;
    memset(&refs, 0, sizeof refs);
    refs.shift = setup->shift;
    /* Positions, stop flags and the active list are the climbing points' (index 0 = point first);
     * the references are all n points (blurring: all of them climb). */
    size_t count = setup->count;
    size_t *active = pc__alloc(count, sizeof *active, "active point list");
    unsigned char *stopped = pc__calloc(count, 1, "stop flags");
    /* Blurring moves the references, so every iteration reads one buffer and writes another. */
    float *other = setup->blurring ? pc__alloc(n, dim * sizeof(float), "blurring buffer") : NULL;
    if (!active || !stopped || (setup->blurring && !other)) {
        st = PC_OUT_OF_MEMORY;
        goto done;
    }
    st = pc__ms_refs_build(&refs, points, n, dim, setup->use_grid, setup->radius, o->parallel ? o->threads : 1);
    if (st != PC_OK)
        goto done;
    memcpy(modes, points + setup->first * dim, count * dim * sizeof *modes);
    size_t active_count = count;
    for (size_t i = 0; i < count; i++)
        active[i] = i;
    float *current = modes;
    int it = 0;
    while (it < setup->max_iter && active_count > 0) {
        if (setup->blurring && it > 0) {
            pc__ms_refs_free(&refs);
            refs.shift = setup->shift;
            st = pc__ms_refs_build(&refs, current, n, dim, setup->use_grid, setup->radius, o->parallel ? o->threads : 1);
            if (st != PC_OK)
                goto done;
        }
        float *next = setup->blurring ? (current == modes ? other : modes) : modes;
        if (setup->blurring)
            memcpy(next, current, n * dim * sizeof *next); /* stopped points keep their place */
        step_args a = {&refs, current, next, active, active_count, stopped, setup->eps2};
        st = step_all(&a, o);
        if (st != PC_OK)
            goto done;
        current = next;
        it++;
        size_t kept = 0;
        for (size_t t = 0; t < active_count; t++)
            if (!stopped[active[t]])
                active[kept++] = active[t];
        active_count = kept;
        if (setup->progress && setup->progress(setup->progress_user, (double)it / setup->max_iter)) {
            st = pc__fail(PC_CANCELLED, "mean shift cancelled after %d iterations", it);
            goto done;
        }
    }
    if (current != modes)
        memcpy(modes, current, count * dim * sizeof *modes);
    *iterations = it;
done:
    pc__ms_refs_free(&refs);
    free(active);
    free(stopped);
    free(other);
    return st;
}
