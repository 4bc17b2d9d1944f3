/* libFuzzer target: rasters through the project's GDAL reading code (`parclust segment FILE`): the
 * input checks, then pcli_image_read of a GeoTIFF (or, by the first byte, a PNG or .npy image) with
 * every band, nodata from the file. Built where GDAL is (PARCLUST_GDAL). */
#include "fuzz_file.h"
#include "raster_io.h"

/* As `parclust segment` does (check_limits, before any pixel is allocated): an image larger than the
 * memory it may hold is refused at its header. A few bytes of compressed GeoTIFF can say 5 GiB of
 * pixels, which a real run streams or refuses; here 256 MiB is the bound, under libFuzzer's 2 GiB. */
static int header_fits(const pcli_image *im, void *ctx, char *err, size_t errsize)
{
    (void)ctx;
    double bytes = (double)im->width * (double)im->height * (double)im->bands * (double)pcli_pixtype_size(im->type);
    if (bytes > 256.0 * 1024 * 1024) {
        snprintf(err, errsize, "%.0f bytes of pixels: over the fuzzing bound", bytes);
        return -1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const ext[] = {".tif", ".tif", ".png", ".npy"};
    if (size < 1)
        return 0;
    const char *path = fuzz_file(0, ext[data[0] & 3], data + 1, size - 1);
    char err[1024];
    if (pcli_check_input_file(path, err, sizeof err) != 0)
        return 0;
    pcli_read_options opt;
    memset(&opt, 0, sizeof opt);
    opt.threads = 1;
    opt.check_header = header_fits;
    pcli_image im;
    memset(&im, 0, sizeof im);
    if (pcli_image_read(path, &opt, &im, err, sizeof err) == 0) {
        size_t valid = 0;
        for (size_t i = 0; i < im.width * im.height; i++)
            valid += (size_t)pcli_image_is_valid(&im, i);
        if (im.width < 1 || im.height < 1 || im.bands < 1 || valid != im.n_valid)
            abort();
    } else if (!err[0]) {
        abort();
    }
    pcli_image_free(&im);
    return 0;
}
