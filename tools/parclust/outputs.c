/* The outputs the clustering commands share: labels, centres and a picture staged together and
 * committed together, and the options and summary lines they have in common. */
#include "cli.h"
#include "plot.h"
#include "points_io.h"

#include <stdio.h>

int cli_stage_common(cli_outputs *out, const char *cmd, const cli_common_outputs *o, const float *points,
                     const pc_result *r, const char *title, char *err, size_t errsize, const char **path)
{
    size_t n = pc_result_n(r), dim = pc_result_dim(r), k = pc_result_cluster_count(r);
    *path = NULL;
    if (o->labels && (!(*path = cli_outputs_stage(out, cmd, o->labels)) ||
                      pcli_write_labels(*path, pc_result_labels(r), n, err, errsize)))
        return -1;
    if (o->centers && (!(*path = cli_outputs_stage(out, cmd, o->centers)) ||
                       pcli_write_matrix(*path, pc_result_centers(r), k, dim, err, errsize)))
        return -1;
    if (o->plot && (!(*path = cli_outputs_stage(out, cmd, o->plot)) ||
                    pcli_plot(*path, points, n, dim, pc_result_labels(r), pc_result_centers(r), k, title, err,
                              errsize)))
        return -1;
    return 0;
}

int cli_outputs_finish(cli_outputs *out, const char *cmd, int failed, const char *path, const char *err)
{
    if (!failed)
        return cli_outputs_commit(out, cmd) ? CLI_FAILED : CLI_OK;
    if (path) /* a writer failed (a failed staging printed its own error) */
        cli_outputs_error(out, cmd, err);
    cli_outputs_discard(out);
    return CLI_FAILED;
}

int cli_check_common_writable(const char *cmd, const cli_common_outputs *o)
{
    return cli_check_writable(cmd, "--labels", o->labels) || cli_check_writable(cmd, "--centers", o->centers) ||
           cli_check_writable(cmd, "--plot", o->plot);
}

int cli_backend_option(cli_args *a, pc_backend *backend, int *threads, int *rc)
{
    *rc = 0;
    if (cli_is(a, "--backend")) {
        const char *v = cli_value(a);
        if (!v || pc_backend_parse(v, backend) != PC_OK) {
            if (v)
                cli_error(a->cmd, "%s", pc_last_error());
            *rc = -1;
        }
        return 1;
    }
    if (cli_is(a, "--threads")) {
        long l;
        if (cli_int(a, 1, 4096, &l))
            *rc = -1;
        else
            *threads = (int)l;
        return 1;
    }
    return 0;
}

void cli_print_stages(const pc_result *r)
{
    for (size_t s = 0; s < pc_result_stage_count(r); s++) {
        const char *name;
        double t;
        pc_result_stage(r, s, &name, &t);
        printf("  stage %-10s %.4f s\n", name, t);
    }
}

void cli_print_clusters(const pc_result *r)
{
    size_t k = pc_result_cluster_count(r), dim = pc_result_dim(r), shown = k < 10 ? k : 10;
    for (size_t i = 0; i < shown; i++) {
        printf("  cluster %zu: %lld points, centre (", i, (long long)pc_result_sizes(r)[i]);
        for (size_t d = 0; d < dim && d < 8; d++)
            printf("%s%.4g", d ? ", " : "", pc_result_centers(r)[i * dim + d]);
        printf("%s)\n", dim > 8 ? ", ..." : "");
    }
    if (k > shown)
        printf("  ... %zu more clusters\n", k - shown);
}

int cli_common_option(cli_args *a, cli_common_outputs *o, int *verbose, const char **input, int *rc)
{
    *rc = 0;
    if (cli_is(a, "--labels")) {
        if (!(o->labels = cli_value(a)) || cli_check_data_output(a->cmd, "--labels", o->labels))
            *rc = -1;
    } else if (cli_is(a, "--centers")) {
        if (!(o->centers = cli_value(a)) || cli_check_data_output(a->cmd, "--centers", o->centers))
            *rc = -1;
    } else if (cli_is(a, "--plot")) {
        if (!(o->plot = cli_value(a)) || cli_check_plot_output(a->cmd, o->plot))
            *rc = -1;
    } else if (cli_is(a, "--verbose") || cli_is(a, "-v")) {
        if (cli_switch(a, verbose))
            *rc = -1;
    } else if (a->name[0] != '-' && !*input) {
        *input = a->name;
    } else {
        return 0;
    }
    return 1;
}
