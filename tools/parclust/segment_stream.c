/* parclust segment in bounded memory (segment_stream.h). The image is read in windows of rows, as
 * many as --max-memory leaves room for, once per pass. HCA (pc_hca_stream): a pass bounds the valid
 * pixels (unless the box is known), a pass counts them into the grid histogram, a last pass labels
 * them. k-means (pc_kmeans_stream): a pass scans them (their frame and the initialisation's sample),
 * a pass per iteration sums them per cluster, a last pass labels them. The labels go to the output
 * window by window, as rows. Windows are read alternately forwards and backwards, so that each pass
 * starts with what the one before read last: the part of the file most likely still in the page
 * cache when the file is larger than memory. */
#define _POSIX_C_SOURCE 200809L

#include "segment_stream.h"
#include "preview.h"
#include "progress.h"
#include "raster_window.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1024.0 * 1024.0)
/* Windows of about this many bytes of pixels at most: larger ones only leave the processor's caches
 * between reading a window and clustering it. */
#define WINDOW_TARGET (16.0 * MIB)
/* The least GDAL's block cache is given: room for a few blocks. */
#define CACHE_FLOOR (1.0 * MIB)

int seg_parse_size(const char *text, double *bytes)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno || !isfinite(v) || !(v > 0) || isspace((unsigned char)*text))
        return -1;
    double unit = 1;
    const char *u = end;
    if (*u && *u != 'b' && *u != 'B') {
        static const char units[] = "KMGT";
        const char *at = strchr(units, toupper((unsigned char)*u));
        if (!at)
            return -1;
        unit = pow(1024.0, (double)(at - units) + 1);
        u++;
        if ((*u == 'i' || *u == 'I') && (u[1] == 'b' || u[1] == 'B'))
            u++;
    }
    if (*u == 'b' || *u == 'B')
        u++;
    if (*u || v * unit < 1)
        return -1;
    *bytes = floor(v * unit);
    return 0;
}

int seg_stream_can(int algorithm) { (void)algorithm; return 1; }

static const char *bytes_text(double b, char *buf, size_t size)
{
    if (b >= 1024.0 * MIB)
        snprintf(buf, size, "%.1f GiB", b / (1024.0 * MIB));
    else if (b >= 10 * MIB)
        snprintf(buf, size, "%.0f MiB", b / MIB);
    else
        snprintf(buf, size, "%.1f MiB", b / MIB);
    return buf;
}

float *seg_read_init(const char *path, size_t k, size_t bands, double offset)
{
    pcli_matrix m = {0};
    pcli_read_info info;
    char err[512];
    float *out = NULL;
    const float *v;
    if (pcli_read_points_ex(path, PCLI_HEADER_AUTO, &m, &info, err, sizeof err)) {
        cli_error("segment", "--init %s", err);
    } else if (m.n != k || m.dim != bands) {
        cli_error("segment", "--init %s: %zu centres of %zu values%s, expected %zu of %zu (-k and the chosen bands)",
                  path, m.n, m.dim, info.header_line ? " (after the header row it skipped)" : "", k, bands);
    } else if (!(v = pcli_matrix_f32(&m, err, sizeof err)) || !(out = malloc(k * bands * sizeof *out))) {
        cli_error("segment", "--init %s: out of memory", path);
    } else {
        for (size_t i = 0; i < k * bands; i++) /* in the held units (int16 is held shifted) */
            out[i] = (float)((double)v[i] + offset);
    }
    pcli_matrix_free(&m);
    return out;
}

/* ---------------------------------------------------------------- the windows */

typedef struct run run;
/* What a pass does with a window: win (its validity bits) and its valid pixels, compacted, as pts. */
typedef int (*window_fn)(run *s, const pcli_image *win, size_t y0, const pc_points *pts);

/* A line of the timings: one pass, or the passes of k-means's iterations together. */
typedef struct {
    const char *what;
    double seconds;
    size_t rows, passes;
    int backwards; /* some of its passes read the last window first */
} pass_time;

struct run {
    const seg_stream_args *a;
    pcli_window_reader *rd;
    pcli_image im;          /* the header; n_valid, lo/hi and the float32 counters from the passes */
    size_t W, H, B, ps;     /* ps: bytes a held pixel */
    double limit;
    int threads;
    size_t rows;            /* rows a window */
    void *buf;              /* rows x W pixels */
    uint8_t *valid;         /* their validity bits */
    int32_t *labels;        /* the label pass: a label a valid pixel */
    void *out;              /* the label pass: rows x W labels of the output's type */
    pcli_image win;
    int passes;             /* passes made */
    pass_time times[8];
    int ntimes;
    char plan[512];         /* how the run goes, for the "streaming:" line */
    /* HCA */
    pc_hca_stream *hca;
    double budget;          /* the HCA stream's memory_budget */
    double *sums;           /* k x (B + 1): the label pass's cluster sums and counts */
    /* k-means */
    pc_kmeans_stream *km;
    float *init;            /* --init's centres, held units */
    uint64_t first;         /* the scan: valid pixels before this window (its first point's index) */
    int64_t *counts;        /* k: the label pass's cluster sizes */
    /* mean shift: its callbacks' buffers (validity bits, labels of the output's type) and outputs */
    size_t bits_cap, out_cap;
    cli_outputs *outputs;
    const char **path;
    int64_t *sizes;
    float *centres;
    cli_progress progress;
    /* the label pass */
    size_t k;
    pcli_label_type ltype;
    pcli_raster_writer *writer;
    pcli_picture picture;   /* --preview (labels NULL without it) */
    char err[512];
};

static int npy_out(const run *s) { return cli_has_extension(s->a->output, ".npy"); }

