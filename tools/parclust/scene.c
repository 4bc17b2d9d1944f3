/* parclust generate scene: a synthetic multispectral image with its true land-cover map. Regions are
 * the cells of a jittered-grid Voronoi diagram seen through a smooth domain warp (curved, irregular
 * borders), each cell one class; every class has its own reflectance spectrum; pixels get a smooth
 * brightness field and Gaussian noise; a nodata border surrounds the scene. Rows are generated
 * independently (a seed per row), so any block order gives the same image, and the image is written
 * block by block: a 100-megapixel scene never sits in memory. */
#include "cli.h"
#include "points_io.h"
#include "raster_io.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const help =
    "usage: parclust generate scene -o SCENE.tif [--labels TRUTH.tif] [options]\n"
    "\n"
    "Writes a synthetic multispectral scene: land-cover classes (water, forest, cropland, grassland,\n"
    "urban, bare soil, sand, wetland; random spectra beyond 8) in regions with smooth irregular borders,\n"
    "per-pixel noise and a nodata border, georeferenced in UTM zone 33N (EPSG:32633, 10 m pixels).\n"
    "Output by extension: GeoTIFF (.tif/.tiff, needs GDAL; with its bands' exact statistics, which let\n"
    "a streamed segment skip its pass for the box) or NumPy .npy (H, W, B); the true labels (int32, -1\n"
    "on the border) likewise.\n"
    "\n"
    "  -o, --output OUT     the scene\n"
    "  --labels OUT         the true class of every pixel\n"
    "  --width W            pixels (default 512)\n"
    "  --height H           pixels (default 512)\n"
    "  --bands B            1 to 16 (default 4: blue, green, red, near infrared; then SWIR1, SWIR2, ...)\n"
    "  --classes C          2 to 64 (default 6)\n"
    "  --dtype T            uint8 (default; reflectance x 500), uint16 (x 10000) or float32 (reflectance)\n"
    "  --noise S            per-pixel noise, standard deviation in reflectance (default 0.01)\n"
    "  --border P           nodata border width in pixels (default 2% of the shorter side, at least 1)\n"
    "  --region-size R      typical region diameter in pixels (default: about 3 regions per class)\n"
    "  --seed S             random seed (default 42)\n";

/* Reflectance of blue, green, red, NIR, SWIR1, SWIR2 (typical values of each cover type). */
static const double spectra[8][6] = {
    {0.07, 0.06, 0.04, 0.02, 0.01, 0.01}, /* water */
    {0.03, 0.06, 0.04, 0.35, 0.17, 0.08}, /* forest */
    {0.05, 0.10, 0.07, 0.50, 0.26, 0.13}, /* cropland */
    {0.06, 0.10, 0.09, 0.30, 0.30, 0.18}, /* grassland */
    {0.14, 0.15, 0.17, 0.21, 0.27, 0.24}, /* urban */
    {0.10, 0.14, 0.20, 0.27, 0.36, 0.30}, /* bare soil */
    {0.22, 0.27, 0.32, 0.38, 0.44, 0.40}, /* sand */
    {0.04, 0.07, 0.06, 0.18, 0.09, 0.05}, /* wetland */
};
#define MAX_SCENE_BANDS 16
#define MAX_SCENE_CLASSES 64

typedef struct {
    size_t width, height, bands, classes, border;
    double region, noise;
    int dtype; /* 0 uint8, 1 uint16, 2 float32 (pcli_raster_spec's codes) */
    uint64_t seed;
    double spectrum[MAX_SCENE_CLASSES][MAX_SCENE_BANDS];
    size_t gx, gy;     /* Voronoi seed grid, one cell of margin on each side */
    double *sx, *sy;   /* seed positions */
    int32_t *cls;      /* class of each seed */
} scene;

static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static double unit(uint64_t h) { return (double)(h >> 11) * (1.0 / 9007199254740992.0); } /* [0, 1) */

static double lattice(const scene *s, int64_t i, int64_t j, int channel)
{
    return unit(mix64(s->seed ^ mix64((uint64_t)i * 0x1F1F1F1Full ^ mix64((uint64_t)j + (uint64_t)channel * 77)))) * 2 - 1;
}

/* The four lattice values around one cell, kept while consecutive pixels fall in that cell: the
 * lattice is coarse (a fraction of a region), so along a row it changes every few hundred pixels, and
 * hashing its corners was most of the generator's time. */
