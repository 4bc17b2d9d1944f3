/* pc_meanshift_image_rows against pc_meanshift_image on the same pixels: labels, k, sizes, centres and
 * iterations bit for bit, for strips of 1, 2, 7, 64 rows and the whole image, halos from the least
 * allowed (many climbs stop and are taken up later) to the default, every pixel type, sequential and
 * OpenMP, on scenes with structure (colour blobs, some taller than many strips, a ramp, noise, nodata
 * holes, a long thin line); a memory limit that forces strips; the scratch kept by callbacks or in a
 * temporary file; callback failures stopping the run with their status; bad arguments refused. */
#include "check.h"
#include "test_util.h"

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

/* ------------------------------------------------------------------ scenes */

typedef struct {
    size_t w, h, bands;
    pc_dtype dtype;
    void *pixels; /* w x h x bands of dtype */
    uint8_t *valid;
} scene;

static size_t elem(pc_dtype t) { return t == PC_F32 ? 4 : t == PC_F64 ? 8 : t == PC_U8 ? 1 : 2; }

/* Values in 0..255 before the type's scaling: a ramp, ellipses of random colours (some as tall as
 * the image, so their regions cross every strip), a one-pixel line from top to bottom and a diagonal
 * one, noise of +-noise, rectangles and scattered pixels of nodata (holding wild values). scale: the
 * float types' values are multiplied by it (1e30: scaled runs, e != 0); scale < 0: values are
 * 255 (u / 255)^8 / -scale, times scale (negative), spread over many binades, so that their sums in
 * double round and only the same order of adding gives the same sums (the float32 centres hide
 * most such differences, but not all, and prune compares the double means). */
static scene make_scene(uint64_t seed, size_t w, size_t h, size_t bands, pc_dtype dtype, double noise, double scale)
{
    uint64_t s = seed;
    scene sc = {w, h, bands, dtype, malloc(w * h * bands * elem(dtype)), malloc(w * h)};
    enum { BLOBS = 10 };
    double cy[BLOBS], cx[BLOBS], ry[BLOBS], rx[BLOBS], col[BLOBS][16];
    for (int k = 0; k < BLOBS; k++) {
        cy[k] = rng_uniform(&s) * (double)h;
        cx[k] = rng_uniform(&s) * (double)w;
        ry[k] = k < 3 ? (double)h * (0.3 + 0.3 * rng_uniform(&s)) : 3 + rng_uniform(&s) * (double)h / 5;
        rx[k] = 2 + rng_uniform(&s) * (double)w / 6;
        for (size_t b = 0; b < 16; b++)
            col[k][b] = 30 + 200 * rng_uniform(&s);
    }
    size_t hole_y = (size_t)(rng_uniform(&s) * (double)h), hole_x = (size_t)(rng_uniform(&s) * (double)w);
    for (size_t y = 0; y < h; y++) {
        for (size_t x = 0; x < w; x++) {
            size_t i = y * w + x;
            double v[16]; /* bands <= 16 */
            for (size_t b = 0; b < 16; b++)
                v[b] = 20 + 100 * (double)x / (double)w + 40 * (double)y / (double)h + 10 * (double)b;
            for (int k = 0; k < BLOBS; k++) {
                double dy = ((double)y - cy[k]) / ry[k], dx = ((double)x - cx[k]) / rx[k];
                if (dy * dy + dx * dx <= 1)
                    for (size_t b = 0; b < 16; b++)
                        v[b] = col[k][b];
            }
            if (x == w / 3 && y > 1 && y + 2 < h) /* the long thin line */
                for (size_t b = 0; b < 16; b++)
                    v[b] = b % 2 ? 250 : 5;
            if (x == (y * 2) % w) /* a diagonal one */
                for (size_t b = 0; b < 16; b++)
                    v[b] = b % 2 ? 10 : 240;
            int ok = rng_uniform(&s) >= 0.02;
            if (y >= hole_y && y < hole_y + 4 && x >= hole_x && x < hole_x + 9)
                ok = 0;
            sc.valid[i] = (uint8_t)ok;
            for (size_t b = 0; b < bands; b++) {
                double u = v[b] + noise * (2 * rng_uniform(&s) - 1);
                u = u < 0 ? 0 : u > 255 ? 255 : u;
                if (scale < 0)
                    u = 255 * pow(u / 255, 8) / -scale;
                size_t j = i * bands + b;
                switch (dtype) {
                case PC_U8: ((uint8_t *)sc.pixels)[j] = ok ? (uint8_t)lround(u) : 255; break;
                case PC_U16: ((uint16_t *)sc.pixels)[j] = ok ? (uint16_t)lround(u * 256) : 65535; break;
                case PC_F32: ((float *)sc.pixels)[j] = ok ? (float)(u * scale) : NAN; break;
                case PC_F64: ((double *)sc.pixels)[j] = ok ? u * scale : -INFINITY; break;
                }
            }
        }
    }
    return sc;
}

