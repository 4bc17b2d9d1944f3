/* HECA over points already in GPU memory (pc_heca_device): the passes over the points run on the GPU and
 * read the caller's rows in place (src/heca/cuda_heca.cu; cuda_off.c without CUDA); heca.c does the
 * cells' work on the host, as for host points. Grids here are dense (m^dim counters on the device). */
#ifndef PC_HECA_GPU_H
#define PC_HECA_GPU_H

#include "../hca/internal_hca.h"

typedef struct pc__heca_gpu pc__heca_gpu;

/* The state for the rows of `points` (device memory on the current GPU, aligned to the element size;
 * they must stay there, unchanged, until the state is freed) and their box lo[dim], hi[dim], found on
 * the device. Pointers that are not GPU memory (points->data, and device_labels unless NULL), misaligned
 * ones, a stride shorter than a row and a non-finite value are refused (PC_INVALID_ARGUMENT), before
 * any kernel reads them, and no state made. */
pc_status pc__heca_gpu_new(const pc_points *points, const int32_t *device_labels, pc__heca_gpu **gpu, double *lo,
                           double *hi);
void pc__heca_gpu_free(pc__heca_gpu *gpu); /* NULL-safe */
/* The members' grids g[0 .. L) (box, m and strides set; total[l] = m^dim, dense): the points counted on
 * the device as the CPU's cell rule puts them (several grids a pass where their counters fit a block's
 * shared memory) and each grid's non-empty cells found: its cells, key (increasing) and density, new
 * host arrays. Grid `last` is done last, and its cells' map stays on the device for pc__heca_gpu_cells. */
pc_status pc__heca_gpu_count(pc__heca_gpu *gpu, pc__hca_grid *const *g, const uint64_t *total, size_t L, size_t last);
/* For grid g (dense, its cells found): each point's cell into cell_of_point (n int32 of device memory)
 * and each cell's values summed, then its count, into sums (cells x (dim + 1), host; the layout of the
 * GPU label pass's cluster sums): exact for integer rows; for floats in the fixed point of the GPU's
 * label pass (cuda_hca.cuh's pc__hca_scale), over the points' box. */
pc_status pc__heca_gpu_cells(pc__heca_gpu *gpu, const pc__hca_grid *g, int32_t *cell_of_point, double *sums);
/* labels (n int32 of device memory) from cells to clusters: labels[i] = cluster_of_cell[labels[i]];
 * host (n int32, or NULL): the labels copied there as well. */
pc_status pc__heca_gpu_clusters(pc__heca_gpu *gpu, int32_t *labels, const int32_t *cluster_of_cell, size_t cells,
                                int32_t *host);
/* n int32 of device memory, the state's, for a caller that wants the labels on the host only. */
pc_status pc__heca_gpu_scratch_labels(pc__heca_gpu *gpu, int32_t **labels);

#endif
