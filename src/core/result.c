/* The one opaque result object every algorithm returns, and its getters. */
#include "internal.h"

#include <stdlib.h>

pc_status pc__begin_shape(const pc_points *points, const void *params, pc_result **result)
{
    if (!result)
        return pc__fail(PC_INVALID_ARGUMENT, "result pointer is NULL");
    *result = NULL;
    if (!params)
        return pc__fail(PC_INVALID_ARGUMENT, "parameters are NULL");
    pc__clear_error();
    return pc__points_check_shape(points);
}

pc_status pc__begin_plan(const void *params, size_t n, size_t dim, pc_dtype dtype, const char *what)
{
    if (!params)
        return pc__fail(PC_INVALID_ARGUMENT, "parameters are NULL");
    pc__clear_error();
    if (n == 0 || dim == 0)
        return pc__fail(PC_INVALID_ARGUMENT, "%s needs n >= 1 and dim >= 1, got %zu x %zu", what, n, dim);
    if (dtype != PC_F32 && dtype != PC_F64 && dtype != PC_U8 && dtype != PC_U16)
        return pc__fail(PC_INVALID_ARGUMENT, "unknown point type %d", (int)dtype);
    return PC_OK;
}

pc_status pc__begin(const pc_points *points, const void *params, pc_result **result)
{
    pc_status st = pc__begin_shape(points, params, result);
    return st != PC_OK ? st : pc_points_check(points);
}

pc_result *pc__result_new(size_t n, size_t dim)
{
    pc_result *r = pc__calloc(1, sizeof *r, "result");
    if (!r)
        return NULL;
    r->n = n;
    r->dim = dim;
    return r;
}

void pc__result_add_stage(pc_result *result, const char *name, double seconds)
{
    if (result->stage_count < PC__MAX_STAGES) {
        result->stage_names[result->stage_count] = name;
        result->stage_seconds[result->stage_count] = seconds;
        result->stage_count++;
    }
}

void pc_result_free(pc_result *result)
{
    if (!result)
        return;
    free(result->labels);
    free(result->centers);
    free(result->sizes);
    free(result->modes);
    free(result->dendrogram);
    free(result->component_cells);
    free(result->component_densities);
    free(result->component_sizes);
    free(result);
}

size_t pc_result_n(const pc_result *r) { return r ? r->n : 0; }
size_t pc_result_dim(const pc_result *r) { return r ? r->dim : 0; }
size_t pc_result_cluster_count(const pc_result *r) { return r ? r->k : 0; }
const int32_t *pc_result_labels(const pc_result *r) { return r ? r->labels : NULL; }
const float *pc_result_centers(const pc_result *r) { return r ? r->centers : NULL; }
const int64_t *pc_result_sizes(const pc_result *r) { return r ? r->sizes : NULL; }
const float *pc_result_modes(const pc_result *r) { return r ? r->modes : NULL; }
int pc_result_iterations(const pc_result *r) { return r ? r->iterations : 0; }
double pc_result_inertia(const pc_result *r) { return r ? r->inertia : 0.0; }
size_t pc_result_stage_count(const pc_result *r) { return r ? r->stage_count : 0; }
pc_backend pc_result_backend(const pc_result *r) { return r ? r->backend : PC_BACKEND_AUTO; }

pc_status pc_result_stage(const pc_result *r, size_t index, const char **name, double *seconds)
{
    if (!r || index >= r->stage_count)
        return pc__fail(PC_INVALID_ARGUMENT, "stage index %zu out of range", index);
    if (name)
        *name = r->stage_names[index];
    if (seconds)
        *seconds = r->stage_seconds[index];
    return PC_OK;
}

const double *pc_result_dendrogram(const pc_result *r, size_t *rows)
{
    if (rows)
        *rows = r && r->dendrogram && r->components ? r->components - 1 : 0;
    return r ? r->dendrogram : NULL;
}
size_t pc_result_component_count(const pc_result *r) { return r ? r->components : 0; }
const int64_t *pc_result_component_cells(const pc_result *r) { return r ? r->component_cells : NULL; }
const int64_t *pc_result_component_densities(const pc_result *r) { return r ? r->component_densities : NULL; }
const int64_t *pc_result_component_sizes(const pc_result *r) { return r ? r->component_sizes : NULL; }
size_t pc_result_cell_count(const pc_result *r) { return r ? r->cells : 0; }
