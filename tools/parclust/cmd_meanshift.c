/* parclust meanshift: read points, run pc_meanshift, print a summary, write what was asked for. */
#include "cli.h"
#include "plot.h"
#include "points_io.h"
#include "progress.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const help =
    "usage: parclust meanshift INPUT [options]\n"
    "\n"
    "Clusters the points of INPUT (.csv/.tsv/.txt or .npy, one point per row) by mean shift.\n"
    "\n"
    "  --bandwidth H        kernel bandwidth h, in data units (default 1)\n"
    "  --kernel K           gaussian (default), flat or epanechnikov\n"
    "  --radius R           cut-off distance (default: none for gaussian, h otherwise);\n"
    "                       a finite radius lets the neighbour grid skip far points\n"
    "  --max-iter N         most iterations (default 300)\n"
    "  --eps E              a point stops once it moves <= E (default 1e-3 h; 0 = never)\n"
    "  --merge-radius M     modes closer than M form one cluster (default h/2)\n"
    "  --blurring           move the data set itself each iteration (default: non-blurring)\n"
    "  --no-grid            always sum over all pairs, even with a finite radius\n"
    "  --backend B          auto (default), seq, openmp or cuda\n"
    "  --threads T          OpenMP threads (default: all cores)\n"
    "  --schedule S         OpenMP schedule: dynamic (default), static or guided\n"
    "  --cuda-kernel K      fast (default), naive or tiled (the seeds' kernels, for comparison)\n"
    "  --cuda-block B       threads per block of the naive and tiled kernels (tiled: TILE_WIDTH)\n"
    "  --labels OUT         write one label per point (.csv/.txt/.tsv or .npy)\n"
    "  --centers OUT        write the cluster centres, one row each\n"
    "  --modes OUT          write where each point converged, one row each\n"
    "  --plot OUT           draw the points coloured by cluster (.png or .svg)\n"
    "  --verbose            print parameters, backend and per-stage timings\n"
    "  --header H           yes, no or auto (default): whether the first row of a text INPUT is a\n"
    "                       header to skip (auto: when none of its fields is a number)\n"
    "\n"
    "Options without a value are switches: --blurring=no (or =false, =0) is as if not given, =yes (=true,\n"
    "=1) as given.\n";


static int parse_schedule(const char *cmd, const char *v, pc_schedule *out)
{
    static const char *const names[] = {"dynamic", "static", "guided"};
    for (int i = 0; i < 3; i++)
        if (strcmp(v, names[i]) == 0) {
            *out = (pc_schedule)i;
            return 0;
        }
    cli_error(cmd, "unknown schedule '%s' (expected dynamic, static or guided)", v);
    return -1;
}

int cli_meanshift_parse(int argc, char **argv, ms_cli *c, pc_meanshift_params *p)
{
    cli_args a;
    cli_args_init(&a, "meanshift", argc, argv);
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
        } else if (cli_is(&a, "--bandwidth")) {
            if (cli_double(&a, &p->bandwidth)) return -1;
            if (!(p->bandwidth > 0) || !isfinite(p->bandwidth)) {
                cli_error(a.cmd, "--bandwidth must be a finite number > 0, got %g", p->bandwidth);
                return -1;
            }
        } else if (cli_is(&a, "--kernel")) {
            if (!(v = cli_value(&a))) return -1;
            if (pc_kernel_parse(v, &p->kernel) != PC_OK) {
                cli_error(a.cmd, "%s", pc_last_error());
                return -1;
            }
        } else if (cli_is(&a, "--radius")) {
            if (cli_double(&a, &p->radius)) return -1;
            if (p->radius < 0) {
                cli_error(a.cmd, "--radius must be >= 0 (0 = the kernel's default), got %g", p->radius);
                return -1;
            }
        } else if (cli_is(&a, "--max-iter")) {
            if (cli_int(&a, 1, 1000000000, &l)) return -1;
            p->max_iter = (int)l;
        } else if (cli_is(&a, "--eps")) {
            if (cli_double(&a, &p->eps)) return -1;
            if (p->eps < 0) {
                cli_error(a.cmd, "--eps must be >= 0, got %g", p->eps);
                return -1;
            }
        } else if (cli_is(&a, "--merge-radius")) {
            if (cli_double(&a, &p->merge_radius)) return -1;
            if (p->merge_radius < 0) {
                cli_error(a.cmd, "--merge-radius must be >= 0, got %g", p->merge_radius);
                return -1;
            }
        } else if (cli_is(&a, "--blurring")) {
            if (cli_switch(&a, &on)) return -1;
            p->blurring = on;
        } else if (cli_is(&a, "--no-grid")) {
            if (cli_switch(&a, &on)) return -1;
            p->use_grid = !on; /* --no-grid=no: the grid as by default */
        } else if (cli_backend_option(&a, &p->backend, &p->threads, &bad)) {
            if (bad) return -1;
        } else if (cli_is(&a, "--schedule")) {
            if (!(v = cli_value(&a)) || parse_schedule(a.cmd, v, &p->schedule)) return -1;
        } else if (cli_is(&a, "--cuda-kernel")) {
            if (!(v = cli_value(&a))) return -1;
            if (pc_cuda_kernel_parse(v, &p->cuda_kernel) != PC_OK) {
                cli_error(a.cmd, "%s", pc_last_error());
                return -1;
            }
        } else if (cli_is(&a, "--cuda-block")) {
            if (cli_int(&a, 16, 1024, &l)) return -1;
            p->cuda_block = (int)l;
        } else if (cli_common_option(&a, &c->out, &c->verbose, &c->input, &bad) ||
                   cli_header_option(&a, &c->header, &bad)) {
            if (bad) return -1;
        } else if (cli_is(&a, "--modes")) {
            if (!(c->modes = cli_value(&a)) || cli_check_data_output(a.cmd, "--modes", c->modes)) return -1;
        } else {
            cli_unknown(&a);
            return -1;
        }
    }
    if (!c->input) {
        cli_error(a.cmd, "no input file (see 'parclust meanshift --help')");
        return -1;
    }
    return 0;
}

