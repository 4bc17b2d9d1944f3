/* Image mean shift against references computed another way: one filtering step against a direct
 * double-precision sum over every pixel, converged modes against the same sum (a mode does not move),
 * painted regions against their true labels, small specks against the region they should join,
 * nodata against the same image with wild values under the mask, OpenMP against sequential. */
#include "check.h"
#include "test_util.h"

#include "../src/meanshift/image_internal.h"

#include <math.h>
#include <string.h>

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

/* ------------------------------------------------------------------ the direct computation */

/* One shift of the flat disk x ball kernel from (yr, yc, m), summed over every pixel of the image in
 * double. *ambiguous is set when some pixel's squared range distance is within tol_r * hr^2 of hr^2,
 * or its squared spatial distance within tol_s * hs^2 of hs^2, where the filter's float tests and
 * these double ones could decide differently (0: exact, as for integer values and positions, which
 * float computes exactly). Returns the pixel count in the window. */
static double direct_shift(const double *v, const uint8_t *ok, size_t w, size_t h, size_t bands, double hs,
                           double hr, double yr, double yc, const double *m, double *out_r, double *out_c,
                           double *out_m, double tol_r, double tol_s, int *ambiguous)
{
    double count = 0, sr = 0, sc = 0, sm[16] = {0};
    for (size_t r = 0; r < h; r++) {
        for (size_t c = 0; c < w; c++) {
            size_t j = r * w + c;
            if (ok && !ok[j])
                continue;
            double ds = ((double)r - yr) * ((double)r - yr) + ((double)c - yc) * ((double)c - yc);
            if (fabs(ds - hs * hs) < tol_s * hs * hs)
                *ambiguous = 1;
            if (ds > hs * hs)
                continue;
            double d2 = 0;
            for (size_t b = 0; b < bands; b++) {
                double d = v[j * bands + b] - m[b];
                d2 += d * d;
            }
            if (fabs(d2 - hr * hr) < tol_r * hr * hr)
                *ambiguous = 1;
            if (d2 > hr * hr)
                continue;
            count += 1;
            sr += (double)r;
            sc += (double)c;
            for (size_t b = 0; b < bands; b++)
                sm[b] += v[j * bands + b];
        }
    }
    if (count > 0) {
        *out_r = sr / count;
        *out_c = sc / count;
        for (size_t b = 0; b < bands; b++)
            out_m[b] = sm[b] / count;
    }
    return count;
}

/* A random float image of a few colours plus wide noise (so windows hold some pixels and miss
 * others), and ~10% invalid pixels. */
static void random_image(uint64_t *s, size_t n, size_t bands, double spread, float *v, uint8_t *ok)
{
    double base[3][16];
    for (int k = 0; k < 3; k++)
        for (size_t b = 0; b < bands; b++)
            base[k][b] = 200 * rng_uniform(s);
    for (size_t i = 0; i < n; i++) {
        int k = (int)(rng_next(s) % 3);
        for (size_t b = 0; b < bands; b++)
            v[i * bands + b] = (float)(base[k][b] + spread * (2 * rng_uniform(s) - 1));
        ok[i] = rng_uniform(s) >= 0.1;
    }
}

static pc__msi_image make_image(const float *v, const uint8_t *ok, size_t w, size_t h, size_t bands, float **planes)
{
    size_t n = w * h, stride = n + PC__MSI_PAD;
    float *p = calloc(bands * stride, sizeof *p);
    for (size_t i = 0; i < n; i++)
        for (size_t b = 0; b < bands; b++)
            p[b * stride + i] = ok[i] ? v[i * bands + b] : NAN;
    *planes = p;
    pc__msi_image im = {w, h, bands, p, stride, ok, 0, 0};
    return im;
}

/* One step (max_iter 1) of the filter equals the direct mean, in position and in value, for several
 * band counts (the unrolled paths and the generic one), radii and element types. */
