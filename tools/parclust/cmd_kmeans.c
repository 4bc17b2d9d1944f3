/* parclust kmeans: Lloyd's k-means with the initialisations of ALGORITHMS.md section 2. */
#include "cli.h"
#include "plot.h"
#include "points_io.h"
#include "progress.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char *const help =
    "usage: parclust kmeans INPUT -k K [options]\n"
    "\n"
    "Clusters the points of INPUT (.csv/.tsv/.txt or .npy) into K clusters by Lloyd's k-means.\n"
    "\n"
    "  -k K                 clusters (required)\n"
    "  --init I             kmeans++ (default), random, kmeans-par (k-means||), or a file of K\n"
    "                       initial centres (.csv/.npy, one row each)\n"
    "  --n-init N           runs from different seeds, the lowest inertia wins (default 1)\n"
    "  --max-iter N         most iterations (default 300)\n"
    "  --tol T              stop when the centres move less than T x the mean feature variance\n"
    "                       (scikit-learn's rule; default 1e-4, 0 = only when no label changes)\n"
    "  --seed S             random seed of the initialisation (default 0)\n"
    "  --backend B          auto (default), seq, openmp or cuda\n"
    "  --cuda-variant V     fast (default: the best of the others by size), seed (seed 002's kernels),\n"
    "                       gemm, direct or tensor (see pc_kmeans_cuda_variant in parclust.h)\n"
    "  --algorithm A        auto (default: hamerly for k >= 8, else lloyd), lloyd or hamerly\n"
    "                       (bounds that skip the centres where they prove the label; the same labels,\n"
    "                       centres and iterations as lloyd; on cuda as lloyd's fixed-point sums, the\n"
    "                       direct and tensor variants'; auto takes lloyd there with any other variant)\n"
    "  --threads T          OpenMP threads (default: all cores)\n"
    "  --labels OUT         one label per point (.csv/.txt/.tsv or .npy)\n"
    "  --centers OUT        the centres, one row each\n"
    "  --plot OUT           the points coloured by cluster (.png or .svg)\n"
    "  --verbose            per-stage timings, the algorithm and the distances it evaluated\n"
    "  --header H           yes, no or auto (default): whether the first row of a text INPUT (and of\n"
    "                       an --init file) is a header to skip (auto: when none of its fields is a\n"
    "                       number)\n"
    "\n"
    "Options without a value are switches: --verbose=no (or =false, =0) is as if not given, =yes (=true,\n"
    "=1) as given.\n";

