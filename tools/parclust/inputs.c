/* What the commands that read points or labels share: the --header option, the line that says what
 * was read (so that a skipped header row is never a silent one), and the library's view of points
 * read in their own type. */
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
    if (pcli_has_extension(path, ".npy") && info->type)
        printf("  read %zu %s from %s (%s%s)\n", info->rows, rows, path, info->type,
               info->mapped ? ", mapped: no copy" : ", converted");
    else if (pcli_has_extension(path, ".npy"))
        printf("  read %zu %s from %s\n", info->rows, rows, path);
    else if (info->header_line)
        printf("  read %zu %s from %s, header on line %zu skipped\n", info->rows, rows, path, info->header_line);
    else
        printf("  read %zu %s from %s, no header\n", info->rows, rows, path);
}

pc_points cli_points_view(const pcli_matrix *m)
{
    switch (m->type) {
    case PCLI_F64: return pc_points_f64(m->values, m->n, m->dim);
    case PCLI_U8: return pc_points_u8(m->values, m->n, m->dim);
    case PCLI_U16: return pc_points_u16(m->values, m->n, m->dim);
    case PCLI_F32: break;
    }
    return pc_points_f32(m->values, m->n, m->dim);
}

