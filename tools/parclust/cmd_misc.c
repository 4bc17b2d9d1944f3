/* parclust generate, score and info: synthetic data, comparing labelings, what this build can do. */
#include "cli.h"
#include "points_io.h"
#include "raster_io.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const generate_help =
    "usage: parclust generate KIND -o OUT [options]\n"
    "\n"
    "Writes deterministic synthetic points (same options, same file on every machine).\n"
    "KIND: blobs      Gaussian blobs, centres uniform in [-box, box]^dim\n"
    "      rings      concentric rings in the first two dimensions\n"
    "      agnolucci  seed 000's workload: 3D Gaussian blobs (dim 3)\n"
    "      bindi      seed 001's workload: 3 blobs, make_blobs style (dim 2 or 3)\n"
    "      grid       many small tight clusters on a lattice with spacing box\n"
    "      hca8       the HCA paper's 8 Gaussian classes in 3 groups, one overlapping (2D)\n"
    "      hca5       the HCA paper's 5 classes of different shape, size, density, 2 rings (2D)\n"
    "      scene      a synthetic multispectral image (see 'parclust generate scene --help')\n"
    "\n"
    "  -o, --output OUT     points file (.csv/.txt/.tsv or .npy)\n"
    "  --labels OUT         true cluster of each point\n"
    "  --n N                points (default 1000)\n"
    "  --dim D              dimensions (default 2; agnolucci 3)\n"
    "  --clusters K         clusters (default 3)\n"
    "  --spread S           standard deviation of a cluster (default 1)\n"
    "  --box B              extent of the centres (default 10)\n"
    "  --seed S             random seed (default 42)\n";

/* The largest |x| of the generator's standard normal: Box-Muller from 53-bit uniforms reaches
 * sqrt(-2 ln 2^-53) = 8.57. */
#define GENERATE_MAX_NORMAL 8.6

/* The points are float32: parameters that can put a value beyond FLT_MAX would write inf, which every
 * command then refuses as data. Refused here, before any work, with the largest value that fits. */
static int check_extent(const pc_generate_params *p)
{
    if (p->dataset == PC_DATASET_HCA8 || p->dataset == PC_DATASET_HCA5)
        return 0; /* fixed layouts in [0, 100]^2; box and spread are not used */
    double sites = 1; /* the farthest centre (blobs) or ring (rings) is at most box away from 0 */
    if (p->dataset == PC_DATASET_GRID) { /* the lattice of generate.c: side sites a dimension */
        double side = ceil(pow((double)p->clusters, 1.0 / (double)p->dim) - 1e-9);
        sites = side > 1 ? side - 1 : 0;
    }
    double centres = sites * p->box, noise = GENERATE_MAX_NORMAL * p->spread;
    if (centres + noise <= FLT_MAX)
        return 0;
    if (centres >= noise && sites > 1)
        cli_error("generate", "option --box: %g is too large: the lattice of %zu clusters spans %.0f x --box and "
                  "points would pass %.3g, the largest float32 value (--box at most %.3g with --spread %g)",
                  p->box, p->clusters, sites, FLT_MAX, (FLT_MAX - noise) / sites, p->spread);
    else if (centres >= noise)
        cli_error("generate", "option --box: %g is too large: points would pass %.3g, the largest float32 value "
                  "(--box at most %.3g with --spread %g)", p->box, FLT_MAX, FLT_MAX - noise, p->spread);
    else
        cli_error("generate", "option --spread: %g is too large: points lie up to %.1f spreads from their centre "
                  "and would pass %.3g, the largest float32 value (--spread at most %.3g with --box %g)", p->spread,
                  GENERATE_MAX_NORMAL, FLT_MAX, (FLT_MAX - centres) / GENERATE_MAX_NORMAL, p->box);
    return -1;
}

