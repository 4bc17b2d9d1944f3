/* parclust segment: an image in, a label raster out. The pixels of the chosen bands are held once
 * (pixel-interleaved, uint8/uint16 read by the library in place); the valid ones are moved to the
 * front of the same buffer and clustered; labels are expanded to the image row by row as they are
 * written, so no full-size copy of the pixels or of the labels is ever made. */
#include "cli.h"
#include "points_io.h"
#include "preview.h"
#include "progress.h"
#include "raster_io.h"
#include "segment_cli.h"
#include "segment_stream.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static const char *const help =
    "usage: parclust segment IMAGE -o LABELS.tif [options]\n"
    "\n"
    "Segments an image by clustering its pixels' band values. IMAGE: any raster GDAL reads (GeoTIFF,\n"
    "PNG, JPEG, ...; Byte, UInt16, Int16, Float32 bands, others read as float32), or a NumPy .npy array\n"
    "of shape (H, W) or (H, W, B) of uint8, uint16 or float32. A pixel equal to a chosen band's nodata\n"
    "value, or NaN, is nodata: it gets no cluster, and the labels' nodata value.\n"
    "\n"
    "  -o, --output OUT       labels: GeoTIFF (.tif: the input's georeferencing and projection) or .npy\n"
    "                         (shape (H, W), nodata -1; int8, int16 or int32, the first that holds\n"
    "                         the clusters); clusters 0..k-1 by size\n"
    "  --ot TYPE              GeoTIFF label type: Byte (nodata 255, up to 255 clusters), UInt16\n"
    "                         (nodata 65535, up to 65535) or Int32 (nodata -1); default: the first\n"
    "                         that holds the clusters\n"
    "  --co NAME=VALUE        GeoTIFF creation option, as gdal_translate -co (repeatable; defaults:\n"
    "                         COMPRESS=DEFLATE ZLEVEL=1, 512 x 512 tiles, NUM_THREADS=ALL_CPUS or\n"
    "                         --threads); lossy ones refused\n"
    "  --algorithm A          hca (default), heca, kmeans or meanshift\n"
    "  --bands LIST           bands to use, 1-based, e.g. 1,2,4 (default: all)\n"
    "  --nodata V             nodata value of every band (default: each band's own, if any); nan:\n"
    "                         only NaN is nodata\n"
    "  --preview OUT.png      picture: every cluster in its mean colour (bands 1-3 of the chosen ones\n"
    "                         as RGB, stretched; one band: grey), nodata black\n"
    "  --palette              paint the preview in distinct colours instead of mean colours\n"
    "  --preview-size N       longest side of the preview in pixels (default 2048; subsampled beyond)\n"
    "  --truth LABELS         true labels (raster or .npy of the same size): prints matched accuracy,\n"
    "                         ARI and NMI over the valid pixels\n"
    "  --backend B, --threads T\n"
    "  --max-memory SIZE      memory the run may hold, e.g. 512M, 2G, 8GiB (default: half of the physical\n"
    "                         memory, or the address-space limit if lower). Runs that do not fit are\n"
    "                         streamed: the image is read in windows of rows, again on every pass (HCA:\n"
    "                         the box, the histogram, the labels; k-means: a scan, one per iteration, the\n"
    "                         labels; mean shift: strips with halos, its region numbers in a scratch file\n"
    "                         beside the output), never held whole; --truth is refused then\n"
    "\n"
    "HCA (ALGORITHMS.md section 3): -m M (cells per dimension, default 32), -k/--clusters K or\n"
    "  --threshold T (default 0.5), --min-cluster-size N (default 0.1% of the pixels),\n"
    "  --noise                label the pixels of too-small clusters -1 (nodata) instead\n"
    "  --refine-borders       HCA-MS: pixels of border cells climb the cells' means by mean shift and\n"
    "                         take the cluster they reach; --refine-bandwidth H (default: one cell)\n"
    "HECA (ALGORITHMS.md section 3a; -k, --threshold, --min-cluster-size and --noise as HCA):\n"
    "  --m-list M1,M2,...     the members' m (default 5 members, m_max / 2 to m_max, m_max 32 for\n"
    "                         images), --shifts: every other member's grid shifted by half a cell\n"
    "  --box auto|scan|stats|type  streamed runs: where the grid's box comes from. scan: a first pass\n"
    "                         over the valid pixels (3 passes; the in-memory run's box); stats: the bands'\n"
    "                         exact GDAL statistics (2 passes; the same box when the bands' nodata pixels\n"
    "                         coincide); type: the pixel type's range, 0-255 or 0-65535 (2 passes; other\n"
    "                         cells, so labels that differ from the in-memory run's); auto (default):\n"
    "                         stats where every chosen band has them, else scan\n"
    "k-means: -k K (required), --init kmeans++|random|kmeans-par|FILE (FILE: K rows of the chosen bands'\n"
    "  values, the initial centres), --n-init N, --max-iter N, --tol T, --seed S. Streamed: one pass per\n"
    "  iteration, the same labels as in memory from the same --init FILE; kmeans++, random and kmeans-par\n"
    "  start from a sample of max(100 k, 65536) valid pixels (fewer where a quarter of --max-memory\n"
    "  holds fewer; in memory: all of them), so from other centres; --n-init 1\n"
    "mean shift in the joint spatial-range domain (ALGORITHMS.md section 4): --spatial-bandwidth HS\n"
    "  (pixels, default 8), --range-bandwidth HR (band units; default 16 for 8-bit bands, else 16/255\n"
    "  of the widest band's range), --min-region-size N (pixels,\n"
    "  default 20), --max-iter N (default 20), --eps E (default 0.01)\n"
    "\n"
    "Options without a value are switches: --palette=no (or =false, =0) is as if not given, =yes (=true,\n"
    "=1) as given.\n";

