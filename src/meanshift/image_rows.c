/* pc_meanshift_image_rows: pc_meanshift_image over an image read strip by strip (include/parclust.h
 * says what and why). The passes:
 *   scan     float pixels only: the largest magnitude (the scaling, as pc_meanshift_image) and checks;
 *   sweep    strip by strip, each held with halo rows either side: climbs taken up that wait for this
 *            strip, the strip's pixels filtered, the strip fused and joined across its seam, its
 *            regions' numbers to scratch; further sweeps over the strips some stopped climb waits for;
 *   sums     float pixels only: the fused regions' sums, in raster order as pc_meanshift_image adds them;
 *   labels   the scratch numbers mapped to the final labels and written.
 * Why the result is pc_meanshift_image's, bit for bit:
 *   - planes: the same conversion of the same values (pc__points_row_f32, ldexpf by the same e);
 *   - filter: a window's sums do not depend on where its rows lie in memory (image_filter.c), and a
 *     climb runs only while its window lies in the rows held; one that would reach beyond stops
 *     before that window, and is taken up, from its whole state (centre, values, shifts), where the
 *     rows are held: the strip holding its centre row, whose halo (>= the window's reach) holds the
 *     whole window. Every climb is thus the same sequence of windows as in memory;
 *   - fuse: the same pairs of pixels tested the same way (within strips, across seams, and the tests
 *     that waited for a stopped climb's mode); regions are the connected components of that graph,
 *     numbered in the order of their first pixels, as in memory (image_rows_graph.c);
 *   - sums: integers are exact in any order (values < 2^16 times 2^e, fewer than 2^37 of them);
 *     floats are added in raster order in a pass of their own;
 *   - prune and numbering: the same code (image_regions.c) on the same regions, sizes, sums and
 *     neighbours; its decisions depend only on those. */
#include "image_rows_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void pc_image_rows_init(pc_image_rows *io)
{
    memset(io, 0, sizeof *io);
}

static size_t elem_size(pc_dtype t)
{
    return t == PC_F32 ? 4 : t == PC_F64 ? 8 : t == PC_U8 ? 1 : t == PC_U16 ? 2 : 0;
}

/* Bytes of the strips' buffers: the rows held (float planes and flags), a strip's raw rows, modes,
 * region numbers, union-find and stop flags, and the seam row. */
static size_t buffer_bytes(size_t w, size_t h, size_t bands, size_t es, size_t strip, size_t halo)
{
    size_t held = strip + 2 * halo < h ? strip + 2 * halo : h;
    return held * w * (4 * bands + 1) + bands * PC__MSI_PAD * 4 +
           strip * w * (es * bands + 1 + 4 * bands + sizeof(int32_t) + sizeof(size_t) + 1) +
           w * (2 * sizeof(size_t) + 4 * bands);
}

