/* Mean shift filtering of an image in the joint spatial-range domain: each valid pixel climbs to the
 * mode of a flat kernel that is a disk of radius hs in (row, col) times a ball of radius hr in band
 * values. Only the pixels of the disk are visited, so a shift costs O(hs^2) whatever the image size.
 * Every pixel is computed by the same code on its own, so results are the same at any thread count. */
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
    const long *half; /* per such distance k: the half-width of columns to visit (see pc__msi_filter) */
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
PC__INLINE void window_lanes(const filter_setup *f, size_t bands, long ri, long ci, float fr, float fc,
                             const float *m, window_sums *ws)
{
    const pc__msi_image *im = f->im;
    const long w = (long)im->width, h = (long)im->height;
    const vfloat zero = {0}, one = zero + 1.0f, lane = {0, 1, 2, 3, 4, 5, 6, 7};
    const float hs2 = f->hs2f, hr2 = f->hr2;
    vfloat acc[MAX_FAST_BANDS] = {{0}}, cnt = {0}, sr = {0}, sc = {0};
    long r0 = ri - f->k_max < 0 ? 0 : ri - f->k_max, r1 = ri + f->k_max > h - 1 ? h - 1 : ri + f->k_max;
    long pending = 0;
    for (long r = r0; r <= r1; r++) {
        long span = f->half[r > ri ? r - ri : ri - r];
        long lo = ci - span < 0 ? 0 : ci - span, hi = ci + span + 1 > w - 1 ? w - 1 : ci + span + 1;
        if (lo > hi)
            continue;
        float off_r = (float)(r - ri), dr = off_r - fr, dr2 = dr * dr;
        const float last = (float)(hi - ci);
        const vfloat first = lane + (float)(lo - ci);
        const float *row = im->planes + (size_t)r * im->width + (size_t)lo;
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
static void window_scalar(const filter_setup *f, long ri, long ci, float fr, float fc, const float *m,
                          window_sums *ws)
{
    const pc__msi_image *im = f->im;
    const long w = (long)im->width, h = (long)im->height;
    size_t bands = im->bands;
    long r0 = ri - f->k_max < 0 ? 0 : ri - f->k_max, r1 = ri + f->k_max > h - 1 ? h - 1 : ri + f->k_max;
    for (long r = r0; r <= r1; r++) {
        long span = f->half[r > ri ? r - ri : ri - r];
        long lo = ci - span < 0 ? 0 : ci - span, hi = ci + span + 1 > w - 1 ? w - 1 : ci + span + 1;
        float off_r = (float)(r - ri), dr = off_r - fr, dr2 = dr * dr;
        for (long c = lo; c <= hi; c++) {
            float off_c = (float)(c - ci), dc = off_c - fc;
            if (!(dc * dc + dr2 <= f->hs2f))
                continue;
            const float *px = im->planes + (size_t)r * im->width + (size_t)c;
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

/* Climbs from pixel i to its mode; returns the shifts taken. m, sums: bands floats / doubles of
 * scratch. A window that holds no pixel (the disk and the ball, both moved, may miss every pixel)
 * ends the climb where it is. */
PC__INLINE int climb_bands(const filter_setup *f, size_t bands, int fast, size_t i, float *m, double *sums,
                           float *mode, double *pos)
{
    const pc__msi_image *im = f->im;
    double yr = (double)(i / im->width), yc = (double)(i % im->width);
    for (size_t b = 0; b < bands; b++)
        m[b] = im->planes[b * im->plane_stride + i];
    int it = 0;
    while (it < f->max_iter) {
        /* The window's reference row is the nearest to the centre, its reference column the one
         * at or left of it: the table of spans assumes exactly that. */
        long ri = (long)floor(yr + 0.5), ci = (long)floor(yc);
        float fr = (float)(yr - (double)ri), fc = (float)(yc - (double)ci);
        window_sums ws = {0, 0, 0, sums};
        for (size_t b = 0; b < bands; b++)
            sums[b] = 0;
        if (fast)
            window_lanes(f, bands, ri, ci, fr, fc, m, &ws);
        else
            window_scalar(f, ri, ci, fr, fc, m, &ws);
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
    memcpy(mode, m, bands * sizeof *m);
    if (pos) {
        pos[0] = yr;
        pos[1] = yc;
    }
    return it;
}

/* One block of pixels, with the band count fixed for the common cases so the lanes unroll. */
PC__MULTIVERSION
static int climb_block(const filter_setup *f, size_t begin, size_t end, float *m, double *sums, float *modes,
                       double *positions)
{
    const pc__msi_image *im = f->im;
    size_t bands = im->bands;
    int most = 0;
    for (size_t i = begin; i < end; i++) {
        float *mode = modes + i * bands;
        if (!im->ok[i]) {
            for (size_t b = 0; b < bands; b++)
                mode[b] = NAN;
            if (positions)
                positions[2 * i] = positions[2 * i + 1] = NAN;
            continue;
        }
        double *pos = positions ? positions + 2 * i : NULL;
        int it;
        switch (bands) {
        case 1: it = climb_bands(f, 1, 1, i, m, sums, mode, pos); break;
        case 2: it = climb_bands(f, 2, 1, i, m, sums, mode, pos); break;
        case 3: it = climb_bands(f, 3, 1, i, m, sums, mode, pos); break;
        case 4: it = climb_bands(f, 4, 1, i, m, sums, mode, pos); break;
        default:
            it = bands <= MAX_FAST_BANDS ? climb_bands(f, bands, 1, i, m, sums, mode, pos)
                                         : climb_bands(f, bands, 0, i, m, sums, mode, pos);
            break;
        }
        if (it > most)
            most = it;
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

pc_status pc__msi_filter(const pc__msi_image *im, const pc__msi_filter_params *p, float *modes, double *positions,
                         int *iterations)
{
    /* Rows k away from the centre's nearest row are at least k - 1/2 from the centre, so the disk
     * spans at most sqrt(hs^2 - (k - 1/2)^2) columns either side of it, and the centre lies in
     * [ci, ci + 1): columns ci - half[k] .. ci + half[k] + 1 hold every pixel of the disk.
     * The centre never leaves the image (it is a mean of pixels), so a disk wider than the image's
     * width + height covers all of it from anywhere: the table stops there (hs may be huge). */
    double hs_table = fmin(p->hs, (double)(im->width + im->height + 2));
    long k_max = (long)floor(hs_table + 0.5);
    long *half = pc__alloc((size_t)k_max + 1, sizeof *half, "disk spans");
    if (!half)
        return PC_OUT_OF_MEMORY;
    for (long k = 0; k <= k_max; k++) {
        double d = k == 0 ? 0 : (double)k - 0.5;
        half[k] = (long)floor(sqrt(fmax(0, hs_table * hs_table - d * d)));
    }
    filter_setup f;
    f.im = im;
    f.hs2f = (float)(p->hs * p->hs);
    f.hr2 = (float)(p->hr * p->hr);
    f.ihs2 = 1.0 / (p->hs * p->hs);
    f.ihr2 = 1.0 / (p->hr * p->hr);
    f.eps2 = p->eps * p->eps;
    f.max_iter = p->max_iter;
    f.k_max = k_max;
    f.half = half;

    size_t n = im->width * im->height, bands = im->bands;
    long blocks = (long)((n + BLOCK - 1) / BLOCK);
    int threads = 1;
#ifdef _OPENMP
    threads = p->threads > 0 ? p->threads : omp_get_max_threads();
#endif
    int parallel = p->parallel && threads > 1 && blocks > 1;
    (void)parallel; /* read by the OpenMP pragma only */
    int most = 0, failed = 0, cancelled = 0;
    long done = 0;
#pragma omp parallel num_threads(threads) if (parallel) reduction(max : most) reduction(| : failed)
    {
        float *m = malloc(bands * sizeof *m);
        double *sums = malloc(bands * sizeof *sums);
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
            size_t begin = (size_t)blk * BLOCK, end = begin + BLOCK < n ? begin + BLOCK : n;
            int it = climb_block(&f, begin, end, m, sums, modes, positions);
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
        free(m);
        free(sums);
    }
    free(half);
    if (failed)
        return pc__fail(PC_OUT_OF_MEMORY, "cannot allocate per-thread scratch for image mean shift");
    if (cancelled)
        return pc__fail(PC_CANCELLED, "image mean shift cancelled during filtering");
    *iterations = most;
    return PC_OK;
}
