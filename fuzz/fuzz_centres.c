/* libFuzzer target: the initial centres of k-means (`parclust kmeans --init FILE`): the points reader
 * on a small text or .npy file, then what cmd_kmeans does with it: the k x d check against the input's
 * and the float32 copy handed to the library. The first byte picks the format, --header, k and d. */
#include "fuzz_file.h"
#include "points_io.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *path = fuzz_file(0, data[0] & 1 ? ".npy" : ".csv", data + 1, size - 1);
    pcli_header header = (pcli_header)((data[0] >> 1) % 3);
    size_t k = 1 + (data[0] >> 3 & 3), d = 1 + (data[0] >> 5);
    pcli_matrix m;
    pcli_read_info info;
    char err[512];
    if (pcli_read_points_ex(path, header, &m, &info, err, sizeof err) == 0) {
        if (m.n == k && m.dim == d) {
            const float *c = pcli_matrix_f32(&m, err, sizeof err);
            if (!c)
                abort();
            volatile float sink = 0;
            for (size_t i = 0; i < k * d; i++)
                sink += isfinite(c[i]) ? 0 : 1;
            (void)sink;
        }
    } else if (!err[0] || strchr(err, '\n')) {
        abort();
    }
    pcli_matrix_free(&m);
    return 0;
}