static void test_one_step_against_direct(uint64_t seed)
{
    static const struct {
        size_t w, h, bands;
        double hs, hr, spread;
    } cases[] = {{23, 17, 3, 3.5, 60, 40}, {31, 9, 1, 2.0, 10.5, 15}, {19, 21, 4, 4.2, 45, 30},
                 {17, 13, 5, 3.0, 50, 30}, {15, 16, 11, 2.5, 120, 40}, {1, 40, 2, 5, 30, 20}};
    uint64_t s = seed ^ 0x51;
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        size_t w = cases[t].w, h = cases[t].h, bands = cases[t].bands, n = w * h;
        float *v = malloc(n * bands * sizeof *v);
        uint8_t *ok = malloc(n);
        double *vd = malloc(n * bands * sizeof *vd);
        random_image(&s, n, bands, cases[t].spread, v, ok);
        if (t == 0) /* integer values: the float range test is then exact, no pixel is ambiguous */
            for (size_t i = 0; i < n * bands; i++)
                v[i] = roundf(v[i]);
        for (size_t i = 0; i < n * bands; i++)
            vd[i] = v[i];
        float *planes;
        pc__msi_image im = make_image(v, ok, w, h, bands, &planes);
        pc__msi_filter_params fp = {cases[t].hs, cases[t].hr, 0, 1, 0, 1, NULL, NULL};
        float *modes = malloc(n * bands * sizeof *modes);
        double *pos = malloc(2 * n * sizeof *pos);
        int iters = 0;
        CHECK_STATUS(pc__msi_filter(&im, &fp, modes, pos, &iters), PC_OK);
        CHECK(iters == 1);
        double worst_v = 0, worst_p = 0;
        size_t compared = 0, valid = 0;
        for (size_t i = 0; i < n; i++) {
            if (!ok[i]) {
                CHECK(isnan(modes[i * bands]));
                continue;
            }
            valid++;
            int amb = 0;
            double r = 0, c = 0, m[16] = {0};
            double cnt = direct_shift(vd, ok, w, h, bands, cases[t].hs, cases[t].hr, (double)(i / w),
                                      (double)(i % w), vd + i * bands, &r, &c, m, t == 0 ? 0 : 1e-5, 0, &amb);
            CHECK(cnt >= 1);
            if (amb)
                continue;
            compared++;
            worst_p = fmax(worst_p, fmax(fabs(r - pos[2 * i]), fabs(c - pos[2 * i + 1])));
            for (size_t b = 0; b < bands; b++)
                worst_v = fmax(worst_v, fabs(m[b] - modes[i * bands + b]) / (1 + fabs(m[b])));
        }
        CHECK_MSG(compared >= valid / 2, "case %zu: only %zu of %zu pixels unambiguous", t, compared, valid);
        if (t == 0)
            CHECK(compared == valid);
        CHECK_MSG(worst_p <= 1e-9, "case %zu: position error %.3g", t, worst_p);
        CHECK_MSG(worst_v <= 2e-6, "case %zu: value error %.3g (relative)", t, worst_v);

        /* The public call gives the same modes. */
        pc_meanshift_image_params p;
        pc_meanshift_image_params_init(&p);
        p.spatial_bandwidth = cases[t].hs;
        p.range_bandwidth = cases[t].hr;
        p.max_iter = 1;
        p.eps = 0;
        p.backend = PC_BACKEND_SEQUENTIAL;
        pc_points view = pc_points_f32(v, n, bands);
        pc_result *res = NULL;
        CHECK_STATUS(pc_meanshift_image(&view, w, h, ok, &p, &res), PC_OK);
        if (res)
            CHECK(memcmp(pc_result_modes(res), modes, n * bands * sizeof *modes) == 0);
        pc_result_free(res);
        free(v), free(ok), free(vd), free(planes), free(modes), free(pos);
    }
}

/* Converged: the direct sum from each final (position, mode) moves it by at most eps (in
 * bandwidths); a flat kernel's window usually stays the same, so mostly by exactly 0. */
static void test_modes_are_fixed_points(uint64_t seed)
{
    const size_t w = 29, h = 23, bands = 3, n = w * h;
    const double hs = 4, hr = 40, eps = 1e-3;
    uint64_t s = seed ^ 0xF1;
    float *v = malloc(n * bands * sizeof *v);
    uint8_t *ok = malloc(n);
    double *vd = malloc(n * bands * sizeof *vd);
    random_image(&s, n, bands, 35, v, ok);
    for (size_t i = 0; i < n * bands; i++)
        vd[i] = v[i];
    float *planes;
    pc__msi_image im = make_image(v, ok, w, h, bands, &planes);
    pc__msi_filter_params fp = {hs, hr, eps, 500, 0, 1, NULL, NULL};
    float *modes = malloc(n * bands * sizeof *modes);
    double *pos = malloc(2 * n * sizeof *pos);
    int iters = 0;
    CHECK_STATUS(pc__msi_filter(&im, &fp, modes, pos, &iters), PC_OK);
    CHECK(iters > 1 && iters < 500);
    size_t valid = 0, still = 0, checked = 0;
    for (size_t i = 0; i < n; i++) {
        if (!ok[i])
            continue;
        valid++;
        double m[3] = {modes[i * 3], modes[i * 3 + 1], modes[i * 3 + 2]}, r = 0, c = 0, nm[3] = {0};
        int amb = 0;
        if (direct_shift(vd, ok, w, h, bands, hs, hr, pos[2 * i], pos[2 * i + 1], m, &r, &c, nm, 1e-5, 1e-5, &amb) < 1 || amb)
            continue;
        checked++;
        double d2 = ((r - pos[2 * i]) * (r - pos[2 * i]) + (c - pos[2 * i + 1]) * (c - pos[2 * i + 1])) / (hs * hs);
        for (int b = 0; b < 3; b++)
            d2 += (nm[b] - m[b]) * (nm[b] - m[b]) / (hr * hr);
        still += sqrt(d2) <= eps * 1.01;
    }
    CHECK_MSG(checked >= valid * 3 / 4, "%zu of %zu checked", checked, valid);
    CHECK_MSG(still == checked, "%zu of %zu modes move under a direct shift", checked - still, checked);
    free(v), free(ok), free(vd), free(planes), free(modes), free(pos);
}