static const char *algorithm_name(int algorithm)
{
    return algorithm == ALG_HCA ? "hca" : algorithm == ALG_HECA ? "heca" : algorithm == ALG_KMEANS ? "kmeans"
                                                                                                 : "meanshift";
}

static int parse_bands(const char *v, seg_cli *c)
{
    const char *s = v;
    size_t n = 0;
    while (*s) {
        char *end;
        errno = 0;
        long b = strtol(s, &end, 10);
        if (end == s || errno || b < 1 || b > 65535 || (*end && *end != ',')) {
            cli_error("segment", "--bands '%s': expected band numbers from 1, separated by commas (1,2,4)", v);
            return -1;
        }
        if (n == PCLI_MAX_BANDS) {
            cli_error("segment", "--bands: at most %d bands", PCLI_MAX_BANDS);
            return -1;
        }
        c->bands[n++] = (int)b;
        s = *end ? end + 1 : end;
    }
    if (n == 0) {
        cli_error("segment", "--bands: no band given");
        return -1;
    }
    c->read.bands = c->bands;
    c->read.nbands = n;
    return 0;
}

static void only(seg_cli *c, const char *name, int mask)
{
    /* Each option once: there are fewer distinct algorithm options than slots. */
    for (int i = 0; i < c->only_count; i++)
        if (strcmp(c->only_for[i], name) == 0)
            return;
    if (c->only_count < (int)(sizeof c->only_for / sizeof c->only_for[0])) {
        c->only_for[c->only_count] = name;
        c->only_mask[c->only_count++] = mask;
    }
}

/* The options of the algorithms; 1 when the option was one of them (*bad set on a bad value). */
static int algorithm_option(cli_args *a, seg_cli *c, int *bad)
{
    long l;
    double d;
    *bad = 0;
    if (cli_is(a, "-m") || cli_is(a, "--m")) {
        only(c, "-m", ALG_HCA);
        *bad = cli_int(a, 2, 65536, &l);
        c->hca.m = (int)l;
    } else if (cli_is(a, "-k") || cli_is(a, "--clusters")) {
        only(c, "-k", ALG_HCA | ALG_HECA | ALG_KMEANS);
        *bad = cli_int(a, 1, 1000000000, &l);
        c->hca.clusters = c->km.k = (size_t)l;
    } else if (cli_is(a, "--threshold")) {
        only(c, "--threshold", ALG_HCA | ALG_HECA);
        if (!(*bad = cli_double(a, &c->hca.threshold)) && !(c->hca.threshold >= 0 && c->hca.threshold <= 1)) {
            cli_error(a->cmd, "--threshold must be in [0, 1], got %g", c->hca.threshold);
            *bad = 1;
        }
    } else if (cli_is(a, "--min-cluster-size")) {
        only(c, "--min-cluster-size", ALG_HCA | ALG_HECA);
        *bad = cli_int(a, 0, 2000000000, &l);
        c->hca.min_cluster_size = l;
    } else if (cli_is(a, "--noise")) {
        int on = 0;
        *bad = cli_switch(a, &on);
        if (on) /* --noise=no is as if not given: no HCA option then */
            only(c, "--noise", ALG_HCA | ALG_HECA);
        c->hca.noise = on;
    } else if (cli_is(a, "--refine-borders")) {
        int on = 0;
        *bad = cli_switch(a, &on);
        if (on)
            only(c, "--refine-borders", ALG_HCA);
        c->hca.refine_borders = on;
    } else if (cli_is(a, "--refine-bandwidth")) {
        only(c, "--refine-bandwidth", ALG_HCA);
        if (!(*bad = cli_double(a, &c->hca.refine_bandwidth)) &&
            (!(c->hca.refine_bandwidth >= 0) || isinf(c->hca.refine_bandwidth))) {
            cli_error(a->cmd, "--refine-bandwidth must be a finite number >= 0, got %g", c->hca.refine_bandwidth);
            *bad = 1;
        }
        c->hca.refine_borders = 1;
    } else if (cli_is(a, "--m-list")) {
        only(c, "--m-list", ALG_HECA);
        const char *v = cli_value(a);
        *bad = !v || cli_parse_m_list(a->cmd, v, &c->heca);
    } else if (cli_is(a, "--shifts")) {
        int on = 0;
        *bad = cli_switch(a, &on);
        if (on)
            only(c, "--shifts", ALG_HECA);
        c->heca.shifts = on;
    } else if (cli_is(a, "--init")) {
        only(c, "--init", ALG_KMEANS);
        const char *v = cli_value(a);
        if (!v) {
            *bad = 1;
        } else if (pc_kmeans_init_parse(v, &c->km.init) != PC_OK || c->km.init == PC_INIT_GIVEN) {
            /* A misspelt name would otherwise be reported as a file that cannot be opened. */
            if (access(v, F_OK) != 0) {
                cli_error(a->cmd, "--init '%s' is neither an initialisation (kmeans++, random, kmeans-par) nor an "
                          "existing file of centres", v);
                *bad = 1;
            }
            c->km.init = PC_INIT_GIVEN;
            c->init_file = v;
        }
    } else if (cli_is(a, "--n-init")) {
        only(c, "--n-init", ALG_KMEANS);
        *bad = cli_int(a, 1, 1000, &l);
        c->km.n_init = (int)l;
    } else if (cli_is(a, "--tol")) {
        only(c, "--tol", ALG_KMEANS);
        if (!(*bad = cli_double(a, &c->km.tol)) && !(c->km.tol >= 0)) {
            cli_error(a->cmd, "--tol must be >= 0, got %g", c->km.tol);
            *bad = 1;
        }
    } else if (cli_is(a, "--seed")) {
        only(c, "--seed", ALG_KMEANS);
        *bad = cli_int(a, 0, 0x7fffffffL, &l);
        c->km.seed = (uint64_t)l;
    } else if (cli_is(a, "--max-iter")) {
        only(c, "--max-iter", ALG_KMEANS | ALG_MEANSHIFT);
        *bad = cli_int(a, 1, 100000000, &l);
        c->km.max_iter = c->ms.max_iter = (int)l;
    } else if (cli_is(a, "--spatial-bandwidth") || cli_is(a, "--range-bandwidth") || cli_is(a, "--eps")) {
        const char *name = cli_is(a, "--eps") ? "--eps" : cli_is(a, "--range-bandwidth") ? "--range-bandwidth"
                                                                                            : "--spatial-bandwidth";
        only(c, name, ALG_MEANSHIFT);
        if (!(*bad = cli_double(a, &d)) && !(d > 0 && isfinite(d))) {
            cli_error(a->cmd, "%s must be > 0, got %g", name, d);
            *bad = 1;
        }
        *(name[2] == 'e' ? &c->ms.eps : name[2] == 'r' ? &c->ms.range_bandwidth : &c->ms.spatial_bandwidth) = d;
        c->range_given |= name[2] == 'r';
    } else if (cli_is(a, "--box")) {
        only(c, "--box", ALG_HCA);
        const char *v = cli_value(a);
        static const char *const names[] = {"auto", "scan", "stats", "type"};
        *bad = 1;
        for (int i = 0; v && i < 4; i++)
            if (strcmp(v, names[i]) == 0) {
                c->box = (seg_box)i;
                *bad = 0;
            }
        if (v && *bad)
            cli_error(a->cmd, "--box must be auto, scan, stats or type, got '%s'", v);
    } else if (cli_is(a, "--min-region-size")) {
        only(c, "--min-region-size", ALG_MEANSHIFT);
        *bad = cli_int(a, 0, 2000000000, &l);
        c->ms.min_region_size = l;
    } else {
        return 0;
    }
    return 1;
}