typedef struct {
    int64_t i, j;
    int valid;
    double a, b, c, d;
} noise_cell;

/* Smooth value noise in [-1, 1]: hashed lattice values, smoothstep-interpolated. */
static double value_noise(const scene *s, double x, double y, int channel, noise_cell *m)
{
    double fx = floor(x), fy = floor(y), tx = x - fx, ty = y - fy;
    int64_t i = (int64_t)fx, j = (int64_t)fy;
    tx = tx * tx * (3 - 2 * tx);
    ty = ty * ty * (3 - 2 * ty);
    if (!m->valid || m->i != i || m->j != j) {
        m->a = lattice(s, i, j, channel), m->b = lattice(s, i + 1, j, channel);
        m->c = lattice(s, i, j + 1, channel), m->d = lattice(s, i + 1, j + 1, channel);
        m->i = i, m->j = j, m->valid = 1;
    }
    return (m->a + (m->b - m->a) * tx) * (1 - ty) + (m->c + (m->d - m->c) * tx) * ty;
}

/* The noise cells of one row's five noise fields (two octaves of each warp axis, the brightness). */
typedef struct {
    noise_cell warp[4], bright;
} row_noise;

static double fbm(const scene *s, double x, double y, int channel, noise_cell *m)
{
    return 0.7 * value_noise(s, x, y, channel, &m[0]) +
           0.3 * value_noise(s, 2.1 * x + 17.3, 2.1 * y + 5.1, channel + 1, &m[1]);
}

static int scene_init(scene *s)
{
    uint64_t state = s->seed;
    for (size_t c = 0; c < s->classes; c++)
        for (size_t b = 0; b < s->bands; b++)
            s->spectrum[c][b] = c < 8 && b < 6 ? spectra[c][b] : 0.02 + 0.46 * unit(mix64(state++ ^ (c << 8 | b)));
    s->gx = (size_t)ceil((double)s->width / s->region) + 3;
    s->gy = (size_t)ceil((double)s->height / s->region) + 3;
    size_t cells = s->gx * s->gy;
    s->sx = malloc(cells * sizeof *s->sx);
    s->sy = malloc(cells * sizeof *s->sy);
    s->cls = malloc(cells * sizeof *s->cls);
    size_t *perm = malloc(cells * sizeof *perm);
    if (!s->sx || !s->sy || !s->cls || !perm) {
        free(perm);
        return -1;
    }
    for (size_t j = 0; j < s->gy; j++)
        for (size_t i = 0; i < s->gx; i++) {
            size_t c = j * s->gx + i;
            s->sx[c] = ((double)i - 1 + 0.15 + 0.7 * unit(mix64(s->seed * 31 + 2 * c))) * s->region;
            s->sy[c] = ((double)j - 1 + 0.15 + 0.7 * unit(mix64(s->seed * 31 + 2 * c + 1))) * s->region;
        }
    /* Cells in a random order take the classes in turn, so every class gets its share of regions;
     * margin cells come last (they are mostly outside the scene). */
    size_t inner = 0;
    for (size_t j = 1; j + 2 < s->gy; j++)
        for (size_t i = 1; i + 2 < s->gx; i++)
            perm[inner++] = j * s->gx + i;
    size_t all = inner;
    for (size_t j = 0; j < s->gy; j++)
        for (size_t i = 0; i < s->gx; i++)
            if (!(j >= 1 && j + 2 < s->gy && i >= 1 && i + 2 < s->gx))
                perm[all++] = j * s->gx + i;
    for (size_t i = inner; i-- > 1;) {
        size_t r = (size_t)(unit(mix64(s->seed ^ (0xABCDull + i))) * (double)(i + 1));
        size_t t = perm[i];
        perm[i] = perm[r];
        perm[r] = t;
    }
    for (size_t q = 0; q < cells; q++)
        s->cls[perm[q]] = (int32_t)(q % s->classes);
    free(perm);
    return 0;
}

static void scene_free(scene *s)
{
    free(s->sx);
    free(s->sy);
    free(s->cls);
}