/* ------------------------------------------------------------------ painted images */

typedef struct {
    size_t w, h;
    uint8_t *v;     /* w * h * 3 */
    int32_t *truth; /* w * h */
} painted;

/* Background, a rectangle, a disk and two squares of one colour that do not touch (not even at a
 * corner), every colour > 100 from the others in each band that differs; noise uniform in +-noise. */
static painted paint(uint64_t *s, int noise)
{
    painted im = {64, 48, NULL, NULL};
    static const int colour[5][3] = {{30, 30, 30}, {200, 40, 40}, {40, 200, 40}, {40, 40, 200}, {40, 40, 200}};
    im.v = malloc(im.w * im.h * 3);
    im.truth = malloc(im.w * im.h * sizeof *im.truth);
    for (size_t r = 0; r < im.h; r++) {
        for (size_t c = 0; c < im.w; c++) {
            int k = 0;
            double dr = (double)r - 32, dc = (double)c - 45;
            if (r >= 5 && r <= 20 && c >= 5 && c <= 25)
                k = 1;
            else if (dr * dr + dc * dc <= 100)
                k = 2;
            else if (r >= 36 && r <= 43 && c >= 4 && c <= 11)
                k = 3;
            else if (r >= 36 && r <= 43 && c >= 20 && c <= 27)
                k = 4;
            size_t i = r * im.w + c;
            im.truth[i] = k;
            for (int b = 0; b < 3; b++)
                im.v[i * 3 + b] = (uint8_t)(colour[k][b] + (int)(rng_next(s) % (2 * noise + 1)) - noise);
        }
    }
    return im;
}

static pc_result *segment(const pc_points *view, size_t w, size_t h, const uint8_t *valid, double hs, double hr,
                          int64_t min_size, pc_backend backend, int threads)
{
    pc_meanshift_image_params p;
    pc_meanshift_image_params_init(&p);
    p.spatial_bandwidth = hs;
    p.range_bandwidth = hr;
    p.min_region_size = min_size;
    /* A build without OpenMP runs the sequential backend in its place (it refuses OpenMP by name). */
    p.backend = backend == PC_BACKEND_OPENMP && !pc_backend_available(backend) ? PC_BACKEND_SEQUENTIAL : backend;
    p.threads = threads;
    pc_result *r = NULL;
    pc_status st = pc_meanshift_image(view, w, h, valid, &p, &r);
    CHECK_MSG(st == PC_OK, "pc_meanshift_image: %s", pc_last_error());
    return r;
}

static double ari_of(const int32_t *truth, const int32_t *labels, size_t n)
{
    double ari = -2;
    CHECK_STATUS(pc_adjusted_rand_index(truth, labels, n, &ari), PC_OK);
    return ari;
}

/* The true regions come back exactly, through every element type and a strided view, and the two
 * same-coloured squares stay two regions. */
