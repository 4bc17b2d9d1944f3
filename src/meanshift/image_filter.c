/* Mean shift filtering of an image in the joint spatial-range domain: each valid pixel climbs to the
 * mode of a flat kernel that is a disk of radius hs in (row, col) times a ball of radius hr in band
 * values. Only the pixels of the disk are visited, so a shift costs O(hs^2) whatever the image size.
 * Every pixel is computed by the same code on its own, so results are the same at any thread count.
 *
 * The image may hold only some rows (a strip and its halo, pc_meanshift_image_rows): a window is then
 * summed exactly as on the whole image, because nothing in a sum depends on where the rows lie in
 * memory. The rows and columns visited, the lanes' columns and masks and the points where lanes are
 * flushed into doubles all follow from the window's place in the whole image (its centre, the
 * image's width and height); the values are the same floats. A climb whose next window reaches a
 * row not held stops before that window and is taken up later where the row is held
 * (pc__msi_resume), from the same state: the same shifts, bit for bit. */
#include "image_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "../core/simd.h"

#define LANES PC__LANES
#define MAX_FAST_BANDS 8
#define BLOCK 256 /* pixels handed out at a time by the dynamic schedule */


/* Eight lanes as a GCC/Clang vector type (one AVX register, or two SSE ones). Lanes are summed in a
 * fixed order when they are flushed into doubles, so no sum depends on the instruction set's width
 * or on the thread that computes it. */

#define FLUSH_CHUNKS 128 /* float lanes carry at most 128 pixels each before moving into doubles */

typedef struct {
    const pc__msi_image *im;
    float hs2f;  /* hs^2 for the disk test, which runs in float like the lanes */
    float hr2;   /* hr^2 */
    double ihr2; /* 1 / hr^2 and 1 / hs^2 measure a shift in bandwidths */
    double ihs2;
    double eps2;
    int max_iter;
    long k_max;       /* rows farther than this from the centre's nearest row hold no pixel of the disk */
    const long *half; /* per such distance k: the half-width of columns to visit (see setup) */
    long held0, held1; /* the rows held, first and last */
} filter_setup;

/* Window sums of one shift: pixels counted, their offsets from the window's reference row ri and
 * column ci, their band values. */
typedef struct {
    double count, sum_dr, sum_dc;
    double *sum_v; /* bands */
} window_sums;