static int check_output(const char *cmd, const char *path)
{
    if (cli_has_extension(path, ".tif") || cli_has_extension(path, ".tiff") || cli_has_extension(path, ".npy"))
        return 0;
    cli_error(cmd, "--output '%s': write labels as .tif/.tiff (GeoTIFF) or .npy", path);
    return -1;
}

/* --ot and --co: GeoTIFF labels only; the options checked by GDAL before any work; a k-means -k that
 * the type cannot hold refused now rather than after the clustering. */
static int labels_format_options(seg_cli *c)
{
    pcli_label_format *f = &c->labels_format;
    f->options = c->co;
    f->threads = c->hca.threads;
    if (!f->type && !f->n_options)
        return 0;
    if (cli_has_extension(c->output, ".npy")) {
        cli_error("segment", "%s: .npy labels are int8, int16 or int32 by the cluster count (nodata -1); --ot and --co "
                  "are for GeoTIFF labels (.tif)",
                  c->output);
        return -1;
    }
    size_t most = pcli_label_type_max_clusters(f->type);
    if (f->type && c->algorithm == ALG_KMEANS && c->km.k > most) {
        cli_error("segment", "--ot %s holds at most %zu clusters (labels 0-%zu, nodata %.0f), -k is %zu",
                  pcli_label_type_name(f->type), most, most - 1, pcli_label_type_nodata(f->type), c->km.k);
        return -1;
    }
    char err[512], warning[512] = "";
    if (pcli_have_gdal() && pcli_label_format_check(f, warning, sizeof warning, err, sizeof err)) {
        cli_error("segment", "%s", err);
        return -1;
    }
    if (warning[0])
        fprintf(stderr, "parclust segment: warning: %s\n", warning);
    return 0;
}

void cli_segment_defaults(seg_cli *c)
{
    memset(c, 0, sizeof *c);
    c->algorithm = ALG_HCA;
    c->preview_size = 2048;
    pc_hca_params_init(&c->hca);
    pc_heca_params_init(&c->heca);
    pc_kmeans_params_init(&c->km);
    pc_meanshift_image_params_init(&c->ms);
}