static void scene_free(scene *sc)
{
    free(sc->pixels);
    free(sc->valid);
}

static pc_points scene_view(const scene *sc)
{
    pc_points v = {sc->pixels, sc->w * sc->h, sc->bands, 0, sc->dtype};
    return v;
}

/* ------------------------------------------------------------------ callbacks */

typedef struct {
    const scene *sc;
    int32_t *labels;  /* what write received */
    int32_t *scratch; /* what scratch_write received (scratch callbacks only) */
    size_t reads, writes, scratch_writes, scratch_reads, calls_after_failure;
    size_t next_write_row, bad_calls;
    size_t regions_calls, k_told; /* the regions callback: calls, k it was told */
    int fail_regions;
    int64_t *sizes_told;
    float *centres_told;
    size_t fail_read_at, fail_write_at, fail_scratch_read_at; /* 1-based call numbers; 0 = never */
    pc_status fail_with;
    int failed;
} source;

static void count_after_failure(source *src)
{
    if (src->failed)
        src->calls_after_failure++;
}

static pc_status src_read(void *user, size_t row0, size_t rows, void *pixels, uint8_t *valid)
{
    source *src = user;
    const scene *sc = src->sc;
    count_after_failure(src);
    if (++src->reads == src->fail_read_at) {
        src->failed = 1;
        return src->fail_with;
    }
    if (rows == 0 || row0 + rows > sc->h) {
        src->bad_calls++;
        return PC_IO_ERROR;
    }
    for (size_t i = 0; i < rows * sc->w; i++)
        if (valid[i] != 1)
            src->bad_calls++; /* valid comes all 1 */
    size_t row_bytes = sc->w * sc->bands * elem(sc->dtype);
    memcpy(pixels, (const char *)sc->pixels + row0 * row_bytes, rows * row_bytes);
    memcpy(valid, sc->valid + row0 * sc->w, rows * sc->w);
    return PC_OK;
}

static pc_status src_write(void *user, size_t row0, size_t rows, const int32_t *labels)
{
    source *src = user;
    count_after_failure(src);
    if (++src->writes == src->fail_write_at) {
        src->failed = 1;
        return src->fail_with;
    }
    if (row0 != src->next_write_row || row0 + rows > src->sc->h)
        src->bad_calls++; /* once per row, in order */
    src->next_write_row = row0 + rows;
    memcpy(src->labels + row0 * src->sc->w, labels, rows * src->sc->w * sizeof *labels);
    return PC_OK;
}

static pc_status src_scratch_write(void *user, size_t row0, size_t rows, const int32_t *labels)
{
    source *src = user;
    count_after_failure(src);
    src->scratch_writes++;
    memcpy(src->scratch + row0 * src->sc->w, labels, rows * src->sc->w * sizeof *labels);
    return PC_OK;
}

static pc_status src_scratch_read(void *user, size_t row0, size_t rows, int32_t *labels)
{
    source *src = user;
    count_after_failure(src);
    if (++src->scratch_reads == src->fail_scratch_read_at) {
        src->failed = 1;
        return src->fail_with;
    }
    memcpy(labels, src->scratch + row0 * src->sc->w, rows * src->sc->w * sizeof *labels);
    return PC_OK;
}