/* Checks everything that can be checked before reading, and chooses the strips. */
static pc_status plan(size_t w, size_t h, size_t bands, pc_dtype dtype, const pc_image_rows *io,
                      const pc_meanshift_image_params *params, pc_image_rows_report *rep)
{
    pc_status st;
    if (!io)
        return pc__fail(PC_INVALID_ARGUMENT, "image rows (callbacks and limits) are NULL");
    if ((st = pc__msi_check_params(params)) != PC_OK)
        return st;
    if (params->backend == PC_BACKEND_CUDA)
        return pc__fail(PC_UNSUPPORTED,
                        "image mean shift has no CUDA backend; use auto, seq or openmp (auto runs OpenMP)");
    size_t es = elem_size(dtype);
    if (es == 0)
        return pc__fail(PC_INVALID_ARGUMENT, "unknown element type %d", (int)dtype);
    if (w == 0 || h == 0 || bands == 0)
        return pc__fail(PC_INVALID_ARGUMENT, "a %zu x %zu image of %zu bands has no pixels", w, h, bands);
    if (w > SIZE_MAX / h || w * h > SIZE_MAX / 64 / bands)
        return pc__fail(PC_INVALID_ARGUMENT, "a %zu x %zu image of %zu bands is too large to address", w, h, bands);
    if (w > (size_t)INT32_MAX)
        return pc__fail(PC_INVALID_ARGUMENT, "rows of %zu pixels are wider than 2^31 - 1", w);
    long reach = pc__msi_window_reach(params->spatial_bandwidth, w, h);
    size_t halo = io->halo_rows ? io->halo_rows : 2 * (size_t)reach;
    if (io->halo_rows && io->halo_rows < (size_t)reach && io->halo_rows < h)
        return pc__fail(PC_INVALID_ARGUMENT, "halo of %zu rows is less than the window's reach of %ld rows (hs %g)",
                        io->halo_rows, reach, params->spatial_bandwidth);
    halo = halo < h ? halo : h;
    size_t most = (size_t)INT32_MAX / w; /* a strip's region numbers are int32 */
    most = most < h ? most : h;
    size_t limit = io->memory_limit / 2, strip;
    /* A default halo that does not fit gives way to the least one (more climbs then stop, the
     * result is the same). */
    if (!io->halo_rows && io->memory_limit && buffer_bytes(w, h, bands, es, 1, halo) > limit)
        halo = (size_t)reach < h ? (size_t)reach : h;
    if (io->strip_rows) {
        strip = io->strip_rows < most ? io->strip_rows : most;
        size_t bytes = buffer_bytes(w, h, bands, es, strip, strip >= h ? 0 : halo);
        if (io->memory_limit && bytes > limit)
            return pc__fail(PC_INVALID_ARGUMENT, "strips of %zu rows with halos of %zu take %zu bytes, more than half "
                            "the memory limit of %zu", strip, halo, bytes, io->memory_limit);
    } else if (!io->memory_limit) {
        strip = most;
    } else if (buffer_bytes(w, h, bands, es, most, most >= h ? 0 : halo) <= limit) {
        strip = most;
    } else {
        /* The largest strip that fits (the bytes grow with the strip). */
        size_t lo = 0, hi = most;
        while (lo < hi) {
            size_t mid = lo + (hi - lo + 1) / 2;
            if (buffer_bytes(w, h, bands, es, mid, halo) <= limit)
                lo = mid;
            else
                hi = mid - 1;
        }
        if (lo == 0)
            return pc__fail(PC_INVALID_ARGUMENT, "a memory limit of %zu bytes is too small: a row with its halos of %zu "
                            "rows takes %zu bytes, and strips may take half of the limit", io->memory_limit, halo,
                            buffer_bytes(w, h, bands, es, 1, halo));
        strip = lo;
    }
    if (strip >= h)
        halo = 0; /* one strip: the whole image */
    rep->strip_rows = strip;
    rep->halo_rows = halo;
    rep->strips = (h + strip - 1) / strip;
    rep->buffer_bytes = buffer_bytes(w, h, bands, es, strip, halo);
    rep->image_passes = dtype == PC_F32 || dtype == PC_F64 ? 3 : 1;
    return PC_OK;
}

pc_status pc_meanshift_image_rows_plan(size_t width, size_t height, size_t bands, pc_dtype dtype,
                                       const pc_image_rows *io, const pc_meanshift_image_params *params,
                                       pc_image_rows_report *report)
{
    if (!report)
        return pc__fail(PC_INVALID_ARGUMENT, "report pointer is NULL");
    memset(report, 0, sizeof *report);
    if (!params)
        return pc__fail(PC_INVALID_ARGUMENT, "parameters are NULL");
    pc__clear_error();
    return plan(width, height, bands, dtype, io, params, report);
}

/* ---------------------------------------------------------------- passes */

/* The filter's progress within a strip, as a fraction of the first sweep. */
typedef struct {
    pc_progress_fn fn;
    void *user;
    double base, span;
} progress_part;

static int progress_in_strip(void *user, double fraction)
{
    const progress_part *pp = user;
    return pp->fn(pp->user, pp->base + pp->span * fraction);
}