int cli_segment_parse(int argc, char **argv, seg_cli *c)
{
    cli_args a;
    cli_args_init(&a, "segment", argc, argv);
    int bad = 0, on;
    long l;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            if (cli_switch(&a, &on)) return -1;
            if (!on) continue;
            fputs(help, stdout);
            return 1;
        } else if (cli_is(&a, "-o") || cli_is(&a, "--output")) {
            if (!(c->output = cli_value(&a)) || check_output(a.cmd, c->output)) return -1;
        } else if (cli_is(&a, "--algorithm")) {
            const char *v = cli_value(&a);
            if (!v) return -1;
            c->algorithm = strcmp(v, "hca") == 0 ? ALG_HCA : strcmp(v, "heca") == 0 ? ALG_HECA
                         : strcmp(v, "kmeans") == 0 ? ALG_KMEANS : strcmp(v, "meanshift") == 0 ? ALG_MEANSHIFT : 0;
            if (!c->algorithm) {
                cli_error(a.cmd, "--algorithm must be hca, heca, kmeans or meanshift, got '%s'", v);
                return -1;
            }
        } else if (cli_is(&a, "--bands")) {
            const char *v = cli_value(&a);
            if (!v || parse_bands(v, c)) return -1;
        } else if (cli_is(&a, "--nodata")) {
            /* NaN is the usual nodata of float rasters; NaN pixels are nodata already, so "nan" means
             * only they are (the file's own nodata value no longer counts). */
            const char *v = a.value ? a.value : a.i < a.argc ? a.argv[a.i] : NULL;
            char *end;
            double x = v ? strtod(v, &end) : 0;
            if (v && *v && !*end && isnan(x)) {
                cli_value(&a);
                c->read.nodata = NAN;
            } else if (cli_double(&a, &c->read.nodata)) {
                return -1;
            }
            c->read.has_nodata = 1;
        } else if (cli_is(&a, "--preview")) {
            if (!(c->preview = cli_value(&a))) return -1;
            if (!cli_has_extension(c->preview, ".png")) {
                cli_error(a.cmd, "--preview '%s': the preview is a .png", c->preview);
                return -1;
            }
        } else if (cli_is(&a, "--palette")) {
            if (cli_switch(&a, &c->palette)) return -1;
        } else if (cli_is(&a, "--preview-size")) {
            if (cli_int(&a, 1, 16384, &l)) return -1;
            c->preview_size = (size_t)l;
        } else if (cli_is(&a, "--max-memory")) {
            const char *v = cli_value(&a);
            if (!v) return -1;
            if (seg_parse_size(v, &c->max_memory)) {
                cli_error(a.cmd, "--max-memory: expected a size such as 512M, 2G or 8GiB (bytes, or K, M, G, T: powers "
                          "of 1024), got '%s'", v);
                return -1;
            }
        } else if (cli_is(&a, "--truth")) {
            if (!(c->truth = cli_value(&a))) return -1;
        } else if (cli_is(&a, "--ot")) {
            const char *v = cli_value(&a);
            if (!v) return -1;
            if (pcli_label_type_parse(v, &c->labels_format.type)) {
                cli_error(a.cmd, "--ot must be Byte, UInt16 or Int32, got '%s'", v);
                return -1;
            }
        } else if (cli_is(&a, "--co")) {
            const char *v = cli_value(&a);
            if (!v) return -1;
            if (c->labels_format.n_options == sizeof c->co / sizeof c->co[0]) {
                cli_error(a.cmd, "--co: at most %zu creation options", sizeof c->co / sizeof c->co[0]);
                return -1;
            }
            c->co[c->labels_format.n_options++] = v;
        } else if (cli_is(&a, "--backend") || cli_is(&a, "--threads")) {
            pc_backend backend = PC_BACKEND_AUTO;
            int threads = 0;
            cli_backend_option(&a, &backend, &threads, &bad);
            if (bad) return -1;
            if (cli_is(&a, "--backend"))
                c->hca.backend = c->km.backend = c->ms.backend = backend;
            else
                c->hca.threads = c->km.threads = c->ms.threads = threads;
        } else if (algorithm_option(&a, c, &bad)) {
            if (bad) return -1;
        } else if (a.name[0] != '-' && !c->input) {
            c->input = a.name;
        } else {
            cli_unknown(&a);
            return -1;
        }
    }
    if (!c->input || !c->output) {
        cli_error(a.cmd, "%s (see 'parclust segment --help')", c->input ? "no output file (-o LABELS.tif)" : "no image given");
        return -1;
    }
    for (int i = 0; i < c->only_count; i++)
        if (!(c->only_mask[i] & c->algorithm)) {
            cli_error(a.cmd, "option %s does not apply to --algorithm %s", c->only_for[i],
                      algorithm_name(c->algorithm));
            return -1;
        }
    if (c->algorithm == ALG_KMEANS && c->km.k == 0) {
        cli_error(a.cmd, "k-means needs the number of clusters: -k K");
        return -1;
    }
    return labels_format_options(c);
}

static const char *bytes_text(double b, char *buf, size_t size)
{
    if (b >= 1024.0 * 1024 * 1024)
        snprintf(buf, size, "%.1f GiB", b / (1024.0 * 1024 * 1024));
    else
        snprintf(buf, size, "%.0f MiB", b / (1024.0 * 1024));
    return buf;
}

/* The memory a run may hold: --max-memory, by default half of the physical memory; never more than the
 * physical memory, nor the address-space limit. *what names the bound for the messages. */