int cmd_generate(int argc, char **argv)
{
    /* The image generator has options of its own. Only the kind names it: a value such as
     * "-o scene" must not (it did). */
    if (argc > 1 && strcmp(argv[1], "scene") == 0)
        return cmd_generate_scene(argc, argv);
    pc_generate_params p;
    pc_generate_params_init(&p);
    const char *kind = NULL, *out = NULL, *labels_out = NULL;
    int dim_given = 0;
    cli_args a;
    cli_args_init(&a, "generate", argc, argv);
    long l;
    int on;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            if (cli_switch(&a, &on)) return CLI_USAGE;
            if (!on) continue;
            fputs(generate_help, stdout);
            return CLI_OK;
        } else if (cli_is(&a, "-o") || cli_is(&a, "--output")) {
            if (!(out = cli_value(&a)) || cli_check_data_output(a.cmd, "--output", out)) return CLI_USAGE;
        } else if (cli_is(&a, "--labels")) {
            if (!(labels_out = cli_value(&a)) || cli_check_data_output(a.cmd, "--labels", labels_out))
                return CLI_USAGE;
        } else if (cli_is(&a, "--n")) {
            if (cli_int(&a, 1, 2000000000, &l)) return CLI_USAGE;
            p.n = (size_t)l;
        } else if (cli_is(&a, "--dim")) {
            if (cli_int(&a, 1, 4096, &l)) return CLI_USAGE;
            p.dim = (size_t)l;
            dim_given = 1;
        } else if (cli_is(&a, "--clusters")) {
            if (cli_int(&a, 1, 2000000000, &l)) return CLI_USAGE;
            p.clusters = (size_t)l;
        } else if (cli_is(&a, "--spread") || cli_is(&a, "--box")) {
            double *x = cli_is(&a, "--box") ? &p.box : &p.spread;
            if (cli_double(&a, x)) return CLI_USAGE;
            if (!(*x >= 0) || isinf(*x)) {
                cli_error(a.cmd, "%s must be a finite number >= 0, got %g", a.name, *x);
                return CLI_USAGE;
            }
        } else if (cli_is(&a, "--seed")) {
            if (cli_int(&a, 0, 0x7fffffffL, &l)) return CLI_USAGE;
            p.seed = (uint64_t)l;
        } else if (a.name[0] != '-' && !kind) {
            kind = a.name;
            if (strcmp(kind, "scene") == 0) /* after options: the scene generator reads them all again */
                return cmd_generate_scene(argc, argv);
        } else {
            return cli_unknown(&a);
        }
    }
    if (!kind || !out) {
        cli_error("generate", "%s (see 'parclust generate --help')", kind ? "no output file (-o OUT)" : "no KIND given");
        return CLI_USAGE;
    }
    cli_outputs staged;
    if (cli_outputs_check_generated(&staged, "generate", out, labels_out))
        return CLI_FAILED;
    if (pc_dataset_parse(kind, &p.dataset) != PC_OK) {
        cli_error("generate", "%s", pc_last_error());
        return CLI_USAGE;
    }
    if (p.dataset == PC_DATASET_AGNOLUCCI && !dim_given)
        p.dim = 3;
    if (p.n > ((size_t)1 << 31) / p.dim) {
        cli_error("generate", "--n %zu x --dim %zu is %.4g values, more than the 2^31 one output holds", p.n, p.dim,
                  (double)p.n * (double)p.dim);
        return CLI_USAGE;
    }
    if (check_extent(&p))
        return CLI_USAGE;
    cli_outputs_expect(&staged, out, cli_matrix_min_bytes(out, p.n, p.dim));
    if (labels_out)
        cli_outputs_expect(&staged, labels_out, cli_labels_min_bytes(labels_out, p.n));
    if (cli_outputs_check_room(&staged))
        return CLI_FAILED;
    float *pts = malloc(p.n * p.dim * sizeof *pts);
    int32_t *labels = malloc(p.n * sizeof *labels);
    int rc = CLI_FAILED;
    char err[512];
    if (!pts || !labels) {
        cli_error("generate", "out of memory for %zu points", p.n);
        goto done;
    }
    if (pc_generate(&p, pts, labels) != PC_OK) {
        cli_error("generate", "%s", pc_last_error());
        rc = CLI_USAGE;
        goto done;
    }
    /* labels 0 .. classes - 1: the model sets have their own count, the others p.clusters */
    size_t classes = p.dataset == PC_DATASET_HCA8 ? 8 : p.dataset == PC_DATASET_HCA5 ? 5 : p.clusters;
    const char *path;
    if (!(path = cli_outputs_stage(&staged, out)) || pcli_write_matrix(path, pts, p.n, p.dim, err, sizeof err) ||
        (labels_out && (!(path = cli_outputs_stage(&staged, labels_out)) ||
                        pcli_write_labels(path, labels, p.n, classes, err, sizeof err)))) {
        if (path)
            cli_outputs_error(&staged, err);
        cli_outputs_discard(&staged);
        goto done;
    }
    if (cli_outputs_commit(&staged))
        goto done;
    printf("wrote %zu %s points in %zu dimensions (%zu clusters) to %s\n", p.n, kind, p.dim, classes, out);
    rc = CLI_OK;
