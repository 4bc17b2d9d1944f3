/* HECA built without CUDA: its GPU state for points in device memory cannot be made, and says so. */
#include "heca_gpu.h"

#define PC__HECA_NO_CUDA "HECA on points in GPU memory needs the CUDA backend, not built into this parclust"

pc_status pc__heca_gpu_new(size_t dim, pc_dtype dtype, pc__heca_gpu **gpu)
{
    (void)dim, (void)dtype;
    *gpu = NULL;
    return pc__fail(PC_UNSUPPORTED, PC__HECA_NO_CUDA);
}

pc_status pc__heca_gpu_start(pc__heca_gpu *gpu, const pc_points *points, const int32_t *device_labels, double *lo,
                             double *hi)
{
    (void)gpu, (void)points, (void)device_labels, (void)lo, (void)hi;
    return pc__fail(PC_UNSUPPORTED, PC__HECA_NO_CUDA);
}

void pc__heca_gpu_free(pc__heca_gpu *gpu) { (void)gpu; }

pc_status pc__heca_gpu_count(pc__heca_gpu *gpu, pc__hca_grid *const *g, const uint64_t *total, size_t L)
{
    (void)gpu, (void)g, (void)total, (void)L;
    return pc__fail(PC_UNSUPPORTED, PC__HECA_NO_CUDA);
}

pc_status pc__heca_gpu_member(pc__heca_gpu *gpu, size_t l, int lane, size_t device_from, pc__hca_graph *gr)
{
    (void)gpu, (void)l, (void)lane, (void)device_from, (void)gr;
    return pc__fail(PC_UNSUPPORTED, PC__HECA_NO_CUDA);
}

pc_status pc__heca_gpu_groups(pc__heca_gpu *gpu, const pc__hca_grid *const *g, size_t L, size_t ref,
                              const double *mean, const pc__heca_member *member, pc__hca_graph *groups)
{
    (void)gpu, (void)g, (void)L, (void)ref, (void)mean, (void)member, (void)groups;
    return pc__fail(PC_UNSUPPORTED, PC__HECA_NO_CUDA);
}

pc_status pc__heca_gpu_cells(pc__heca_gpu *gpu, const pc__hca_grid *g, int32_t *cell_of_point, double *sums)
{
    (void)gpu, (void)g, (void)cell_of_point, (void)sums;
    return pc__fail(PC_UNSUPPORTED, PC__HECA_NO_CUDA);
}

pc_status pc__heca_gpu_clusters(pc__heca_gpu *gpu, int32_t *labels, const int32_t *cluster_of_cell, size_t cells,
                                int32_t *host)
{
    (void)gpu, (void)labels, (void)cluster_of_cell, (void)cells, (void)host;
    return pc__fail(PC_UNSUPPORTED, PC__HECA_NO_CUDA);
}

pc_status pc__heca_gpu_scratch_labels(pc__heca_gpu *gpu, int32_t **labels)
{
    (void)gpu;
    *labels = NULL;
    return pc__fail(PC_UNSUPPORTED, PC__HECA_NO_CUDA);
}