static void run_free(rows_run *run)
{
    free(run->planes);
    free(run->ok);
    free(run->raw);
    free(run->valid);
    free(run->modes);
    free(run->region);
    free(run->uf);
    free(run->stopped);
    free(run->seam_region);
    free(run->seam_mode);
    free(run->seam_modes);
    free(run->strip_base);
    free(run->climb_over);
    if (run->buckets)
        for (size_t s = 0; s < run->strips; s++)
            free(run->buckets[s].ids);
    free(run->buckets);
    pc__msi_climbs_free(&run->climbs);
    pc__rows_graph_free(&run->graph);
    pc__rows_scratch_close(run);
}

static pc_status run_alloc(rows_run *run)
{
    size_t w = run->width, bands = run->bands, S = run->strip_rows;
    run->plane_stride = run->cap_rows * w + PC__MSI_PAD;
    /* calloc: the lanes read up to 7 floats past a row (masked), which are then defined. */
    run->planes = pc__calloc(bands, run->plane_stride * sizeof *run->planes, "image rows (float planes)");
    run->ok = pc__alloc(run->cap_rows, w, "image rows (valid flags)");
    run->raw = pc__alloc(S * w, bands * run->elem, "image rows (as read)");
    run->valid = pc__alloc(S, w, "image rows (valid flags as read)");
    run->modes = pc__alloc(S * w, bands * sizeof *run->modes, "strip modes");
    run->region = pc__alloc(S * w, sizeof *run->region, "strip regions");
    run->uf = pc__alloc(S * w, sizeof *run->uf, "strip union-find");
    run->stopped = pc__alloc(S, w, "strip stop flags");
    run->seam_region = pc__alloc(w, sizeof *run->seam_region, "seam row");
    run->seam_mode = pc__alloc(w, sizeof *run->seam_mode, "seam row");
    run->seam_modes = pc__alloc(w, bands * sizeof *run->seam_modes, "seam row");
    run->strip_base = pc__calloc(run->strips + 1, sizeof *run->strip_base, "strip region offsets");
    run->buckets = pc__calloc(run->strips, sizeof *run->buckets, "stopped climbs by strip");
    if (!run->planes || !run->ok || !run->raw || !run->valid || !run->modes || !run->region || !run->uf ||
        !run->stopped || !run->seam_region || !run->seam_mode || !run->seam_modes || !run->strip_base ||
        !run->buckets)
        return PC_OUT_OF_MEMORY;
    return PC_OK;
}

/* Float pixels: the largest magnitude among valid values (as pc_meanshift_image's valid_max_abs),
 * the first value that is not finite and the valid count, in one pass. */
static pc_status scan(rows_run *run, double *max_abs, size_t *bad_row, size_t *bad_col, size_t *bad_band,
                      double *bad_value)
{
    size_t w = run->width, bands = run->bands;
    float row[64];
    float *wide = bands > 64 ? pc__alloc(bands, sizeof *wide, "pixel row") : NULL;
    if (bands > 64 && !wide)
        return PC_OUT_OF_MEMORY;
    float *v = wide ? wide : row;
    double m = 0;
    pc_status st = PC_OK;
    *bad_row = SIZE_MAX;
    for (size_t y0 = 0; y0 < run->height; y0 += run->strip_rows) {
        size_t rows = run->height - y0 < run->strip_rows ? run->height - y0 : run->strip_rows;
        if ((st = pc__rows_read_raw(run, y0, rows)) != PC_OK)
            break;
        pc_points view = {run->raw, rows * w, bands, 0, run->dtype};
        for (size_t i = 0; i < rows * w; i++) {
            if (!run->valid[i])
                continue;
            run->valid_count++;
            pc__points_row_f32(&view, i, v);
            for (size_t b = 0; b < bands; b++) {
                if (!isfinite(v[b])) {
                    if (*bad_row == SIZE_MAX) {
                        *bad_row = y0 + i / w;
                        *bad_col = i % w;
                        *bad_band = b;
                        *bad_value = v[b];
                    }
                    continue;
                }
                m = fabs(v[b]) > m ? fabs(v[b]) : m;
            }
        }
    }
    free(wide);
    *max_abs = m;
    return st;
}

