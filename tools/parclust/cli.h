/* What the subcommands of the parclust program share: option parsing with one-line errors. */
#ifndef PARCLUST_CLI_H
#define PARCLUST_CLI_H

#include "parclust.h"

#include <stddef.h>

/* Exit codes: 0 success, 1 the run failed (bad data, I/O), 2 the command line is wrong. */
enum { CLI_OK = 0, CLI_FAILED = 1, CLI_USAGE = 2 };

/* Prints "parclust CMD: error: ..." on one line to stderr. */
void cli_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A cursor over argv for "--name value" and "--name=value" options. */
typedef struct {
    const char *cmd;
    int argc;
    char **argv;
    int i;
    const char *name;  /* the option just read, "--bandwidth" */
    const char *value; /* its "=value" part, if any */
} cli_args;

void cli_args_init(cli_args *a, const char *cmd, int argc, char **argv);
/* Next argument: returns it (an option name without "=value", or a positional), NULL at the end. */
const char *cli_next(cli_args *a);
int cli_is(const cli_args *a, const char *option);
/* The value of the current option; NULL (error printed) when missing. */
const char *cli_value(cli_args *a);
/* Parse the current option's value; 0 ok, -1 with an error printed. */
int cli_double(cli_args *a, double *out);
int cli_int(cli_args *a, long min, long max, long *out);
int cli_size(cli_args *a, size_t *out);
int cli_unknown(const cli_args *a); /* prints the error, returns CLI_USAGE */

/* Whether path ends with ext (case-insensitive, ext includes the dot). */
int cli_has_extension(const char *path, const char *ext);
/* Checks an output path's extension for data (.csv .txt .tsv .npy) or plots (.png .svg). */
int cli_check_data_output(const char *cmd, const char *option, const char *path);
int cli_check_plot_output(const char *cmd, const char *path);

int cmd_meanshift(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_score(int argc, char **argv);
int cmd_info(int argc, char **argv);

#endif