static int library_error(run *s, const char *call)
{
    const char *e = pc_last_error();
    snprintf(s->err, sizeof s->err, "%s: %s: %s", s->a->input, call, e && e[0] ? e : "failed");
    return -1;
}

static pc_points points_of(const run *s, const void *data, size_t n)
{
    return s->im.type == PCLI_PIX_U8    ? pc_points_u8(data, n, s->B)
           : s->im.type == PCLI_PIX_U16 ? pc_points_u16(data, n, s->B)
                                        : pc_points_f32(data, n, s->B);
}

/* One pass over the image: every window read, marked, compacted and handed to fn (NULL: read and
 * marked only), in order or (every other pass) last first. The pass's valid pixels, band ranges and
 * float32 counts replace the header's. Its time goes to the line `what` (a new one unless the last
 * has that name). */
static int pass(run *s, const char *what, window_fn fn)
{
    char title[96];
    cli_progress p;
    snprintf(title, sizeof title, "segment: pass %d (%s)", s->passes + 1, what);
    cli_progress_start(&p, title);
    double t0 = cli_seconds();
    size_t R = s->rows, windows = (s->H + R - 1) / R, valid = 0;
    int backwards = s->passes % 2 == 1;
    memset(&s->win, 0, sizeof s->win);
    s->win.valid = s->valid;
    for (size_t b = 0; b < PCLI_MAX_BANDS; b++) {
        s->win.lo[b] = INFINITY;
        s->win.hi[b] = -INFINITY;
    }
    for (size_t i = 0; i < windows; i++) {
        size_t w = backwards ? windows - 1 - i : i, y0 = w * R, rows = s->H - y0 < R ? s->H - y0 : R;
        if (pcli_window_read(s->rd, y0, rows, s->buf, &s->win, s->err, sizeof s->err)) {
            cli_progress_end(&p);
            return -1;
        }
        if (i + 1 < windows) { /* the next window's bytes come from disk while this one is worked on */
            size_t nw = backwards ? w - 1 : w + 1, ny = nw * R;
            pcli_window_prefetch(s->rd, ny, s->H - ny < R ? s->H - ny : R);
        }
        valid += s->win.n_valid;
        if (fn && s->win.n_valid < rows * s->W) /* (a window read in place has no nodata: never compacted) */
            pcli_image_compact(&s->win);
        pc_points pts = points_of(s, s->win.pixels, s->win.n_valid);
        if (fn && fn(s, &s->win, y0, &pts)) {
            cli_progress_end(&p);
            return -1;
        }
        cli_progress_update(&p, (double)(i + 1) / (double)windows);
    }
    cli_progress_end(&p);
    s->im.n_valid = valid;
    memcpy(s->im.lo, s->win.lo, sizeof s->im.lo);
    memcpy(s->im.hi, s->win.hi, sizeof s->im.hi);
    s->im.beyond_f32 = s->win.beyond_f32;
    s->im.rounded_f32 = s->win.rounded_f32;
    s->passes++;
    pass_time *t = s->ntimes ? &s->times[s->ntimes - 1] : NULL;
    if (!t || strcmp(t->what, what) != 0)
        t = s->ntimes < 8 ? &s->times[s->ntimes++] : t;
    if (t) {
        t->what = what;
        t->seconds += cli_seconds() - t0;
        t->rows = R;
        t->passes++;
        t->backwards |= backwards;
    }
    return 0;
}

/* ---------------------------------------------------------------- memory */

/* Rows a window, from the bytes a row takes and the room left: at most the window target's worth of
 * pixels, at least 1 (0: no room for a row), a multiple of `unit` rows where the room holds that many.
 * *aligned: every window ends on a multiple of unit or at the image's end. */
static size_t window_rows(const run *s, double room, double row_bytes, size_t unit, int *aligned)
{
    double most = floor(room / row_bytes), target = ceil(WINDOW_TARGET / (double)(s->W * s->ps));
    if (!(most >= 1))
        return 0;
    double r = most < target ? most : target, u = (double)unit;
    if (unit > 1 && most >= u)
        r = floor(r / u) * u < u ? u : floor(r / u) * u;
    size_t rows = r < (double)s->H ? (size_t)r : s->H;
    *aligned = rows == s->H || rows % unit == 0;
    return rows;
}

/* The windows of a pass: rows of pixels and validity bits (and, labelling, int32 labels and a row of
 * the output's type) in what the limit leaves beside `state` (the stream's memory, the picture) and
 * GDAL's block cache. The cache needs little where windows end on the input's block rows (and the
 * output's, labelling): no block is left half read or half written between two windows; else it holds
 * a row of them. GDAL's compressing threads hold a few output tiles each beside it. */