static pc_status bucket_push(rows_run *run, size_t s, size_t id)
{
    rows_bucket *bk = &run->buckets[s];
    if (bk->count == bk->cap) {
        size_t cap = bk->cap ? 2 * bk->cap : 16;
        size_t *ids = realloc(bk->ids, cap * sizeof *ids);
        if (!ids)
            return pc__fail(PC_OUT_OF_MEMORY, "cannot grow the list of stopped climbs of strip %zu", s);
        bk->ids = ids;
        bk->cap = cap;
    }
    bk->ids[bk->count++] = id;
    return PC_OK;
}

/* A stopped climb waits for the strip that holds its window's centre row (the nearest to the
 * centre, as the filter takes it), whose halo holds the whole window. */
static pc_status wait_for_strip(rows_run *run, size_t id, size_t from_strip)
{
    long ri = (long)floor(run->climbs.climb[id].yr + 0.5);
    size_t s = (size_t)ri / run->strip_rows;
    if (s == from_strip) /* cannot happen: the halo holds every window centred in the strip */
        return pc__fail(PC_INTERNAL_ERROR, "image mean shift by rows: a climb stopped in the strip that holds it");
    return bucket_push(run, s, id);
}

static pc__msi_image held_image(const rows_run *run)
{
    pc__msi_image im = {run->width, run->height, run->bands, run->planes, run->plane_stride, run->ok,
                        run->held0, run->held};
    return im;
}

/* Rows of strip s with its halos. */
static void strip_rows_held(const rows_run *run, size_t s, size_t *row0, size_t *row1)
{
    size_t y0 = s * run->strip_rows, y1 = y0 + run->strip_rows < run->height ? y0 + run->strip_rows : run->height;
    *row0 = y0 > run->halo ? y0 - run->halo : 0;
    *row1 = y1 + run->halo < run->height ? y1 + run->halo : run->height;
}

/* Takes up the climbs waiting for strip s (its rows held). */
static pc_status resume_strip(rows_run *run, size_t s, int *most, double *t_filter)
{
    rows_bucket bk = run->buckets[s];
    if (bk.count == 0)
        return PC_OK;
    memset(&run->buckets[s], 0, sizeof run->buckets[s]);
    pc_status st = PC_OK;
    if (bk.count > run->cap_over) {
        free(run->climb_over);
        run->cap_over = 0;
        run->climb_over = pc__alloc(bk.count, 1, "climbs taken up");
        if (!run->climb_over) {
            free(bk.ids);
            return PC_OUT_OF_MEMORY;
        }
        run->cap_over = bk.count;
    }
    pc__msi_image im = held_image(run);
    pc__msi_filter_params fp = run->fp;
    fp.progress = NULL;
    int it = 0;
    double t0 = pc__now();
    st = pc__msi_resume(&im, &fp, &run->climbs, bk.ids, bk.count, run->climb_over, &it);
    *t_filter += pc__now() - t0;
    *most = it > *most ? it : *most;
    for (size_t t = 0; t < bk.count && st == PC_OK; t++) {
        if (run->climb_over[t])
            run->waiting--;
        else
            st = wait_for_strip(run, bk.ids[t], s);
    }
    run->rep.climbs_resumed += bk.count;
    free(bk.ids);
    return st;
}

