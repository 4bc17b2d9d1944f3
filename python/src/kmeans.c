/* parclust._core.kmeans: pc_kmeans on a view of the caller's array. */
#include "core.h"

#include <string.h>

static int parse_init(const char *name, pc_kmeans_init *out)
{
    /* scikit-learn's names, and the library's own ("kmeans++", "kmeans-par"). */
    if (!strcmp(name, "k-means++") || !strcmp(name, "kmeans++"))
        *out = PC_INIT_KMEANSPP;
    else if (!strcmp(name, "random"))
        *out = PC_INIT_RANDOM;
    else if (!strcmp(name, "k-means||") || !strcmp(name, "kmeans-par"))
        *out = PC_INIT_KMEANS_PARALLEL;
    else if (!strcmp(name, "given"))
        *out = PC_INIT_GIVEN;
    else {
        PyErr_Format(PyExc_ValueError, "init must be 'k-means++', 'random', 'k-means||' or an array, got '%s'",
                     name);
        return -1;
    }
    return 0;
}

PyObject *pcpy_kmeans(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"X", "k", "init", "centers", "n_init", "max_iter", "tol", "seed", "backend", "threads",
                             "algorithm", NULL};
    PyObject *x, *centers = Py_None;
    Py_ssize_t k;
    const char *init = "k-means++", *backend = "auto", *algorithm = "auto";
    int n_init = 1, max_iter = 300, threads = 0;
    double tol = 1e-4;
    unsigned long long seed = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "On|sOiidKsis", kwlist, &x, &k, &init, &centers, &n_init, &max_iter,
                                     &tol, &seed, &backend, &threads, &algorithm))
        return NULL;
    pc_points points;
    if (pcpy_points(x, "X", &points) < 0)
        return NULL;
    pc_kmeans_params p;
    pc_kmeans_params_init(&p);
    if (parse_init(init, &p.init) < 0 || pcpy_backend(backend, &p.backend) < 0)
        return NULL;
    if (pc_kmeans_algorithm_parse(algorithm, &p.algorithm) != PC_OK) {
        PyErr_Format(PyExc_ValueError, "algorithm must be 'auto', 'lloyd' or 'hamerly', got '%s'", algorithm);
        return NULL;
    }
    if (k < 1) {
        PyErr_Format(PyExc_ValueError, "n_clusters must be >= 1, got %zd", k);
        return NULL;
    }
    p.k = (size_t)k;
    if (p.init == PC_INIT_GIVEN) {
        PyArrayObject *c = (PyArrayObject *)centers;
        if (!PyArray_Check(centers) || PyArray_TYPE(c) != NPY_FLOAT32 || !PyArray_IS_C_CONTIGUOUS(c) ||
            PyArray_NDIM(c) != 2 || PyArray_DIM(c, 0) != k || PyArray_DIM(c, 1) != (npy_intp)points.dim) {
            PyErr_Format(PyExc_ValueError, "the initial centres must be a C-contiguous float32 array of shape "
                         "(%zd, %zu)", k, points.dim);
            return NULL;
        }
        p.initial_centers = PyArray_DATA(c);
    }
    p.n_init = n_init;
    p.max_iter = max_iter;
    p.tol = tol;
    p.seed = seed;
    p.threads = threads;
    pcpy_call call;
    p.progress = pcpy_progress;
    p.progress_user = &call;
    pc_result *r = NULL;
    PCPY_RELEASE(call);
    pc_status status = pc_kmeans(&points, &p, &r);
    PCPY_ACQUIRE(call);
    if (pcpy_check(&call, status, r) < 0)
        return NULL;
    PyObject *cap = pcpy_result_capsule(r);
    if (!cap)
        return NULL;
    npy_intp n = (npy_intp)pc_result_n(r), kk = (npy_intp)pc_result_cluster_count(r);
    PyObject *out = Py_BuildValue("{s:N,s:N,s:N,s:d,s:i,s:s,s:s}", "labels",
                                  pcpy_array(cap, pc_result_labels(r), 1, n, 0, NPY_INT32), "centers",
                                  pcpy_array(cap, pc_result_centers(r), 2, kk, (npy_intp)points.dim, NPY_FLOAT32),
                                  "sizes", pcpy_array(cap, pc_result_sizes(r), 1, kk, 0, NPY_INT64), "inertia",
                                  pc_result_inertia(r), "n_iter", pc_result_iterations(r), "backend",
                                  pc_backend_name(pc_result_backend(r)), "algorithm",
                                  pc_kmeans_algorithm_name(pc_result_kmeans_algorithm(r)));
    Py_DECREF(cap);
    return out;
}
