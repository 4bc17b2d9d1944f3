/* parclust heca: the ensemble of HCA grids (ALGORITHMS.md section 3a), so that nobody has to choose m. */
#include "cli.h"
#include "progress.h"
#include "points_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const help =
    "usage: parclust heca INPUT [options]\n"
    "\n"
    "Clusters the points of INPUT (.csv/.tsv/.txt or .npy, 1 to 8 values per row) by HECA: HCA on\n"
    "several grids (members), the heights at which the members join adjacent cells of the finest grid\n"
    "averaged, single linkage over these averaged distances (ALGORITHMS.md section 3a).\n"
    "\n"
    "  --m-list M1,M2,...     the members' cells per dimension, up to 16 (default auto: 5 members,\n"
    "                         m_max / 2 to m_max geometrically, m_max the auto rule of hca -m)\n"
    "  --shifts               members 2, 4, ... with their grid shifted by half a cell\n"
    "  --reference I          the member (1-based) whose cells are the prototypes (default: finest)\n"
    "  --clusters K           cut the dendrogram to K clusters\n"
    "  --threshold T          or cut at height T in [0, 1] (default 0.5 when --clusters is not given)\n"
    "  --min-cluster-size N   smaller clusters do not count (default 0.1% of the points, at least 2)\n"
    "  --noise                label the points of too-small clusters -1 instead\n"
    "  --backend B            auto (default), seq, openmp or cuda (runs on all cores for now)\n"
    "  --threads T            OpenMP threads (default: all cores)\n"
    "  --labels OUT           one label per point (.npy: int8, int16 or int32, the first that holds them)\n"
    "  --centers OUT          the cluster centres, one row each\n"
    "  --dendrogram OUT       SciPy linkage matrix over the prototype groups (float64 in .npy)\n"
    "  --components OUT       per group: its number, densest cell, its density, points\n"
    "  --plot OUT             the points coloured by cluster (.png or .svg)\n"
    "  --verbose              per-stage timings\n"
    "  --header H             yes, no or auto (default): whether a text INPUT's first row is a header\n";

typedef struct {
    const char *input, *dendrogram, *components;
    cli_common_outputs out;
    int verbose;
    pcli_header header;
} heca_cli;

int cli_parse_m_list(const char *cmd, const char *v, pc_heca_params *p)
{
    if (strcmp(v, "auto") == 0) {
        p->members = 0;
        return 0;
    }
    size_t count = 0;
    const char *s = v;
    while (*s) {
        char *end;
        long m = strtol(s, &end, 10);
        if (end == s || (*end && *end != ',') || m < 2 || m > 65535) {
            cli_error(cmd, "--m-list: '%s' is not a list of integers from 2 to 65535 (at column %d)", v,
                      (int)(s - v) + 1);
            return -1;
        }
        if (count == PC_HECA_MAX_MEMBERS) {
            cli_error(cmd, "--m-list: at most %d members, got more in '%s'", PC_HECA_MAX_MEMBERS, v);
            return -1;
        }
        p->m[count++] = (int)m;
        s = *end ? end + 1 : end;
        if (*end && !*s) {
            cli_error(cmd, "--m-list: '%s' ends with a comma", v);
            return -1;
        }
    }
    if (count == 0) {
        cli_error(cmd, "--m-list: empty list");
        return -1;
    }
    p->members = count;
    return 0;
}

static int parse(int argc, char **argv, heca_cli *c, pc_heca_params *p)
{
    cli_args a;
    cli_args_init(&a, "heca", argc, argv);
    long l;
    int bad = 0, on, threshold_given = 0;
    const char *v;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            if (cli_switch(&a, &on)) return -1;
            if (on) {
                fputs(help, stdout);
                return -2;
            }
        } else if (cli_is(&a, "--m-list")) {
            if (!(v = cli_value(&a)) || cli_parse_m_list(a.cmd, v, p)) return -1;
        } else if (cli_is(&a, "--shifts")) {
            if (cli_switch(&a, &on)) return -1;
            p->shifts = on;
        } else if (cli_is(&a, "--reference")) {
            if (cli_int(&a, 1, PC_HECA_MAX_MEMBERS, &l)) return -1;
            p->reference = (int)l - 1;
        } else if (cli_is(&a, "--clusters") || cli_is(&a, "-k")) {
            if (cli_int(&a, 1, 1000000000, &l)) return -1;
            p->hca.clusters = (size_t)l;
        } else if (cli_is(&a, "--threshold")) {
            if (cli_double(&a, &p->hca.threshold)) return -1;
            if (!(p->hca.threshold >= 0 && p->hca.threshold <= 1)) {
                cli_error(a.cmd, "--threshold must be in [0, 1], got %g", p->hca.threshold);
                return -1;
            }
            threshold_given = 1;
        } else if (cli_is(&a, "--min-cluster-size")) {
            if (cli_int(&a, 0, 2000000000, &l)) return -1;
            p->hca.min_cluster_size = l;
        } else if (cli_is(&a, "--noise")) {
            if (cli_switch(&a, &on)) return -1;
            p->hca.noise = on;
        } else if (cli_backend_option(&a, &p->hca.backend, &p->hca.threads, &bad)) {
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
        cli_error(a.cmd, "no input file (see 'parclust heca --help')");
        return -1;
    }
    if (p->hca.clusters && threshold_given) {
        cli_error(a.cmd, "give --clusters or --threshold, not both");
        return -1;
    }
    if (p->reference >= 0 && p->members && (size_t)p->reference >= p->members) {
        cli_error(a.cmd, "--reference %d: --m-list has %zu members", p->reference + 1, p->members);
        return -1;
    }
    return 0;
}