static double memory_limit(seg_cli *c, const char **what)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double phys = pages > 0 && page > 0 ? (double)pages * (double)page : INFINITY, limit = phys;
    const char *bound = "the physical memory";
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (double)rl.rlim_cur < limit) {
        limit = (double)rl.rlim_cur;
        bound = "the address-space limit (ulimit -v)";
    }
    char text[32];
    if (c->max_memory > 0 && c->max_memory <= limit) {
        limit = c->max_memory;
        snprintf(c->limit_what, sizeof c->limit_what, "--max-memory %s", bytes_text(limit, text, sizeof text));
    } else if (c->max_memory > 0) {
        snprintf(c->limit_what, sizeof c->limit_what, "the %s of %s (--max-memory asks for more)",
                 bytes_text(limit, text, sizeof text), bound);
    } else if (phys / 2 < limit) {
        limit = phys / 2;
        snprintf(c->limit_what, sizeof c->limit_what, "--max-memory's default %s (half of the physical memory)",
                 bytes_text(limit, text, sizeof text));
    } else {
        snprintf(c->limit_what, sizeof c->limit_what, "--max-memory's default %s (%s)",
                 bytes_text(limit, text, sizeof text), bound);
    }
    *what = c->limit_what;
    return limit;
}

/* What an in-memory run holds with `valid` valid pixels: README.md's peak. The pixels once, the
 * validity bits, GDAL's capped cache and a read block, per valid pixel its int32 label (and one of
 * --truth), k-means a float32 copy of the valid pixels and 28 bytes more a pixel, mean shift 14 + 8 x
 * bands bytes a pixel and a mask byte. *pixels: the pixels' part. */
static double memory_need(const seg_cli *c, const pcli_image *im, double valid, double *pixels)
{
    double npix = (double)im->width * (double)im->height, B = (double)im->bands;
    *pixels = npix * B * (double)pcli_pixtype_size(im->type);
    double other = npix / 8 + (im->is_npy ? 0 : 96.0 * 1024 * 1024) + (c->truth ? valid * 4 : 0);
    if (c->algorithm == ALG_HCA)
        other += valid * 4;
    else if (c->algorithm == ALG_HECA) /* labels and the members' cells */
        other += valid * 8;
    else if (c->algorithm == ALG_KMEANS) /* the copy; result, working and previous labels; 16 bytes of
                                            k-means++ distances or of the empty-cluster search */
        other += valid * (4 * B + 28);
    else /* its labels are per pixel, in the 14 bytes; scoring picks the valid ones into a copy */
        other += npix * (15 + 8 * B) + (c->truth ? valid * 4 : 0);
    return *pixels + other;
}

/* What the run needs and whether the algorithm can take it, from what is known: at the header
 * (counted 0) the size, bands and type, the valid pixels being the whole image when no pixel can be
 * nodata and else unknown; after the read (counted 1) the valid pixels. A run that does not fit in
 * the memory limit (--max-memory), or HCA and mean shift beyond 2^31 - 1 pixels, streams (c->stream
 * set, decided at the header on every pixel valid: an in-memory read that then did not fit would have
 * been read for nothing). After the read the limit is checked again on the valid pixels, which cannot
 * then need more: a refusal there is a safeguard, never left to swap or the out-of-memory killer. */
static int check_limits(seg_cli *c, const pcli_image *im, int counted, char *err, size_t errsize)
{
    size_t W = im->width, H = im->height, B = im->bands;
    double npix = (double)W * (double)H;
    double valid = counted ? (double)im->n_valid : im->may_have_nodata ? 0 : npix;
    /* HECA and HCA-MS need every pixel at once (prototypes' means, border pixels' climbs): no stream. */
    int streams = !counted && c->algorithm != ALG_HECA && !(c->algorithm == ALG_HCA && c->hca.refine_borders) &&
                  seg_stream_can(c->algorithm);
    int grid = c->algorithm == ALG_HCA || c->algorithm == ALG_HECA;
    if (grid && B > 8)
        return pcli_fail(err, errsize,
                         "%s: %s clusters at most 8 bands (dimensions), %zu chosen: pick up to 8 with --bands, or "
                         "use --algorithm kmeans or meanshift", c->input, c->algorithm == ALG_HCA ? "HCA" : "HECA", B);
    if (grid && valid > (double)INT32_MAX && !streams)
        return pcli_fail(err, errsize, "%s: %s handles up to %d points, the image has %.0f valid pixels%s", c->input,
                         c->algorithm == ALG_HCA ? "HCA" : "HECA", INT32_MAX, valid,
                         counted ? "" : " (every pixel: no nodata value)");
    if (c->algorithm == ALG_MEANSHIFT && npix > (double)INT32_MAX && !streams)
        return pcli_fail(err, errsize, "%s: image mean shift handles up to %d pixels, the image has %zu x %zu = %.0f",
                         c->input, INT32_MAX, W, H, npix);
    double most_valid = counted ? valid : npix;
    if (c->algorithm == ALG_KMEANS && (double)c->km.k > most_valid)
        return pcli_fail(err, errsize, "%s: -k %zu is more than the %.0f %s", c->input, c->km.k, most_valid,
                         counted ? "valid pixels" : "pixels of the image");
    const char *what;
    double limit = memory_limit(c, &what), pixels, most = memory_need(c, im, npix, &pixels);
    if (streams && (most > limit || (c->algorithm != ALG_KMEANS && npix > (double)INT32_MAX))) {
        c->stream = 1;
        c->stream_need = most;
        c->stream_pixels = pixels;
        return 0;
    }
    double need = memory_need(c, im, valid, &pixels);
    if (need > limit) {
        char a[32], b[32], d[32];
        const char *bound = counted || !im->may_have_nodata ? "about " : "at least ";
        return pcli_fail(err, errsize,
                         "%s: the run needs %s%s of memory (%s of pixels, %zu x %zu x %zu band%s of %s; %s of labels "
                         "and working arrays), more than %s", c->input, bound, bytes_text(need, a, sizeof a),
                         bytes_text(pixels, b, sizeof b), W, H, B, B == 1 ? "" : "s", pcli_pixtype_name(im->type),
                         bytes_text(need - pixels, d, sizeof d), what);
    }
    return 0;
}

