/* A command's files (tools/fileio/output_files.h) as the CLI uses them: each call under the command's
 * name, each error printed as "parclust CMD: error: ..." (one cli_error a line of the error). */
#include "cli.h"

#include <string.h>

/* Prints err, a line at a time (a failed commit can have several), and returns -1. */
static int report(const cli_outputs *o, const char *err)
{
    for (const char *line = err;;) {
        const char *end = strchr(line, '\n');
        if (!end) {
            cli_error(o->cmd, "%s", line);
            return -1;
        }
        cli_error(o->cmd, "%.*s", (int)(end - line), line);
        line = end + 1;
    }
}

void cli_outputs_init(cli_outputs *o, const char *cmd)
{
    pcli_outputs_init(&o->files);
    o->cmd = cmd;
}

void cli_outputs_input(cli_outputs *o, const char *what, const char *path)
{
    pcli_outputs_input(&o->files, what, path);
}

void cli_outputs_add(cli_outputs *o, const char *option, const char *path)
{
    pcli_outputs_add(&o->files, option, path);
}

int cli_outputs_check(cli_outputs *o)
{
    char err[PCLI_OUTPUTS_ERR_SIZE];
    return pcli_outputs_check(&o->files, err, sizeof err) ? report(o, err) : 0;
}

int cli_outputs_check_generated(cli_outputs *o, const char *cmd, const char *out, const char *labels)
{
    cli_outputs_init(o, cmd);
    cli_outputs_add(o, "--output", out);
    cli_outputs_add(o, "--labels", labels);
    return cli_outputs_check(o);
}

void cli_outputs_expect(cli_outputs *o, const char *path, double bytes)
{
    pcli_outputs_expect(&o->files, path, bytes);
}

int cli_outputs_check_room(const cli_outputs *o)
{
    char err[PCLI_OUTPUTS_ERR_SIZE];
    return pcli_outputs_check_room(&o->files, err, sizeof err) ? report(o, err) : 0;
}

const char *cli_outputs_stage(cli_outputs *o, const char *target)
{
    char err[PCLI_OUTPUTS_ERR_SIZE];
    const char *path = pcli_outputs_stage(&o->files, target, err, sizeof err);
    if (!path)
        report(o, err);
    return path;
}

int cli_outputs_commit(cli_outputs *o)
{
    char err[4 * PCLI_OUTPUTS_ERR_SIZE];
    return pcli_outputs_commit(&o->files, err, sizeof err) ? report(o, err) : 0;
}

void cli_outputs_discard(cli_outputs *o)
{
    pcli_outputs_discard(&o->files);
}

void cli_outputs_error(const cli_outputs *o, const char *err)
{
    char named[PCLI_OUTPUTS_ERR_SIZE + 4096];
    pcli_outputs_name_target(&o->files, err, named, sizeof named);
    cli_error(o->cmd, "%s", named);
}