static void test_painted_regions(uint64_t seed)
{
    uint64_t s = seed ^ 0x77;
    painted im = paint(&s, 4);
    size_t n = im.w * im.h;
    uint16_t *u16 = malloc(n * 3 * sizeof *u16);
    float *f32 = malloc(n * 3 * sizeof *f32);
    double *f64 = malloc(n * 3 * sizeof *f64);
    uint8_t *rgba = malloc(n * 4);
    for (size_t i = 0; i < n * 3; i++)
        u16[i] = im.v[i], f32[i] = im.v[i], f64[i] = im.v[i];
    for (size_t i = 0; i < n; i++) {
        memcpy(rgba + 4 * i, im.v + 3 * i, 3);
        rgba[4 * i + 3] = (uint8_t)rng_next(&s); /* a fourth byte the view skips */
    }
    pc_points views[5] = {pc_points_u8(im.v, n, 3), pc_points_u16(u16, n, 3), pc_points_f32(f32, n, 3),
                          pc_points_f64(f64, n, 3), pc_points_u8(rgba, n, 3)};
    views[4].stride = 4;
    pc_result *first = NULL;
    for (int t = 0; t < 5; t++) {
        pc_result *r = segment(&views[t], im.w, im.h, NULL, 6, 16, 20, PC_BACKEND_AUTO, 0);
        if (!r)
            continue;
        const int32_t *l = pc_result_labels(r);
        CHECK_MSG(pc_result_cluster_count(r) == 5, "view %d: %zu regions", t, pc_result_cluster_count(r));
        CHECK_MSG(ari_of(im.truth, l, n) == 1.0, "view %d", t);
        /* the two squares (true regions 3 and 4) */
        CHECK(l[40 * im.w + 8] != l[40 * im.w + 24]);
        /* sizes: the regions' true pixel counts, largest first; centres: their mean colours */
        size_t true_size[5] = {0};
        double true_sum[5][3] = {{0}};
        for (size_t i = 0; i < n; i++) {
            true_size[im.truth[i]]++;
            for (int b = 0; b < 3; b++)
                true_sum[im.truth[i]][b] += im.v[i * 3 + b];
        }
        for (size_t i = 0; i < n; i++) {
            int32_t k = l[i];
            if (k < 0 || k >= 5)
                continue;
            CHECK(pc_result_sizes(r)[k] == (int64_t)true_size[im.truth[i]]);
            for (int b = 0; b < 3; b++)
                CHECK_NEAR(pc_result_centers(r)[k * 3 + b], true_sum[im.truth[i]][b] / true_size[im.truth[i]], 1e-3);
        }
        for (size_t k = 1; k < pc_result_cluster_count(r); k++)
            CHECK(pc_result_sizes(r)[k - 1] >= pc_result_sizes(r)[k]);
        CHECK(pc_result_iterations(r) >= 1 && pc_result_iterations(r) <= 20);
        if (!first) {
            first = r;
            /* stages, in order */
            static const char *names[4] = {"prepare", "filter", "fuse", "prune"};
            CHECK(pc_result_stage_count(r) == 4);
            for (size_t g = 0; g < 4 && g < pc_result_stage_count(r); g++) {
                const char *name = NULL;
                double sec = -1;
                CHECK_STATUS(pc_result_stage(r, g, &name, &sec), PC_OK);
                CHECK(name && strcmp(name, names[g]) == 0 && sec >= 0);
            }
            continue;
        }
        /* The same values in another type give the same numbers. */
        CHECK_MSG(memcmp(l, pc_result_labels(first), n * sizeof *l) == 0, "view %d labels differ", t);
        CHECK_MSG(memcmp(pc_result_modes(r), pc_result_modes(first), n * 3 * sizeof(float)) == 0,
                  "view %d modes differ", t);
        pc_result_free(r);
    }
    pc_result_free(first);
    free(im.v), free(im.truth), free(u16), free(f32), free(f64), free(rgba);
}

/* A 5-pixel speck (a plus) of another colour: kept as a region of its own with no minimum size,
 * joins the surroundings with a minimum of 10; on the border of two regions it joins the one of
 * closer colour. */
