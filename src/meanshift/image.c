/* Mean shift segmentation of images in the joint spatial-range domain (being written). */
#include "../core/internal.h"

#include <string.h>

void pc_meanshift_image_params_init(pc_meanshift_image_params *p)
{
    memset(p, 0, sizeof *p);
    p->spatial_bandwidth = 8;
    p->range_bandwidth = 16;
    p->min_region_size = 20;
    p->eps = 0.01;
    p->max_iter = 20;
    p->backend = PC_BACKEND_AUTO;
}

pc_status pc_meanshift_image(const pc_points *pixels, size_t width, size_t height, const uint8_t *valid,
                             const pc_meanshift_image_params *params, pc_result **result)
{
    (void)pixels, (void)width, (void)height, (void)valid, (void)params;
    if (result)
        *result = NULL;
    return pc__fail(PC_UNSUPPORTED, "image mean shift is not in this build yet");
}
