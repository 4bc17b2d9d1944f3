/* libFuzzer target: the labels reader (`parclust score --truth/--pred`, one integer a line or .npy
 * of '<i4', '<i8', '<f4', '<f8'). The first byte picks text or .npy and --header; the rest is the file. */
#include "fuzz_file.h"
#include "points_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *path = fuzz_file(0, data[0] & 1 ? ".npy" : ".csv", data + 1, size - 1);
    pcli_header header = (pcli_header)((data[0] >> 1) % 3);
    int32_t *labels = NULL;
    size_t n = 0;
    pcli_read_info info;
    char err[512];
    if (pcli_read_labels_ex(path, header, &labels, &n, &info, err, sizeof err) == 0) {
        volatile int32_t sink = 0;
        if (n < 1 || info.rows != n)
            abort();
        for (size_t i = 0; i < n; i++)
            sink ^= labels[i];
        (void)sink;
    } else if (!err[0] || strchr(err, '\n') || labels) {
        abort();
    }
    free(labels);
    return 0;
}
