/* The option parsing and one-line errors that parclust's subcommands share, and that parclust-mpi
 * reuses (moved out of main.c so that both programs link them from one library). */
#include "cli.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *cli_program = "parclust";

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list args;
    fprintf(stderr, "%s %s: error: ", cli_program, cmd);
    va_start(args, fmt);
    vfprintf(stderr, fmt, args);
    va_end(args);
    fputc('\n', stderr);
}

void cli_args_init(cli_args *a, const char *cmd, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->cmd = cmd;
    a->argc = argc;
    a->argv = argv;
    a->i = 1; /* argv[0] is the subcommand */
}

const char *cli_next(cli_args *a)
{
    static _Thread_local char name[64];
    if (a->i >= a->argc)
        return NULL;
    const char *arg = a->argv[a->i++];
    a->value = NULL;
    a->name = arg;
    if (strncmp(arg, "--", 2) == 0) {
        const char *eq = strchr(arg, '=');
        if (eq && (size_t)(eq - arg) < sizeof name) {
            memcpy(name, arg, (size_t)(eq - arg));
            name[eq - arg] = '\0';
            a->name = name;
            a->value = eq + 1;
        }
    }
    return a->name;
}

int cli_is(const cli_args *a, const char *option) { return strcmp(a->name, option) == 0; }

const char *cli_value(cli_args *a)
{
    if (a->value)
        return a->value;
    if (a->i >= a->argc) {
        cli_error(a->cmd, "option %s needs a value", a->name);
        return NULL;
    }
    return a->argv[a->i++];
}

int cli_double(cli_args *a, double *out)
{
    const char *v = cli_value(a);
    if (!v)
        return -1;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (end == v || *end || isnan(x)) {
        cli_error(a->cmd, "option %s: '%s' is not a number", a->name, v);
        return -1;
    }
    /* ERANGE is both overflow (x is +-HUGE_VAL) and underflow (x is 0 or subnormal): a number all
     * the same, only one this program cannot use, and the user should hear which. */
    if (errno == ERANGE && fabs(x) > 1) {
        cli_error(a->cmd, "option %s: %s is too large%s (beyond %.3g, the largest double)", a->name, v,
                  x < 0 ? " in magnitude" : "", DBL_MAX);
        return -1;
    }
    if (errno == ERANGE) {
        cli_error(a->cmd, "option %s: %s is too small (closer to zero than %.3g, the smallest normal double)",
                  a->name, v, DBL_MIN);
        return -1;
    }
    *out = x;
    return 0;
}

int cli_int(cli_args *a, long min, long max, long *out)
{
    const char *v = cli_value(a);
    if (!v)
        return -1;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end) {
        cli_error(a->cmd, "option %s: '%s' is not an integer", a->name, v);
        return -1;
    }
    if (errno == ERANGE) {
        cli_error(a->cmd, "option %s must be between %ld and %ld, got %s", a->name, min, max, v);
        return -1;
    }
    if (x < min || x > max) {
        cli_error(a->cmd, "option %s must be between %ld and %ld, got %ld", a->name, min, max, x);
        return -1;
    }
    *out = x;
    return 0;
}

int cli_size(cli_args *a, size_t *out)
{
    long x;
    if (cli_int(a, 0, LONG_MAX, &x) != 0)
        return -1;
    *out = (size_t)x;
    return 0;
}

int cli_switch(cli_args *a, int *out)
{
    static const char *const words[] = {"no", "yes", "false", "true", "0", "1"}; /* index & 1: the truth */
    if (!a->value) {
        *out = 1;
        return 0;
    }
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcasecmp(a->value, words[i]) == 0) {
            *out = (int)(i & 1);
            return 0;
        }
    cli_error(a->cmd, "option %s takes yes/no, true/false or 1/0, got '%s'", a->name, a->value);
    return -1;
}

int cli_unknown(const cli_args *a)
{
    if (a->name[0] == '-')
        cli_error(a->cmd, "unknown option '%s' (see '%s %s --help')", a->name, cli_program, a->cmd);
    else
        cli_error(a->cmd, "unexpected argument '%s' (see '%s %s --help')", a->name, cli_program, a->cmd);
    return CLI_USAGE;
}

int cli_has_extension(const char *path, const char *ext)
{
    size_t lp = strlen(path), le = strlen(ext);
    return lp >= le && strcasecmp(path + lp - le, ext) == 0;
}

int cli_check_data_output(const char *cmd, const char *option, const char *path)
{
    static const char *const ok[] = {".csv", ".txt", ".tsv", ".npy"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (cli_has_extension(path, ok[i]))
            return 0;
    cli_error(cmd, "%s '%s': unknown output format (use .csv, .txt, .tsv or .npy)", option, path);
    return -1;
}

int cli_check_plot_output(const char *cmd, const char *path)
{
    if (cli_has_extension(path, ".png") || cli_has_extension(path, ".svg"))
        return 0;
    cli_error(cmd, "--plot '%s': unknown picture format (use .png or .svg)", path);
    return -1;
}