static int plan_windows(run *s, double state, int labelling)
{
    size_t bw = 1, bh = 1, in_bh = pcli_window_block_rows(s->rd), unit = in_bh;
    double les = labelling ? (double)pcli_label_type_size(s->ltype) : 0, out_row = 0, jobs = 0;
    if (labelling) {
        pcli_raster_block(s->writer, &bw, &bh);
        unit = in_bh > bh ? in_bh : bh;
        while (unit % in_bh || unit % bh)
            unit += in_bh > bh ? in_bh : bh; /* lcm: windows that end on both files' block rows */
        out_row = npy_out(s) ? 0 : (double)((s->W + bw - 1) / bw * bw) * (double)bh * les;
        jobs = npy_out(s) ? 0 : 2.0 * s->threads * (double)(bw * bh) * les;
    }
    double row = (double)s->W * ((double)s->ps + 0.125 + (labelling ? 4 + les : 0));
    double in_row = s->im.is_npy ? 0 : (double)pcli_window_block_row_bytes(s->rd);
    double fixed = state + jobs + (double)pcli_window_own_bytes(s->rd);
    double cache = s->im.is_npy && (!labelling || npy_out(s)) ? 0 : CACHE_FLOOR;
    int aligned;
    s->rows = window_rows(s, s->limit - fixed - cache, row, unit, &aligned);
    if (s->rows && !aligned) {
        cache += in_row + out_row;
        s->rows = window_rows(s, s->limit - fixed - cache, row, 1, &aligned);
    }
    if (!s->rows) {
        char a[32], b[32];
        return pcli_fail(s->err, sizeof s->err, "%s: --max-memory is too small to stream this image: %s allowed, at "
                         "least %s needed (a window of one row of %zu pixels, the %s state%s%s)", s->a->input,
                         bytes_text(s->limit, a, sizeof a), bytes_text(fixed + cache + row, b, sizeof b), s->W,
                         s->a->algorithm == SEG_HCA ? "HCA histogram's" : "k-means", cache > 0 ? ", GDAL's cache" : "",
                         s->picture.labels ? ", the preview's labels" : "");
    }
    if (cache > 0)
        pcli_window_cache_cap((size_t)cache);
    return 0;
}

static int thread_count(const seg_stream_args *a)
{
    int asked = a->algorithm == SEG_HCA ? a->hca.threads : a->km.threads;
    if (asked > 0)
        return asked;
    const char *env = getenv("OMP_NUM_THREADS");
    long n = env ? strtol(env, NULL, 10) : 0, cores = sysconf(_SC_NPROCESSORS_ONLN);
    n = n > cores ? n : cores;
    return n < 1 ? 1 : n > 4096 ? 4096 : (int)n;
}

/* The HCA stream while it counts: its key tables (uint8 and uint16 values to cell offsets, per band)
 * and the histogram: m^B int64 counts when that fits the budget (a copy per thread where those fit),
 * else a hash of the non-empty cells (16 bytes each at half load at most, 48 while it grows),
 * reserved up to the budget. */
static double hca_counting_bytes(const run *s, int m)
{
    double tables = (65536.0 + 256.0) * 8.0 * (double)s->B, total = pow((double)m, (double)s->B);
    double pixels = (double)s->W * (double)s->H;
    if (8 * total <= s->budget)
        return tables + 8 * total * (8 * total * s->threads <= s->budget ? s->threads : 1);
    double cells = total < pixels ? total : pixels;
    return tables + (48 * cells < s->budget ? 48 * cells : s->budget);
}

/* After the finish: the tables, the cells (key, density, cluster: 20 bytes) and, where the budget
 * takes m^B int32, the map from every cell to its cluster. */
static double hca_labelling_bytes(const run *s, int m, double cells)
{
    double total = pow((double)m, (double)s->B);
    return (65536.0 + 256.0) * 8.0 * (double)s->B + 20 * cells + (4 * total <= s->budget ? 4 * total : 0);
}

/* The k-means stream: the sample (key, index and heap slot, 8 bytes each, and the point in float32),
 * the scan's per-thread keys of a window's pixels, and per thread k sums and counts and the k - 1
 * farthest points of a pass; the centres. */
static double km_bytes(const run *s, double sample, double window_pixels)
{
    double k = (double)s->a->km.k, B = (double)s->B, T = s->threads;
    double keys = (window_pixels < sample ? window_pixels : sample) * 24 * T;
    return sample * (24 + 4 * B) + keys + T * (k * (8 + 8 * B) + k * (24 + 4 * B) + 4096) + 4 * k * B * 8;
}

/* ---------------------------------------------------------------- buffers, output */

static void free_buffers(run *s)
{
    free(s->buf);
    free(s->valid);
    free(s->labels);
    free(s->out);
    s->buf = s->valid = NULL;
    s->labels = NULL;
    s->out = NULL;
}

static int alloc_buffers(run *s, int labelling)
{
    free_buffers(s);
    size_t n = s->rows * s->W;
    s->buf = malloc(n * s->ps);
    s->valid = malloc((n + 7) / 8);
    if (labelling) {
        s->labels = malloc(n * sizeof *s->labels);
        s->out = malloc(n * pcli_label_type_size(s->ltype));
    }
    if (!s->buf || !s->valid || (labelling && (!s->labels || !s->out)))
        return pcli_fail(s->err, sizeof s->err, "out of memory for windows of %zu rows", s->rows);
    return 0;
}

static void print_header(const run *s)
{
    double npix = (double)s->W * (double)s->H;
    printf("segment: %s, %zu x %zu pixels, %zu band%s of %s (held as %s%s), %zu valid (%.2f%%)\n", s->a->input, s->W,
           s->H, s->B, s->B == 1 ? "" : "s", s->im.source_type, pcli_pixtype_name(s->im.type),
           s->im.offset != 0 ? " + 32768" : "", s->im.n_valid, 100.0 * (double)s->im.n_valid / npix);
    if (s->im.beyond_f32)
        fprintf(stderr,
                "parclust segment: warning: %s: %zu value%s beyond float32's range (|v| > %.7g) cannot be held: "
                "their pixels are nodata\n", s->a->input, s->im.beyond_f32, s->im.beyond_f32 == 1 ? "" : "s",
                (double)FLT_MAX);
    if (s->im.rounded_f32)
        fprintf(stderr,
                "parclust segment: warning: %s: %zu value%s beyond 2^24 rounded to float32's 24-bit precision\n",
                s->a->input, s->im.rounded_f32, s->im.rounded_f32 == 1 ? "" : "s");
    fflush(stdout); /* the labels are passes away */
}

