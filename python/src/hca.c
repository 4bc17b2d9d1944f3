/* parclust._core.hca and .hca_label: pc_hca on a view, and the cluster of new points' grid cells. */
#include "core.h"

static char *hca_kwlist[] = {"m", "clusters", "threshold", "min_cluster_size", "noise", "backend", "threads", NULL};

/* Parses the HCA keywords (after the positional arrays) into p. */
static int hca_params(PyObject *kw, pc_hca_params *p)
{
    pc_hca_params_init(p);
    Py_ssize_t clusters = 0;
    long long min_size = p->min_cluster_size;
    const char *backend = "auto";
    PyObject *none = PyTuple_New(0);
    if (!none)
        return -1;
    int ok = PyArg_ParseTupleAndKeywords(none, kw, "|indLpsi", hca_kwlist, &p->m, &clusters, &p->threshold,
                                         &min_size, &p->noise, &backend, &p->threads);
    Py_DECREF(none);
    if (!ok || pcpy_backend(backend, &p->backend) < 0)
        return -1;
    if (clusters < 0) {
        PyErr_Format(PyExc_ValueError, "n_clusters must be >= 1, got %zd", clusters);
        return -1;
    }
    p->clusters = (size_t)clusters;
    p->min_cluster_size = min_size;
    return 0;
}

PyObject *pcpy_hca(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    PyObject *x;
    pc_points points;
    pc_hca_params p;
    if (!PyArg_ParseTuple(args, "O", &x) || pcpy_points(x, "X", &points) < 0 || hca_params(kw, &p) < 0)
        return NULL;
    /* Ctrl-C: pc_hca reports between its stages and every 10 ms within its passes over the points. */
    pcpy_call call;
    p.progress = pcpy_progress;
    p.progress_user = &call;
    pc_result *r = NULL;
    PCPY_RELEASE(call);
    pc_status status = pc_hca(&points, &p, &r);
    PCPY_ACQUIRE(call);
    if (pcpy_check(&call, status, r) < 0)
        return NULL;
    PyObject *cap = pcpy_result_capsule(r);
    if (!cap)
        return NULL;
    npy_intp n = (npy_intp)pc_result_n(r), k = (npy_intp)pc_result_cluster_count(r), d = (npy_intp)points.dim;
    npy_intp nc = (npy_intp)pc_result_component_count(r);
    size_t rows = 0;
    const double *dendrogram = pc_result_dendrogram(r, &rows);
    npy_intp no_merges[2] = {0, 4}; /* one component: a dendrogram without rows */
    PyObject *out = Py_BuildValue(
        "{s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:n,s:n,s:s}", "labels", pcpy_array(cap, pc_result_labels(r), 1, n, 0, NPY_INT32),
        "centers", pcpy_array(cap, pc_result_centers(r), 2, k, d, NPY_FLOAT32), "sizes",
        pcpy_array(cap, pc_result_sizes(r), 1, k, 0, NPY_INT64), "dendrogram",
        rows ? pcpy_array(cap, dendrogram, 2, (npy_intp)rows, 4, NPY_FLOAT64)
             : PyArray_ZEROS(2, no_merges, NPY_FLOAT64, 0),
        "component_cells", pcpy_array(cap, pc_result_component_cells(r), 1, nc, 0, NPY_INT64),
        "component_densities", pcpy_array(cap, pc_result_component_densities(r), 1, nc, 0, NPY_INT64),
        "component_sizes", pcpy_array(cap, pc_result_component_sizes(r), 1, nc, 0, NPY_INT64), "n_components", nc,
        "cells", (Py_ssize_t)pc_result_cell_count(r), "backend", pc_backend_name(pc_result_backend(r)));
    Py_DECREF(cap);
    return out;
}

/* hca_label(train, X, **params): X's labels from the grid pc_hca builds on `train` with these params
 * (pc_hca_stream over train: the same box, clusters and numbering as pc_hca's), -1 in cells train
 * left empty. */
PyObject *pcpy_hca_label(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    PyObject *t, *x;
    pc_points train, points;
    pc_hca_params p;
    if (!PyArg_ParseTuple(args, "OO", &t, &x) || pcpy_points(t, "the training points", &train) < 0 ||
        pcpy_points(x, "X", &points) < 0 || hca_params(kw, &p) < 0)
        return NULL;
    npy_intp n = (npy_intp)points.n;
    PyObject *labels = PyArray_EMPTY(1, &n, NPY_INT32, 0);
    if (!labels)
        return NULL;
    pcpy_call call;
    pc_hca_stream *s = NULL;
    pc_result *r = NULL;
    PCPY_RELEASE(call);
    /* The stream takes no progress callback: Ctrl-C is looked for between its passes. */
    pc_status status = pc_hca_stream_create(&p, train.dim, &s);
    if (status == PC_OK)
        status = pc_hca_stream_bound(s, &train);
    if (status == PC_OK && !pcpy_progress(&call, 0.25))
        status = pc_hca_stream_add(s, &train);
    if (status == PC_OK && !pcpy_progress(&call, 0.5))
        status = pc_hca_stream_finish(s, &r);
    if (status == PC_OK && !pcpy_progress(&call, 0.75))
        status = pc_hca_stream_label(s, &points, PyArray_DATA((PyArrayObject *)labels), NULL);
    PCPY_ACQUIRE(call);
    pc_result_free(r);
    pc_hca_stream_free(s);
    if (call.interrupted && PyErr_Occurred()) {
        Py_DECREF(labels);
        return NULL;
    }
    if (status != PC_OK) {
        Py_DECREF(labels);
        return pcpy_fail(&call, status);
    }
    return labels;
}

/* hca_auto_m(n, dim): the m that m = 0 resolves to (pc_hca_auto_m), for predict's grid. */
PyObject *pcpy_hca_auto_m(PyObject *self, PyObject *args)
{
    (void)self;
    unsigned long long n;
    Py_ssize_t dim;
    if (!PyArg_ParseTuple(args, "Kn", &n, &dim))
        return NULL;
    if (dim < 1) {
        PyErr_SetString(PyExc_ValueError, "dim must be >= 1");
        return NULL;
    }
    return PyLong_FromLong(pc_hca_auto_m((uint64_t)n, (size_t)dim));
}