/* The class at pixel (x, y): the nearest seed to the warped position. */
static int32_t class_at(const scene *s, double x, double y, row_noise *m)
{
    double L = 0.7 * s->region, A = 0.35 * s->region;
    double wx = x + A * fbm(s, x / L, y / L, 0, &m->warp[0]), wy = y + A * fbm(s, x / L + 91.7, y / L + 33.1, 4, &m->warp[2]);
    long ci = (long)floor(wx / s->region) + 1, cj = (long)floor(wy / s->region) + 1;
    double best = INFINITY;
    int32_t cls = 0;
    for (long j = cj - 1; j <= cj + 1; j++)
        for (long i = ci - 1; i <= ci + 1; i++) {
            if (i < 0 || j < 0 || (size_t)i >= s->gx || (size_t)j >= s->gy)
                continue;
            size_t c = (size_t)j * s->gx + (size_t)i;
            double dx = wx - s->sx[c], dy = wy - s->sy[c], d = dx * dx + dy * dy;
            if (d < best)
                best = d, cls = s->cls[c];
        }
    return cls;
}

/* The valid values' range and sums of each band, for the file's statistics. */
typedef struct {
    double lo[MAX_SCENE_BANDS], hi[MAX_SCENE_BANDS], sum[MAX_SCENE_BANDS], sq[MAX_SCENE_BANDS], count;
} band_stats;

static void stats_clear(band_stats *st)
{
    memset(st, 0, sizeof *st);
    for (size_t b = 0; b < MAX_SCENE_BANDS; b++) {
        st->lo[b] = INFINITY;
        st->hi[b] = -INFINITY;
    }
}

static void stats_add(band_stats *into, const band_stats *from, size_t bands)
{
    for (size_t b = 0; b < bands; b++) {
        into->lo[b] = from->lo[b] < into->lo[b] ? from->lo[b] : into->lo[b];
        into->hi[b] = from->hi[b] > into->hi[b] ? from->hi[b] : into->hi[b];
        into->sum[b] += from->sum[b];
        into->sq[b] += from->sq[b];
    }
    into->count += from->count;
}

/* One row: values (width x bands, pixel-interleaved, of the scene's type), true labels, and the row's
 * band statistics (the values as stored). */
static void scene_row(const scene *s, size_t y, void *values, int32_t *truth, band_stats *st)
{
    uint64_t rng = mix64(s->seed * 0x5851F42D4C957F2Dull + y);
    static const double scale[3] = {500, 10000, 1};
    static const double top[3] = {255, 65535, 0};
    size_t B = s->bands;
    row_noise m;
    memset(&m, 0, sizeof m);
    for (size_t x = 0; x < s->width; x++) {
        int edge = x < s->border || y < s->border || x + s->border >= s->width || y + s->border >= s->height;
        int32_t c = edge ? -1 : class_at(s, (double)x, (double)y, &m);
        truth[x] = c;
        st->count += !edge;
        double bright = 1 + 0.03 * value_noise(s, (double)x / (0.5 * s->region), (double)y / (0.5 * s->region), 9, &m.bright);
        for (size_t b = 0; b < B; b += 2) {
            /* Box-Muller: two normals per pair of uniforms. */
            double u1 = unit(rng = mix64(rng)), u2 = unit(rng = mix64(rng));
            double r = sqrt(-2 * log(1 - u1)), z[2] = {r * cos(6.283185307179586 * u2), r * sin(6.283185307179586 * u2)};
            for (size_t q = 0; q < 2 && b + q < B; q++) {
                size_t i = x * B + b + q;
                double v = edge ? 0 : (s->spectrum[c][b + q] * bright + s->noise * z[q]) * scale[s->dtype];
                if (s->dtype == 2) {
                    ((float *)values)[i] = edge ? -9999.0f : (float)v;
                    v = (double)(float)v;
                } else {
                    /* 0 is the integer types' nodata: data are kept at 1 and above. */
                    v = edge ? 0 : v < 1 ? 1 : v > top[s->dtype] ? top[s->dtype] : floor(v + 0.5);
                }
                if (!edge) {
                    size_t k = b + q;
                    st->lo[k] = v < st->lo[k] ? v : st->lo[k];
                    st->hi[k] = v > st->hi[k] ? v : st->hi[k];
                    st->sum[k] += v;
                    st->sq[k] += v * v;
                }
                if (s->dtype == 2)
                    continue;
                if (s->dtype == 0)
                    ((uint8_t *)values)[i] = (uint8_t)v;
                else
                    ((uint16_t *)values)[i] = (uint16_t)v;
            }
        }
    }
}

static int check_output(const char *option, const char *path)
{
    if (cli_has_extension(path, ".tif") || cli_has_extension(path, ".tiff") || cli_has_extension(path, ".npy"))
        return 0;
    cli_error("generate", "%s '%s': write the scene as .tif/.tiff (GeoTIFF) or .npy", option, path);
    return -1;
}

