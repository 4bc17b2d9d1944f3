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

#define LANES 8
#define MAX_FAST_BANDS 8
#define BLOCK 256 /* pixels handed out at a time by the dynamic schedule */

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(PC_NO_MULTIVERSION)
#define PC__MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define PC__MULTIVERSION
#endif
#define PC__INLINE static inline __attribute__((always_inline))

/* Eight lanes as a GCC/Clang vector type (one AVX register, or two SSE ones). Lanes are summed in a
 * fixed order at the end of each row, so no sum depends on the instruction set's width. */
typedef float vfloat __attribute__((vector_size(LANES * sizeof(float))));
typedef int32_t vint __attribute__((vector_size(LANES * sizeof(float))));

typedef struct {
    const pc__msi_image *im;
    double hs2;  /* hs^2 */
    float hr2;   /* hr^2, the range test runs in float like the data */
    double ihr2; /* 1 / hr^2 and 1 / hs^2 measure a shift in bandwidths */
    double ihs2;
    double eps2;
    double hs;
    int max_iter;
} filter_setup;

/* Window sums of one shift. */
typedef struct {
    double count, sum_row, sum_col;
    double *sum_v; /* bands */
} window_sums;

PC__INLINE vfloat load_lanes(const float *p)
{
    vfloat v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Adds the pixels start .. start + len - 1 of one row (plane offsets) that lie within hr of m in
 * range. The flat kernel makes every weight 0 or 1: masks select what is added (a masked lane adds
 * +0, a NaN of an invalid pixel never passes the test). Returns the count; *sum_j gets the sum of the
 * offsets j of the counted pixels. bands is a constant after inlining, so the band loops unroll. */
PC__INLINE double row_sums_fast(const float *planes, size_t plane_stride, size_t bands, size_t start, size_t len,
                                const float *m, float hr2, double *sum_j, double *sum_v)
{
    const vfloat zero = {0}, one = zero + 1.0f, lane = {0, 1, 2, 3, 4, 5, 6, 7};
    const vfloat limit = zero + (float)len;
    vfloat acc[MAX_FAST_BANDS] = {{0}}, cnt = {0}, sj = {0};
    for (size_t j = 0; j < len; j += LANES) {
        vfloat idx = lane + (float)j;
        vfloat x[MAX_FAST_BANDS], d2 = {0};
        for (size_t b = 0; b < bands; b++) {
            x[b] = load_lanes(planes + b * plane_stride + start + j);
            vfloat t = x[b] - m[b];
            d2 += t * t;
        }
        vint in = (d2 <= hr2) & (idx < limit);
        cnt += (vfloat)((vint)one & in);
        sj += (vfloat)((vint)idx & in);
        for (size_t b = 0; b < bands; b++)
            acc[b] += (vfloat)((vint)x[b] & in);
    }
    double c = 0, s = 0;
    for (int l = 0; l < LANES; l++) {
        c += cnt[l];
        s += sj[l];
    }
    for (size_t b = 0; b < bands; b++) {
        double v = 0;
        for (int l = 0; l < LANES; l++)
            v += acc[b][l];
        sum_v[b] += v;
    }
    *sum_j = s;
    return c;
}

/* Any number of bands: plain scalar code (many-band images are rare; this keeps them exact). */
static double row_sums_any(const float *planes, size_t plane_stride, size_t bands, size_t start, size_t len,
                           const float *m, float hr2, double *sum_j, double *sum_v)
{
    double c = 0, s = 0;
    for (size_t j = 0; j < len; j++) {
        float d2 = 0;
        for (size_t b = 0; b < bands; b++) {
            float t = planes[b * plane_stride + start + j] - m[b];
            d2 += t * t;
        }
        if (d2 <= hr2) {
            c += 1;
            s += (double)j;
            for (size_t b = 0; b < bands; b++)
                sum_v[b] += planes[b * plane_stride + start + j];
        }
    }
    *sum_j = s;
    return c;
}

/* The columns lo..hi of row r inside the disk of radius hs around (yr, yc): from sqrt, then nudged
 * so that exactly the columns with dr^2 + dc^2 <= hs^2 (in double) are in, as a direct test would
 * decide. Returns 0 when the row has none within the image. */
static int disk_columns(const filter_setup *f, double yr, double yc, long r, long *lo, long *hi)
{
    double dr = (double)r - yr, rem = f->hs2 - dr * dr;
    if (rem < 0)
        return 0;
    double s = sqrt(rem);
    long a = (long)ceil(yc - s), b = (long)floor(yc + s);
#define PC__IN_DISK(c) (((double)(c) - yc) * ((double)(c) - yc) + dr * dr <= f->hs2)
    while (PC__IN_DISK(a - 1))
        a--;
    while (a <= b && !PC__IN_DISK(a))
        a++;
    while (PC__IN_DISK(b + 1))
        b++;
    while (b >= a && !PC__IN_DISK(b))
        b--;
#undef PC__IN_DISK
    long w = (long)f->im->width;
    if (a < 0)
        a = 0;
    if (b > w - 1)
        b = w - 1;
    *lo = a;
    *hi = b;
    return a <= b;
}

PC__INLINE double window(const filter_setup *f, size_t bands, int fast, double yr, double yc, const float *m,
                         window_sums *ws)
{
    const pc__msi_image *im = f->im;
    long h = (long)im->height;
    long r0 = (long)ceil(yr - f->hs), r1 = (long)floor(yr + f->hs);
    if (r0 < 0)
        r0 = 0;
    if (r1 > h - 1)
        r1 = h - 1;
    ws->count = ws->sum_row = ws->sum_col = 0;
    for (size_t b = 0; b < bands; b++)
        ws->sum_v[b] = 0;
    float hr2 = f->hr2;
    for (long r = r0; r <= r1; r++) {
        long lo, hi;
        if (!disk_columns(f, yr, yc, r, &lo, &hi))
            continue;
        size_t start = (size_t)r * im->width + (size_t)lo, len = (size_t)(hi - lo + 1);
        double sj, c = fast ? row_sums_fast(im->planes, im->plane_stride, bands, start, len, m, hr2, &sj, ws->sum_v)
                            : row_sums_any(im->planes, im->plane_stride, bands, start, len, m, hr2, &sj, ws->sum_v);
        ws->count += c;
        ws->sum_row += c * (double)r;
        ws->sum_col += c * (double)lo + sj; /* integers below 2^53: exact */
    }
    return ws->count;
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
    window_sums ws = {0, 0, 0, sums};
    int it = 0;
    while (it < f->max_iter) {
        double count = window(f, bands, fast, yr, yc, m, &ws);
        it++;
        if (!(count > 0))
            break;
        double nr = ws.sum_row / count, nc = ws.sum_col / count;
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
    filter_setup f;
    f.im = im;
    f.hs = p->hs;
    f.hs2 = p->hs * p->hs;
    f.hr2 = (float)(p->hr * p->hr);
    f.ihs2 = 1.0 / f.hs2;
    f.ihr2 = 1.0 / (p->hr * p->hr);
    f.eps2 = p->eps * p->eps;
    f.max_iter = p->max_iter;

    size_t n = im->width * im->height, bands = im->bands;
    long blocks = (long)((n + BLOCK - 1) / BLOCK);
    int threads = 1;
#ifdef _OPENMP
    threads = p->threads > 0 ? p->threads : omp_get_max_threads();
#endif
    int parallel = p->parallel && threads > 1 && blocks > 1;
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
    if (failed)
        return pc__fail(PC_OUT_OF_MEMORY, "cannot allocate per-thread scratch for image mean shift");
    if (cancelled)
        return pc__fail(PC_CANCELLED, "image mean shift cancelled during filtering");
    *iterations = most;
    return PC_OK;
}