static void test_speck(uint64_t seed)
{
    uint64_t s = seed ^ 0x5EC;
    const size_t w = 40, h = 30, n = w * h;
    uint8_t *v = malloc(n);
    int32_t *truth = malloc(n * sizeof *truth);
    static const int plus_dr[5] = {0, -1, 1, 0, 0}, plus_dc[5] = {0, 0, 0, -1, 1};
    /* speck colour 220 in a flat 100 image; then 170 and 80 on the border of 50 | 200 */
    static const struct {
        int left, right, speck, joins; /* joins: 0 left, 1 right */
    } cases[] = {{100, 100, 220, 0}, {50, 200, 170, 1}, {50, 200, 80, 0}};
    for (int t = 0; t < 3; t++) {
        for (size_t i = 0; i < n; i++) {
            int right = (i % w) >= 20;
            truth[i] = cases[t].left == cases[t].right ? 0 : right;
            v[i] = (uint8_t)((right ? cases[t].right : cases[t].left) + (int)(rng_next(&s) % 7) - 3);
        }
        size_t cr = 15, cc = cases[t].left == cases[t].right ? 9 : 20;
        for (int k = 0; k < 5; k++)
            v[(cr + plus_dr[k]) * w + cc + plus_dc[k]] = (uint8_t)(cases[t].speck + (int)(rng_next(&s) % 5) - 2);
        pc_points view = pc_points_u8(v, n, 1);
        size_t regions = cases[t].left == cases[t].right ? 1 : 2;
        pc_result *keep = segment(&view, w, h, NULL, 5, 16, 0, PC_BACKEND_SEQUENTIAL, 0);
        pc_result *drop = segment(&view, w, h, NULL, 5, 16, 10, PC_BACKEND_SEQUENTIAL, 0);
        if (!keep || !drop)
            continue;
        const int32_t *lk = pc_result_labels(keep), *ld = pc_result_labels(drop);
        size_t centre = cr * w + cc;
        CHECK_MSG(pc_result_cluster_count(keep) == regions + 1, "case %d: %zu regions", t, pc_result_cluster_count(keep));
        CHECK(pc_result_sizes(keep)[pc_result_cluster_count(keep) - 1] == 5);
        for (int k = 0; k < 5; k++)
            CHECK(lk[(cr + plus_dr[k]) * w + cc + plus_dc[k]] == lk[centre]);
        CHECK_MSG(pc_result_cluster_count(drop) == regions, "case %d: %zu regions", t, pc_result_cluster_count(drop));
        /* everything else as the truth says, and the speck where it belongs */
        int32_t *expect = malloc(n * sizeof *expect);
        memcpy(expect, truth, n * sizeof *expect);
        for (int k = 0; k < 5; k++)
            expect[(cr + plus_dr[k]) * w + cc + plus_dc[k]] = cases[t].joins;
        CHECK_MSG(ari_of(expect, ld, n) == 1.0, "case %d", t);
        CHECK(ld[centre] == ld[cases[t].joins ? w - 1 : 0]);
        free(expect);
        pc_result_free(keep);
        pc_result_free(drop);
    }
    free(v), free(truth);
}

/* Pixels join across corners (8-connected): a one-pixel-wide diagonal line is one region, and the
 * background on its two sides, which touches across the line's corners, is one region too. */
static void test_diagonal_line(uint64_t seed)
{
    uint64_t s = seed ^ 0xD1A;
    const size_t w = 30, h = 30, n = w * h;
    uint8_t v[30 * 30];
    int32_t truth[30 * 30];
    for (size_t i = 0; i < n; i++) {
        truth[i] = i / w == i % w;
        v[i] = (uint8_t)((truth[i] ? 180 : 60) + (int)(rng_next(&s) % 5) - 2);
    }
    pc_points view = pc_points_u8(v, n, 1);
    pc_result *r = segment(&view, w, h, NULL, 4, 16, 0, PC_BACKEND_SEQUENTIAL, 0);
    if (r) {
        CHECK_MSG(pc_result_cluster_count(r) == 2, "%zu regions", pc_result_cluster_count(r));
        CHECK(ari_of(truth, pc_result_labels(r), n) == 1.0);
        CHECK(pc_result_sizes(r)[1] == 30);
    }
    pc_result_free(r);
}

/* Bandwidths beyond the image: a disk larger than the image makes every pixel's mode the mean of all
 * pixels within hr in range (here: its half of the image), whatever the size of hs (1e300 squared
 * is infinite); a ball larger than every colour difference gives one region. */
static void test_huge_bandwidths(uint64_t seed)
{
    uint64_t s = seed ^ 0xB16;
    const size_t w = 20, h = 12, n = w * h;
    uint16_t v[20 * 12];
    double sum[2] = {0, 0};
    for (size_t i = 0; i < n; i++) {
        int right = i % w >= 8;
        v[i] = (uint16_t)((right ? 2000 : 400) + (int)(rng_next(&s) % 21) - 10);
        sum[right] += v[i];
    }
    pc_points view = pc_points_u16(v, n, 1);
    const double spatial[3] = {100, 1e30, 1e300};
    for (int t = 0; t < 3; t++) {
        pc_result *r = segment(&view, w, h, NULL, spatial[t], 50, 0, PC_BACKEND_AUTO, 0);
        if (!r)
            continue;
        CHECK(pc_result_cluster_count(r) == 2);
        for (size_t i = 0; i < n; i++) {
            int right = i % w >= 8;
            CHECK_NEAR(pc_result_modes(r)[i], sum[right] / (right ? 12.0 * h : 8.0 * h), 1e-3);
        }
        CHECK(pc_result_iterations(r) <= 2); /* the first shift lands on the mode, the second confirms */
        pc_result_free(r);
    }
    pc_result *r = segment(&view, w, h, NULL, 3, 1e30, 0, PC_BACKEND_AUTO, 0);
    if (r) {
        CHECK(pc_result_cluster_count(r) == 1);
        CHECK_NEAR(pc_result_centers(r)[0], (sum[0] + sum[1]) / n, 1e-3);
    }
    pc_result_free(r);
}