static pc_status src_regions(void *user, size_t k, const int64_t *sizes, const float *centres)
{
    source *src = user;
    count_after_failure(src);
    if (src->writes > 0 || src->regions_calls++ > 0)
        src->bad_calls++; /* once, before the first write */
    src->k_told = k;
    free(src->sizes_told);
    free(src->centres_told);
    src->sizes_told = malloc(k * sizeof *sizes);
    src->centres_told = malloc(k * src->sc->bands * sizeof *centres);
    memcpy(src->sizes_told, sizes, k * sizeof *sizes);
    memcpy(src->centres_told, centres, k * src->sc->bands * sizeof *centres);
    if (src->fail_regions) {
        src->failed = 1;
        return src->fail_with;
    }
    return PC_OK;
}

static source source_for(const scene *sc, int scratch_callbacks)
{
    source src;
    memset(&src, 0, sizeof src);
    src.sc = sc;
    src.labels = malloc(sc->w * sc->h * sizeof *src.labels);
    src.scratch = scratch_callbacks ? malloc(sc->w * sc->h * sizeof *src.scratch) : NULL;
    for (size_t i = 0; i < sc->w * sc->h; i++)
        src.labels[i] = INT32_MIN; /* never a label: a row not written shows */
    src.fail_with = PC_IO_ERROR;
    return src;
}

static void source_free(source *src)
{
    free(src->labels);
    free(src->scratch);
    free(src->sizes_told);
    free(src->centres_told);
}

static pc_image_rows rows_io(source *src, size_t strip_rows, size_t halo_rows, size_t memory_limit)
{
    pc_image_rows io;
    pc_image_rows_init(&io);
    io.read = src_read;
    io.write = src_write;
    io.regions = src_regions;
    if (src->scratch) {
        io.scratch_write = src_scratch_write;
        io.scratch_read = src_scratch_read;
    }
    io.user = src;
    io.strip_rows = strip_rows;
    io.halo_rows = halo_rows;
    io.memory_limit = memory_limit;
    return io;
}

/* ------------------------------------------------------------------ comparisons */

static pc_meanshift_image_params params_of(double hs, double hr, int64_t min_size, pc_backend backend)
{
    pc_meanshift_image_params p;
    pc_meanshift_image_params_init(&p);
    p.spatial_bandwidth = hs;
    p.range_bandwidth = hr;
    p.min_region_size = min_size;
    p.backend = backend;
    p.threads = backend == PC_BACKEND_OPENMP ? 2 : 0;
    return p;
}

/* The rows run equals the in-memory one in every number. Returns 1 when it does. */
static int same_result(const pc_result *mem, const pc_result *rows, const source *src, const char *what)
{
    const scene *sc = src->sc;
    size_t n = sc->w * sc->h, k = pc_result_cluster_count(mem);
    int same = 1;
    CHECK_MSG(pc_result_labels(rows) == NULL && pc_result_modes(rows) == NULL, "%s: labels or modes kept", what);
    CHECK_MSG(pc_result_n(rows) == n && pc_result_dim(rows) == sc->bands, "%s: n, dim", what);
    CHECK_MSG(pc_result_cluster_count(rows) == k, "%s: k %zu, in memory %zu", what, pc_result_cluster_count(rows), k);
    same &= pc_result_cluster_count(rows) == k;
    CHECK_MSG(pc_result_iterations(rows) == pc_result_iterations(mem), "%s: iterations %d, in memory %d", what,
              pc_result_iterations(rows), pc_result_iterations(mem));
    size_t differ = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (src->labels[i] != pc_result_labels(mem)[i] && differ++ == 0)
            first = i;
    CHECK_MSG(differ == 0, "%s: %zu labels differ, the first at (%zu, %zu): %d, in memory %d", what, differ,
              first / sc->w, first % sc->w, src->labels[first], pc_result_labels(mem)[first]);
    same &= differ == 0;
    if (pc_result_cluster_count(rows) == k) {
        int sizes = memcmp(pc_result_sizes(rows), pc_result_sizes(mem), k * sizeof(int64_t)) == 0;
        int centres = memcmp(pc_result_centers(rows), pc_result_centers(mem), k * sc->bands * sizeof(float)) == 0;
        CHECK_MSG(sizes, "%s: sizes differ", what);
        CHECK_MSG(centres, "%s: centres differ", what);
        same &= sizes && centres;
    }
    CHECK_MSG(src->bad_calls == 0, "%s: %zu callback calls out of range or order", what, src->bad_calls);
    CHECK_MSG(src->regions_calls == 1 && src->k_told == pc_result_cluster_count(rows) &&
                  memcmp(src->sizes_told, pc_result_sizes(rows), src->k_told * sizeof(int64_t)) == 0 &&
                  memcmp(src->centres_told, pc_result_centers(rows), src->k_told * sc->bands * sizeof(float)) == 0,
              "%s: the regions callback was told something else", what);
    return same;
}