/* Everything the header tells is checked before a pixel is read: the limits above, and --truth,
 * which must open and have the image's size (else the whole run would end at its last step). */
static int check_header(const pcli_image *im, void *ctx, char *err, size_t errsize)
{
    seg_cli *c = ctx;
    if (check_limits(c, im, 0, err, errsize))
        return -1;
    char terr[448];
    if (c->truth && pcli_labels_check(c->truth, im->width, im->height, terr, sizeof terr))
        return pcli_fail(err, errsize, "--truth %s", terr);
    if (c->stream) { /* the read stops here: seg_stream_run reads the image in windows */
        if (errsize)
            err[0] = '\0';
        return -1;
    }
    return 0;
}

/* Runs the chosen algorithm on the image; the labels are compact (valid pixels only) except for mean
 * shift, which sees the whole image with its validity mask. */
static pc_status cluster(seg_cli *c, pcli_image *im, pc_result **r, int *compact, double *t_compact)
{
    *compact = c->algorithm != ALG_MEANSHIFT;
    size_t n = *compact ? im->n_valid : im->width * im->height;
    double t0 = cli_seconds();
    if (*compact)
        pcli_image_compact(im);
    *t_compact = cli_seconds() - t0;
    pc_points pts = im->type == PCLI_PIX_U8    ? pc_points_u8(im->pixels, n, im->bands)
                    : im->type == PCLI_PIX_U16 ? pc_points_u16(im->pixels, n, im->bands)
                                               : pc_points_f32(im->pixels, n, im->bands);
    if (c->algorithm == ALG_HCA)
        return pc_hca(&pts, &c->hca, r);
    if (c->algorithm == ALG_HECA) {
        pc_heca_params hp = c->heca;
        hp.hca = c->hca; /* the cut, backend and threads as parsed */
        return pc_heca(&pts, &hp, r);
    }
    if (c->algorithm == ALG_KMEANS) { /* -k against the valid pixels: check_limits */
        float *init = NULL;
        if (c->init_file && !(init = seg_read_init(c->init_file, c->km.k, im->bands, im->offset)))
            return PC_CANCELLED; /* printed */
        c->km.initial_centers = init;
        pc_status st = pc_kmeans(&pts, &c->km, r);
        c->km.initial_centers = NULL;
        free(init);
        return st;
    }
    uint8_t *mask = malloc(n);
    if (!mask)
        return PC_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++)
        mask[i] = (uint8_t)pcli_image_is_valid(im, i);
    pc_status st = pc_meanshift_image(&pts, im->width, im->height, mask, &c->ms, r);
    free(mask);
    return st;
}

static int score(const seg_cli *c, const pcli_image *im, const int32_t *labels, int compact, double *t)
{
    double t0 = cli_seconds();
    int32_t *truth = NULL, *pred = NULL;
    char err[512];
    int rc = -1;
    if (pcli_labels_read_valid(c->truth, im, &truth, err, sizeof err)) {
        cli_error("segment", "--truth %s", err);
        return -1;
    }
    const int32_t *p = labels;
    if (!compact) {
        pred = malloc(im->n_valid * sizeof *pred);
        if (!pred) {
            cli_error("segment", "out of memory for the scores");
            goto done;
        }
        for (size_t i = 0, k = 0; i < im->width * im->height; i++)
            if (pcli_image_is_valid(im, i))
                pred[k++] = labels[i];
        p = pred;
    }
    double acc, ari, nmi;
    if (pc_matched_accuracy(truth, p, im->n_valid, &acc) || pc_adjusted_rand_index(truth, p, im->n_valid, &ari) ||
        pc_normalized_mutual_info(truth, p, im->n_valid, &nmi)) {
        cli_error("segment", "scores: %s", pc_last_error());
        goto done;
    }
    printf("accuracy %.6f  ARI %.6f  NMI %.6f  (matched against %s over the %zu valid pixels)\n", acc, ari, nmi,
           c->truth, im->n_valid);
    rc = 0;
done:
    free(truth);
    free(pred);
    *t = cli_seconds() - t0;
    return rc;
}