/* Scattered nodata can cut a pixel or two off their true region (a circle's tip, say). Such a piece
 * rightly joins a neighbour as a small region, which the painted truth cannot foresee, so it is made
 * nodata as well: each true region keeps its largest 8-connected valid piece. */
static void keep_largest_pieces(int32_t *truth, uint8_t *valid, size_t w, size_t h)
{
    size_t n = w * h;
    int32_t *piece = malloc(n * sizeof *piece);
    size_t *stack = malloc(n * sizeof *stack);
    size_t best_size[8] = {0}; /* truth labels are 0..5 */
    int32_t best[8], pieces = 0;
    for (size_t i = 0; i < n; i++)
        piece[i] = -1;
    for (size_t seed = 0; seed < n; seed++) {
        if (!valid[seed] || piece[seed] >= 0)
            continue;
        size_t top = 0, size = 0;
        stack[top++] = seed;
        piece[seed] = pieces;
        while (top) {
            size_t i = stack[--top], r = i / w, c = i % w;
            size++;
            for (long dr = -1; dr <= 1; dr++)
                for (long dc = -1; dc <= 1; dc++) {
                    long rr = (long)r + dr, cc = (long)c + dc;
                    if (rr < 0 || cc < 0 || rr >= (long)h || cc >= (long)w)
                        continue;
                    size_t j = (size_t)rr * w + (size_t)cc;
                    if (valid[j] && piece[j] < 0 && truth[j] == truth[seed])
                        piece[j] = pieces, stack[top++] = j;
                }
        }
        if (size > best_size[truth[seed]])
            best_size[truth[seed]] = size, best[truth[seed]] = pieces;
        pieces++;
    }
    for (size_t i = 0; i < n; i++)
        if (valid[i] && piece[i] != best[truth[i]])
            valid[i] = 0, truth[i] = -1;
    free(piece);
    free(stack);
}

/* Nodata: a full-height stripe and scattered pixels are invalid. They get -1 and NaN modes, split the
 * background in two (they connect nothing), and whatever they hold (the true colours, wild bytes,
 * NaN) changes no other pixel's result. */
static void test_nodata(uint64_t seed)
{
    uint64_t s = seed ^ 0xDA7A;
    painted im = paint(&s, 4);
    size_t n = im.w * im.h;
    uint8_t *valid = malloc(n), *wild = malloc(n * 3);
    float *nan_image = malloc(n * 3 * sizeof *nan_image);
    int32_t *truth = malloc(n * sizeof *truth);
    for (size_t i = 0; i < n; i++) {
        size_t c = i % im.w;
        valid[i] = !(c == 30 || c == 31) && rng_uniform(&s) >= 0.05;
        /* the stripe cuts the background (true region 0) into a left (0) and a right part (5) */
        truth[i] = !valid[i] ? -1 : im.truth[i] == 0 && c > 31 ? 5 : im.truth[i];
        for (int b = 0; b < 3; b++) {
            wild[i * 3 + b] = valid[i] ? im.v[i * 3 + b] : (uint8_t)rng_next(&s);
            nan_image[i * 3 + b] = valid[i] ? im.v[i * 3 + b] : NAN;
        }
    }
    keep_largest_pieces(truth, valid, im.w, im.h);
    for (size_t i = 0; i < n * 3; i++)
        if (!valid[i / 3])
            nan_image[i] = NAN;
    pc_points views[3] = {pc_points_u8(im.v, n, 3), pc_points_u8(wild, n, 3), pc_points_f32(nan_image, n, 3)};
    pc_result *r[3];
    for (int t = 0; t < 3; t++)
        r[t] = segment(&views[t], im.w, im.h, valid, 6, 16, 20, PC_BACKEND_OPENMP, 2);
    if (r[0] && r[1] && r[2]) {
        const int32_t *l = pc_result_labels(r[0]);
        CHECK_MSG(pc_result_cluster_count(r[0]) == 6, "%zu regions", pc_result_cluster_count(r[0]));
        CHECK(ari_of(truth, l, n) == 1.0);
        for (size_t i = 0; i < n; i++) {
            if (valid[i])
                continue;
            CHECK(l[i] == -1);
            CHECK(isnan(pc_result_modes(r[0])[i * 3]));
        }
        int64_t total = 0;
        for (size_t k = 0; k < pc_result_cluster_count(r[0]); k++)
            total += pc_result_sizes(r[0])[k];
        size_t valid_count = 0;
        for (size_t i = 0; i < n; i++)
            valid_count += valid[i];
        CHECK(total == (int64_t)valid_count);
        for (int t = 1; t < 3; t++) {
            CHECK(pc_result_cluster_count(r[t]) == pc_result_cluster_count(r[0]));
            CHECK(memcmp(pc_result_labels(r[t]), l, n * sizeof *l) == 0);
            CHECK(memcmp(pc_result_modes(r[t]), pc_result_modes(r[0]), n * 3 * sizeof(float)) == 0);
            CHECK(memcmp(pc_result_centers(r[t]), pc_result_centers(r[0]), 6 * 3 * sizeof(float)) == 0);
        }
    }
    for (int t = 0; t < 3; t++)
        pc_result_free(r[t]);
    free(im.v), free(im.truth), free(valid), free(wild), free(nan_image), free(truth);
}