typedef struct {
    size_t resumed, sweeps_max, strips_max, runs;
} tally;

/* One scene, every strip height, two halos, both backends. */
static void check_scene(const scene *sc, double hs, double hr, int64_t min_size, int scratch_callbacks, tally *t)
{
    const size_t strips[] = {1, 2, 7, 64, 0 /* the whole image */};
    pc_points view = scene_view(sc);
    char what[200];
    for (int be = 0; be < 2; be++) {
        pc_backend backend = be ? PC_BACKEND_OPENMP : PC_BACKEND_SEQUENTIAL;
        pc_meanshift_image_params p = params_of(hs, hr, min_size, backend);
        pc_result *mem = NULL;
        CHECK_STATUS(pc_meanshift_image(&view, sc->w, sc->h, sc->valid, &p, &mem), PC_OK);
        if (!mem)
            continue;
        CHECK(pc_result_cluster_count(mem) > 3);
        long reach = (long)floor(hs + 0.5);
        for (size_t si = 0; si < sizeof strips / sizeof strips[0]; si++) {
            for (int hi = 0; hi < 2; hi++) {
                size_t halo = hi ? 0 : (size_t)reach; /* the least allowed, or the default */
                if (strips[si] == 0 && hi == 0)
                    continue;
                source src = source_for(sc, scratch_callbacks);
                pc_image_rows io = rows_io(&src, strips[si], halo, 0);
                pc_result *r = NULL;
                pc_image_rows_report rep;
                snprintf(what, sizeof what, "%s, %zux%zu x %zu type %d, hs %g, hr %g, min %lld, strips of %zu, halo %zu%s",
                         pc_backend_name(backend), sc->w, sc->h, sc->bands, (int)sc->dtype, hs, hr, (long long)min_size,
                         strips[si], halo, scratch_callbacks ? ", scratch callbacks" : "");
                CHECK_STATUS(pc_meanshift_image_rows(sc->w, sc->h, sc->bands, sc->dtype, &io, &p, &r, &rep), PC_OK);
                if (r) {
                    same_result(mem, r, &src, what);
                    CHECK_MSG(pc_result_backend(r) == pc_result_backend(mem), "%s: backend", what);
                    size_t want = strips[si] ? (sc->h + strips[si] - 1) / strips[si] : 1;
                    CHECK_MSG(rep.strips == want, "%s: %zu strips", what, rep.strips);
                    CHECK_MSG(rep.image_passes == (sc->dtype == PC_F32 || sc->dtype == PC_F64 ? 3 : 1), "%s: passes",
                              what);
                    CHECK_MSG(rep.rows_read >= (size_t)rep.image_passes * sc->h, "%s: %zu rows read", what,
                              rep.rows_read);
                    CHECK_MSG(scratch_callbacks ? src.scratch_writes == rep.strips : 1, "%s: scratch writes", what);
                    CHECK_MSG(rep.regions >= pc_result_cluster_count(r) && rep.strip_regions >= rep.regions,
                              "%s: %zu strip regions, %zu regions, k %zu", what, rep.strip_regions, rep.regions,
                              pc_result_cluster_count(r));
                    t->resumed += rep.climbs_resumed;
                    t->sweeps_max = rep.sweeps > (int)t->sweeps_max ? (size_t)rep.sweeps : t->sweeps_max;
                    t->strips_max = rep.strips > t->strips_max ? rep.strips : t->strips_max;
                    t->runs++;
                }
                pc_result_free(r);
                source_free(&src);
            }
        }
        pc_result_free(mem);
    }
}