/* "streaming: why: how". */
static void print_plan(const run *s)
{
    const seg_stream_args *a = s->a;
    char x[32], y[32], z[32];
    if (a->need > a->limit)
        printf("streaming: the run would hold %s in memory (the chosen bands %s, labels and working arrays %s), more "
               "than %s: %s\n", bytes_text(a->need, x, sizeof x), bytes_text(a->pixels, y, sizeof y),
               bytes_text(a->need - a->pixels, z, sizeof z), a->limit_what, s->plan);
    else
        printf("streaming: the image has %.0f pixels, more than the %d %s takes in memory: %s\n",
               (double)s->W * (double)s->H, INT32_MAX, a->algorithm == SEG_HCA ? "HCA" : "mean shift", s->plan);
    fflush(stdout);
}

/* The window's labels (s->labels, a valid pixel each) to the output and the picture. */
static int emit_labels(run *s, const pcli_image *win, size_t y0)
{
    pcli_window_labels(win, s->labels, s->ltype, s->out);
    if (s->picture.labels)
        pcli_picture_sample(&s->picture, y0, win->height, s->out, s->ltype);
    return pcli_raster_write_rows(s->writer, y0, win->height, s->out, s->err, sizeof s->err);
}

/* The picture's labels, held to the end: said before any pass when they take more than a quarter. */
static int check_picture(run *s)
{
    if (!s->a->preview)
        return 0;
    size_t pw, ph;
    pcli_preview_size(s->W, s->H, s->a->preview_size, &pw, &ph);
    double bytes = (double)pw * (double)ph * 4.125;
    if (bytes > s->limit / 4) {
        char x[32];
        return pcli_fail(s->err, sizeof s->err, "--preview: its %zu x %zu labels take %s, more than a quarter of %s: "
                         "choose a smaller --preview-size (or a larger --max-memory)", pw, ph,
                         bytes_text(bytes, x, sizeof x), s->a->limit_what);
    }
    return 0;
}

static double picture_bytes(const run *s)
{
    size_t pw, ph;
    pcli_preview_size(s->W, s->H, s->a->preview_size, &pw, &ph);
    return s->a->preview ? (double)pw * (double)ph * 4.125 : 0;
}

/* Before the label pass: the output's type for k clusters (as the in-memory run chooses it; too
 * narrow: said now), the picture, the output staged and created. *path: the staged name. */
static int start_labels(run *s, cli_outputs *out, const char **path)
{
    const seg_stream_args *a = s->a;
    int npy = npy_out(s);
    size_t k = s->k;
    s->ltype = pcli_label_type_of_output(a->output, a->labels_format->type, k);
    if (!npy && k > pcli_label_type_max_clusters(s->ltype))
        return pcli_fail(s->err, sizeof s->err, "--ot %s holds at most %zu clusters (labels 0-%zu, nodata %.0f), the "
                         "run found %zu: choose a wider type or leave --ot out", pcli_label_type_name(s->ltype),
                         pcli_label_type_max_clusters(s->ltype), pcli_label_type_max_clusters(s->ltype) - 1,
                         pcli_label_type_nodata(s->ltype), k);
    if (a->preview && pcli_picture_init(&s->picture, s->W, s->H, a->preview_size, s->err, sizeof s->err))
        return -1;
    pcli_raster_spec spec = {s->W,
                             s->H,
                             1,
                             pcli_label_type_raster(s->ltype),
                             !npy,
                             pcli_label_type_nodata(s->ltype),
                             s->im.has_geotransform ? s->im.geotransform : NULL,
                             0,
                             s->im.projection,
                             npy ? NULL : a->labels_format};
    if (!(*path = cli_outputs_stage(out, a->output))) {
        s->err[0] = '\0'; /* printed */
        return -1;
    }
    return pcli_raster_create(*path, &spec, &s->writer, s->err, sizeof s->err);
}

/* After the label pass: the output closed, the clusters printed, the picture written, the times. */
static int finish_labels(run *s, cli_outputs *out, const pc_result *r, const int64_t *sizes, const float *centres,
                         const char **path)
{
    free_buffers(s);
    pcli_raster_writer *w = s->writer;
    s->writer = NULL;
    if (pcli_raster_close(w, s->err, sizeof s->err))
        return -1;
    printf("%s: %zu clusters (%s backend)\n", s->a->algorithm == SEG_HCA ? "hca" : s->a->algorithm == SEG_KMEANS ?
           "kmeans" : "meanshift", s->k, pc_backend_name(pc_result_backend(r)));
    seg_print_clusters(&s->im, s->k, sizes, centres);
    if (s->a->preview && (!(*path = cli_outputs_stage(out, s->a->preview)) ? (s->err[0] = '\0', 1)
                          : pcli_picture_write(&s->picture, *path, &s->im, centres, s->k, s->a->palette, s->err,
                                               sizeof s->err)))
        return -1;
    for (int i = 0; i < s->ntimes; i++) {
        const pass_time *t = &s->times[i];
        if (t->passes == 1)
            printf("  time pass     %9.4f s  (%s, %zu-row windows%s)\n", t->seconds, t->what, t->rows,
                   t->backwards ? ", last first" : "");
        else
            printf("  time passes   %9.4f s  (%s: %zu passes, %zu-row windows, every other last first)\n", t->seconds,
                   t->what, t->passes, t->rows);
    }
    return 0;
}

/* ---------------------------------------------------------------- HCA */

static int hca_count(run *s, const pcli_image *win, size_t y0, const pc_points *pts)
{
    (void)win, (void)y0;
    return pts->n && pc_hca_stream_add(s->hca, pts) != PC_OK ? library_error(s, "HCA histogram") : 0;
}

/* The labels of a window, and its pixels added to the clusters' sums in the same loop (the library
 * sums integer pixels in 64-bit integers, exact; their doubles stay exact while a cluster's sum of a
 * band is below 2^53: 35 Tpix of uint8, 137 Gpix of uint16). */