int cli_kmeans_parse(int argc, char **argv, km_cli *c, pc_kmeans_params *p)
{
    cli_args a;
    cli_args_init(&a, "kmeans", argc, argv);
    long l;
    const char *v;
    int bad = 0, on;
    while (cli_next(&a)) {
        if (cli_is(&a, "--help") || cli_is(&a, "-h")) {
            if (cli_switch(&a, &on)) return -1;
            if (on) {
                fputs(help, stdout);
                return -2;
            }
        } else if (cli_is(&a, "-k") || cli_is(&a, "--clusters")) {
            if (cli_int(&a, 1, 2000000000, &l)) return -1;
            p->k = (size_t)l;
        } else if (cli_is(&a, "--init")) {
            if (!(v = cli_value(&a))) return -1;
            if (pc_kmeans_init_parse(v, &p->init) != PC_OK || p->init == PC_INIT_GIVEN) {
                /* A misspelt name would otherwise be reported as a file that cannot be opened (a file
                 * that is there but unreadable is left to the reader to report). */
                struct stat st;
                if (stat(v, &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) {
                    cli_error(a.cmd, "--init '%s' is neither an initialisation (kmeans++, random, kmeans-par) nor an "
                              "existing file of centres", v);
                    return -1;
                }
                p->init = PC_INIT_GIVEN;
                c->init_file = v;
            }
        } else if (cli_is(&a, "--n-init")) {
            if (cli_int(&a, 1, 100000, &l)) return -1;
            p->n_init = (int)l;
        } else if (cli_is(&a, "--max-iter")) {
            if (cli_int(&a, 1, 1000000000, &l)) return -1;
            p->max_iter = (int)l;
        } else if (cli_is(&a, "--tol")) {
            if (cli_double(&a, &p->tol)) return -1;
            if (!(p->tol >= 0) || isinf(p->tol)) {
                cli_error(a.cmd, "--tol must be a finite number >= 0, got %g", p->tol);
                return -1;
            }
        } else if (cli_is(&a, "--seed")) {
            if (cli_int(&a, 0, 0x7fffffffL, &l)) return -1;
            p->seed = (uint64_t)l;
        } else if (cli_backend_option(&a, &p->backend, &p->threads, &bad)) {
            if (bad) return -1;
        } else if (cli_is(&a, "--algorithm")) {
            if (!(v = cli_value(&a))) return -1;
            if (pc_kmeans_algorithm_parse(v, &p->algorithm) != PC_OK) {
                cli_error(a.cmd, "--algorithm: unknown algorithm '%s' (expected auto, lloyd or hamerly)", v);
                return -1;
            }
        } else if (cli_is(&a, "--cuda-variant")) {
            static const char *const variants[] = {"fast", "seed", "gemm", "direct", "tensor"};
            if (!(v = cli_value(&a))) return -1;
            size_t q = 0;
            while (q < sizeof variants / sizeof variants[0] && strcmp(v, variants[q]) != 0)
                q++;
            if (q == sizeof variants / sizeof variants[0]) {
                cli_error(a.cmd, "unknown CUDA variant '%s' (expected fast, seed, gemm, direct or tensor)", v);
                return -1;
            }
            p->cuda_variant = (pc_kmeans_cuda_variant)q; /* the names in the enum's order */
        } else if (cli_common_option(&a, &c->out, &c->verbose, &c->input, &bad) ||
                   cli_header_option(&a, &c->header, &bad)) {
            if (bad) return -1;
        } else {
            cli_unknown(&a);
            return -1;
        }
    }
    if (!c->input) {
        cli_error(a.cmd, "no input file (see 'parclust kmeans --help')");
        return -1;
    }
    if (p->k == 0) {
        cli_error(a.cmd, "-k K is required (the number of clusters)");
        return -1;
    }
    return 0;
}

static int write_outputs(const km_cli *c, cli_outputs *out, pcli_matrix *m, const pc_result *r)
{
    char err[512];
    const char *path = NULL;
    int failed = cli_stage_common(out, &c->out, m, r, "k-means", err, sizeof err, &path);
    return cli_outputs_finish(out, failed, path, err);
}

int cmd_kmeans(int argc, char **argv)
{
    km_cli c = {0};
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    int rc = cli_kmeans_parse(argc, argv, &c, &p);
    if (rc == -2)
        return CLI_OK;
    if (rc)
        return CLI_USAGE;
    cli_outputs out;
    cli_outputs_init(&out, "kmeans");
    cli_outputs_input(&out, "the input", c.input);
    cli_outputs_input(&out, "the --init file", c.init_file);
    cli_outputs_add_common(&out, &c.out);
    if (cli_outputs_check(&out))
        return CLI_FAILED;
    pcli_matrix m = {0}, init = {0};
    char err[512];
    pcli_read_info read, init_read;
    double t_read = cli_seconds();
    if (pcli_read_points_ex(c.input, c.header, &m, &read, err, sizeof err) ||
        (c.init_file && pcli_read_points_ex(c.init_file, c.header, &init, &init_read, err, sizeof err))) {
        cli_error("kmeans", "%s", err);
        pcli_matrix_free(&m);
        return CLI_FAILED;
    }
    if (c.init_file && (init.n != p.k || init.dim != m.dim)) {
        cli_error("kmeans", "%s: %zu centres of %zu values%s, expected %zu of %zu (-k and the points' dimensions)",
                  c.init_file, init.n, init.dim, init_read.header_line ? " (after the header row it skipped)" : "",
                  p.k, m.dim);
        pcli_matrix_free(&m);
        pcli_matrix_free(&init);
        return CLI_FAILED;
    }
    if (c.init_file && !(p.initial_centers = pcli_matrix_f32(&init, err, sizeof err))) {
        cli_error("kmeans", "%s", err);
        pcli_matrix_free(&m);
        pcli_matrix_free(&init);
        return CLI_FAILED;
    }
    if (cli_outputs_room_common(&out, &c.out, m.n, m.dim, p.k)) {
        pcli_matrix_free(&m);
        pcli_matrix_free(&init);
        return CLI_FAILED;
    }
    cli_progress progress;
    cli_progress_start(&progress, "k-means");
    p.progress = cli_progress_update;
    p.progress_user = &progress;
    pc_points pts = cli_points_view(&m);
    pc_result *r = NULL;
    double t0 = cli_seconds();
    t_read = t0 - t_read;
    pc_status st = pc_kmeans(&pts, &p, &r);
    if (cli_gpu_fallback("kmeans", &p.backend, st, r)) st = pc_kmeans(&pts, &p, &r); /* AUTO: fallback.c */
    double seconds = cli_seconds() - t0;
    cli_progress_end(&progress);
    pcli_matrix_free(&init);
    if (st != PC_OK) {
        cli_error("kmeans", "%s: %s", c.input, pc_last_error()[0] ? pc_last_error() : pc_status_string(st));
        pcli_matrix_free(&m);
        return CLI_FAILED;
    }
    size_t k = pc_result_cluster_count(r);
    printf("k-means: %zu points, %zu dimensions, %zu clusters, %d iterations, inertia %.9g, %.3f s (%s)\n", m.n,
           m.dim, k, pc_result_iterations(r), pc_result_inertia(r), seconds, pc_backend_name(pc_result_backend(r)));
    cli_print_read(c.input, &read);
    if (c.init_file)
        cli_print_read(c.init_file, &init_read);
    if (c.verbose) {
        cli_print_stages(r);
        printf("  algorithm %s, %.6g distance evaluations (%.3g an iteration per point and centre)\n",
               pc_kmeans_algorithm_name(pc_result_kmeans_algorithm(r)), pc_result_distance_evaluations(r),
               pc_result_distance_evaluations(r) / ((double)m.n * (double)k * (pc_result_iterations(r) + 1)));
    }
    double t_write = cli_seconds();
    rc = write_outputs(&c, &out, &m, r);
    if (c.verbose)
        cli_print_times(t_read, seconds, cli_seconds() - t_write);
    pc_result_free(r);
    pcli_matrix_free(&m);
    return rc;
}