static int write_outputs(const seg_cli *c, cli_outputs *out, const pcli_image *im, const pc_result *r, int compact,
                         const float *centres)
{
    char err[512];
    const char *path = NULL;
    int failed = !(path = cli_outputs_stage(out, c->output)) ||
                 pcli_labels_write(path, im, pc_result_labels(r), compact, pc_result_cluster_count(r),
                                   &c->labels_format, err, sizeof err) ||
                 (c->preview && (!(path = cli_outputs_stage(out, c->preview)) ||
                                 pcli_preview_write(path, im, pc_result_labels(r), compact, centres,
                                                    pc_result_cluster_count(r), c->palette, c->preview_size, err,
                                                    sizeof err)));
    return cli_outputs_finish(out, failed, path, err);
}

void seg_print_clusters(const pcli_image *im, size_t k, const int64_t *sizes, const float *centres)
{
    size_t B = im->bands, shown = k < 20 ? k : 20;
    for (size_t i = 0; i < shown; i++) {
        printf("  cluster %zu: %lld pixels (%.2f%%), mean (", i, (long long)sizes[i],
               100.0 * (double)sizes[i] / (double)im->n_valid);
        for (size_t b = 0; b < B && b < 8; b++)
            printf("%s%.4g", b ? ", " : "", centres[i * B + b]);
        printf("%s)\n", B > 8 ? ", ..." : "");
    }
    if (k > shown)
        printf("  ... %zu more clusters\n", k - shown);
}

/* The run in windows of rows (segment_stream.c), with what the command line and the header gave. */
static int stream(seg_cli *c, cli_outputs *out)
{
    seg_stream_args a;
    memset(&a, 0, sizeof a);
    a.input = c->input;
    a.output = c->output;
    a.preview = c->preview;
    a.truth = c->truth;
    a.algorithm = c->algorithm;
    a.palette = c->palette;
    a.preview_size = c->preview_size;
    a.read = &c->read;
    a.hca = c->hca;
    a.km = c->km;
    a.ms = c->ms;
    a.range_given = c->range_given;
    a.labels_format = &c->labels_format;
    a.init_file = c->init_file;
    a.box = c->box;
    const char *what;
    a.limit = memory_limit(c, &what);
    a.limit_what = what;
    a.need = c->stream_need;
    a.pixels = c->stream_pixels;
    return seg_stream_run(&a, out);
}