static void test_matches_in_memory(uint64_t seed)
{
    tally t = {0, 0, 0, 0};
    struct {
        size_t w, h, bands;
        pc_dtype dtype;
        double noise, scale, hs, hr;
        int64_t min;
    } cases[] = {
        {61, 70, 3, PC_U8, 8, 1, 3, 14, 12},     /* RGB bytes, prune on */
        {47, 66, 4, PC_U16, 6, 1, 4.4, 2600, 20}, /* 16-bit, 4 bands, a non-integer hs */
        {53, 72, 3, PC_F32, 10, 1, 3, 15, 8},    /* float: the sums pass */
        {40, 65, 2, PC_F64, 9, 1e30, 2.5, 14e30, 15}, /* scaled values (e != 0) */
        {37, 41, 1, PC_F32, 12, 1e-3, 6, 10e-3, 1}, /* one band, prune off, halos reaching far */
        {29, 33, 11, PC_U8, 7, 1, 3, 30, 6},     /* many bands: the generic (scalar) window */
        {45, 50, 3, PC_F32, 30, -1, 3, 6, 25},   /* values over many binades: sums that round */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        scene sc = make_scene(seed ^ (0xA11 * (c + 1)), cases[c].w, cases[c].h, cases[c].bands, cases[c].dtype,
                              cases[c].noise, cases[c].scale);
        check_scene(&sc, cases[c].hs, cases[c].hr, cases[c].min, (int)(c % 2), &t);
        scene_free(&sc);
    }
    /* The stopping and taking up of climbs did happen, in further sweeps too. */
    CHECK_MSG(t.resumed > 100, "only %zu climbs taken up in %zu runs", t.resumed, t.runs);
    CHECK_MSG(t.sweeps_max >= 2, "at most %zu sweeps", t.sweeps_max);
    CHECK(t.strips_max >= 60);
}

/* A memory limit far below what the image would take forces strips; the same labels. */
static void test_memory_limit(uint64_t seed)
{
    scene sc = make_scene(seed ^ 0x3E3, 120, 150, 3, PC_U8, 8, 1);
    pc_points view = scene_view(&sc);
    pc_meanshift_image_params p = params_of(4, 16, 20, PC_BACKEND_AUTO);
    pc_result *mem = NULL;
    CHECK_STATUS(pc_meanshift_image(&view, sc.w, sc.h, sc.valid, &p, &mem), PC_OK);
    const size_t limits[] = {80000, 150000, 400000};
    for (size_t li = 0; li < 3 && mem; li++) {
        source src = source_for(&sc, 0);
        pc_image_rows io = rows_io(&src, 0, 0, limits[li]);
        pc_image_rows_report plan, rep;
        CHECK_STATUS(pc_meanshift_image_rows_plan(sc.w, sc.h, sc.bands, sc.dtype, &io, &p, &plan), PC_OK);
        pc_result *r = NULL;
        CHECK_STATUS(pc_meanshift_image_rows(sc.w, sc.h, sc.bands, sc.dtype, &io, &p, &r, &rep), PC_OK);
        if (r) {
            char what[64];
            snprintf(what, sizeof what, "memory limit %zu", limits[li]);
            same_result(mem, r, &src, what);
            CHECK_MSG(rep.strips > 1, "%s: %zu strips", what, rep.strips);
            CHECK_MSG(rep.buffer_bytes <= limits[li] / 2, "%s: buffers of %zu bytes", what, rep.buffer_bytes);
            /* The region graph is not bounded by the limit (thin strips cut regions into many
             * pieces, and noise makes many regions), but it is far smaller than the pixels. */
            CHECK_MSG(rep.graph_bytes > 0 && rep.graph_bytes < sc.w * sc.h * 12, "%s: graph of %zu bytes", what,
                      rep.graph_bytes);
            if (li == 2)
                CHECK_MSG(rep.graph_bytes < limits[li] / 2, "%s: graph of %zu bytes", what, rep.graph_bytes);
            CHECK(plan.strips == rep.strips && plan.strip_rows == rep.strip_rows && plan.halo_rows == rep.halo_rows &&
                  plan.buffer_bytes == rep.buffer_bytes);
            CHECK(rep.halo_rows == 8); /* twice hs, the default */
            CHECK(rep.scratch_bytes == sc.w * sc.h * 4);
        }
        pc_result_free(r);
        source_free(&src);
    }
    /* A limit that holds a strip with the least halo (hs = 4 rows) but not with the default (8). */
    {
        source src = source_for(&sc, 0);
        pc_image_rows io = rows_io(&src, 0, 0, 50000); /* 21 KB a row with halos of 4, 33 KB with 8 */
        pc_image_rows_report plan;
        CHECK_STATUS(pc_meanshift_image_rows_plan(sc.w, sc.h, sc.bands, sc.dtype, &io, &p, &plan), PC_OK);
        CHECK_MSG(plan.halo_rows == 4 && plan.strip_rows >= 1, "halo %zu, strips of %zu", plan.halo_rows,
                  plan.strip_rows);
        source_free(&src);
    }
    /* Too small even for one row with its halos. */
    source src = source_for(&sc, 0);
    pc_image_rows io = rows_io(&src, 0, 0, 5000);
    pc_result *r = NULL;
    CHECK_STATUS(pc_meanshift_image_rows(sc.w, sc.h, sc.bands, sc.dtype, &io, &p, &r, NULL), PC_INVALID_ARGUMENT);
    CHECK(r == NULL && src.reads == 0 && strstr(pc_last_error(), "too small"));
    /* Strips asked for that do not fit the limit. */
    io = rows_io(&src, 100, 0, 80000);
    CHECK_STATUS(pc_meanshift_image_rows(sc.w, sc.h, sc.bands, sc.dtype, &io, &p, &r, NULL), PC_INVALID_ARGUMENT);
    source_free(&src);
    pc_result_free(mem);
    scene_free(&sc);
}

