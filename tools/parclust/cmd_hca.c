/* parclust hca: the grid-based hierarchical clustering of seed 003 on points or pixel rows. */
#include "cli.h"
#include "progress.h"
#include "plot.h"
#include "points_io.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const help =
    "usage: parclust hca INPUT [options]\n"
    "\n"
    "Clusters the points of INPUT (.csv/.tsv/.txt or .npy, 1 to 8 values per row) by HCA: a grid of\n"
    "m cells per dimension, cells linked to their densest neighbour, single linkage between the\n"
    "components (ALGORITHMS.md section 3).\n"
    "\n"
    "  -m M                   cells per dimension, or auto (default): the largest m up to 32 that\n"
    "                         leaves 4 points per cell of the box (n / m^d >= 4, at least 4)\n"
    "  --clusters K           cut the dendrogram to K clusters\n"
    "  --threshold T          or cut at height T in [0, 1] (default 0.5 when --clusters is not given)\n"
    "  --min-cluster-size N   smaller clusters do not count; their points join the nearest kept\n"
    "                         cluster (default 0.1% of the points, at least 2; 0 = off)\n"
    "  --noise                label the points of too-small clusters -1 instead\n"
    "  --refine-borders       HCA-MS: points of border cells climb the cells' means by mean shift and\n"
    "                         take the cluster they reach (ALGORITHMS.md section 3b)\n"
    "  --refine-bandwidth H   its bandwidth (default: one cell width, the largest side)\n"
    "  --backend B            auto (default: the GPU from 2^20 points), seq, openmp or cuda\n"
    "  --threads T            OpenMP threads (default: all cores)\n"
    "  --labels OUT           one label per point (.npy: int8, int16 or int32, the first that holds them)\n"
    "  --centers OUT          the cluster centres (mean of their points), one row each (.npy: float32)\n"
    "  --dendrogram OUT       SciPy linkage matrix over the components: left, right, height, leaves\n"
    "                         (.npy: float64, as scipy.cluster.hierarchy takes it)\n"
    "  --components OUT       per component: its number, representative cell, density, points\n"
    "                         (text with a header row; .npy: int64, the same four columns)\n"
    "  --plot OUT             the points coloured by cluster (.png or .svg)\n"
    "  --verbose              per-stage timings\n"
    "  --header H             yes, no or auto (default): whether the first row of a text INPUT is a\n"
    "                         header to skip (auto: when none of its fields is a number)\n"
    "\n"
    "The data outputs are chosen by extension: text (.csv or .txt: comma-separated; .tsv: tabs) or\n"
    "NumPy .npy.\n"
    "\n"
    "Options without a value are switches: --noise=no (or =false, =0) is as if not given, =yes (=true,\n"
    "=1) as given.\n";

int cli_hca_parse(int argc, char **argv, hca_cli *c, pc_hca_params *p)
{
    cli_args a;
    cli_args_init(&a, "hca", argc, argv);
    long l;
    int bad = 0, on;
    int threshold_given = 0;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            if (cli_switch(&a, &on)) return -1;
            if (on) {
                fputs(help, stdout);
                return -2;
            }
        } else if (cli_is(&a, "-m") || cli_is(&a, "--m")) {
            const char *v = a.value ? a.value : a.i < a.argc ? a.argv[a.i] : NULL;
            if (v && strcmp(v, "auto") == 0) {
                if (!a.value)
                    a.i++;
                p->m = 0;
            } else {
                if (cli_int(&a, 2, 65536, &l)) return -1;
                p->m = (int)l;
            }
        } else if (cli_is(&a, "--refine-borders")) {
            if (cli_switch(&a, &on)) return -1;
            p->refine_borders = on;
        } else if (cli_is(&a, "--refine-bandwidth")) {
            if (cli_double(&a, &p->refine_bandwidth)) return -1;
            if (!(p->refine_bandwidth >= 0) || isinf(p->refine_bandwidth)) {
                cli_error(a.cmd, "--refine-bandwidth must be a finite number >= 0, got %g", p->refine_bandwidth);
                return -1;
            }
            p->refine_borders = 1;
        } else if (cli_is(&a, "--clusters") || cli_is(&a, "-k")) {
            if (cli_int(&a, 1, 1000000000, &l)) return -1;
            p->clusters = (size_t)l;
        } else if (cli_is(&a, "--threshold")) {
            if (cli_double(&a, &p->threshold)) return -1;
            if (!(p->threshold >= 0 && p->threshold <= 1)) {
                cli_error(a.cmd, "--threshold must be in [0, 1], got %g", p->threshold);
                return -1;
            }
            threshold_given = 1;
        } else if (cli_is(&a, "--min-cluster-size")) {
            if (cli_int(&a, 0, 2000000000, &l)) return -1;
            p->min_cluster_size = l;
        } else if (cli_is(&a, "--noise")) {
            if (cli_switch(&a, &on)) return -1;
            p->noise = on;
        } else if (cli_backend_option(&a, &p->backend, &p->threads, &bad)) {
            if (bad) return -1;
        } else if (cli_common_option(&a, &c->out, &c->verbose, &c->input, &bad) ||
                   cli_header_option(&a, &c->header, &bad)) {
            if (bad) return -1;
        } else if (cli_is(&a, "--dendrogram")) {
            if (!(c->dendrogram = cli_value(&a)) || cli_check_data_output(a.cmd, "--dendrogram", c->dendrogram)) return -1;
        } else if (cli_is(&a, "--components")) {
            if (!(c->components = cli_value(&a)) || cli_check_data_output(a.cmd, "--components", c->components)) return -1;
        } else {
            cli_unknown(&a);
            return -1;
        }
    }
    if (!c->input) {
        cli_error(a.cmd, "no input file (see 'parclust hca --help')");
        return -1;
    }
    if (p->clusters && threshold_given) {
        cli_error(a.cmd, "give --clusters or --threshold, not both");
        return -1;
    }
    return 0;
}