static int write_outputs(const heca_cli *c, cli_outputs *out, pcli_matrix *m, const pc_result *r)
{
    char err[512];
    const char *path = NULL;
    size_t rows;
    const double *z = pc_result_dendrogram(r, &rows);
    static const char *const names[] = {"component", "cell", "density", "points"};
    const int64_t *columns[] = {NULL, pc_result_component_cells(r), pc_result_component_densities(r),
                                pc_result_component_sizes(r)};
    int failed = cli_stage_common(out, &c->out, m, r, "HECA", err, sizeof err, &path) ||
                 (c->dendrogram && (!(path = cli_outputs_stage(out, c->dendrogram)) ||
                                    pcli_write_matrix_f64(path, z, rows, 4, NULL, err, sizeof err))) ||
                 (c->components && (!(path = cli_outputs_stage(out, c->components)) ||
                                    pcli_write_columns_i64(path, columns, pc_result_component_count(r), 4, names, err,
                                                           sizeof err)));
    return cli_outputs_finish(out, failed, path, err);
}

int cmd_heca(int argc, char **argv)
{
    heca_cli c = {0};
    pc_heca_params p;
    pc_heca_params_init(&p);
    int rc = parse(argc, argv, &c, &p);
    if (rc == -2)
        return CLI_OK;
    if (rc)
        return CLI_USAGE;
    cli_outputs out;
    cli_outputs_init(&out, "heca");
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
        cli_error("heca", "%s", err);
        return CLI_FAILED;
    }
    if (cli_outputs_room_common(&out, &c.out, m.n, m.dim, 0)) {
        pcli_matrix_free(&m);
        return CLI_FAILED;
    }
    pc_points pts = cli_points_view(&m);
    double t_cluster = cli_seconds();
    t_read = t_cluster - t_read;
    pc_result *r = NULL;
    pc_status st = pc_heca(&pts, &p, &r);
    if (cli_gpu_fallback("heca", &p.hca.backend, st, r)) st = pc_heca(&pts, &p, &r); /* AUTO: fallback.c */
    t_cluster = cli_seconds() - t_cluster;
    if (st != PC_OK) {
        cli_error("heca", "%s: %s", c.input, pc_last_error()[0] ? pc_last_error() : pc_status_string(st));
        pcli_matrix_free(&m);
        return CLI_FAILED;
    }
    size_t k = pc_result_cluster_count(r);
    printf("heca: %zu points, %zu dimensions, %zu members (m", m.n, pc_result_dim(r), pc_result_member_count(r));
    for (size_t l = 0; l < pc_result_member_count(r); l++)
        printf("%s%d", l ? ", " : " ", pc_result_member_m(r, l));
    printf("%s; components", p.shifts ? ", shifted alternately" : "");
    for (size_t l = 0; l < pc_result_member_count(r); l++)
        printf("%s%zu", l ? ", " : " ", pc_result_member_components(r, l));
    printf("), reference m %d: %zu prototypes in %zu groups, %zu clusters, %.3f s (%s)\n", pc_result_grid_m(r),
           pc_result_cell_count(r), pc_result_component_count(r), k, t_cluster,
           pc_backend_name(pc_result_backend(r)));
    cli_print_read(c.input, &read);
    if (p.hca.clusters && k != p.hca.clusters)
        fprintf(stderr, "parclust heca: note: %zu clusters asked, %zu found: no cut of the dendrogram gives %zu "
                        "clusters of at least the minimum size\n", p.hca.clusters, k, p.hca.clusters);
    cli_print_clusters(r);
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
