/* HCA's component graph (links, components, touching pairs) found by probing each cell's 3^d - 1
 * neighbours or by hashing the cells into 2^d shifted blocks (src/hca/graph_blocks.c), on the grid of
 * a multispectral-like image: pixels of C classes with random spectra and Gaussian noise, d bands.
 * Prints the cells, components, edges and the median seconds of each way (the graphs are compared).
 *
 * usage: bench_hca_graph [DIM [M [PIXELS [THREADS [RUNS]]]]]   (defaults 8 32 4000000 2 3) */
#include "../src/hca/internal_hca.h"
#include "bench_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static double time_graph(const pc__hca_grid *g, pc__hca_neighbour_way way, int runs, pc__hca_graph *out)
{
    double t[16];
    for (int r = 0; r < runs; r++) {
        double t0 = now();
        if (pc__hca_graph_build_by(g, out, way) != PC_OK) {
            fprintf(stderr, "graph: %s\n", pc_last_error());
            exit(1);
        }
        t[r] = now() - t0;
        if (r + 1 < runs)
            pc__hca_graph_free(out);
    }
    return median(t, runs);
}

int main(int argc, char **argv)
{
    size_t d = argc > 1 ? strtoul(argv[1], NULL, 10) : 8, n = argc > 3 ? strtoul(argv[3], NULL, 10) : 4000000;
    int m = argc > 2 ? atoi(argv[2]) : 32, threads = argc > 4 ? atoi(argv[4]) : 2, runs = argc > 5 ? atoi(argv[5]) : 3;
    if (d < 1 || d > PC__HCA_MAX_DIM || runs < 1 || runs > 16)
        return 2;
    uint64_t seed = 12345;
    enum { CLASSES = 12 };
    float spectra[CLASSES][PC__HCA_MAX_DIM];
    for (int c = 0; c < CLASSES; c++)
        for (size_t j = 0; j < d; j++)
            spectra[c][j] = (float)(next(&seed) % 200 + 20);
    float *x = malloc(n * d * sizeof *x);
    int32_t *scratch = malloc(n * sizeof *scratch);
    for (size_t i = 0; i < n; i++) {
        int c = (int)(next(&seed) % CLASSES);
        for (size_t j = 0; j < d; j++) {
            double u = ((double)(next(&seed) >> 11) + 1) * 0x1p-53, v = (double)(next(&seed) >> 11) * 0x1p-53;
            x[i * d + j] = spectra[c][j] + (float)(8 * sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
        }
    }
    pc_points pts = pc_points_f32(x, n, d);
    pc__hca_grid g;
    if (pc__hca_grid_build(&g, &pts, m, (size_t)1 << 30, threads, scratch) != PC_OK) {
        fprintf(stderr, "grid: %s\n", pc_last_error());
        return 1;
    }
    pc__hca_graph probe, blocks;
    double tb = time_graph(&g, PC__HCA_NEIGHBOURS_BLOCKS, runs, &blocks);
    double tp = time_graph(&g, PC__HCA_NEIGHBOURS_PROBE, runs, &probe);
    int same = probe.components == blocks.components && probe.edges == blocks.edges &&
               memcmp(probe.component_of_cell, blocks.component_of_cell, g.cells * sizeof(int32_t)) == 0 &&
               memcmp(probe.edge_h, blocks.edge_h, probe.edges * sizeof(double)) == 0;
    printf("dim %zu, m %d, %zu pixels, %d threads: %zu cells (%s), %zu components, %zu edges; probing %.4f s, "
           "blocks %.4f s (%.1fx); graphs %s\n",
           d, m, n, threads, g.cells, g.dense ? "dense" : "sparse", probe.components, probe.edges, tp, tb, tp / tb,
           same ? "identical" : "DIFFER");
    pc__hca_graph_free(&probe);
    pc__hca_graph_free(&blocks);
    pc__hca_grid_free(&g);
    free(x);
    free(scratch);
    return same ? 0 : 1;
}