/* The OpenMP backend at 1, 2 and 3 threads computes the sequential backend's numbers bit for bit,
 * on a noisy image where pixels take many different numbers of iterations. */
static void test_openmp_matches_sequential(uint64_t seed)
{
    uint64_t s = seed ^ 0x0E9;
    const size_t w = 150, h = 97, n = w * h;
    float *v = malloc(n * 3 * sizeof *v);
    uint8_t *valid = malloc(n);
    for (size_t i = 0; i < n; i++) {
        double r = (double)(i / w), c = (double)(i % w);
        for (int b = 0; b < 3; b++)
            v[i * 3 + b] = (float)(120 + 80 * sin(0.07 * (b + 1) * r + 0.05 * c) + 30 * (rng_uniform(&s) - 0.5));
        valid[i] = rng_uniform(&s) >= 0.02;
    }
    pc_points view = pc_points_f32(v, n, 3);
    pc_result *ref = segment(&view, w, h, valid, 5, 16, 20, PC_BACKEND_SEQUENTIAL, 0);
    if (ref) {
        CHECK(pc_result_backend(ref) == PC_BACKEND_SEQUENTIAL);
        CHECK(pc_result_cluster_count(ref) > 5);
    }
    for (int threads = 1; threads <= 3 && ref; threads++) {
        pc_result *r = segment(&view, w, h, valid, 5, 16, 20, PC_BACKEND_OPENMP, threads);
        if (!r)
            continue;
        CHECK(pc_result_backend(r) == (pc_backend_available(PC_BACKEND_OPENMP) ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL));
        size_t k = pc_result_cluster_count(r);
        CHECK_MSG(k == pc_result_cluster_count(ref), "%d threads", threads);
        CHECK_MSG(memcmp(pc_result_labels(r), pc_result_labels(ref), n * sizeof(int32_t)) == 0, "%d threads", threads);
        CHECK_MSG(memcmp(pc_result_modes(r), pc_result_modes(ref), n * 3 * sizeof(float)) == 0, "%d threads", threads);
        if (k == pc_result_cluster_count(ref)) {
            CHECK(memcmp(pc_result_centers(r), pc_result_centers(ref), k * 3 * sizeof(float)) == 0);
            CHECK(memcmp(pc_result_sizes(r), pc_result_sizes(ref), k * sizeof(int64_t)) == 0);
        }
        CHECK(pc_result_iterations(r) == pc_result_iterations(ref));
        pc_result_free(r);
    }
    pc_result_free(ref);
    free(v), free(valid);
}

static int cancel_at_once(void *user, double fraction)
{
    (void)fraction;
    ++*(int *)user;
    return 1;
}

