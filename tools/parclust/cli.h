/* What the subcommands of the parclust program share: option parsing with one-line errors. */
#ifndef PARCLUST_CLI_H
#define PARCLUST_CLI_H

#include "output_files.h"
#include "parclust.h"
#include "points_io.h"

#include <stddef.h>

/* Exit codes: 0 success, 1 the run failed (bad data, I/O), 2 the command line is wrong. */
enum { CLI_OK = 0, CLI_FAILED = 1, CLI_USAGE = 2 };

/* files.c: a command's files (pcli_outputs, tools/fileio/output_files.h) under the command's name,
 * with the errors printed by cli_error. The calls and their order are output_files.h's. */
typedef struct {
    pcli_outputs files;
    const char *cmd;
} cli_outputs;

void cli_outputs_init(cli_outputs *o, const char *cmd);
void cli_outputs_input(cli_outputs *o, const char *what, const char *path);
void cli_outputs_add(cli_outputs *o, const char *option, const char *path);
int cli_outputs_check(cli_outputs *o); /* 0, or -1 with the error printed; so are the next ones */
/* The generators' pair: --output and --labels (NULL when not given) registered into o and checked. */
int cli_outputs_check_generated(cli_outputs *o, const char *cmd, const char *out, const char *labels);
void cli_outputs_expect(cli_outputs *o, const char *path, double bytes);
int cli_outputs_check_room(const cli_outputs *o);
const char *cli_outputs_stage(cli_outputs *o, const char *target); /* NULL: error printed */
int cli_outputs_commit(cli_outputs *o);
void cli_outputs_discard(cli_outputs *o);
/* Prints a writer's error with the staging name replaced by the target's. */
void cli_outputs_error(const cli_outputs *o, const char *err);

/* The program's name in messages: "parclust" (args.c), "parclust-mpi" in the MPI program. */
extern const char *cli_program;

/* Prints "parclust CMD: error: ..." (cli_program's name) on one line to stderr. */
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
/* Parse the current option's value; 0 ok, -1 with an error printed. cli_double tells a value that
 * is not a number from one too large or too close to zero for a double (strtod's ERANGE). */
int cli_double(cli_args *a, double *out);
int cli_int(cli_args *a, long min, long max, long *out);
int cli_size(cli_args *a, size_t *out);
/* A switch (an option that takes no separate value): *out = 1 for "--name", and for "--name=V" the
 * truth of V: yes/true/1 or no/false/0, any case. Never reads the next argument. 0, or -1 with the
 * error printed for any other V (the caller exits CLI_USAGE). */
int cli_switch(cli_args *a, int *out);
int cli_unknown(const cli_args *a); /* prints the error, returns CLI_USAGE */

/* Whether path ends with ext (case-insensitive, ext includes the dot). */
int cli_has_extension(const char *path, const char *ext);
/* Checks an output path's extension for data (.csv .txt .tsv .npy) or plots (.png .svg). */
int cli_check_data_output(const char *cmd, const char *option, const char *path);
int cli_check_plot_output(const char *cmd, const char *path);

/* What every clustering command can write: labels, centres and a picture. */
typedef struct {
    const char *labels, *centers, *plot;
} cli_common_outputs;

/* Registers the common outputs with out (the command's files, output_files.h). */
void cli_outputs_add_common(cli_outputs *out, const cli_common_outputs *o);
/* Once the input is read: the least the common outputs of n points of dim values and k centres (0:
 * not known yet) will take, and whether their filesystems have that room (0, or -1 printed). */
int cli_outputs_room_common(cli_outputs *out, const cli_common_outputs *o, size_t n, size_t dim, size_t k);
/* The least a matrix of rows x cols values takes as written by pcli_write_matrix, and n labels as
 * pcli_write_labels writes them. */
double cli_matrix_min_bytes(const char *path, size_t rows, size_t cols);
double cli_labels_min_bytes(const char *path, size_t n);
/* Stages the labels, centres and plot of r (points m) into out. 0, or -1 with the error in err and
 * *path set when a writer failed (NULL when staging itself failed and printed its error). */
int cli_stage_common(cli_outputs *out, const cli_common_outputs *o, pcli_matrix *points, const pc_result *r,
                     const char *title, char *err, size_t errsize, const char **path);
