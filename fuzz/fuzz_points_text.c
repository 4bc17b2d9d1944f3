/* libFuzzer target: the text points reader (CSV, TSV, ';' and blank separated; headers, comments,
 * BOM, CR/CRLF, UTF-16 detection), as `parclust meanshift|kmeans|hca FILE.csv` reads it. The first
 * byte picks the extension and --header; the rest is the file. */
#include "fuzz_file.h"
#include "points_io.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const ext[] = {".csv", ".tsv", ".txt", ".dat"};
    if (size < 1)
        return 0;
    const char *path = fuzz_file(0, ext[data[0] & 3], data + 1, size - 1);
    pcli_header header = (pcli_header)((data[0] >> 2) % 3);
    pcli_matrix m;
    pcli_read_info info;
    char err[512];
    if (pcli_read_points_ex(path, header, &m, &info, err, sizeof err) == 0) {
        /* What the reader promises on success: n, dim >= 1, finite float32 values, the rows counted. */
        const float *v = m.values;
        if (m.n < 1 || m.dim < 1 || m.type != PCLI_F32 || info.rows != m.n)
            abort();
        for (size_t i = 0; i < m.n * m.dim; i++)
            if (!isfinite(v[i]))
                abort();
    } else if (!err[0] || strchr(err, '\n')) {
        abort(); /* a refusal is one line */
    }
    pcli_matrix_free(&m);
    return 0;
}