pc_status pc_meanshift_image_rows(size_t width, size_t height, size_t bands, pc_dtype dtype, const pc_image_rows *io,
                                  const pc_meanshift_image_params *params, pc_result **result,
                                  pc_image_rows_report *report)
{
    if (!result)
        return pc__fail(PC_INVALID_ARGUMENT, "result pointer is NULL");
    *result = NULL;
    if (report)
        memset(report, 0, sizeof *report);
    if (!params)
        return pc__fail(PC_INVALID_ARGUMENT, "parameters are NULL");
    pc__clear_error();
    rows_run run;
    memset(&run, 0, sizeof run);
    run.tmp.fd = -1;
    pc_status st = plan(width, height, bands, dtype, io, params, &run.rep);
    if (st != PC_OK)
        return st;
    if (!io->read || !io->write)
        return pc__fail(PC_INVALID_ARGUMENT, "the read and write callbacks are required");
    if (!io->scratch_write != !io->scratch_read)
        return pc__fail(PC_INVALID_ARGUMENT, "scratch_write and scratch_read go together (or neither: a temporary file)");
    pc_backend backend;
    if ((st = pc__choose_backend(params->backend, 0, &backend)) != PC_OK)
        return st;

    run.width = width;
    run.height = height;
    run.bands = bands;
    run.dtype = dtype;
    run.elem = elem_size(dtype);
    run.io = io;
    run.strip_rows = run.rep.strip_rows;
    run.halo = run.rep.halo_rows;
    run.strips = run.rep.strips;
    run.cap_rows = run.strip_rows + 2 * run.halo < height ? run.strip_rows + 2 * run.halo : height;
    run.min_size = params->min_region_size;
    run.climbs.bands = bands;
    run.graph.bands = bands;
    run.graph.sums = dtype == PC_U8 || dtype == PC_U16;
    int is_float = !run.graph.sums;
    pc__msi_graph fg;
    memset(&fg, 0, sizeof fg);
    size_t *fused = NULL, *start = NULL, *next = NULL;
    int32_t *final = NULL;
    double t_filter = 0, t_fuse = 0, t_scratch = 0, t_sums = 0, t_prune = 0, t_write = 0, t_scan = 0;
    int most = 0;

    pc_result *r = pc__result_new(width * height, bands);
    if (!r)
        return PC_OUT_OF_MEMORY;
    r->backend = backend;
    if ((st = run_alloc(&run)) != PC_OK || (st = pc__rows_scratch_open(&run)) != PC_OK)
        goto fail;

    /* The scaling, as pc_meanshift_image: from the largest valid magnitude (a bound for integers). */
    double max_abs = dtype == PC_U8 ? 255 : 65535;
    size_t bad_row = SIZE_MAX, bad_col = 0, bad_band = 0;
    double bad_value = 0, t0 = pc__now();
    if (is_float) {
        if ((st = scan(&run, &max_abs, &bad_row, &bad_col, &bad_band, &bad_value)) != PC_OK)
            goto fail;
        t_scan = pc__now() - t0;
    }
    run.e = pc__scale_exponent(max_abs);
    run.hr = ldexp(params->range_bandwidth, run.e);
    if (!(run.hr >= 0x1p-40)) {
        st = pc__fail(PC_INVALID_ARGUMENT, "range bandwidth %g is too small for band values up to %g: float32 "
                      "arithmetic cannot weigh differences below 1e-12 times their range", params->range_bandwidth,
                      max_abs);
        goto fail;
    }
    if (bad_row != SIZE_MAX) {
        st = pc__fail(PC_INVALID_ARGUMENT, "pixel (row %zu, col %zu), band %zu: %g is not a finite float (mark it invalid)",
                      bad_row, bad_col, bad_band, bad_value);
        goto fail;
    }
    if (is_float && run.valid_count == 0) {
        st = pc__fail(PC_INVALID_ARGUMENT, "every pixel of the %zu x %zu image is marked invalid (nodata)", width,
                      height);
        goto fail;
    }
    run.valid_count = 0;
    run.fp = (pc__msi_filter_params){params->spatial_bandwidth,
                                     run.hr,
                                     params->eps,
                                     params->max_iter,
                                     backend == PC_BACKEND_OPENMP,
                                     params->threads,
                                     NULL,
                                     NULL};

    /* The first sweep: every strip filtered, fused and joined to the one before. */
    run.rep.sweeps = 1;
    for (size_t s = 0; s < run.strips; s++) {
        size_t y0 = s * run.strip_rows, rows = height - y0 < run.strip_rows ? height - y0 : run.strip_rows, row0, row1;
        strip_rows_held(&run, s, &row0, &row1);
        if ((st = pc__rows_hold(&run, row0, row1)) != PC_OK || (st = resume_strip(&run, s, &most, &t_filter)) != PC_OK)
            goto fail;
        pc__msi_image im = held_image(&run);
        pc__msi_filter_params fp = run.fp;
        progress_part pp = {params->progress, params->progress_user, (double)y0 / (double)height,
                            (double)rows / (double)height};
        if (params->progress) {
            fp.progress = progress_in_strip;
            fp.progress_user = &pp;
        }
        size_t first_climb = run.climbs.count;
        int it = 0;
        double t1 = pc__now();
        st = pc__msi_filter_rows(&im, &fp, y0, rows, run.modes, &it, &run.climbs);
        t_filter += pc__now() - t1;
        if (st != PC_OK)
            goto fail;
        most = it > most ? it : most;
        memset(run.stopped, 0, rows * width);
        for (size_t id = first_climb; id < run.climbs.count; id++) {
            run.stopped[run.climbs.climb[id].pixel - y0 * width] = 1;
            run.waiting++;
            if ((st = wait_for_strip(&run, id, s)) != PC_OK)
                goto fail;
        }
        t1 = pc__now();
        if ((st = pc__rows_fuse_strip(&run, s, first_climb)) != PC_OK)
            goto fail;
        double t2 = pc__now();
        t_fuse += t2 - t1;
        if ((st = pc__rows_scratch_write(&run, y0, rows, run.region)) != PC_OK)
            goto fail;
        t_scratch += pc__now() - t2;
    }
    if (run.valid_count == 0) {
        st = pc__fail(PC_INVALID_ARGUMENT, "every pixel of the %zu x %zu image is marked invalid (nodata)", width,
                      height);
        goto fail;
    }
    /* Further sweeps, over the strips that stopped climbs wait for. Each takes every waiting climb at
     * least one shift further (its strip comes in every sweep), so there are at most max_iter. */
    while (run.waiting > 0) {
        run.rep.sweeps++;
        for (size_t s = 0; s < run.strips; s++) {
            if (run.buckets[s].count == 0)
                continue;
            size_t row0, row1;
            strip_rows_held(&run, s, &row0, &row1);
            if ((st = pc__rows_hold(&run, row0, row1)) != PC_OK ||
                (st = resume_strip(&run, s, &most, &t_filter)) != PC_OK)
                goto fail;
        }
    }
    r->iterations = most;
    /* The rows held and the strip's filter buffers are done with: their memory goes to the graph. */
    free(run.planes);
    free(run.ok);
    free(run.modes);
    free(run.uf);
    free(run.stopped);
    run.planes = run.modes = NULL;
    run.ok = run.stopped = NULL;
    run.uf = NULL;

    /* Regions: the waiting tests, the fused regions and their sums. */
    double t1 = pc__now();
    if ((st = pc__rows_fuse_all(&run, &fused, &fg)) != PC_OK)
        goto fail;
    pc__msi_climbs_free(&run.climbs);
    t_fuse += pc__now() - t1;
    if (is_float) {
        /* Sums in raster order, as pc_meanshift_image adds them (floats round, so order counts). */
        t1 = pc__now();
        float row[64];
        float *wide = bands > 64 ? pc__alloc(bands, sizeof *wide, "pixel row") : NULL;
        if (bands > 64 && !wide) {
            st = PC_OUT_OF_MEMORY;
            goto fail;
        }
        float *v = wide ? wide : row;
        for (size_t s = 0; s < run.strips && st == PC_OK; s++) {
            size_t y0 = s * run.strip_rows, rows = height - y0 < run.strip_rows ? height - y0 : run.strip_rows;
            if ((st = pc__rows_read_raw(&run, y0, rows)) != PC_OK ||
                (st = pc__rows_scratch_read(&run, y0, rows, run.region)) != PC_OK)
                break;
            pc_points view = {run.raw, rows * width, bands, 0, dtype};
            for (size_t i = 0; i < rows * width; i++) {
                int32_t local = run.region[i];
                if ((local >= 0) != (run.valid[i] != 0)) {
                    st = pc__fail(PC_IO_ERROR, "image mean shift by rows: pixel (row %zu, col %zu) changed validity "
                                  "between passes over the image", y0 + i / width, i % width);
                    break;
                }
                if (local < 0)
                    continue;
                size_t f = fused[run.strip_base[s] + (size_t)local];
                pc__points_row_f32(&view, i, v);
                for (size_t b = 0; b < bands; b++)
                    fg.sum[f * bands + b] += ldexpf(v[b], run.e);
            }
        }
        free(wide);
        if (st != PC_OK)
            goto fail;
        t_sums = pc__now() - t1;
        run.rep.image_passes = 3;
    } else {
        run.rep.image_passes = 1;
    }

    /* Pruning and numbering on the graph, as pc_meanshift_image. */
    t1 = pc__now();
    if (run.min_size > 1) {
        if ((st = pc__rows_neighbours(&run, fused, &fg, &start, &next)) != PC_OK)
            goto fail;
        fg.start = start;
        fg.next = next;
    }
    int32_t *label = pc__alloc(fg.regions ? fg.regions : 1, sizeof *label, "region numbers");
    if (!label) {
        st = PC_OUT_OF_MEMORY;
        goto fail;
    }
    st = pc__msi_prune_number(&fg, run.min_size, label, r);
    if (st == PC_OK) {
        size_t R = run.rep.strip_regions;
        final = pc__alloc(R ? R : 1, sizeof *final, "strip region labels");
        if (!final)
            st = PC_OUT_OF_MEMORY;
        else
            for (size_t i = 0; i < R; i++)
                final[i] = label[fused[i]];
    }
    free(label);
    if (st != PC_OK)
        goto fail;
    free(fused);
    free(start);
    free(next);
    free(fg.size);
    free(fg.sum);
    fused = start = next = NULL;
    fg.size = NULL;
    fg.sum = NULL;
    pc__scale_f32(r->centers, r->k * bands, -run.e); /* back to the band's units */
    t_prune = pc__now() - t1;

    /* The labels, strip by strip, once the caller knows what they number. */
    t1 = pc__now();
    if (io->regions && (st = io->regions(io->user, r->k, r->sizes, r->centers)) != PC_OK) {
        st = pc__fail(st, "image mean shift by rows: the regions callback failed (%s)", pc_status_string(st));
        goto fail;
    }
    for (size_t s = 0; s < run.strips; s++) {
        size_t y0 = s * run.strip_rows, rows = height - y0 < run.strip_rows ? height - y0 : run.strip_rows;
        if ((st = pc__rows_scratch_read(&run, y0, rows, run.region)) != PC_OK)
            goto fail;
        for (size_t i = 0; i < rows * width; i++)
            if (run.region[i] >= 0)
                run.region[i] = final[run.strip_base[s] + (size_t)run.region[i]];
        st = io->write(io->user, y0, rows, run.region);
        if (st != PC_OK) {
            st = pc__rows_callback_failed(st, "write", y0, rows);
            goto fail;
        }
    }
    t_write = pc__now() - t1;
    if (is_float)
        pc__result_add_stage(r, "scan", t_scan);
    pc__result_add_stage(r, "read", run.t_read);
    pc__result_add_stage(r, "filter", t_filter);
    pc__result_add_stage(r, "fuse", t_fuse);
    pc__result_add_stage(r, "scratch", t_scratch);
    if (is_float)
        pc__result_add_stage(r, "sums", t_sums);
    pc__result_add_stage(r, "prune", t_prune);
    pc__result_add_stage(r, "write", t_write);
    run.rep.graph_bytes = run.graph.peak_bytes;
    if (report)
        *report = run.rep;
    free(final);
    run_free(&run);
    *result = r;
    return PC_OK;
fail:
    free(final);
    free(fused);
    free(start);
    free(next);
    free(fg.size);
    free(fg.sum);
    run_free(&run);
    pc_result_free(r);
    if (report)
        *report = run.rep;
    return st;
}
