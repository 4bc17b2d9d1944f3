/* HCA built without CUDA: its GPU plan and its streams' GPU state cannot be made, and say so. */
#include "internal_hca.h"

pc_status pc__hca_gpu_new(const pc_hca_params *params, size_t n, size_t dim, pc_dtype dtype, pc__hca_gpu **gpu)
{
    (void)params, (void)n, (void)dim, (void)dtype;
    *gpu = NULL;
    return pc__fail(PC_UNSUPPORTED, "HCA's CUDA backend was not built into this parclust");
}

void pc__hca_gpu_free(pc__hca_gpu *gpu) { (void)gpu; }

pc_status pc__hca_gpu_run(pc__hca_gpu *gpu, const pc_points *points, int device_input, int32_t *device_labels,
                          uint8_t *host_bytes, const pc_hca_params *params, int64_t min_size, pc_result *r)
{
    (void)gpu, (void)points, (void)device_input, (void)device_labels, (void)host_bytes, (void)params, (void)min_size;
    (void)r;
    return pc__fail(PC_UNSUPPORTED, "HCA's CUDA backend was not built into this parclust");
}

/* Streams too: PC_BACKEND_CUDA is refused at pc_hca_stream_create (pc__choose_backend says the CUDA
 * backend was not built); these answer the same should they be reached. */
#define PC__HCA_NO_CUDA "HCA's CUDA backend (pc_hca, plans and streams) was not built into this parclust"

pc_status pc__hca_stream_gpu_new(const pc_hca_params *params, size_t dim, int dense_allowed, pc__hca_stream_gpu **gpu)
{
    (void)params, (void)dim, (void)dense_allowed;
    *gpu = NULL;
    return pc__fail(PC_UNSUPPORTED, PC__HCA_NO_CUDA);
}

void pc__hca_stream_gpu_free(pc__hca_stream_gpu *gpu) { (void)gpu; }

pc_status pc__hca_stream_gpu_hold(pc__hca_stream_gpu *gpu, const pc_points *view, int device_input)
{
    (void)gpu, (void)view, (void)device_input;
    return pc__fail(PC_UNSUPPORTED, PC__HCA_NO_CUDA);
}

pc_status pc__hca_stream_gpu_bound(pc__hca_stream_gpu *gpu, const pc_points *block, double *lo, double *hi)
{
    (void)gpu, (void)block, (void)lo, (void)hi;
    return pc__fail(PC_UNSUPPORTED, PC__HCA_NO_CUDA);
}

pc_status pc__hca_stream_gpu_start(pc__hca_stream_gpu *gpu, const double *lo, const double *hi)
{
    (void)gpu, (void)lo, (void)hi;
    return pc__fail(PC_UNSUPPORTED, PC__HCA_NO_CUDA);
}

pc_status pc__hca_stream_gpu_add(pc__hca_stream_gpu *gpu, const pc_points *block, const pc__hca_fold_sink *sink)
{
    (void)gpu, (void)block, (void)sink;
    return pc__fail(PC_UNSUPPORTED, PC__HCA_NO_CUDA);
}

pc_status pc__hca_stream_gpu_fold(pc__hca_stream_gpu *gpu, const pc__hca_fold_sink *sink)
{
    (void)gpu, (void)sink;
    return pc__fail(PC_UNSUPPORTED, PC__HCA_NO_CUDA);
}

pc_status pc__hca_stream_gpu_label(pc__hca_stream_gpu *gpu, const pc_points *block, size_t cells, const uint64_t *keys,
                                   const int32_t *cluster_of_cell, size_t k, int32_t *labels, int labels_on_device,
                                   double *sums)
{
    (void)gpu, (void)block, (void)cells, (void)keys, (void)cluster_of_cell, (void)k, (void)labels, (void)sums;
    (void)labels_on_device;
    return pc__fail(PC_UNSUPPORTED, PC__HCA_NO_CUDA);
}

void pc__hca_stream_gpu_fold_every(pc__hca_stream_gpu *gpu, uint64_t rows) { (void)gpu, (void)rows; }

pc_status pc__hca_stream_gpu_graph(pc__hca_stream_gpu *gpu, size_t cells, const uint64_t *keys, const int64_t *density,
                                   pc__hca_graph *graph, int *done)
{
    (void)gpu, (void)cells, (void)keys, (void)density, (void)graph;
    *done = 0;
    return PC_OK;
}

pc_status pc__hca_cuda_refine(struct pc__hca_gpu *gpu, const pc_points *points, int device_input,
                              int32_t *device_labels, int32_t *host_labels, const pc_hca_params *params,
                              pc__hca_grid *g, const int32_t *cluster_of_cell, size_t k, double *sums, pc_result *r)
{
    (void)gpu, (void)points, (void)device_input, (void)device_labels, (void)host_labels, (void)params, (void)g;
    (void)cluster_of_cell, (void)k, (void)sums, (void)r;
    return pc__fail(PC_UNSUPPORTED, PC__HCA_NO_CUDA);
}
