/* HECA on the GPU (members counted and labelled on the device, the cells' work on the host) against the
 * CPU: identical labels, dendrogram and components on pixel-like uint8 rows (3 and 4 bands, shifted
 * members too) and on float32 blobs; HCA-MS asked of the CUDA backend gives the CPU's labels. Exits 77
 * (skipped) without a device. */
#include "check.h"
#include "test_util.h"

#include <string.h>

static uint8_t *pixels(size_t n, size_t bands, uint64_t seed)
{
    uint8_t *img = malloc(n * bands);
    uint64_t s = seed | 1;
    uint8_t spectra[6][8];
    for (int c = 0; c < 6; c++)
        for (size_t b = 0; b < bands; b++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            spectra[c][b] = (uint8_t)(40 + (s >> 33) % 170);
        }
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int c = (int)((i / 4096 + (s >> 61)) % 6);
        for (size_t b = 0; b < bands; b++) {
            int v = spectra[c][b] + (int)((s >> (8 * b)) & 15) - (int)((s >> (8 * b + 4)) & 15);
            img[i * bands + b] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
    return img;
}

static void compare(const pc_points *v, int shifts, size_t clusters, const char *what)
{
    pc_heca_params p;
    pc_heca_params_init(&p);
    p.shifts = shifts;
    p.hca.clusters = clusters;
    pc_result *a = NULL, *b = NULL;
    p.hca.backend = PC_BACKEND_OPENMP;
    CHECK_STATUS(pc_heca(v, &p, &a), PC_OK);
    p.hca.backend = PC_BACKEND_CUDA;
    CHECK_STATUS(pc_heca(v, &p, &b), PC_OK);
    if (a && b) {
        CHECK(pc_result_backend(b) == PC_BACKEND_CUDA);
        size_t n = pc_result_n(a), ra, rb;
        size_t diff = 0;
        for (size_t i = 0; i < n; i++)
            diff += pc_result_labels(a)[i] != pc_result_labels(b)[i];
        CHECK_MSG(diff == 0, "%s: %zu of %zu labels differ", what, diff, n);
        const double *za = pc_result_dendrogram(a, &ra), *zb = pc_result_dendrogram(b, &rb);
        CHECK_MSG(ra == rb && (ra == 0 || memcmp(za, zb, ra * 4 * sizeof *za) == 0), "%s: dendrograms differ", what);
        size_t c = pc_result_component_count(a);
        CHECK(c == pc_result_component_count(b) && pc_result_cell_count(a) == pc_result_cell_count(b));
        CHECK(c == pc_result_component_count(b) &&
              memcmp(pc_result_component_sizes(a), pc_result_component_sizes(b), c * sizeof(int64_t)) == 0);
        for (size_t l = 0; l < pc_result_member_count(a); l++)
            CHECK(pc_result_member_components(a, l) == pc_result_member_components(b, l));
        printf("%s: %zu points, %zu groups, %zu clusters, %zu labels differ\n", what, n, c, pc_result_cluster_count(a),
               diff);
    }
    pc_result_free(a);
    pc_result_free(b);
}

int main(void)
{
    if (!pc_backend_available(PC_BACKEND_CUDA)) {
        printf("heca_cuda: no CUDA device (or built without CUDA): skipped\n");
        return 77;
    }
    uint64_t seed = test_seed("heca_cuda");
    size_t n = getenv("PC_TEST_QUICK") ? 200000 : 1500000; /* quick: under compute-sanitizer */
    for (size_t bands = 3; bands <= 4; bands++) {
        uint8_t *img = pixels(n, bands, seed + bands);
        pc_points v = pc_points_u8(img, n, bands);
        compare(&v, 0, 6, bands == 3 ? "uint8 x 3" : "uint8 x 4");
        compare(&v, 1, 6, bands == 3 ? "uint8 x 3, shifts" : "uint8 x 4, shifts");
        if (bands == 3) { /* HCA-MS asked of the GPU runs on the CPU: the same labels */
            pc_hca_params h;
            pc_hca_params_init(&h);
            h.clusters = 6;
            h.refine_borders = 1;
            pc_result *a = NULL, *b = NULL;
            h.backend = PC_BACKEND_OPENMP;
            CHECK_STATUS(pc_hca(&v, &h, &a), PC_OK);
            h.backend = PC_BACKEND_CUDA;
            CHECK_STATUS(pc_hca(&v, &h, &b), PC_OK);
            CHECK(a && b && memcmp(pc_result_labels(a), pc_result_labels(b), n * 4) == 0 &&
                  pc_result_changed_points(a) == pc_result_changed_points(b));
            pc_result_free(a);
            pc_result_free(b);
        }
        free(img);
    }
    int32_t *truth;
    size_t nf = getenv("PC_TEST_QUICK") ? 50000 : 200000;
    float *x = test_data(PC_DATASET_BLOBS, nf, 3, 6, 1.0, 10, seed, &truth);
    pc_points v = pc_points_f32(x, nf, 3);
    compare(&v, 0, 6, "float32 blobs");
    free(x);
    free(truth);
    return check_report("heca_cuda");
}