done:
    free(pts);
    free(labels);
    return rc;
}

static const char *const score_help =
    "usage: parclust score --truth A --pred B [--header H]\n"
    "\n"
    "Compares two labelings of the same points (one integer per line, or .npy) and prints the\n"
    "adjusted Rand index, normalized mutual information and matched accuracy (each true class\n"
    "matched to at most one cluster, Hungarian method). Negative labels form one class of their own.\n"
    "\n"
    "  --header H   yes, no or auto (default): whether the first row of a text file is a header to\n"
    "               skip (auto: when it is not a number)\n";

int cmd_score(int argc, char **argv)
{
    const char *truth_path = NULL, *pred_path = NULL;
    pcli_header header = PCLI_HEADER_AUTO;
    cli_args a;
    cli_args_init(&a, "score", argc, argv);
    int on, bad;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            if (cli_switch(&a, &on)) return CLI_USAGE;
            if (!on) continue;
            fputs(score_help, stdout);
            return CLI_OK;
        } else if (cli_is(&a, "--truth")) {
            if (!(truth_path = cli_value(&a))) return CLI_USAGE;
        } else if (cli_is(&a, "--pred")) {
            if (!(pred_path = cli_value(&a))) return CLI_USAGE;
        } else if (cli_header_option(&a, &header, &bad)) {
            if (bad) return CLI_USAGE;
        } else {
            return cli_unknown(&a);
        }
    }
    if (!truth_path || !pred_path) {
        cli_error("score", "both --truth and --pred are needed");
        return CLI_USAGE;
    }
    int32_t *truth = NULL, *pred = NULL;
    size_t nt = 0, np = 0;
    char err[512];
    int rc = CLI_FAILED;
    pcli_read_info truth_read, pred_read;
    if (pcli_read_labels_ex(truth_path, header, &truth, &nt, &truth_read, err, sizeof err) ||
        pcli_read_labels_ex(pred_path, header, &pred, &np, &pred_read, err, sizeof err)) {
        cli_error("score", "%s", err);
        goto done;
    }
    if (nt != np) {
        cli_error("score", "%s has %zu labels%s but %s has %zu%s", truth_path, nt,
                  truth_read.header_line ? " after its header row" : "", pred_path, np,
                  pred_read.header_line ? " after its header row" : "");
        goto done;
    }
    double ari, nmi, acc;
    if (pc_adjusted_rand_index(truth, pred, nt, &ari) != PC_OK ||
        pc_normalized_mutual_info(truth, pred, nt, &nmi) != PC_OK ||
        pc_matched_accuracy(truth, pred, nt, &acc) != PC_OK) {
        cli_error("score", "%s", pc_last_error());
        goto done;
    }
    printf("points %zu\n", nt);
    cli_print_read(truth_path, &truth_read);
    cli_print_read(pred_path, &pred_read);
    printf("ARI %.6f\nNMI %.6f\naccuracy %.6f\n", ari, nmi, acc);
    rc = CLI_OK;
done:
    free(truth);
    free(pred);
    return rc;
}

/* The limits each command holds to, as the checks that refuse them state them (tests/cli_crash_limits.sh
 * runs each just beyond its limit and finds the same number in the refusal). */
