/* parclust._core: the module, and what every binding call shares (see core.h). */
#define PCPY_MODULE_FILE
#include "core.h"

int pcpy_points(PyObject *obj, const char *what, pc_points *out)
{
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a NumPy array", what);
        return -1;
    }
    PyArrayObject *a = (PyArrayObject *)obj;
    if (PyArray_NDIM(a) != 2) {
        PyErr_Format(PyExc_ValueError, "%s must be 2-D (n_samples, n_features), got %d dimensions", what,
                     PyArray_NDIM(a));
        return -1;
    }
    pc_dtype dtype;
    switch (PyArray_TYPE(a)) {
    case NPY_FLOAT32: dtype = PC_F32; break;
    case NPY_FLOAT64: dtype = PC_F64; break;
    case NPY_UINT8: dtype = PC_U8; break;
    case NPY_UINT16: dtype = PC_U16; break;
    default:
        PyErr_Format(PyExc_TypeError, "%s must be float32, float64, uint8 or uint16", what);
        return -1;
    }
    npy_intp n = PyArray_DIM(a, 0), dim = PyArray_DIM(a, 1), item = PyArray_ITEMSIZE(a);
    npy_intp s0 = PyArray_STRIDE(a, 0), s1 = PyArray_STRIDE(a, 1);
    /* Strides of a dimension of length 1 mean nothing (NumPy may set any). */
    int packed_values = dim == 1 || s1 == item;
    int rows_ok = n == 1 || (s0 >= dim * item && s0 % item == 0);
    if (!packed_values || !rows_ok || !PyArray_ISALIGNED(a)) {
        PyErr_Format(PyExc_ValueError, "%s: rows must be packed values with a positive row stride", what);
        return -1;
    }
    out->data = PyArray_DATA(a);
    out->n = (size_t)n;
    out->dim = (size_t)dim;
    out->stride = n == 1 ? 0 : (size_t)s0;
    out->dtype = dtype;
    return 0;
}

/* "parclust: stopped at 5.0% of the run" on the exception a signal handler raised (add_note, Python
 * 3.11 and later): where the library stopped, so that a user (and the tests) can tell a run cut short
 * from one that ran to its end before the exception was seen. */
static void note_where_stopped(double fraction)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *e = PyErr_GetRaisedException();
#else
    PyObject *type, *e, *tb;
    PyErr_Fetch(&type, &e, &tb);
    PyErr_NormalizeException(&type, &e, &tb);
#endif
    if (e && PyObject_HasAttrString(e, "add_note")) {
        char text[80];
        snprintf(text, sizeof text, "parclust: stopped at %.1f%% of the run", 100 * fraction);
        PyObject *r = PyObject_CallMethod(e, "add_note", "s", text);
        Py_XDECREF(r);
        PyErr_Clear(); /* a note that could not be added is no reason to lose the interrupt */
    }
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(e);
#else
    PyErr_Restore(type, e, tb);
#endif
}

int pcpy_progress(void *user, double fraction)
{
    pcpy_call *call = user;
    PyEval_RestoreThread(call->thread);
    if (PyErr_CheckSignals() != 0) {
        call->interrupted = 1;
        note_where_stopped(fraction);
    }
    call->thread = PyEval_SaveThread();
    return call->interrupted;
}

PyObject *pcpy_fail(const pcpy_call *call, pc_status status)
{
    if (call && call->interrupted && PyErr_Occurred())
        return NULL;
    const char *message = pc_last_error();
    if (!message[0])
        message = pc_status_string(status);
    PyObject *type = PyExc_RuntimeError;
    if (status == PC_INVALID_ARGUMENT)
        type = PyExc_ValueError;
    else if (status == PC_OUT_OF_MEMORY || status == PC_DEVICE_OUT_OF_MEMORY)
        type = PyExc_MemoryError;
    PyErr_SetString(type, message);
    return NULL;
}

int pcpy_check(const pcpy_call *call, pc_status status, pc_result *result)
{
    /* A Ctrl-C seen at the last callback of a run that then completed still stops the call. */
    if (status == PC_OK && !(call->interrupted && PyErr_Occurred()))
        return 0;
    pc_result_free(result);
    if (status != PC_OK)
        pcpy_fail(call, status);
    return -1;
}

int pcpy_backend(const char *name, pc_backend *out)
{
    if (pc_backend_parse(name, out) != PC_OK) {
        PyErr_Format(PyExc_ValueError, "backend must be 'auto', 'seq', 'openmp' or 'cuda', got '%s'", name);
        return -1;
    }
    return 0;
}

static void free_result(PyObject *capsule)
{
    pc_result_free(PyCapsule_GetPointer(capsule, "parclust.result"));
}

PyObject *pcpy_result_capsule(pc_result *result)
{
    PyObject *capsule = PyCapsule_New(result, "parclust.result", free_result);
    if (!capsule)
        pc_result_free(result);
    return capsule;
}