/* A callback's failure stops the run at once with its status. */
static void test_callback_errors(uint64_t seed)
{
    scene sc = make_scene(seed ^ 0xE77, 30, 40, 3, PC_F32, 8, 1);
    pc_meanshift_image_params p = params_of(3, 16, 10, PC_BACKEND_SEQUENTIAL);
    const pc_status statuses[] = {PC_IO_ERROR, PC_CANCELLED, PC_OUT_OF_MEMORY};
    for (int which = 0; which < 3; which++) {
        source src = source_for(&sc, 1);
        pc_image_rows io = rows_io(&src, 5, 0, 0);
        src.fail_with = statuses[which];
        if (which == 0)
            src.fail_read_at = 3; /* the third read: strip 3 of the scan */
        else if (which == 1)
            src.fail_write_at = 2;
        else
            src.fail_scratch_read_at = 4;
        pc_result *r = (pc_result *)&src; /* must be cleared */
        pc_image_rows_report rep;
        CHECK_STATUS(pc_meanshift_image_rows(sc.w, sc.h, sc.bands, sc.dtype, &io, &p, &r, &rep), statuses[which]);
        CHECK(r == NULL);
        CHECK_MSG(src.failed && src.calls_after_failure == 0, "failure %d: %zu calls after it", which,
                  src.calls_after_failure);
        CHECK_MSG(strstr(pc_last_error(), which == 0 ? "read" : which == 1 ? "write" : "scratch_read") != NULL,
                  "%s", pc_last_error());
        if (which == 0)
            CHECK(src.writes == 0 && src.scratch_writes == 0 && strstr(pc_last_error(), "rows 10 to 14"));
        source_free(&src);
    }
    /* The regions callback refusing: nothing written. */
    {
        source src = source_for(&sc, 0);
        pc_image_rows io = rows_io(&src, 7, 0, 0);
        src.fail_with = PC_CANCELLED;
        src.fail_regions = 1;
        pc_result *r = NULL;
        CHECK_STATUS(pc_meanshift_image_rows(sc.w, sc.h, sc.bands, sc.dtype, &io, &p, &r, NULL), PC_CANCELLED);
        CHECK(r == NULL && src.regions_calls == 1 && src.writes == 0 && strstr(pc_last_error(), "regions"));
        source_free(&src);
    }
    /* A read failing in the filtering sweep of an integer image (no scan): strip 3 of 8. */
    scene sb = make_scene(seed ^ 0xE78, 30, 40, 3, PC_U8, 8, 1);
    source src = source_for(&sb, 0);
    pc_image_rows io = rows_io(&src, 5, 3, 0);
    src.fail_read_at = 3;
    pc_result *r = NULL;
    CHECK_STATUS(pc_meanshift_image_rows(sb.w, sb.h, sb.bands, sb.dtype, &io, &p, &r, NULL), PC_IO_ERROR);
    CHECK(r == NULL && src.calls_after_failure == 0 && src.writes == 0);
    source_free(&src);
    scene_free(&sb);
    scene_free(&sc);
}

