/* The files of one command: the inputs no output may replace, and the outputs, which appear together
 * or not at all. Every command registers both right after parsing and checks them before any work:
 *
 *     cli_outputs o;
 *     cli_outputs_init(&o, "kmeans");
 *     cli_outputs_input(&o, "the input", input);          (NULL paths are ignored)
 *     cli_outputs_add(&o, "--labels", labels);
 *     if (cli_outputs_check(&o)) return CLI_FAILED;
 *     ... read, cluster; cli_outputs_expect + cli_outputs_check_room once sizes are known ...
 *     path = cli_outputs_stage(&o, labels); write path; ...; cli_outputs_commit(&o)
 *     (or cli_outputs_error + cli_outputs_discard when a writer failed)
 *
 * Files are compared by device and inode (stat), never by name: ./in.csv, a symbolic link to it or a
 * hard link of it are all in.csv. A writer writes to a short staging name in its target's folder
 * (".pc-PID-N" and the target's extension, which the writers read the format from), so a target
 * name as long as the filesystem allows still works and the final rename stays on one filesystem. */
#ifndef PCLI_OUTPUT_FILES_H
#define PCLI_OUTPUT_FILES_H

#include <stddef.h>
#include <sys/types.h>

#define CLI_MAX_FILES 8

typedef struct {
    const char *what;  /* how messages name it: "--labels", "the input" */
    const char *path;  /* as the user gave it */
    double min_bytes;  /* a lower bound on the output's size once known (cli_outputs_expect); 0 unknown */
    dev_t dir_dev;     /* the filesystem of the output's folder (set by cli_outputs_check) */
    char *staged;      /* where the writer writes, once staged */
    char *aside;       /* during a commit: the file the target held, kept until every output is in place */
    int moved, placed; /* aside is that file moved (no hard link could be made); staged renamed onto path */
} cli_file;

typedef struct {
    const char *cmd;
    cli_file in[CLI_MAX_FILES], out[CLI_MAX_FILES];
    size_t n_in, n_out;
    int overflow; /* more files than slots: a programming error, reported by cli_outputs_check */
} cli_outputs;

void cli_outputs_init(cli_outputs *o, const char *cmd);
/* An input of the command ("the input", "the --init file"); NULL path: none. */
void cli_outputs_input(cli_outputs *o, const char *what, const char *path);
/* An output, by its option ("--labels"); NULL path: not asked for. */
void cli_outputs_add(cli_outputs *o, const char *option, const char *path);
/* Before any work: each output's folder writable, the output not a directory or another non-file,
 * not one of the inputs, not another output (for a file that does not exist yet: the same folder
 * and name). 0, or -1 with the error printed. */
int cli_outputs_check(cli_outputs *o);
/* The generators' pair: --output and --labels (NULL when not given) registered into o and checked. */
int cli_outputs_check_generated(cli_outputs *o, const char *cmd, const char *out, const char *labels);
/* Once known: output `path` will take at least `bytes`. Then cli_outputs_check_room: the outputs of
 * each filesystem fit in its free space (0, or -1 with the error printed). */
void cli_outputs_expect(cli_outputs *o, const char *path, double bytes);
int cli_outputs_check_room(const cli_outputs *o);
/* The name to write the registered output `target` to (created empty here, so it is this run's);
 * NULL (error printed) when it cannot be created. */
const char *cli_outputs_stage(cli_outputs *o, const char *target);
/* Renames every staged output onto its target. Before the first rename each target is checked again
 * and the file it holds is kept aside (a hard link); a rename that fails then puts back every target
 * already replaced, so a failure changes none. 0, or -1 with the error printed (staged files removed). */
int cli_outputs_commit(cli_outputs *o);
void cli_outputs_discard(cli_outputs *o); /* removes whatever was staged */
/* Prints a writer's error with the staging name replaced by the target's. */
void cli_outputs_error(const cli_outputs *o, const char *err);

#endif