static int hca_label(run *s, const pcli_image *win, size_t y0, const pc_points *pts)
{
    if (pts->n && pc_hca_stream_label(s->hca, pts, s->labels, s->sums) != PC_OK)
        return library_error(s, "HCA labels");
    return emit_labels(s, win, y0);
}

/* The box of a run that does not scan: the statistics, or the type's range. 1: scan instead (why says
 * why, or is empty). */
static int hca_known_box(run *s, const char **how, char *why, size_t whysize)
{
    const seg_stream_args *a = s->a;
    double lo[PCLI_MAX_BANDS], hi[PCLI_MAX_BANDS];
    if (a->box == SEG_BOX_SCAN)
        return 1;
    if (a->box == SEG_BOX_TYPE) {
        if (s->im.type == PCLI_PIX_F32)
            return pcli_fail(why, whysize, "--box type: the bands are held as float32, whose range (+-3.4e38) would "
                             "put every pixel in one cell: use --box scan or stats");
        for (size_t b = 0; b < s->B; b++) {
            lo[b] = 0;
            hi[b] = s->im.type == PCLI_PIX_U8 ? 255 : 65535;
        }
        *how = s->im.type == PCLI_PIX_U8 ? "the type's range 0-255" : "the type's range 0-65535";
    } else {
        char reason[256];
        if (a->read->has_nodata)
            snprintf(reason, sizeof reason, "--nodata overrides the nodata value the statistics were computed over");
        if (a->read->has_nodata || pcli_window_stats(s->rd, lo, hi, reason, sizeof reason)) {
            if (a->box == SEG_BOX_STATS)
                return pcli_fail(why, whysize, "--box stats: %s: %s (compute them with gdalinfo -stats, or use "
                                 "--box scan)", a->input, reason);
            snprintf(why, whysize, "%s", reason);
            return 1;
        }
        *how = "the bands' statistics";
    }
    if (pc_hca_stream_set_box(s->hca, lo, hi) != PC_OK) {
        library_error(s, "HCA box");
        return pcli_fail(why, whysize, "%s", s->err);
    }
    return 0;
}

static int run_hca(run *s, cli_outputs *out, const char **path)
{
    const seg_stream_args *a = s->a;
    /* A quarter of the room for the histogram: dense where it fits (as fast as pc_hca's), else sparse. */
    pc_hca_params params = a->hca;
    s->budget = s->limit / 4 < (double)params.memory_budget ? s->limit / 4 : (double)params.memory_budget;
    params.memory_budget = (size_t)s->budget;
    if (pc_hca_stream_create(&params, s->B, &s->hca) != PC_OK)
        return library_error(s, "HCA stream");
    const char *how = "a first pass over the valid pixels";
    char why[256] = "";
    int scan = hca_known_box(s, &how, why, sizeof why);
    if (scan < 0)
        return pcli_fail(s->err, sizeof s->err, "%s", why);
    if (plan_windows(s, hca_counting_bytes(s, params.m) + picture_bytes(s), 0))
        return -1;
    snprintf(s->plan, sizeof s->plan, "HCA in %d passes over %zu-row windows, the box from %s%s%s%s", scan ? 3 : 2,
             s->rows, how, why[0] ? " (" : "", why, why[0] ? ")" : "");
    print_plan(s);
    if (alloc_buffers(s, 0))
        return -1;
    if (scan) { /* the valid pixels' band ranges, as the reading marks them, are pc_hca's box */
        double lo[PCLI_MAX_BANDS], hi[PCLI_MAX_BANDS];
        if (pass(s, "box", NULL))
            return -1;
        for (size_t b = 0; b < s->B; b++) {
            lo[b] = s->im.lo[b] + s->im.offset;
            hi[b] = s->im.hi[b] + s->im.offset;
        }
        if (s->im.n_valid && pc_hca_stream_set_box(s->hca, lo, hi) != PC_OK)
            return library_error(s, "HCA box");
    }
    if (pass(s, "histogram", hca_count))
        return -1;
    print_header(s);
    if (s->im.n_valid == 0)
        return pcli_fail(s->err, sizeof s->err, "%s: every pixel is nodata (or NaN) in the chosen bands: nothing to "
                         "segment", a->input);
    free_buffers(s);
    pc_result *r = NULL;
    double t0 = cli_seconds();
    if (pc_hca_stream_finish(s->hca, &r) != PC_OK)
        return library_error(s, "HCA");
    double t_finish = cli_seconds() - t0;
    s->k = pc_result_cluster_count(r);
    int rc = -1;
    float *centres = malloc((s->k ? s->k : 1) * s->B * sizeof *centres);
    size_t nsums = (s->k ? s->k : 1) * (s->B + 1);
    if (!centres || !(s->sums = calloc(nsums, sizeof *s->sums))) {
        pcli_fail(s->err, sizeof s->err, "out of memory");
        goto done;
    }
    double state = hca_labelling_bytes(s, params.m, (double)pc_result_cell_count(r)) + picture_bytes(s);
    if (start_labels(s, out, path) || plan_windows(s, state, 1) || alloc_buffers(s, 1) || pass(s, "labels", hca_label))
        goto done;
    for (size_t c = 0; c < s->k; c++) { /* as pc_hca's: sum / count in float32, in the file's units */
        double count = s->sums[c * (s->B + 1) + s->B];
        for (size_t j = 0; j < s->B; j++) {
            float mean = count > 0 ? (float)(s->sums[c * (s->B + 1) + j] / count) : 0.0f;
            centres[c * s->B + j] = (float)(mean - s->im.offset);
        }
    }
    if (finish_labels(s, out, r, pc_result_sizes(r), centres, path))
        goto done;
    printf("  time cluster  %9.4f s  (from the histogram)\n", t_finish);
    cli_print_stages(r);
    rc = 0;
done:
    free(centres);
    pc_result_free(r);
    return rc;
}