PyObject *pcpy_array(PyObject *capsule, const void *data, int nd, npy_intp d0, npy_intp d1, int type)
{
    if (!data)
        Py_RETURN_NONE;
    npy_intp dims[2] = {d0, d1};
    PyObject *array = PyArray_SimpleNewFromData(nd, dims, type, (void *)data);
    if (!array)
        return NULL;
    Py_INCREF(capsule);
    if (PyArray_SetBaseObject((PyArrayObject *)array, capsule) < 0) {
        Py_DECREF(array);
        return NULL;
    }
    return array;
}

static PyObject *info(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return Py_BuildValue("{s:s,s:i,s:O,s:i}", "version", pc_version(), "openmp_threads", pc_openmp_max_threads(),
                         "cuda_available", pc_backend_available(PC_BACKEND_CUDA) ? Py_True : Py_False,
                         "cuda_devices", pc_cuda_device_count());
}

static PyObject *backend_available(PyObject *self, PyObject *arg)
{
    (void)self;
    const char *name = PyUnicode_AsUTF8(arg);
    pc_backend backend;
    if (!name || pcpy_backend(name, &backend) < 0)
        return NULL;
    return PyBool_FromLong(pc_backend_available(backend));
}

/* generate(dataset, n, dim, clusters, spread, box, seed): pc_generate's points (float32) and labels, the
 * data the CLI's `parclust generate` and the C benchmarks make from the same seed. */
static PyObject *generate(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *kwlist[] = {"dataset", "n", "dim", "clusters", "spread", "box", "seed", NULL};
    pc_generate_params p;
    pc_generate_params_init(&p);
    const char *dataset = "blobs";
    Py_ssize_t n = (Py_ssize_t)p.n, dim = (Py_ssize_t)p.dim, clusters = (Py_ssize_t)p.clusters;
    unsigned long long seed = p.seed;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|snnnddK", kwlist, &dataset, &n, &dim, &clusters, &p.spread, &p.box,
                                     &seed))
        return NULL;
    if (pc_dataset_parse(dataset, &p.dataset) != PC_OK || n < 1 || dim < 1 || clusters < 1) {
        PyErr_Format(PyExc_ValueError, "generate: unknown dataset '%s' or n, dim, clusters < 1", dataset);
        return NULL;
    }
    p.n = (size_t)n;
    p.dim = (size_t)dim;
    p.clusters = (size_t)clusters;
    p.seed = seed;
    npy_intp dims[2] = {n, dim};
    PyObject *points = PyArray_EMPTY(2, dims, NPY_FLOAT32, 0), *labels = PyArray_EMPTY(1, dims, NPY_INT32, 0);
    if (!points || !labels) {
        Py_XDECREF(points);
        Py_XDECREF(labels);
        return NULL;
    }
    pcpy_call call;
    PCPY_RELEASE(call);
    pc_status status = pc_generate(&p, PyArray_DATA((PyArrayObject *)points), PyArray_DATA((PyArrayObject *)labels));
    PCPY_ACQUIRE(call);
    if (status != PC_OK) {
        Py_DECREF(points);
        Py_DECREF(labels);
        return pcpy_fail(&call, status);
    }
    return Py_BuildValue("(NN)", points, labels);
}

static PyMethodDef methods[] = {
    {"generate", (PyCFunction)(void (*)(void))generate, METH_VARARGS | METH_KEYWORDS, "pc_generate"},
    {"kmeans", (PyCFunction)(void (*)(void))pcpy_kmeans, METH_VARARGS | METH_KEYWORDS, "pc_kmeans"},
    {"meanshift", (PyCFunction)(void (*)(void))pcpy_meanshift, METH_VARARGS | METH_KEYWORDS, "pc_meanshift"},
    {"meanshift_image", (PyCFunction)(void (*)(void))pcpy_meanshift_image, METH_VARARGS | METH_KEYWORDS,
     "pc_meanshift_image"},
    {"hca", (PyCFunction)(void (*)(void))pcpy_hca, METH_VARARGS | METH_KEYWORDS, "pc_hca"},
    {"hca_label", (PyCFunction)(void (*)(void))pcpy_hca_label, METH_VARARGS | METH_KEYWORDS,
     "labels of new points from the grid of a fit (pc_hca_stream)"},
    {"hca_auto_m", pcpy_hca_auto_m, METH_VARARGS, "pc_hca_auto_m"},
    {"info", info, METH_NOARGS, "version, OpenMP threads, CUDA devices"},
    {"backend_available", backend_available, METH_O, "pc_backend_available"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "parclust._core",
                                    "parclust's C library (include/parclust.h), called without the GIL", -1,
                                    methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__core(void)
{
    import_array();
    return PyModule_Create(&module);
}
