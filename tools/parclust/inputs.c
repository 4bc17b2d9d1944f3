/* What the commands that read points or labels from text share: the --header option, and the line
 * that says what was read, so that a skipped header row is never a silent one. */
#include "cli.h"
#include "points_io.h"

#include <stdio.h>

int cli_header_option(cli_args *a, pcli_header *header, int *rc)
{
    *rc = 0;
    if (!cli_is(a, "--header"))
        return 0;
    const char *v = cli_value(a);
    if (!v)
        *rc = -1;
    else if (pcli_header_parse(v, header)) {
        cli_error(a->cmd, "--header takes yes, no or auto, got '%s'", v);
        *rc = -1;
    }
    return 1;
}

void cli_print_read(const char *path, const pcli_read_info *info)
{
    const char *rows = info->rows == 1 ? "row" : "rows";
    if (pcli_has_extension(path, ".npy"))
        printf("  read %zu %s from %s\n", info->rows, rows, path);
    else if (info->header_line)
        printf("  read %zu %s from %s, header on line %zu skipped\n", info->rows, rows, path, info->header_line);
    else
        printf("  read %zu %s from %s, no header\n", info->rows, rows, path);
}