int cmd_segment(int argc, char **argv)
{
    seg_cli c;
    cli_segment_defaults(&c);
    int rc = cli_segment_parse(argc, argv, &c);
    if (rc)
        return rc > 0 ? CLI_OK : CLI_USAGE;
    if (!pcli_have_gdal() && (!cli_has_extension(c.input, ".npy") || !cli_has_extension(c.output, ".npy"))) {
        cli_error("segment", "this parclust was built without raster support (GDAL): only .npy images and labels "
                             "can be segmented");
        return CLI_FAILED;
    }
    cli_outputs out;
    cli_outputs_init(&out, "segment");
    cli_outputs_input(&out, "the input image", c.input);
    cli_outputs_input(&out, "the --truth raster", c.truth);
    cli_outputs_input(&out, "the --init file", c.init_file);
    cli_outputs_add(&out, "--output", c.output);
    cli_outputs_add(&out, "--preview", c.preview);
    if (cli_outputs_check(&out))
        return CLI_FAILED;
    /* A backend that cannot run here is said before a 100-megapixel read, not after. */
    pc_backend asked = c.algorithm == ALG_HCA || c.algorithm == ALG_HECA ? c.hca.backend : c.algorithm == ALG_KMEANS ? c.km.backend : c.ms.backend;
    if (!pc_backend_available(asked)) {
        cli_error("segment", "the %s backend cannot run here (%s)", pc_backend_name(asked),
                  asked == PC_BACKEND_CUDA ? "no CUDA device, or built without CUDA" : "not built");
        return CLI_FAILED;
    }
    char err[512];
    pcli_image im;
    pc_result *r = NULL;
    float *centres = NULL;
    double t0 = cli_seconds();
    c.read.check_header = check_header;
    c.read.check_ctx = &c;
    c.read.threads = c.hca.threads;
    if (pcli_image_read(c.input, &c.read, &im, err, sizeof err)) {
        if (c.stream && !err[0]) /* the header said the run does not fit: windows of rows (segment_stream.c) */
            return stream(&c, &out);
        cli_error("segment", "%s", err);
        return CLI_FAILED;
    }
    /* Room for the outputs, before the clustering (.npy labels: a byte a pixel at least; GeoTIFF: deflated). */
    if (cli_has_extension(c.output, ".npy"))
        cli_outputs_expect(&out, c.output, cli_labels_min_bytes(c.output, im.width * im.height));
    if (c.preview)
        cli_outputs_expect(&out, c.preview, pcli_preview_min_bytes(im.width, im.height, c.preview_size));
    if (cli_outputs_check_room(&out)) {
        pcli_image_free(&im);
        return CLI_FAILED;
    }
    double t_read = cli_seconds() - t0, t_compact = 0, t_score = 0;
    if (im.beyond_f32)
        fprintf(stderr,
                "parclust segment: warning: %s: %zu value%s beyond float32's range (|v| > %.7g) cannot be held: "
                "their pixels are nodata\n", c.input, im.beyond_f32, im.beyond_f32 == 1 ? "" : "s", (double)FLT_MAX);
    if (im.rounded_f32)
        fprintf(stderr,
                "parclust segment: warning: %s: %zu value%s beyond 2^24 rounded to float32's 24-bit precision\n",
                c.input, im.rounded_f32, im.rounded_f32 == 1 ? "" : "s");
    /* With nodata possible, the valid pixels are known only now: the limits again, before any work. */
    if (check_limits(&c, &im, 1, err, sizeof err)) {
        cli_error("segment", "%s", err);
        pcli_image_free(&im);
        return CLI_FAILED;
    }
    size_t npix = im.width * im.height;
    printf("segment: %s, %zu x %zu pixels, %zu band%s of %s (held as %s%s), %zu valid (%.2f%%)\n", c.input,
           im.width, im.height, im.bands, im.bands == 1 ? "" : "s", im.source_type, pcli_pixtype_name(im.type),
           im.offset != 0 ? " + 32768" : "", im.n_valid, 100.0 * (double)im.n_valid / (double)npix);
    if (c.algorithm == ALG_MEANSHIFT && !c.range_given && im.type != PCLI_PIX_U8) {
        /* 16 suits 8-bit bands; other types get the same share of their range. */
        double span = 0;
        for (size_t b = 0; b < im.bands; b++)
            span = im.hi[b] - im.lo[b] > span ? im.hi[b] - im.lo[b] : span;
        if (span > 0)
            c.ms.range_bandwidth = 16.0 / 255.0 * span;
        printf("mean shift: range bandwidth %g (16/255 of the widest band's range; --range-bandwidth to choose)\n",
               c.ms.range_bandwidth);
    }
    rc = CLI_FAILED;
    int compact;
    t0 = cli_seconds();
    pc_status st = cluster(&c, &im, &r, &compact, &t_compact);
    double t_cluster = cli_seconds() - t0 - t_compact;
    if (st != PC_OK) {
        if (st != PC_CANCELLED)
            cli_error("segment", "%s: %s", c.input, pc_last_error()[0] ? pc_last_error() : pc_status_string(st));
        goto done;
    }
    /* The labels and the validity bits are all the outputs need: the pixels go before writing. */
    free(im.pixels);
    im.pixels = NULL;
    size_t k = pc_result_cluster_count(r), B = im.bands;
    centres = malloc((k ? k : 1) * B * sizeof *centres);
    if (!centres) {
        cli_error("segment", "out of memory");
        goto done;
    }
    for (size_t i = 0; i < k * B; i++) /* in the file's units (int16 is held shifted) */
        centres[i] = (float)(pc_result_centers(r)[i] - im.offset);
    printf("%s: %zu clusters (%s backend)\n", algorithm_name(c.algorithm), k, pc_backend_name(pc_result_backend(r)));
    if (c.algorithm == ALG_HCA && c.hca.refine_borders)
        printf("  refined borders: %lld border pixels, %lld changed cluster\n", (long long)pc_result_border_points(r),
               (long long)pc_result_changed_points(r));
    if (c.algorithm == ALG_HECA) {
        printf("  heca: %zu members (m", pc_result_member_count(r));
        for (size_t l = 0; l < pc_result_member_count(r); l++)
            printf("%s%d: %zu components", l ? ", " : " ", pc_result_member_m(r, l), pc_result_member_components(r, l));
        printf("), %zu prototypes in %zu groups\n", pc_result_cell_count(r), pc_result_component_count(r));
    }
    seg_print_clusters(&im, k, pc_result_sizes(r), centres);
    /* --ot too narrow for what the run found: said before anything is written. */
    pcli_label_type t = pcli_label_type_for(c.labels_format.type, k);
    if (!cli_has_extension(c.output, ".npy") && k > pcli_label_type_max_clusters(t)) {
        cli_error("segment", "--ot %s holds at most %zu clusters (labels 0-%zu, nodata %.0f), the run found %zu: "
                  "choose a wider type or leave --ot out", pcli_label_type_name(t), pcli_label_type_max_clusters(t),
                  pcli_label_type_max_clusters(t) - 1, pcli_label_type_nodata(t), k);
        goto done;
    }
    if (c.truth && score(&c, &im, pc_result_labels(r), compact, &t_score))
        goto done;
    t0 = cli_seconds();
    rc = write_outputs(&c, &out, &im, r, compact, centres);
    double t_write = cli_seconds() - t0;
    if (rc == CLI_OK) {
        printf("  time read     %9.4f s\n", t_read);
        if (compact)
            printf("  time compact  %9.4f s\n", t_compact);
        printf("  time cluster  %9.4f s\n", t_cluster);
        cli_print_stages(r);
        if (c.truth)
            printf("  time score    %9.4f s\n", t_score);
        printf("  time write    %9.4f s\n", t_write);
        printf("  time total    %9.4f s\n", t_read + t_compact + t_cluster + t_score + t_write);
        if (cli_has_extension(c.output, ".npy"))
            printf("wrote %s%s%s\n", c.output, c.preview ? " and " : "", c.preview ? c.preview : "");
        else
            printf("wrote %s (%s, nodata %.0f)%s%s\n", c.output, pcli_label_type_name(t), pcli_label_type_nodata(t),
                   c.preview ? " and " : "", c.preview ? c.preview : "");
    }
done:
    free(centres);
    pc_result_free(r);
    pcli_image_free(&im);
    return rc;
}