static int cancel_half_way(void *user, double fraction)
{
    int *calls = user;
    ++*calls;
    return fraction >= 0.5;
}

static int record_progress(void *user, double fraction)
{
    double *last = user;
    if (fraction < last[0])
        last[1] = 1; /* went backwards */
    last[0] = fraction;
    return 0;
}

/* Temporary-file scratch (default and a given directory), progress, cancellation, data checks. */
static void test_scratch_progress_and_data(uint64_t seed)
{
    scene sc = make_scene(seed ^ 0x5C7, 44, 50, 3, PC_U16, 6, 1);
    pc_points view = scene_view(&sc);
    pc_meanshift_image_params p = params_of(3, 2000, 10, PC_BACKEND_AUTO);
    pc_result *mem = NULL, *r = NULL;
    CHECK_STATUS(pc_meanshift_image(&view, sc.w, sc.h, sc.valid, &p, &mem), PC_OK);
    for (int dir = 0; dir < 2 && mem; dir++) {
        source src = source_for(&sc, 0);
        pc_image_rows io = rows_io(&src, 6, 0, 0);
        io.scratch_dir = dir ? "." : NULL;
        double last[2] = {0, 0};
        p.progress = record_progress;
        p.progress_user = last;
        CHECK_STATUS(pc_meanshift_image_rows(sc.w, sc.h, sc.bands, sc.dtype, &io, &p, &r, NULL), PC_OK);
        if (r)
            same_result(mem, r, &src, dir ? "scratch in ." : "scratch in $TMPDIR");
        CHECK(last[0] > 0.9 && last[0] <= 1 && last[1] == 0);
        pc_result_free(r);
        r = NULL;
        source_free(&src);
    }
    p.progress = NULL;
    source src = source_for(&sc, 0);
    pc_image_rows io = rows_io(&src, 6, 0, 0);
    io.scratch_dir = "/nonexistent/dir";
    CHECK_STATUS(pc_meanshift_image_rows(sc.w, sc.h, sc.bands, sc.dtype, &io, &p, &r, NULL), PC_IO_ERROR);
    CHECK(r == NULL && strstr(pc_last_error(), "/nonexistent/dir") && src.reads == 0);
    int calls = 0;
    p.progress = cancel_half_way;
    p.progress_user = &calls;
    io.scratch_dir = NULL;
    CHECK_STATUS(pc_meanshift_image_rows(sc.w, sc.h, sc.bands, sc.dtype, &io, &p, &r, NULL), PC_CANCELLED);
    CHECK(r == NULL && calls > 0 && src.writes == 0);
    p.progress = NULL;
    source_free(&src);
    pc_result_free(mem);

    /* Every pixel nodata; a valid pixel that is not finite (the same message as in memory). */
    memset(sc.valid, 0, sc.w * sc.h);
    src = source_for(&sc, 0);
    io = rows_io(&src, 6, 0, 0);
    CHECK_STATUS(pc_meanshift_image_rows(sc.w, sc.h, sc.bands, sc.dtype, &io, &p, &r, NULL), PC_INVALID_ARGUMENT);
    CHECK(strstr(pc_last_error(), "invalid (nodata)") != NULL);
    source_free(&src);
    scene_free(&sc);
    scene sf = make_scene(seed ^ 0x5C8, 20, 30, 2, PC_F32, 6, 1);
    ((float *)sf.pixels)[(17 * 20 + 4) * 2 + 1] = INFINITY;
    sf.valid[17 * 20 + 4] = 1;
    view = scene_view(&sf);
    CHECK_STATUS(pc_meanshift_image(&view, sf.w, sf.h, sf.valid, &p, &r), PC_INVALID_ARGUMENT);
    char expected[256];
    snprintf(expected, sizeof expected, "%s", pc_last_error());
    src = source_for(&sf, 0);
    io = rows_io(&src, 4, 0, 0);
    CHECK_STATUS(pc_meanshift_image_rows(sf.w, sf.h, sf.bands, sf.dtype, &io, &p, &r, NULL), PC_INVALID_ARGUMENT);
    CHECK_MSG(strcmp(pc_last_error(), expected) == 0 && strstr(expected, "row 17, col 4"), "%s / %s", pc_last_error(),
              expected);
    source_free(&src);
    scene_free(&sf);
}