PC__INLINE vfloat load_lanes(const float *p)
{
    vfloat v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The sums of the flat kernel around (yr, yc, m): pixels with (r - yr)^2 + (c - yc)^2 <= hs^2 and
 * |v - m|^2 <= hr^2. Rows are visited over a conservative span of columns (from a table, no sqrt
 * per row) and the exact disk test runs in the lanes, together with the range test; masks select
 * what is added (a masked lane adds +0; the NaN of an invalid pixel never passes). Offsets are small
 * integers, so their float sums are exact; band sums move to doubles every FLUSH_CHUNKS vectors.
 * bands is a constant after inlining, so the band loops unroll. */
PC__INLINE void window_lanes(const filter_setup *f, size_t bands, long ri, long ci, long r0, long r1, float fr,
                             float fc, const float *m, window_sums *ws)
{
    const pc__msi_image *im = f->im;
    const long w = (long)im->width;
    const vfloat zero = {0}, one = zero + 1.0f, lane = {0, 1, 2, 3, 4, 5, 6, 7};
    const float hs2 = f->hs2f, hr2 = f->hr2;
    vfloat acc[MAX_FAST_BANDS] = {{0}}, cnt = {0}, sr = {0}, sc = {0};
    long pending = 0;
    const float *line = im->planes + (size_t)(r0 - f->held0) * im->width; /* row r's first pixel */
    for (long r = r0; r <= r1; r++, line += w) {
        long span = f->half[r > ri ? r - ri : ri - r];
        long lo = ci - span < 0 ? 0 : ci - span, hi = ci + span + 1 > w - 1 ? w - 1 : ci + span + 1;
        if (lo > hi)
            continue;
        float off_r = (float)(r - ri), dr = off_r - fr, dr2 = dr * dr;
        const float last = (float)(hi - ci);
        const vfloat first = lane + (float)(lo - ci);
        const float *row = line + lo;
        long len = hi - lo + 1;
        for (long j = 0; j < len; j += LANES) {
            vfloat off_c = first + (float)j, dc = off_c - fc;
            vint in = ((dc * dc + dr2) <= hs2) & (off_c <= last);
            vfloat x[MAX_FAST_BANDS], d2 = {0};
            for (size_t b = 0; b < bands; b++) {
                x[b] = load_lanes(row + b * im->plane_stride + j);
                vfloat t = x[b] - m[b];
                d2 += t * t;
            }
            in &= d2 <= hr2;
            cnt += (vfloat)((vint)one & in);
            sr += (vfloat)((vint)(zero + off_r) & in);
            sc += (vfloat)((vint)off_c & in);
            for (size_t b = 0; b < bands; b++)
                acc[b] += (vfloat)((vint)x[b] & in);
        }
        pending += (len + LANES - 1) / LANES;
        if (pending >= FLUSH_CHUNKS || r == r1) {
            for (int l = 0; l < LANES; l++) {
                ws->count += cnt[l];
                ws->sum_dr += sr[l];
                ws->sum_dc += sc[l];
                for (size_t b = 0; b < bands; b++)
                    ws->sum_v[b] += acc[b][l];
            }
            cnt = sr = sc = zero;
            for (size_t b = 0; b < bands; b++)
                acc[b] = zero;
            pending = 0;
        }
    }
}

/* Any number of bands: the same visit and the same float tests, one pixel at a time (many-band
 * images are rare; this keeps them simple). */
static void window_scalar(const filter_setup *f, long ri, long ci, long r0, long r1, float fr, float fc,
                          const float *m, window_sums *ws)
{
    const pc__msi_image *im = f->im;
    const long w = (long)im->width;
    size_t bands = im->bands;
    for (long r = r0; r <= r1; r++) {
        long span = f->half[r > ri ? r - ri : ri - r];
        long lo = ci - span < 0 ? 0 : ci - span, hi = ci + span + 1 > w - 1 ? w - 1 : ci + span + 1;
        float off_r = (float)(r - ri), dr = off_r - fr, dr2 = dr * dr;
        for (long c = lo; c <= hi; c++) {
            float off_c = (float)(c - ci), dc = off_c - fc;
            if (!(dc * dc + dr2 <= f->hs2f))
                continue;
            const float *px = im->planes + (size_t)(r - f->held0) * im->width + (size_t)c;
            float d2 = 0;
            for (size_t b = 0; b < bands; b++) {
                float t = px[b * im->plane_stride] - m[b];
                d2 += t * t;
            }
            if (!(d2 <= f->hr2))
                continue;
            ws->count += 1;
            ws->sum_dr += off_r;
            ws->sum_dc += off_c;
            for (size_t b = 0; b < bands; b++)
                ws->sum_v[b] += px[b * im->plane_stride];
        }
    }
}

/* Climbs from where c stands, with band values m; returns 1 when the climb is over (m: the mode), 0
 * when its next window would reach a row not held (c and m: where it stands; see the top). sums:
 * bands doubles of scratch. A window that holds no pixel (the disk and the ball, both moved, may
 * miss every pixel) ends the climb where it is. */
PC__INLINE int climb_bands(const filter_setup *f, size_t bands, int fast, pc__msi_climb *c, float *m, double *sums)
{
    const long h = (long)f->im->height;
    double yr = c->yr, yc = c->yc;
    int it = c->it, over = 1;
    while (it < f->max_iter) {
        /* The window's reference row is the nearest to the centre, its reference column the one
         * at or left of it: the table of spans assumes exactly that. */
        long ri = (long)floor(yr + 0.5), ci = (long)floor(yc);
        long r0 = ri - f->k_max < 0 ? 0 : ri - f->k_max, r1 = ri + f->k_max > h - 1 ? h - 1 : ri + f->k_max;
        if (r0 < f->held0 || r1 > f->held1) {
            over = 0;
            break;
        }
        float fr = (float)(yr - (double)ri), fc = (float)(yc - (double)ci);
        window_sums ws = {0, 0, 0, sums};
        for (size_t b = 0; b < bands; b++)
            sums[b] = 0;
        if (fast)
            window_lanes(f, bands, ri, ci, r0, r1, fr, fc, m, &ws);
        else
            window_scalar(f, ri, ci, r0, r1, fr, fc, m, &ws);
        it++;
        double count = ws.count;
        if (!(count > 0))
            break;
        double nr = (double)ri + ws.sum_dr / count, nc = (double)ci + ws.sum_dc / count;
        double dv2 = 0;
        for (size_t b = 0; b < bands; b++) {
            float v = (float)(sums[b] / count);
            double d = (double)v - m[b];
            dv2 += d * d;
            m[b] = v;
        }
        double shift2 = ((nr - yr) * (nr - yr) + (nc - yc) * (nc - yc)) * f->ihs2 + dv2 * f->ihr2;
        yr = nr;
        yc = nc;
        if (shift2 <= f->eps2)
            break;
    }
    c->yr = yr;
    c->yc = yc;
    c->it = it;
    return over;
}

/* One climb, with the band count fixed for the common cases so the lanes unroll. */
PC__INLINE int climb(const filter_setup *f, pc__msi_climb *c, float *m, double *sums)
{
    size_t bands = f->im->bands;
    switch (bands) {
    case 1: return climb_bands(f, 1, 1, c, m, sums);
    case 2: return climb_bands(f, 2, 1, c, m, sums);
    case 3: return climb_bands(f, 3, 1, c, m, sums);
    case 4: return climb_bands(f, 4, 1, c, m, sums);
    default:
        return bands <= MAX_FAST_BANDS ? climb_bands(f, bands, 1, c, m, sums) : climb_bands(f, bands, 0, c, m, sums);
    }
}

/* Appends without recording an error: worker threads call it, and errors are per thread. */
static int push_quiet(pc__msi_climbs *list, const pc__msi_climb *c, const float *m)
{
    if (list->count == list->cap) {
        size_t cap = list->cap ? 2 * list->cap : 64;
        pc__msi_climb *nc = realloc(list->climb, cap * sizeof *nc);
        if (nc)
            list->climb = nc;
        float *nm = nc ? realloc(list->m, cap * list->bands * sizeof *nm) : NULL;
        if (!nm)
            return -1;
        list->m = nm;
        list->cap = cap;
    }
    list->climb[list->count] = *c;
    memcpy(list->m + list->count * list->bands, m, list->bands * sizeof *m);
    list->count++;
    return 0;
}

pc_status pc__msi_climbs_push(pc__msi_climbs *list, const pc__msi_climb *c, const float *m)
{
    if (push_quiet(list, c, m) != 0)
        return pc__fail(PC_OUT_OF_MEMORY, "cannot grow the list of %zu stopped climbs", list->count);
    return PC_OK;
}

void pc__msi_climbs_free(pc__msi_climbs *list)
{
    free(list->climb);
    free(list->m);
    list->climb = NULL;
    list->m = NULL;
    list->count = list->cap = 0;
}

/* Pixels begin .. end - 1 (of the whole image) from their start. modes: from the entry of pixel
 * `base`. A climb that stops goes to *stopped; *failed |= 1 when that list cannot grow, 2 when there
 * is none. Returns the most shifts an ended climb took. */
PC__MULTIVERSION
static int climb_block(const filter_setup *f, size_t begin, size_t end, size_t base, float *m, double *sums,
                       float *modes, double *positions, pc__msi_climbs *stopped, int *failed)
{
    const pc__msi_image *im = f->im;
    size_t bands = im->bands, w = im->width, first = (size_t)f->held0 * w;
    int most = 0;
    for (size_t i = begin; i < end; i++) {
        float *mode = modes + (i - base) * bands;
        if (!im->ok[i - first]) {
            for (size_t b = 0; b < bands; b++)
                mode[b] = NAN;
            if (positions)
                positions[2 * (i - base)] = positions[2 * (i - base) + 1] = NAN;
            continue;
        }
        for (size_t b = 0; b < bands; b++)
            m[b] = im->planes[b * im->plane_stride + (i - first)];
        pc__msi_climb c = {i, (double)(i / w), (double)(i % w), 0};
        int over = climb(f, &c, m, sums);
        memcpy(mode, m, bands * sizeof *m);
        if (positions) {
            positions[2 * (i - base)] = c.yr;
            positions[2 * (i - base) + 1] = c.yc;
        }
        if (over)
            most = c.it > most ? c.it : most;
        else if (!stopped)
            *failed |= 2;
        else if (push_quiet(stopped, &c, m) != 0)
            *failed |= 1;
    }
    return most;
}

/* Climbs taken up again (see pc__msi_resume). */
PC__MULTIVERSION
static int resume_block(const filter_setup *f, pc__msi_climbs *climbs, const size_t *ids, size_t begin, size_t end,
                        double *sums, uint8_t *over)
{
    size_t bands = f->im->bands;
    int most = 0;
    for (size_t t = begin; t < end; t++) {
        pc__msi_climb *c = &climbs->climb[ids[t]];
        over[t] = (uint8_t)climb(f, c, climbs->m + ids[t] * bands, sums);
        if (over[t])
            most = c->it > most ? c->it : most;
    }
    return most;
}

static int thread_index(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

long pc__msi_window_reach(double hs, size_t width, size_t height)
{
    /* The centre never leaves the image (it is a mean of pixels), so a disk wider than the image's
     * width + height covers all of it from anywhere: the table stops there (hs may be huge). */
    double hs_table = fmin(hs, (double)(width + height + 2));
    return (long)floor(hs_table + 0.5);
}

/* The table of spans and the constants every climb reads; *half receives the table (free it). */
static pc_status setup(const pc__msi_image *im, const pc__msi_filter_params *p, filter_setup *f, long **half)
{
    /* Rows k away from the centre's nearest row are at least k - 1/2 from the centre, so the disk
     * spans at most sqrt(hs^2 - (k - 1/2)^2) columns either side of it, and the centre lies in
     * [ci, ci + 1): columns ci - half[k] .. ci + half[k] + 1 hold every pixel of the disk. */
    double hs_table = fmin(p->hs, (double)(im->width + im->height + 2));
    long k_max = pc__msi_window_reach(p->hs, im->width, im->height);
    long *h = pc__alloc((size_t)k_max + 1, sizeof *h, "disk spans");
    if (!h)
        return PC_OUT_OF_MEMORY;
    for (long k = 0; k <= k_max; k++) {
        double d = k == 0 ? 0 : (double)k - 0.5;
        h[k] = (long)floor(sqrt(fmax(0, hs_table * hs_table - d * d)));
    }
    f->im = im;
    f->hs2f = (float)(p->hs * p->hs);
    f->hr2 = (float)(p->hr * p->hr);
    f->ihs2 = 1.0 / (p->hs * p->hs);
    f->ihr2 = 1.0 / (p->hr * p->hr);
    f->eps2 = p->eps * p->eps;
    f->max_iter = p->max_iter;
    f->k_max = k_max;
    f->half = h;
    f->held0 = im->rows ? (long)im->row0 : 0;
    f->held1 = im->rows ? (long)(im->row0 + im->rows) - 1 : (long)im->height - 1;
    *half = h;
    return PC_OK;
}

static int team_size(const pc__msi_filter_params *p)
{
#ifdef _OPENMP
    return p->threads > 0 ? p->threads : omp_get_max_threads();
#else
    (void)p;
    return 1;
#endif
}

static int cmp_climb(const void *a, const void *b)
{
    size_t x = ((const pc__msi_climb *)a)->pixel, y = ((const pc__msi_climb *)b)->pixel;
    return x < y ? -1 : x > y;
}

/* Sorts a list of climbs (and their band values) by pixel: the stopped climbs come out in one order
 * whatever thread found which. */
static pc_status sort_climbs(pc__msi_climbs *list, size_t from)
{
    size_t count = list->count - from, bands = list->bands;
    if (count < 2)
        return PC_OK;
    /* Sort (pixel, index) pairs, then permute both arrays through a copy. */
    pc__msi_climb *keys = pc__alloc(count, sizeof *keys, "stopped climbs (sort)");
    float *m = pc__alloc(count, bands * sizeof *m, "stopped climbs (sort)");
    if (!keys || !m) {
        free(keys);
        free(m);
        return PC_OUT_OF_MEMORY;
    }
    for (size_t t = 0; t < count; t++) {
        keys[t] = list->climb[from + t];
        keys[t].it = (int)t; /* the index, put back below */
    }
    qsort(keys, count, sizeof *keys, cmp_climb);
    for (size_t t = 0; t < count; t++) {
        size_t src = (size_t)keys[t].it;
        memcpy(m + t * bands, list->m + (from + src) * bands, bands * sizeof *m);
        keys[t].it = list->climb[from + src].it;
    }
    memcpy(list->climb + from, keys, count * sizeof *keys);
    memcpy(list->m + from * bands, m, count * bands * sizeof *m);
    free(keys);
    free(m);
    return PC_OK;
}

/* Rows first .. first + count - 1: every valid pixel from its start, blocks of pixels handed out
 * dynamically; modes and positions from the first row's first pixel. */
static pc_status filter_rows(const pc__msi_image *im, const pc__msi_filter_params *p, size_t first, size_t count,
                             float *modes, double *positions, int *iterations, pc__msi_climbs *stopped)
{
    filter_setup f;
    long *half;
    pc_status st = setup(im, p, &f, &half);
    if (st != PC_OK)
        return st;
    size_t w = im->width, bands = im->bands, base = first * w, n = count * w, stopped_from = 0;
    if (stopped)
        stopped_from = stopped->count;
    long blocks = (long)((n + BLOCK - 1) / BLOCK);
    int threads = team_size(p);
    int parallel = p->parallel && threads > 1 && blocks > 1;
    (void)parallel; /* read by the OpenMP pragma only */
    int most = 0, failed = 0, cancelled = 0;
    long done = 0;
#pragma omp parallel num_threads(threads) if (parallel) reduction(max : most) reduction(| : failed)
    {
        float *m = malloc(bands * sizeof *m);
        double *sums = malloc(bands * sizeof *sums);
        pc__msi_climbs mine = {NULL, NULL, 0, 0, bands};
        long next_report = 0;
        if (!m || !sums)
            failed = 1;
        /* A thread without scratch still reaches the worksharing loop, as OpenMP requires. */
#pragma omp for schedule(dynamic, 1)
        for (long blk = 0; blk < blocks; blk++) {
            int stop;
#pragma omp atomic read
            stop = cancelled;
            if (failed || stop)
                continue;
            size_t begin = base + (size_t)blk * BLOCK, end = begin + BLOCK < base + n ? begin + BLOCK : base + n;
            int it = climb_block(&f, begin, end, base, m, sums, modes, positions, stopped ? &mine : NULL, &failed);
            if (it > most)
                most = it;
            long now;
#pragma omp atomic capture
            now = ++done;
            /* Only the calling thread (0 in the team) may call the user's function. */
            if (p->progress && thread_index() == 0 && now >= next_report) {
                next_report = now + blocks / 100 + 1;
                if (p->progress(p->progress_user, (double)now / (double)blocks)) {
#pragma omp atomic write
                    cancelled = 1;
                }
            }
        }
        /* Each thread's stopped climbs join the caller's list (in any order: sorted below). */
        if (mine.count > 0) {
#pragma omp critical(pc__msi_stopped)
            for (size_t t = 0; t < mine.count && !(failed & 1); t++)
                if (push_quiet(stopped, &mine.climb[t], mine.m + t * bands) != 0)
                    failed |= 1;
        }
        pc__msi_climbs_free(&mine);
        free(m);
        free(sums);
    }
    free(half);
    if (failed & 2)
        return pc__fail(PC_INTERNAL_ERROR, "image mean shift: a window reached rows that are not held");
    if (failed)
        return pc__fail(PC_OUT_OF_MEMORY, "cannot allocate per-thread scratch for image mean shift");
    if (cancelled)
        return pc__fail(PC_CANCELLED, "image mean shift cancelled during filtering");
    if (stopped && (st = sort_climbs(stopped, stopped_from)) != PC_OK)
        return st;
    *iterations = most;
    return PC_OK;
}

pc_status pc__msi_filter_rows(const pc__msi_image *im, const pc__msi_filter_params *p, size_t first, size_t count,
                              float *modes, int *iterations, pc__msi_climbs *stopped)
{
    return filter_rows(im, p, first, count, modes, NULL, iterations, stopped);
}

pc_status pc__msi_filter(const pc__msi_image *im, const pc__msi_filter_params *p, float *modes, double *positions,
                         int *iterations)
{
    return filter_rows(im, p, 0, im->height, modes, positions, iterations, NULL);
}

pc_status pc__msi_resume(const pc__msi_image *im, const pc__msi_filter_params *p, pc__msi_climbs *climbs,
                         const size_t *ids, size_t count, uint8_t *over, int *iterations)
{
    *iterations = 0;
    if (count == 0)
        return PC_OK;
    filter_setup f;
    long *half;
    pc_status st = setup(im, p, &f, &half);
    if (st != PC_OK)
        return st;
    size_t bands = im->bands;
    long blocks = (long)((count + 63) / 64); /* climbs taken up are few and each may be long */
    int threads = team_size(p);
    int parallel = p->parallel && threads > 1 && blocks > 1;
    (void)parallel; /* read by the OpenMP pragma only */
    int most = 0, failed = 0;
#pragma omp parallel num_threads(threads) if (parallel) reduction(max : most) reduction(| : failed)
    {
        double *sums = malloc(bands * sizeof *sums);
        if (!sums)
            failed = 1;
#pragma omp for schedule(dynamic, 1)
        for (long blk = 0; blk < blocks; blk++) {
            if (failed)
                continue;
            size_t begin = (size_t)blk * 64, end = begin + 64 < count ? begin + 64 : count;
            int it = resume_block(&f, climbs, ids, begin, end, sums, over);
            most = it > most ? it : most;
        }
        free(sums);
    }
    free(half);
    if (failed)
        return pc__fail(PC_OUT_OF_MEMORY, "cannot allocate per-thread scratch for image mean shift");
    *iterations = most;
    return PC_OK;
}
