/* HECA over points already in GPU memory (pc_heca_device): the passes over the points run on the GPU and
 * read the caller's rows in place, and so do the passes over the larger members' cells and over the
 * prototypes (src/heca/cuda_heca.cu; cuda_off.c without CUDA); heca.c runs the smaller members' stages,
 * builds the dendrograms and cuts on the host.
 * Grids here are dense (m^dim counters on the device). */
#ifndef PC_HECA_GPU_H
#define PC_HECA_GPU_H

#include "../hca/internal_hca.h"

typedef struct pc__heca_gpu pc__heca_gpu;

/* A state for rows of dim values of dtype on the current GPU; its buffers grow as runs need and are
 * kept (pc_heca_plan runs one state again and again). */
pc_status pc__heca_gpu_new(size_t dim, pc_dtype dtype, pc__heca_gpu **gpu);
/* A run over `points` (device memory on the state's GPU, aligned to the element size; they must stay
 * there, unchanged, until the run ends): their box lo[dim], hi[dim], found on the device. Pointers that
 * are not GPU memory (points->data, and device_labels unless NULL), misaligned ones, a stride shorter
 * than a row and a non-finite value are refused (PC_INVALID_ARGUMENT), before any kernel reads them. */
pc_status pc__heca_gpu_start(pc__heca_gpu *gpu, const pc_points *points, const int32_t *device_labels, double *lo,
                             double *hi);
void pc__heca_gpu_free(pc__heca_gpu *gpu); /* NULL-safe */
/* The members' grids g[0 .. L) (box, m and strides set; total[l] = m^dim, dense): the points counted on
 * the device as the CPU's cell rule puts them (several grids a pass where their counters fit a block's
 * shared memory; a grid nested in a larger one from that one's counts). The grids are the state's
 * until the run ends. */
pc_status pc__heca_gpu_count(pc__heca_gpu *gpu, pc__hca_grid *const *g, const uint64_t *total, size_t L);
/* Members whose cells the device finds at once: one a host thread, each on a lane of its own (a stream
 * and buffers), so that their round trips overlap. */
#define PC__HECA_LANES 8
/* Member l after pc__heca_gpu_count, on lane `lane` (0 .. PC__HECA_LANES - 1; a lane serves one call at a
 * time): its non-empty cells found (its grid's cells, key (increasing) and density: new host arrays),
 * their map and densities kept on the device (for pc__heca_gpu_cells and pc__heca_gpu_groups); with at
 * least device_from cell-neighbour pairs (cells x (3^dim - 1)), HCA's stages 2-5 run there too by the
 * plan's own passes: gr gets the grid's components and the minimum spanning forest of its component
 * graph (new host arrays), from which the dendrogram is HCA's. Fewer, and gr is left alone: the host's
 * stages are quicker on few cells than the device's round trips. */
pc_status pc__heca_gpu_member(pc__heca_gpu *gpu, size_t l, int lane, size_t device_from, pc__hca_graph *gr);
/* A member's components as pc__heca_gpu_groups needs them: each cell's, and the dendrogram as a forest
 * over them: up[c] the parent or -1, up_h[c] the height of the link to it (heca.c's member_forest); two
 * components join at the largest link between them. */
typedef struct {
    size_t components;
    const int32_t *component_of_cell;
    const int32_t *up;
    const double *up_h;
} pc__heca_member;
/* ALGORITHMS.md section 3a steps 2-4 on the device, after pc__heca_gpu_count of the same grids and
 * pc__heca_gpu_member of each (member[l]: member l's components, made on the device or the host): each
 * prototype (a cell of grid `ref`, its mean at mean[c * dim]) given its component in every member (as
 * heca.c's component_at), the averaged distance U of every adjacent pair, the groups (prototypes joined
 * through adjacent pairs that every member puts in one component; numbered, and their representative
 * chosen, as heca.c's group_graph does) and the minimum spanning forest of the graph between groups,
 * weighted by the smallest U of their adjacent pairs, into groups (new host arrays). */
pc_status pc__heca_gpu_groups(pc__heca_gpu *gpu, const pc__hca_grid *const *g, size_t L, size_t ref,
                              const double *mean, const pc__heca_member *member, pc__hca_graph *groups);
/* For grid g (one of those counted, its cells found): each point's cell into cell_of_point (n int32 of device memory)
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