static void print_summary(const ms_cli *c, const pc_meanshift_params *p, const pc_result *r, double seconds)
{
    size_t k = pc_result_cluster_count(r), dim = pc_result_dim(r);
    printf("mean shift: %zu points, %zu dimensions, %zu clusters, %d iterations, %.3f s (%s)\n",
           pc_result_n(r), dim, k, pc_result_iterations(r), seconds, pc_backend_name(pc_result_backend(r)));
    cli_print_read(c->input, &c->read);
    cli_print_clusters(r);
    if (c->verbose) {
        /* The header's "0 / negative = default" values, resolved as the library resolves them. */
        double h = p->bandwidth;
        double radius = p->radius > 0 ? p->radius : p->kernel == PC_KERNEL_GAUSSIAN ? INFINITY : h;
        printf("kernel %s, bandwidth %g, radius %g, eps %g, merge radius %g, %s, threads %d\n",
               pc_kernel_name(p->kernel), h, radius, p->eps < 0 ? 1e-3 * h : p->eps,
               p->merge_radius < 0 ? h / 2 : p->merge_radius,
               p->blurring ? "blurring" : "non-blurring", p->threads ? p->threads : pc_openmp_max_threads());
        if (pc_result_backend(r) != PC_BACKEND_CUDA)
            printf("CPU path: %s\n", pc_cpu_path());
        cli_print_stages(r);
    }
}

static int write_outputs(const ms_cli *c, cli_outputs *out, pcli_matrix *m, const pc_result *r)
{
    char err[512];
    const char *path = NULL;
    int failed = cli_stage_common(out, &c->out, m, r, "mean shift", err, sizeof err, &path) ||
                 (c->modes && (!(path = cli_outputs_stage(out, c->modes)) ||
                               pcli_write_matrix(path, pc_result_modes(r), pc_result_n(r), pc_result_dim(r), err,
                                                 sizeof err)));
    return cli_outputs_finish(out, failed, path, err);
}

int cmd_meanshift(int argc, char **argv)
{
    ms_cli c = {0};
    pc_meanshift_params p;
    pc_meanshift_params_init(&p);
    int rc = cli_meanshift_parse(argc, argv, &c, &p);
    if (rc == -2)
        return CLI_OK;
    if (rc)
        return CLI_USAGE;
    cli_outputs out;
    cli_outputs_init(&out, "meanshift");
    cli_outputs_input(&out, "the input", c.input);
    cli_outputs_add_common(&out, &c.out);
    cli_outputs_add(&out, "--modes", c.modes);
    if (cli_outputs_check(&out))
        return CLI_FAILED;

    pcli_matrix m = {0};
    char err[512];
    double t_read = cli_seconds();
    if (pcli_read_points_ex(c.input, c.header, &m, &c.read, err, sizeof err)) {
        cli_error("meanshift", "%s", err);
        return CLI_FAILED;
    }
    if (c.modes)
        cli_outputs_expect(&out, c.modes, cli_matrix_min_bytes(c.modes, m.n, m.dim));
    if (cli_outputs_room_common(&out, &c.out, m.n, m.dim, 0)) {
        pcli_matrix_free(&m);
        return CLI_FAILED;
    }
    cli_progress progress;
    cli_progress_start(&progress, "mean shift");
    p.progress = cli_progress_update;
    p.progress_user = &progress;
    pc_points pts = cli_points_view(&m);
    pc_result *r = NULL;
    double t0 = cli_seconds();
    t_read = t0 - t_read;
    pc_status st = pc_meanshift(&pts, &p, &r);
    if (cli_gpu_fallback("meanshift", &p.backend, st, r)) st = pc_meanshift(&pts, &p, &r); /* AUTO: fallback.c */
    double seconds = cli_seconds() - t0;
    cli_progress_end(&progress);
    if (st != PC_OK) {
        cli_error("meanshift", "%s: %s", c.input, pc_last_error()[0] ? pc_last_error() : pc_status_string(st));
        pcli_matrix_free(&m);
        return CLI_FAILED;
    }
    print_summary(&c, &p, r, seconds);
    double t_write = cli_seconds();
    rc = write_outputs(&c, &out, &m, r);
    if (c.verbose)
        cli_print_times(t_read, seconds, cli_seconds() - t_write);
    pc_result_free(r);
    pcli_matrix_free(&m);
    return rc;
}