/* The linkage matrix as SciPy has it: float64 (rows, 4), text with full double precision. */
int cli_write_dendrogram(const char *path, const pc_result *r, char *err, size_t errsize)
{
    size_t rows;
    const double *z = pc_result_dendrogram(r, &rows);
    return pcli_write_matrix_f64(path, z, rows, 4, NULL, err, errsize);
}

/* int64 (components, 4): the component's number, its representative cell, density and points. */
int cli_write_components(const char *path, const pc_result *r, char *err, size_t errsize)
{
    static const char *const names[] = {"component", "cell", "density", "points"};
    const int64_t *columns[] = {NULL, pc_result_component_cells(r), pc_result_component_densities(r),
                                pc_result_component_sizes(r)};
    return pcli_write_columns_i64(path, columns, pc_result_component_count(r), 4, names, err, errsize);
}

static int write_outputs(const hca_cli *c, cli_outputs *out, pcli_matrix *m, const pc_result *r)
{
    char err[512];
    const char *path = NULL;
    int failed = cli_stage_common(out, &c->out, m, r, "HCA", err, sizeof err, &path) ||
                 (c->dendrogram && (!(path = cli_outputs_stage(out, c->dendrogram)) ||
                                    cli_write_dendrogram(path, r, err, sizeof err))) ||
                 (c->components && (!(path = cli_outputs_stage(out, c->components)) ||
                                    cli_write_components(path, r, err, sizeof err)));
    return cli_outputs_finish(out, failed, path, err);
}

int cmd_hca(int argc, char **argv)
{
    hca_cli c = {0};
    pc_hca_params p;
    pc_hca_params_init(&p);
    p.m = 0; /* -m auto */
    int rc = cli_hca_parse(argc, argv, &c, &p);
    if (rc == -2)
        return CLI_OK;
    if (rc)
        return CLI_USAGE;
    cli_outputs out;
    cli_outputs_init(&out, "hca");
    cli_outputs_input(&out, "the input", c.input);
    cli_outputs_add_common(&out, &c.out);
    cli_outputs_add(&out, "--dendrogram", c.dendrogram);
    cli_outputs_add(&out, "--components", c.components);
    if (cli_outputs_check(&out))
        return CLI_FAILED;
    pcli_matrix m = {0};
    char err[512];
    pcli_read_info read;
    double t_read = cli_seconds();
    if (pcli_read_points_ex(c.input, c.header, &m, &read, err, sizeof err)) {
        cli_error("hca", "%s", err);
        return CLI_FAILED;
    }
    if (cli_outputs_room_common(&out, &c.out, m.n, m.dim, 0)) {
        pcli_matrix_free(&m);
        return CLI_FAILED;
    }
    pc_points pts = cli_points_view(&m); /* uint8 and uint16 pixels are binned as they are */
    double t_cluster = cli_seconds();
    t_read = t_cluster - t_read;
    pc_result *r = NULL;
    pc_status st = pc_hca(&pts, &p, &r);
    if (cli_gpu_fallback("hca", &p.backend, st, r)) st = pc_hca(&pts, &p, &r); /* AUTO: fallback.c */
    t_cluster = cli_seconds() - t_cluster;
    if (st != PC_OK) {
        cli_error("hca", "%s: %s", c.input, pc_last_error()[0] ? pc_last_error() : pc_status_string(st));
        pcli_matrix_free(&m);
        return CLI_FAILED;
    }
    size_t k = pc_result_cluster_count(r), dim = pc_result_dim(r);
    double total = 0;
    for (size_t s = 0; s < pc_result_stage_count(r); s++) {
        double t;
        pc_result_stage(r, s, NULL, &t);
        total += t;
    }
    printf("hca: %zu points, %zu dimensions, m %d%s, %zu non-empty cells, %zu components, %zu clusters, %.3f s (%s)\n",
           m.n, dim, pc_result_grid_m(r), p.m == 0 ? " (auto)" : "", pc_result_cell_count(r), pc_result_component_count(r), k, total,
           pc_backend_name(pc_result_backend(r)));
    cli_print_read(c.input, &read);
    if (p.refine_borders)
        printf("  refined borders: %lld border points, %lld changed cluster\n", (long long)pc_result_border_points(r),
               (long long)pc_result_changed_points(r));
    if (p.clusters && k != p.clusters)
        fprintf(stderr, "parclust hca: note: %zu clusters asked, %zu found: no cut of the dendrogram gives %zu "
                        "clusters of at least the minimum size\n", p.clusters, k, p.clusters);
    cli_print_clusters(r);
    if (c.verbose && pc_result_backend(r) != PC_BACKEND_CUDA)
        printf("CPU path: %s (its own cell index and labels: packed 3- or 4-band uint8 pixels, m <= 127, "
               "with AVX-512 VBMI)\n", pc_cpu_path());
    if (c.verbose)
        cli_print_stages(r);
    double t_write = cli_seconds();
    rc = write_outputs(&c, &out, &m, r);
    if (c.verbose)
        cli_print_times(t_read, t_cluster, cli_seconds() - t_write);
    pc_result_free(r);
    pcli_matrix_free(&m);
    return rc;
}