static void test_bad_input(void)
{
    const size_t w = 8, h = 6, n = w * h;
    float v[48 * 2];
    uint8_t valid[48];
    for (size_t i = 0; i < n * 2; i++)
        v[i] = (float)(i % 7);
    memset(valid, 1, sizeof valid);
    pc_points view = pc_points_f32(v, n, 2);
    pc_meanshift_image_params p;
    pc_meanshift_image_params_init(&p);
    pc_result *r = (pc_result *)&r; /* must be reset to NULL on failure */
    CHECK_STATUS(pc_meanshift_image(&view, w, h, NULL, &p, &r), PC_OK);
    pc_result_free(r);

    r = (pc_result *)&r;
    CHECK_STATUS(pc_meanshift_image(&view, w + 1, h, NULL, &p, &r), PC_INVALID_ARGUMENT);
    CHECK(r == NULL);
    CHECK(strstr(pc_last_error(), "pixels") != NULL);
    CHECK_STATUS(pc_meanshift_image(&view, 0, h, NULL, &p, &r), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_meanshift_image(&view, SIZE_MAX / 2 + 2, 2, NULL, &p, &r), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_meanshift_image(NULL, w, h, NULL, &p, &r), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_meanshift_image(&view, w, h, NULL, NULL, &r), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_meanshift_image(&view, w, h, NULL, &p, NULL), PC_INVALID_ARGUMENT);
    pc_points empty = view;
    empty.data = NULL;
    CHECK_STATUS(pc_meanshift_image(&empty, w, h, NULL, &p, &r), PC_INVALID_ARGUMENT);

    const double bad_bandwidths[] = {0, -1, NAN, INFINITY};
    for (int t = 0; t < 4; t++) {
        pc_meanshift_image_params q = p;
        q.spatial_bandwidth = bad_bandwidths[t];
        CHECK_STATUS(pc_meanshift_image(&view, w, h, NULL, &q, &r), PC_INVALID_ARGUMENT);
        CHECK(strstr(pc_last_error(), "spatial bandwidth") != NULL);
        q = p;
        q.range_bandwidth = bad_bandwidths[t];
        CHECK_STATUS(pc_meanshift_image(&view, w, h, NULL, &q, &r), PC_INVALID_ARGUMENT);
        CHECK(strstr(pc_last_error(), "range bandwidth") != NULL);
    }
    pc_meanshift_image_params q = p;
    q.max_iter = 0;
    CHECK_STATUS(pc_meanshift_image(&view, w, h, NULL, &q, &r), PC_INVALID_ARGUMENT);
    q = p;
    q.eps = -0.5;
    CHECK_STATUS(pc_meanshift_image(&view, w, h, NULL, &q, &r), PC_INVALID_ARGUMENT);
    q.eps = NAN;
    CHECK_STATUS(pc_meanshift_image(&view, w, h, NULL, &q, &r), PC_INVALID_ARGUMENT);
    q = p;
    q.min_region_size = -1;
    CHECK_STATUS(pc_meanshift_image(&view, w, h, NULL, &q, &r), PC_INVALID_ARGUMENT);
    q = p;
    q.threads = -2;
    CHECK_STATUS(pc_meanshift_image(&view, w, h, NULL, &q, &r), PC_INVALID_ARGUMENT);
    q = p;
    q.backend = PC_BACKEND_CUDA;
    CHECK_STATUS(pc_meanshift_image(&view, w, h, NULL, &q, &r), PC_UNSUPPORTED);
    CHECK(strstr(pc_last_error(), "CUDA") != NULL);

    /* A NaN in a valid pixel is an error; under the mask it is fine. */
    v[2 * 13 + 1] = NAN;
    CHECK_STATUS(pc_meanshift_image(&view, w, h, NULL, &p, &r), PC_INVALID_ARGUMENT);
    CHECK(strstr(pc_last_error(), "row 1, col 5") != NULL);
    valid[13] = 0;
    CHECK_STATUS(pc_meanshift_image(&view, w, h, valid, &p, &r), PC_OK);
    if (r)
        CHECK(pc_result_labels(r)[13] == -1);
    pc_result_free(r);
    double big[2] = {1e39, 0};
    pc_points huge = pc_points_f64(big, 1, 2);
    CHECK_STATUS(pc_meanshift_image(&huge, 1, 1, NULL, &p, &r), PC_INVALID_ARGUMENT);

    memset(valid, 0, sizeof valid);
    CHECK_STATUS(pc_meanshift_image(&view, w, h, valid, &p, &r), PC_INVALID_ARGUMENT);
    CHECK(strstr(pc_last_error(), "invalid") != NULL);
    CHECK(r == NULL);

    v[2 * 13 + 1] = 0;
    int calls = 0;
    q = p;
    q.progress = cancel_at_once;
    q.progress_user = &calls;
    valid[0] = 1;
    CHECK_STATUS(pc_meanshift_image(&view, w, h, NULL, &q, &r), PC_CANCELLED);
    CHECK(calls == 1);
    CHECK(r == NULL);

    /* One valid pixel: one region of one pixel, its own value. */
    CHECK_STATUS(pc_meanshift_image(&view, w, h, valid, &p, &r), PC_OK);
    if (r) {
        CHECK(pc_result_cluster_count(r) == 1);
        CHECK(pc_result_labels(r)[0] == 0 && pc_result_labels(r)[1] == -1);
        CHECK(pc_result_centers(r)[0] == v[0] && pc_result_centers(r)[1] == v[1]);
    }
    pc_result_free(r);
}

int main(void)
{
    uint64_t seed = test_seed("meanshift_image");
    test_one_step_against_direct(seed);
    test_modes_are_fixed_points(seed);
    test_painted_regions(seed);
    test_speck(seed);
    test_diagonal_line(seed);
    test_huge_bandwidths(seed);
    test_nodata(seed);
    test_openmp_matches_sequential(seed);
    test_bad_input();
    return check_report("meanshift_image");
}
