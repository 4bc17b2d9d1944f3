/* The outputs the clustering commands share: labels, centres and a picture staged together and
 * committed together, and the options and summary lines they have in common. */
#include "cli.h"
#include "plot.h"
#include "points_io.h"

#include <stdio.h>

void cli_outputs_add_common(cli_outputs *out, const cli_common_outputs *o)
{
    cli_outputs_add(out, "--labels", o->labels);
    cli_outputs_add(out, "--centers", o->centers);
    cli_outputs_add(out, "--plot", o->plot);
}

double cli_matrix_min_bytes(const char *path, size_t rows, size_t cols)
{
    double values = (double)rows * (double)cols;
    /* .npy: a header of at least 64 bytes and 4 a value; text: at least a digit and a separator. */
    return pcli_has_extension(path, ".npy") ? 64 + 4 * values : 2 * values;
}

double cli_labels_min_bytes(const char *path, size_t n)
{
    /* .npy labels take a byte each at the least (int8, up to 128 clusters); text a digit and a newline. */
    return pcli_has_extension(path, ".npy") ? 64 + (double)n : 2 * (double)n;
}

int cli_outputs_room_common(cli_outputs *out, const cli_common_outputs *o, size_t n, size_t dim, size_t k)
{
    if (o->labels)
        cli_outputs_expect(out, o->labels, cli_labels_min_bytes(o->labels, n));
    if (o->centers)
        cli_outputs_expect(out, o->centers, cli_matrix_min_bytes(o->centers, k, dim));
    if (o->plot)
        cli_outputs_expect(out, o->plot, pcli_plot_min_bytes(o->plot, n));
    return cli_outputs_check_room(out);
}

int cli_stage_common(cli_outputs *out, const cli_common_outputs *o, pcli_matrix *points, const pc_result *r,
                     const char *title, char *err, size_t errsize, const char **path)
{
    size_t n = pc_result_n(r), dim = pc_result_dim(r), k = pc_result_cluster_count(r);
    *path = NULL;
    /* Plots draw float32 rows: points in another type are converted for them alone. */
    const float *xy = o->plot ? pcli_matrix_f32(points, err, errsize) : NULL;
    if (o->plot && !xy) {
        *path = o->plot;
        return -1;
    }
    if (o->labels && (!(*path = cli_outputs_stage(out, o->labels)) ||
                      pcli_write_labels(*path, pc_result_labels(r), n, k, err, errsize)))
        return -1;
    if (o->centers && (!(*path = cli_outputs_stage(out, o->centers)) ||
                       pcli_write_matrix(*path, pc_result_centers(r), k, dim, err, errsize)))
        return -1;
    if (o->plot && (!(*path = cli_outputs_stage(out, o->plot)) ||
                    pcli_plot(*path, xy, n, dim, pc_result_labels(r), pc_result_centers(r), k, title, err,
                              errsize)))
        return -1;
    return 0;
}

int cli_outputs_finish(cli_outputs *out, int failed, const char *path, const char *err)
{
    if (!failed)
        return cli_outputs_commit(out) ? CLI_FAILED : CLI_OK;
    if (path) /* a writer failed (a failed staging printed its own error) */
        cli_outputs_error(out, err);
    cli_outputs_discard(out);
    return CLI_FAILED;
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

void cli_print_times(double read, double cluster, double write)
{
    printf("  time read     %9.4f s\n", read);
    printf("  time cluster  %9.4f s\n", cluster);
    printf("  time write    %9.4f s\n", write);
    printf("  time total    %9.4f s\n", read + cluster + write);
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