/* ---------------------------------------------------------------- k-means */

static int km_scan(run *s, const pcli_image *win, size_t y0, const pc_points *pts)
{
    (void)win, (void)y0;
    /* A point's index is its rank among the valid pixels, as in the in-memory run's compacted array:
     * the sample, which depends on indices only, is that run's when it holds every point. */
    if (pts->n && pc_kmeans_stream_scan(s->km, pts, s->first) != PC_OK)
        return library_error(s, "k-means scan");
    s->first += pts->n;
    return 0;
}

static int km_add(run *s, const pcli_image *win, size_t y0, const pc_points *pts)
{
    (void)win, (void)y0;
    return pts->n && pc_kmeans_stream_add(s->km, pts) != PC_OK ? library_error(s, "k-means") : 0;
}

static int km_label(run *s, const pcli_image *win, size_t y0, const pc_points *pts)
{
    if (pts->n && pc_kmeans_stream_label(s->km, pts, s->labels) != PC_OK)
        return library_error(s, "k-means labels");
    for (size_t i = 0; i < pts->n; i++)
        s->counts[s->labels[i]]++;
    return emit_labels(s, win, y0);
}

static int run_kmeans(run *s, cli_outputs *out, const char **path)
{
    const seg_stream_args *a = s->a;
    pc_kmeans_params params = a->km;
    double npix = (double)s->W * (double)s->H, B = (double)s->B, k = (double)params.k;
    /* The sample: the library's default (100 points a cluster, at least 65,536), within a quarter of
     * the room; with --init none. */
    double sample = 0;
    if (a->init_file) {
        if (!(s->init = seg_read_init(a->init_file, params.k, s->B, s->im.offset))) {
            s->err[0] = '\0'; /* printed */
            return -1;
        }
        params.init = PC_INIT_GIVEN;
        params.initial_centers = s->init;
    } else {
        double want = 100 * k > 65536 ? 100 * k : 65536, room = s->limit / 4 / (24 + 4 * B + 24 * s->threads);
        sample = want < room ? want : room;
        sample = sample < npix ? sample : npix;
        if (sample < k)
            return pcli_fail(s->err, sizeof s->err, "%s: --max-memory is too small for k-means's sample of at least "
                             "-k %zu points", a->input, params.k);
        if (params.n_init != 1)
            fprintf(stderr, "parclust segment: warning: --n-init %d: a streamed run starts once (the image is not "
                    "read again for other starts)\n", params.n_init);
        params.n_init = 1;
    }
    if (pc_kmeans_stream_create(&params, s->B, (size_t)sample, &s->km) != PC_OK)
        return library_error(s, "k-means stream");
    if (!(s->counts = calloc(params.k, sizeof *s->counts)))
        return pcli_fail(s->err, sizeof s->err, "out of memory");
    double window = WINDOW_TARGET / (double)s->ps;
    if (plan_windows(s, km_bytes(s, sample, window) + picture_bytes(s), 0))
        return -1;
    char init[160];
    if (a->init_file)
        snprintf(init, sizeof init, "the centres of %s", a->init_file);
    else
        snprintf(init, sizeof init, "%s on a sample of %.0f valid pixels", params.init == PC_INIT_RANDOM ? "random"
                 : params.init == PC_INIT_KMEANS_PARALLEL ? "k-means||" : "k-means++", sample);
    snprintf(s->plan, sizeof s->plan, "k-means in 2 passes and one per iteration (at most %d) over %zu-row windows, "
             "starting from %s", params.max_iter, s->rows, init);
    print_plan(s);
    if (alloc_buffers(s, 0) || pass(s, "scan", km_scan))
        return -1;
    print_header(s);
    if (s->im.n_valid == 0)
        return pcli_fail(s->err, sizeof s->err, "%s: every pixel is nodata (or NaN) in the chosen bands: nothing to "
                         "segment", a->input);
    if (pc_kmeans_stream_start(s->km) != PC_OK)
        return library_error(s, "k-means");
    for (int done = 0; !done;)
        if (pass(s, "iterations", km_add) || (pc_kmeans_stream_step(s->km, &done) != PC_OK && library_error(s, "k-means")))
            return -1;
    pc_result *r = NULL;
    if (pc_kmeans_stream_result(s->km, &r) != PC_OK)
        return library_error(s, "k-means");
    s->k = params.k;
    int rc = -1;
    float *centres = malloc(s->k * s->B * sizeof *centres);
    if (!centres) {
        pcli_fail(s->err, sizeof s->err, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < s->k * s->B; i++) /* in the file's units (int16 is held shifted) */
        centres[i] = (float)(pc_result_centers(r)[i] - s->im.offset);
    if (start_labels(s, out, path) || plan_windows(s, km_bytes(s, 0, 0) + picture_bytes(s), 1) ||
        alloc_buffers(s, 1) || pass(s, "labels", km_label) || finish_labels(s, out, r, s->counts, centres, path))
        goto done;
    printf("  k-means: %d iteration%s, inertia %.6g (of the assignment before the last update)\n",
           pc_result_iterations(r), pc_result_iterations(r) == 1 ? "" : "s", pc_result_inertia(r));
    cli_print_stages(r);
    rc = 0;
done:
    free(centres);
    pc_result_free(r);
    return rc;
}

/* ---------------------------------------------------------------- mean shift */

/* pc_meanshift_image_rows's callbacks: rows read as windows (nodata bytes from the validity bits),
 * the regions (the output created for k), the labels written as rows. A failure keeps its message in
 * s->err and stops the run (PC_IO_ERROR). */
static pc_status ms_read(void *user, size_t row0, size_t rows, void *pixels, uint8_t *valid)
{
    run *s = user;
    size_t n = rows * s->W;
    if ((n + 7) / 8 > s->bits_cap) {
        uint8_t *grown = realloc(s->valid, (n + 7) / 8);
        if (!grown)
            return pcli_fail(s->err, sizeof s->err, "out of memory for %zu rows' validity", rows), PC_IO_ERROR;
        s->valid = grown;
        s->bits_cap = (n + 7) / 8;
    }
    s->win.valid = s->valid;
    if (pcli_window_read(s->rd, row0, rows, pixels, &s->win, s->err, sizeof s->err))
        return PC_IO_ERROR;
    if (s->win.pixels != pixels) /* a .npy window read in place */
        memcpy(pixels, s->win.pixels, n * s->ps);
    if (s->win.n_valid < n)
        for (size_t i = 0; i < n; i++)
            if (!pcli_image_is_valid(&s->win, i))
                valid[i] = 0;
    return PC_OK;
}

static pc_status ms_regions(void *user, size_t k, const int64_t *sizes, const float *centres)
{
    run *s = user;
    s->k = k;
    s->sizes = malloc((k ? k : 1) * sizeof *s->sizes);
    s->centres = malloc((k ? k : 1) * s->B * sizeof *s->centres);
    if (!s->sizes || !s->centres)
        return pcli_fail(s->err, sizeof s->err, "out of memory"), PC_IO_ERROR;
    memcpy(s->sizes, sizes, k * sizeof *sizes);
    for (size_t i = 0; i < k * s->B; i++) /* in the file's units (int16 is held shifted) */
        s->centres[i] = (float)(centres[i] - s->im.offset);
    return start_labels(s, s->outputs, s->path) ? PC_IO_ERROR : PC_OK;
}

static pc_status ms_write(void *user, size_t row0, size_t rows, const int32_t *labels)
{
    run *s = user;
    size_t n = rows * s->W, es = pcli_label_type_size(s->ltype);
    if (n * es > s->out_cap) {
        void *grown = realloc(s->out, n * es);
        if (!grown)
            return pcli_fail(s->err, sizeof s->err, "out of memory for %zu rows of labels", rows), PC_IO_ERROR;
        s->out = grown;
        s->out_cap = n * es;
    }
    int32_t nodata = (int32_t)pcli_label_type_nodata(s->ltype);
    for (size_t i = 0; i < n; i++) {
        int32_t v = labels[i] < 0 ? nodata : labels[i];
        if (es == 1)
            ((uint8_t *)s->out)[i] = (uint8_t)v;
        else if (es == 2)
            ((uint16_t *)s->out)[i] = (uint16_t)v;
        else
            ((int32_t *)s->out)[i] = v;
    }
    if (s->picture.labels)
        pcli_picture_sample(&s->picture, row0, rows, s->out, s->ltype);
    return pcli_raster_write_rows(s->writer, row0, rows, s->out, s->err, sizeof s->err) ? PC_IO_ERROR : PC_OK;
}

static int run_meanshift(run *s, cli_outputs *out, const char **path)
{
    const seg_stream_args *a = s->a;
    pc_meanshift_image_params params = a->ms;
    pc_dtype dtype = s->im.type == PCLI_PIX_U8 ? PC_U8 : s->im.type == PCLI_PIX_U16 ? PC_U16 : PC_F32;
    if (!a->range_given && s->im.type != PCLI_PIX_U8) {
        /* 16 suits 8-bit bands; other types get the same share of their range, which a pass finds. */
        if (plan_windows(s, picture_bytes(s), 0) || alloc_buffers(s, 0) || pass(s, "band ranges", NULL))
            return -1;
        free_buffers(s);
        double span = 0;
        for (size_t b = 0; b < s->B; b++)
            span = s->im.hi[b] - s->im.lo[b] > span ? s->im.hi[b] - s->im.lo[b] : span;
        if (span > 0)
            params.range_bandwidth = 16.0 / 255.0 * span;
        printf("mean shift: range bandwidth %g (16/255 of the widest band's range; --range-bandwidth to choose)\n",
               params.range_bandwidth);
    }
    /* GDAL's cache holds a row of the output's tiles (the strips' rows seldom end on them) and of the
     * input's blocks; the picture is held; the rest goes to the library, which keeps its strips within
     * half of it and its region graph (not bounded by it) beside them; an eighth for the callbacks'
     * validity bits and labels of the output's type. */
    double cache = CACHE_FLOOR + (npy_out(s) ? 0 : (double)((s->W + 511) / 512 * 512) * 512 * 4) +
                   (s->im.is_npy ? 0 : (double)pcli_window_block_row_bytes(s->rd));
    double room = s->limit - cache - picture_bytes(s) - (double)pcli_window_own_bytes(s->rd);
    pc_image_rows io;
    pc_image_rows_init(&io);
    io.read = ms_read;
    io.write = ms_write;
    io.regions = ms_regions;
    io.user = s;
    io.memory_limit = room > 0 ? (size_t)(room * 7 / 8) : 0;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", a->output);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir] = '\0'; /* "/x.tif": "/" */
    else
        snprintf(dir, sizeof dir, ".");
    io.scratch_dir = dir; /* beside the output (a tmpfs /tmp would be memory) */
    pc_image_rows_report plan;
    if (room <= 0 || pc_meanshift_image_rows_plan(s->W, s->H, s->B, dtype, &io, &params, &plan) != PC_OK) {
        char x[32];
        return pcli_fail(s->err, sizeof s->err, "%s: --max-memory %s is too small for mean shift by strips: %s",
                         a->input, bytes_text(s->limit, x, sizeof x), room > 0 ? pc_last_error() : "no room left");
    }
    if (!s->im.is_npy)
        pcli_window_cache_cap((size_t)cache);
    snprintf(s->plan, sizeof s->plan, "mean shift in %d pass%s over strips of %zu rows (%zu strips, %zu-row halos), "
             "its region numbers in a scratch file in %.200s", plan.image_passes, plan.image_passes == 1 ? "" : "es",
             plan.strip_rows, plan.strips, plan.halo_rows, dir);
    print_plan(s);
    s->outputs = out;
    s->path = path;
    cli_progress_start(&s->progress, "segment: mean shift");
    params.progress = cli_progress_update;
    params.progress_user = &s->progress;
    memset(&s->win, 0, sizeof s->win);
    for (size_t b = 0; b < PCLI_MAX_BANDS; b++) {
        s->win.lo[b] = INFINITY;
        s->win.hi[b] = -INFINITY;
    }
    pc_result *r = NULL;
    pc_image_rows_report report;
    double t0 = cli_seconds();
    pc_status st = pc_meanshift_image_rows(s->W, s->H, s->B, dtype, &io, &params, &r, &report);
    cli_progress_end(&s->progress);
    if (st != PC_OK) {
        if (!s->err[0])
            library_error(s, "mean shift");
        return -1;
    }
    double t = cli_seconds() - t0;
    s->im.n_valid = 0;
    for (size_t c = 0; c < s->k; c++)
        s->im.n_valid += (size_t)s->sizes[c];
    memcpy(s->im.lo, s->win.lo, sizeof s->im.lo);
    memcpy(s->im.hi, s->win.hi, sizeof s->im.hi);
    s->im.beyond_f32 = s->win.beyond_f32;
    s->im.rounded_f32 = s->win.rounded_f32;
    print_header(s);
    int rc = -1;
    if (finish_labels(s, out, r, s->sizes, s->centres, path))
        goto done;
    printf("  time mean shift %7.4f s  (%d pass%s, %zu rows read, %d sweep%s, %zu climb%s taken up across strips, "
           "%zu regions before pruning, region graph %.1f MiB)\n", t, report.image_passes,
           report.image_passes == 1 ? "" : "es", report.rows_read, report.sweeps, report.sweeps == 1 ? "" : "s",
           report.climbs_resumed, report.climbs_resumed == 1 ? "" : "s", report.regions,
           (double)report.graph_bytes / MIB);
    cli_print_stages(r);
    rc = 0;
done:
    pc_result_free(r);
    return rc;
}

/* ---------------------------------------------------------------- the run */

int seg_stream_run(const seg_stream_args *a, cli_outputs *out)
{
    if (a->truth) {
        cli_error("segment", "--truth: scoring needs every valid pixel's label at once, which a streamed run (the image "
                  "does not fit in %s) never holds: leave --truth out, or raise --max-memory", a->limit_what);
        return CLI_FAILED;
    }
    run s;
    memset(&s, 0, sizeof s);
    s.a = a;
    s.limit = a->limit;
    s.threads = thread_count(a);
    double t0 = cli_seconds();
    if (pcli_window_open(a->input, a->read, &s.rd, &s.im, s.err, sizeof s.err)) {
        cli_error("segment", "%s", s.err);
        return CLI_FAILED;
    }
    s.W = s.im.width;
    s.H = s.im.height;
    s.B = s.im.bands;
    s.ps = s.B * pcli_pixtype_size(s.im.type);
    /* Room for the outputs before any pass (.npy labels: a byte a pixel at least; GeoTIFF: deflated). */
    if (npy_out(&s))
        cli_outputs_expect(out, a->output, cli_labels_min_bytes(a->output, s.W * s.H));
    if (a->preview)
        cli_outputs_expect(out, a->preview, pcli_preview_min_bytes(s.W, s.H, a->preview_size));
    int rc = CLI_FAILED;
    const char *path = NULL;
    if (cli_outputs_check_room(out))
        goto done;
    if (check_picture(&s) ||
        (a->algorithm == SEG_HCA      ? run_hca(&s, out, &path)
         : a->algorithm == SEG_KMEANS ? run_kmeans(&s, out, &path)
                                      : run_meanshift(&s, out, &path))) {
        if (s.writer) { /* closed before its staged file is removed */
            pcli_raster_abort(s.writer);
            s.writer = NULL;
        }
        if (s.err[0] && path)
            cli_outputs_error(out, s.err); /* the staging name replaced by the target's */
        else if (s.err[0])
            cli_error("segment", "%s", s.err);
        cli_outputs_discard(out);
        goto done;
    }
    printf("  time total    %9.4f s\n", cli_seconds() - t0);
    rc = cli_outputs_finish(out, 0, NULL, NULL);
    if (rc == CLI_OK) {
        if (npy_out(&s))
            printf("wrote %s%s%s\n", a->output, a->preview ? " and " : "", a->preview ? a->preview : "");
        else
            printf("wrote %s (%s, nodata %.0f)%s%s\n", a->output, pcli_label_type_name(s.ltype),
                   pcli_label_type_nodata(s.ltype), a->preview ? " and " : "", a->preview ? a->preview : "");
    }
done:
    free_buffers(&s);
    free(s.sums);
    free(s.counts);
    free(s.init);
    pcli_picture_free(&s.picture);
    free(s.sizes);
    free(s.centres);
    pc_hca_stream_free(s.hca);
    pc_kmeans_stream_free(s.km);
    pcli_window_close(s.rd);
    pcli_image_free(&s.im);
    return rc;
}