static int parse(int argc, char **argv, scene *s, const char **out, const char **labels)
{
    cli_args a;
    cli_args_init(&a, "generate", argc, argv);
    long l;
    int kind_seen = 0, on;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            if (cli_switch(&a, &on)) return -1;
            if (!on) continue;
            fputs(help, stdout);
            return 1;
        } else if (cli_is(&a, "-o") || cli_is(&a, "--output")) {
            if (!(*out = cli_value(&a)) || check_output("--output", *out)) return -1;
        } else if (cli_is(&a, "--labels")) {
            if (!(*labels = cli_value(&a)) || check_output("--labels", *labels)) return -1;
        } else if (cli_is(&a, "--width") || cli_is(&a, "--height")) {
            int w = cli_is(&a, "--width");
            if (cli_int(&a, 1, 1000000, &l)) return -1;
            *(w ? &s->width : &s->height) = (size_t)l;
        } else if (cli_is(&a, "--bands")) {
            if (cli_int(&a, 1, MAX_SCENE_BANDS, &l)) return -1;
            s->bands = (size_t)l;
        } else if (cli_is(&a, "--classes")) {
            if (cli_int(&a, 2, MAX_SCENE_CLASSES, &l)) return -1;
            s->classes = (size_t)l;
        } else if (cli_is(&a, "--border")) {
            if (cli_int(&a, 0, 1000000, &l)) return -1;
            s->border = (size_t)l;
        } else if (cli_is(&a, "--region-size")) {
            if (cli_double(&a, &s->region)) return -1;
            if (!(s->region >= 4 && s->region <= 1e6)) {
                cli_error(a.cmd, "--region-size must be between 4 and 1e6 pixels, got %g", s->region);
                return -1;
            }
        } else if (cli_is(&a, "--noise")) {
            if (cli_double(&a, &s->noise)) return -1;
            if (!(s->noise >= 0 && s->noise <= 1)) {
                cli_error(a.cmd, "--noise must be in [0, 1] (reflectance), got %g", s->noise);
                return -1;
            }
        } else if (cli_is(&a, "--dtype")) {
            const char *v = cli_value(&a);
            if (!v) return -1;
            s->dtype = strcmp(v, "uint8") == 0 ? 0 : strcmp(v, "uint16") == 0 ? 1 : strcmp(v, "float32") == 0 ? 2 : -1;
            if (s->dtype < 0) {
                cli_error(a.cmd, "--dtype must be uint8, uint16 or float32, got '%s'", v);
                return -1;
            }
        } else if (cli_is(&a, "--seed")) {
            if (cli_int(&a, 0, 0x7fffffffL, &l)) return -1;
            s->seed = (uint64_t)l;
        } else if (!kind_seen && strcmp(a.name, "scene") == 0) {
            kind_seen = 1;
        } else {
            cli_unknown(&a);
            return -1;
        }
    }
    if (!*out) {
        cli_error(a.cmd, "no output file (-o SCENE.tif; see 'parclust generate scene --help')");
        return -1;
    }
    return 0;
}