static void test_bad_arguments(void)
{
    scene sc = make_scene(7, 10, 12, 3, PC_U8, 4, 1);
    source src = source_for(&sc, 0);
    pc_image_rows io = rows_io(&src, 4, 0, 0);
    pc_meanshift_image_params p = params_of(2, 16, 5, PC_BACKEND_AUTO);
    pc_result *r = NULL;
    pc_image_rows_report rep;
    CHECK_STATUS(pc_meanshift_image_rows(10, 12, 3, PC_U8, &io, &p, NULL, &rep), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_meanshift_image_rows(10, 12, 3, PC_U8, &io, NULL, &r, &rep), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_meanshift_image_rows(10, 12, 3, PC_U8, NULL, &p, &r, &rep), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_meanshift_image_rows(0, 12, 3, PC_U8, &io, &p, &r, &rep), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_meanshift_image_rows(10, 0, 3, PC_U8, &io, &p, &r, &rep), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_meanshift_image_rows(10, 12, 0, PC_U8, &io, &p, &r, &rep), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_meanshift_image_rows(10, 12, 3, (pc_dtype)9, &io, &p, &r, &rep), PC_INVALID_ARGUMENT);
    CHECK_STATUS(pc_meanshift_image_rows(SIZE_MAX / 2, 4, 3, PC_U8, &io, &p, &r, &rep), PC_INVALID_ARGUMENT);
    pc_image_rows bad = io;
    bad.read = NULL;
    CHECK_STATUS(pc_meanshift_image_rows(10, 12, 3, PC_U8, &bad, &p, &r, &rep), PC_INVALID_ARGUMENT);
    bad = io;
    bad.write = NULL;
    CHECK_STATUS(pc_meanshift_image_rows(10, 12, 3, PC_U8, &bad, &p, &r, &rep), PC_INVALID_ARGUMENT);
    bad = io;
    bad.scratch_write = src_scratch_write; /* without scratch_read */
    CHECK_STATUS(pc_meanshift_image_rows(10, 12, 3, PC_U8, &bad, &p, &r, &rep), PC_INVALID_ARGUMENT);
    bad = io;
    bad.halo_rows = 1; /* less than hs 2 */
    CHECK_STATUS(pc_meanshift_image_rows(10, 12, 3, PC_U8, &bad, &p, &r, &rep), PC_INVALID_ARGUMENT);
    CHECK(strstr(pc_last_error(), "reach") != NULL);
    pc_meanshift_image_params q = p;
    q.spatial_bandwidth = 0;
    CHECK_STATUS(pc_meanshift_image_rows(10, 12, 3, PC_U8, &io, &q, &r, &rep), PC_INVALID_ARGUMENT);
    q = p;
    q.max_iter = 0;
    CHECK_STATUS(pc_meanshift_image_rows(10, 12, 3, PC_U8, &io, &q, &r, &rep), PC_INVALID_ARGUMENT);
    q = p;
    q.backend = PC_BACKEND_CUDA;
    CHECK_STATUS(pc_meanshift_image_rows(10, 12, 3, PC_U8, &io, &q, &r, &rep), PC_UNSUPPORTED);
    CHECK_STATUS(pc_meanshift_image_rows_plan(10, 12, 3, PC_U8, &io, &p, NULL), PC_INVALID_ARGUMENT);
    CHECK(r == NULL && src.reads == 0 && src.writes == 0);
    /* A halo larger than the image, strips of one row: fine. */
    bad = io;
    bad.halo_rows = 1000;
    bad.strip_rows = 1;
    CHECK_STATUS(pc_meanshift_image_rows(10, 12, 3, PC_U8, &bad, &p, &r, &rep), PC_OK);
    CHECK(rep.halo_rows == 12 && rep.strips == 12 && rep.climbs_resumed == 0);
    pc_result_free(r);
    source_free(&src);
    scene_free(&sc);
}

int main(void)
{
    uint64_t seed = test_seed("meanshift_image_rows");
    test_matches_in_memory(seed);
    test_memory_limit(seed);
    test_callback_errors(seed);
    test_scratch_progress_and_data(seed);
    test_bad_arguments();
    return check_report("meanshift_image_rows");
}
