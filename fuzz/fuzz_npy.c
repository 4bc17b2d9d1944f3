/* libFuzzer target: the .npy points reader (header dict, dtype, shape, order, size checks; the data
 * mapped or converted), as `parclust meanshift|kmeans|hca FILE.npy` reads it, plus the float32 copy
 * the plots make. The input is the whole file. */
#include "fuzz_file.h"
#include "points_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(0, ".npy", data, size);
    pcli_matrix m;
    pcli_read_info info;
    char err[512];
    if (pcli_read_points_ex(path, PCLI_HEADER_AUTO, &m, &info, err, sizeof err) == 0) {
        static const size_t item[] = {4, 8, 1, 2};
        if (m.n < 1 || m.dim < 1 || m.n > size / m.dim || (m.map && m.n * m.dim * item[m.type] > size))
            abort(); /* more values than the file holds (a converted type may take more room than the file) */
        volatile unsigned char sink = 0; /* every value readable */
        const unsigned char *b = m.values;
        for (size_t i = 0; i < m.n * m.dim * item[m.type]; i++)
            sink ^= b[i];
        (void)sink;
        if (!pcli_matrix_f32(&m, err, sizeof err))
            abort();
    } else if (!err[0] || strchr(err, '\n')) {
        abort();
    }
    pcli_matrix_free(&m);
    return 0;
}