/* Commits the staged outputs, or (failed) prints the error and removes them. CLI_OK or CLI_FAILED. */
int cli_outputs_finish(cli_outputs *out, int failed, const char *path, const char *err);
/* Handles --backend B and --threads T; 1 when the option was one of them (0 ok / -1 error in *rc). */
int cli_backend_option(cli_args *a, pc_backend *backend, int *threads, int *rc);
/* "  stage NAME  SECONDS" lines. */
void cli_print_stages(const pc_result *r);
/* "  cluster I: N points, centre (...)" for the first 10 clusters. */
void cli_print_clusters(const pc_result *r);
/* Handles what every clustering command takes: --labels, --centers, --plot, --verbose and the input
 * (the first positional argument). 1 when it was one of them (*rc: 0 ok, -1 error printed), 0 not. */
int cli_common_option(cli_args *a, cli_common_outputs *o, int *verbose, const char **input, int *rc);

/* inputs.c: --header yes|no|auto for the text files a command reads (1 when the option was it; *rc 0
 * ok, -1 error printed), and the "  read N rows from FILE, header on line L skipped" summary line. */
int cli_header_option(cli_args *a, pcli_header *header, int *rc);
void cli_print_read(const char *path, const pcli_read_info *info);
/* The library's view of points as read: the file's own type for float32, float64, uint8 and uint16
 * .npy (no copy), float32 for text. */
pc_points cli_points_view(const pcli_matrix *m);
/* "  time read/cluster/write/total" lines (with --verbose), as segment prints them. */
void cli_print_times(double read, double cluster, double write);

/* The options of kmeans, hca and meanshift as parsed from argv (argv[0] the command), shared with parclust-mpi,
 * which takes the same ones. 0 ok, -2 --help printed, -1 error printed (exit CLI_USAGE). */
typedef struct {
    const char *input, *init_file;
    cli_common_outputs out;
    int verbose;
    pcli_header header;
} km_cli;
int cli_kmeans_parse(int argc, char **argv, km_cli *c, pc_kmeans_params *p);

typedef struct {
    const char *input, *dendrogram, *components;
    cli_common_outputs out;
    int verbose;
    pcli_header header;
} hca_cli;
int cli_hca_parse(int argc, char **argv, hca_cli *c, pc_hca_params *p);
typedef struct {
    const char *input, *modes;
    cli_common_outputs out;
    int verbose;
    pcli_header header;
    pcli_read_info read;
} ms_cli;
int cli_meanshift_parse(int argc, char **argv, ms_cli *c, pc_meanshift_params *p);

/* hca's --dendrogram (SciPy's linkage matrix, float64) and --components (int64 columns) of r. */
int cli_write_dendrogram(const char *path, const pc_result *r, char *err, size_t errsize);
int cli_write_components(const char *path, const pc_result *r, char *err, size_t errsize);

int cmd_meanshift(int argc, char **argv);
int cmd_hca(int argc, char **argv);
int cmd_heca(int argc, char **argv); /* cmd_heca.c: the ensemble of HCA grids */
/* cmd_heca.c: --m-list "16,20,24" (1 to PC_HECA_MAX_MEMBERS integers in [2, 65535]) or "auto" (the default
 * list) into p; 0, or -1 with the error printed. */
int cli_parse_m_list(const char *cmd, const char *v, pc_heca_params *p);
int cmd_kmeans(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_generate_scene(int argc, char **argv); /* scene.c: parclust generate scene */
int cmd_segment(int argc, char **argv);
int cmd_score(int argc, char **argv);
int cmd_info(int argc, char **argv);
/* fallback.c: after a run with --backend auto (*backend AUTO) that ended with st: where the GPU could not
 * do it (PC_DEVICE_OUT_OF_MEMORY, PC_DEVICE_ERROR), says so in one line on stderr with the library's
 * reason and the memory free now, sets *backend to the CPU's and returns 1: run it again. Where the
 * library went to the CPU by itself (r's backend, its last error saying why), says that; returns 0. */
int cli_gpu_fallback(const char *cmd, pc_backend *backend, pc_status st, const pc_result *r);

#endif
