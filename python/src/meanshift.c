/* parclust._core.meanshift and .meanshift_image: pc_meanshift and pc_meanshift_image on views. */
#include "core.h"

PyObject *pcpy_meanshift(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"X", "bandwidth", "kernel", "radius", "eps", "max_iter", "merge_radius", "blurring",
                             "backend", "threads", NULL};
    PyObject *x;
    double bandwidth, radius = 0, eps = -1, merge_radius = -1;
    const char *kernel = "gaussian", *backend = "auto";
    int max_iter = 300, blurring = 0, threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Od|sddidpsi", kwlist, &x, &bandwidth, &kernel, &radius, &eps,
                                     &max_iter, &merge_radius, &blurring, &backend, &threads))
        return NULL;
    pc_points points;
    if (pcpy_points(x, "X", &points) < 0)
        return NULL;
    pc_meanshift_params p;
    pc_meanshift_params_init(&p);
    if (pc_kernel_parse(kernel, &p.kernel) != PC_OK) {
        PyErr_Format(PyExc_ValueError, "kernel must be 'gaussian', 'flat' or 'epanechnikov', got '%s'", kernel);
        return NULL;
    }
    if (pcpy_backend(backend, &p.backend) < 0)
        return NULL;
    p.bandwidth = bandwidth;
    p.radius = radius;
    p.eps = eps;
    p.max_iter = max_iter;
    p.merge_radius = merge_radius;
    p.blurring = blurring;
    p.threads = threads;
    pcpy_call call;
    p.progress = pcpy_progress;
    p.progress_user = &call;
    pc_result *r = NULL;
    PCPY_RELEASE(call);
    pc_status status = pc_meanshift(&points, &p, &r);
    PCPY_ACQUIRE(call);
    if (pcpy_check(&call, status, r) < 0)
        return NULL;
    PyObject *cap = pcpy_result_capsule(r);
    if (!cap)
        return NULL;
    npy_intp n = (npy_intp)pc_result_n(r), k = (npy_intp)pc_result_cluster_count(r), d = (npy_intp)points.dim;
    PyObject *out = Py_BuildValue(
        "{s:N,s:N,s:N,s:N,s:i,s:s}", "labels", pcpy_array(cap, pc_result_labels(r), 1, n, 0, NPY_INT32), "centers",
        pcpy_array(cap, pc_result_centers(r), 2, k, d, NPY_FLOAT32), "modes",
        pcpy_array(cap, pc_result_modes(r), 2, n, d, NPY_FLOAT32), "sizes",
        pcpy_array(cap, pc_result_sizes(r), 1, k, 0, NPY_INT64), "n_iter", pc_result_iterations(r), "backend",
        pc_backend_name(pc_result_backend(r)));
    Py_DECREF(cap);
    return out;
}

/* pixels: (H x W, B) view; valid: None or H x W uint8 (0 = nodata), C-contiguous. */
PyObject *pcpy_meanshift_image(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"pixels", "width", "height", "valid", "spatial_bandwidth", "range_bandwidth",
                             "min_region_size", "eps", "max_iter", "backend", "threads", NULL};
    PyObject *x, *valid = Py_None;
    Py_ssize_t width, height;
    pc_meanshift_image_params p;
    pc_meanshift_image_params_init(&p);
    long long min_region_size = p.min_region_size;
    const char *backend = "auto";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Onn|OddLdisi", kwlist, &x, &width, &height, &valid,
                                     &p.spatial_bandwidth, &p.range_bandwidth, &min_region_size, &p.eps,
                                     &p.max_iter, &backend, &p.threads))
        return NULL;
    pc_points pixels;
    if (pcpy_points(x, "image", &pixels) < 0 || pcpy_backend(backend, &p.backend) < 0)
        return NULL;
    if (width < 1 || height < 1 || (size_t)width * (size_t)height != pixels.n) {
        PyErr_SetString(PyExc_ValueError, "width x height must be the number of pixels");
        return NULL;
    }
    const uint8_t *mask = NULL;
    if (valid != Py_None) {
        PyArrayObject *v = (PyArrayObject *)valid;
        if (!PyArray_Check(valid) || PyArray_TYPE(v) != NPY_UINT8 || !PyArray_IS_C_CONTIGUOUS(v) ||
            PyArray_SIZE(v) != (npy_intp)pixels.n) {
            PyErr_SetString(PyExc_ValueError, "valid must be a C-contiguous uint8 array of height x width");
            return NULL;
        }
        mask = PyArray_DATA(v);
    }
    p.min_region_size = min_region_size;
    pcpy_call call;
    p.progress = pcpy_progress;
    p.progress_user = &call;
    pc_result *r = NULL;
    PCPY_RELEASE(call);
    pc_status status = pc_meanshift_image(&pixels, (size_t)width, (size_t)height, mask, &p, &r);
    PCPY_ACQUIRE(call);
    if (pcpy_check(&call, status, r) < 0)
        return NULL;
    PyObject *cap = pcpy_result_capsule(r);
    if (!cap)
        return NULL;
    npy_intp k = (npy_intp)pc_result_cluster_count(r);
    PyObject *out = Py_BuildValue("{s:N,s:N,s:N,s:i}", "labels",
                                  pcpy_array(cap, pc_result_labels(r), 2, height, width, NPY_INT32), "centers",
                                  pcpy_array(cap, pc_result_centers(r), 2, k, (npy_intp)pixels.dim, NPY_FLOAT32),
                                  "sizes", pcpy_array(cap, pc_result_sizes(r), 1, k, 0, NPY_INT64), "n_iter",
                                  pc_result_iterations(r));
    Py_DECREF(cap);
    return out;
}