static void print_limits(void)
{
    const char *why;
    double limit = pcli_memory_limit(&why);
    printf("limits (beyond them a run is refused before its work, naming the limit):\n");
    printf("  memory: %.0f bytes (%.1f MiB; %s%s) for what the points, labels and centres readers hold\n", limit,
           limit / 1048576, why, strcmp(why, "PARCLUST_MAX_MEMORY") == 0 ? "" : "; PARCLUST_MAX_MEMORY=SIZE sets it");
    printf("  text input: values within the memory limit; lines of at most %zu MiB; at most %d x the memory limit of "
           "text read; read %zu KiB at a time\n", PCLI_TEXT_MAX_LINE >> 20, PCLI_TEXT_MAX_RATIO, PCLI_TEXT_BLOCK >> 10);
    printf("  .npy input: 1 or 2 dimensions, C order, little-endian; the file exactly as long as its header says\n");
    printf("  hca: 1 to 8 dimensions; -m 2 to 65536 (m^d cells in 64-bit indices); up to %d points at once "
           "(segment streams more); up to %d non-empty cells\n", 2147483647, 2147483647);
    printf("  kmeans: -k 1 to 2000000000 and at most the points; up to 4096 dimensions\n");
    printf("  meanshift (segment): up to %d pixels in memory (larger images are streamed)\n", 2147483647);
    printf("  meanshift: up to %d points (CUDA: %d), any number of dimensions within the memory limit\n", 2147483647,
           2147483647 / 8);
    /* The GPUs' own limits: memory (a run that needs more fails with what it needed and what was free;
     * --backend auto then runs on the CPU, saying so) and the shared memory the CUDA k-means keeps its
     * centres and per-cluster sums in (beyond it --backend cuda is refused with the limit named). */
    for (int i = 0; i < pc_cuda_device_count(); i++) {
        size_t free_bytes = 0, total = 0, shared = 0;
        if (pc_cuda_device_memory(i, &free_bytes, &total, &shared) != PC_OK)
            continue;
        printf("  GPU %d: %zu of %zu MiB free now; kmeans --backend cuda: centres (k x d) and sums (k x (d + 1)) in "
               "float32 within the %zu KiB of shared memory a block may use\n", i, free_bytes >> 20, total >> 20,
               shared >> 10);
    }
    printf("  generate: --n 1 to 2000000000, --dim 1 to 4096, --n x --dim up to 2^31 values; blobs: --clusters x --dim "
           "up to 4096\n");
    printf("  segment: up to %d bands (HCA: 8); labels --ot Byte up to 255 clusters, UInt16 up to 65535, Int32 beyond\n",
           PCLI_MAX_BANDS);
}

int cmd_info(int argc, char **argv)
{
    cli_args a;
    cli_args_init(&a, "info", argc, argv);
    int on;
    while (cli_next(&a)) {
        if (!cli_is(&a, "--help") && !cli_is(&a, "-h"))
            return cli_unknown(&a);
        if (cli_switch(&a, &on))
            return CLI_USAGE;
        if (on) {
            puts("usage: parclust info\n\nPrints the version, the backends built, OpenMP threads, the CPU kernels' instruction\n"
                 "set (avx512, avx2 or baseline; PARCLUST_CPU_PATH asks for a lower one), CUDA devices and the\n"
                 "limits each command holds to (refused before any work, with the limit named).");
            return CLI_OK;
        }
    }
    printf("parclust %s\n", pc_version());
    printf("backends: seq%s%s\n", pc_backend_available(PC_BACKEND_OPENMP) ? " openmp" : "",
           pc_cuda_device_count() > 0 ? " cuda" : "");
    printf("OpenMP threads: %d\n", pc_openmp_max_threads());
    /* The instruction set of the CPU kernels that have several (PARCLUST_CPU_PATH can ask for a lower one). */
    printf("CPU path: %s\n", pc_cpu_path());
    int devices = pc_cuda_device_count();
    char desc[256];
    if (devices == 0) {
        pc_cuda_device_describe(0, desc, sizeof desc);
        printf("CUDA devices: 0 (%s)\n", desc);
    }
    for (int i = 0; i < devices; i++) {
        pc_cuda_device_describe(i, desc, sizeof desc);
        printf("CUDA device %d: %s\n", i, desc);
    }
    print_limits();
    return CLI_OK;
}