int cmd_generate_scene(int argc, char **argv)
{
    scene s = {.width = 512, .height = 512, .bands = 4, .classes = 6, .border = (size_t)-1, .region = 0,
               .noise = 0.01, .dtype = 0, .seed = 42};
    const char *out = NULL, *labels_out = NULL;
    size_t border_default;
    int rc = parse(argc, argv, &s, &out, &labels_out);
    if (rc)
        return rc > 0 ? CLI_OK : CLI_USAGE;
    border_default = (size_t)(0.02 * (double)(s.width < s.height ? s.width : s.height));
    if (s.border == (size_t)-1)
        s.border = border_default < 1 ? 1 : border_default;
    if (s.border * 2 >= s.width || s.border * 2 >= s.height) {
        cli_error("generate", "a border of %zu pixels leaves nothing of a %zu x %zu scene", s.border, s.width, s.height);
        return CLI_USAGE;
    }
    if (s.region == 0) {
        s.region = sqrt((double)s.width * (double)s.height / (3.0 * (double)s.classes));
        s.region = s.region < 8 ? 8 : s.region;
    }
    if ((!cli_has_extension(out, ".npy") || (labels_out && !cli_has_extension(labels_out, ".npy"))) &&
        !pcli_have_gdal()) {
        cli_error("generate", "%s: this parclust was built without raster support (GDAL); write .npy instead",
                  cli_has_extension(out, ".npy") ? labels_out : out);
        return CLI_FAILED;
    }
    cli_outputs staged;
    if (cli_outputs_check_generated(&staged, "generate", out, labels_out))
        return CLI_FAILED;
    /* .npy and the scene's GeoTIFF are uncompressed (the labels' GeoTIFF is deflated: not known). */
    size_t es = s.dtype == 0 ? 1 : s.dtype == 1 ? 2 : 4, step = 64;
    double pixels = (double)s.width * (double)s.height;
    cli_outputs_expect(&staged, out, pixels * (double)s.bands * (double)es);
    if (labels_out && cli_has_extension(labels_out, ".npy"))
        cli_outputs_expect(&staged, labels_out, 64 + 4 * pixels);
    if (cli_outputs_check_room(&staged))
        return CLI_FAILED;
    rc = CLI_FAILED;
    char err[512];
    const double gt[6] = {500000, 10, 0, 4650000, 0, -10}; /* UTM 33N, 10 m pixels, north up */
    pcli_raster_spec img = {s.width, s.height, s.bands, s.dtype, 1, s.dtype == 2 ? -9999 : 0, gt, 32633, NULL, NULL};
    pcli_raster_spec lab = {s.width, s.height, 1, 3, 1, -1, gt, 32633, NULL, NULL};
    pcli_raster_writer *wi = NULL, *wl = NULL;
    const char *path = NULL;
    void *block = malloc(step * s.width * s.bands * es);
    int32_t *truth = malloc(step * s.width * sizeof *truth);
    band_stats all, *rows_st = malloc(step * sizeof *rows_st);
    stats_clear(&all);
    if (!block || !truth || !rows_st || scene_init(&s)) {
        cli_error("generate", "out of memory for a %zu-pixel-wide scene", s.width);
        goto done;
    }
    if (!(path = cli_outputs_stage(&staged, out)) || pcli_raster_create(path, &img, &wi, err, sizeof err) ||
        (labels_out && (!(path = cli_outputs_stage(&staged, labels_out)) ||
                        pcli_raster_create(path, &lab, &wl, err, sizeof err))))
        goto fail;
    for (size_t y = 0; y < s.height; y += step) {
        size_t rows = s.height - y < step ? s.height - y : step;
#pragma omp parallel for schedule(dynamic)
        for (long r = 0; r < (long)rows; r++) {
            stats_clear(&rows_st[r]);
            scene_row(&s, y + (size_t)r, (char *)block + (size_t)r * s.width * s.bands * es, truth + (size_t)r * s.width,
                      &rows_st[r]);
        }
        for (size_t r = 0; r < rows; r++) /* in row order: the same sums whatever the threads */
            stats_add(&all, &rows_st[r], s.bands);
        path = out;
        if (pcli_raster_write_rows(wi, y, rows, block, err, sizeof err))
            goto fail;
        path = labels_out;
        if (wl && pcli_raster_write_rows(wl, y, rows, truth, err, sizeof err))
            goto fail;
    }
    for (size_t b = 0; b < s.bands; b++) {
        double mean = all.sum[b] / all.count, var = all.sq[b] / all.count - mean * mean;
        const double stats[4] = {all.lo[b], all.hi[b], mean, sqrt(var > 0 ? var : 0)};
        pcli_raster_set_statistics(wi, b, stats);
    }
    pcli_raster_writer *w1 = wi, *w2 = wl;
    wi = wl = NULL;
    path = out;
    int bad = pcli_raster_close(w1, err, sizeof err);
    if (!bad && w2 && (path = labels_out, pcli_raster_close(w2, err, sizeof err)))
        bad = 1;
    else if (bad)
        pcli_raster_abort(w2);
    if (bad)
        goto fail;
    if (cli_outputs_commit(&staged))
        goto done;
    static const char *const names[3] = {"uint8", "uint16", "float32"};
    printf("wrote a %zu x %zu scene, %zu bands of %s, %zu classes, regions ~%.0f px, border %zu px, to %s\n", s.width,
           s.height, s.bands, names[s.dtype], s.classes, s.region, s.border, out);
    rc = CLI_OK;
    goto done;
fail:
    if (path)
        cli_outputs_error(&staged, err);
    pcli_raster_abort(wi);
    pcli_raster_abort(wl);
    cli_outputs_discard(&staged);
done:
    scene_free(&s);
    free(block);
    free(truth);
    free(rows_st);
    return rc;
}
