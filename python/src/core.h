/* What the binding's C files share: the NumPy API table, pc_points views of arrays, the call guard
 * that releases the GIL and turns Ctrl-C into a cancelled run, status -> exception, and result arrays
 * that live as long as the pc_result they point into. Only include/parclust.h is called. */
#ifndef PARCLUST_PY_CORE_H
#define PARCLUST_PY_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL parclust_py_ARRAY_API
#ifndef PCPY_MODULE_FILE
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <parclust.h>

/* A view of a 2-D array of float32, float64, uint8 or uint16 whose rows are packed values with any
 * row stride (C order, or rows of a wider array): nothing is copied. `what` names the argument in
 * messages. The Python layer converts anything else once before calling; this only checks. */
int pcpy_points(PyObject *obj, const char *what, pc_points *out);

/* One library call without the GIL. The progress callback takes the GIL back for a moment to run
 * the signal handlers (PyErr_CheckSignals): Ctrl-C stops the run, which then fails with PC_CANCELLED
 * and leaves KeyboardInterrupt set. */
typedef struct {
    PyThreadState *thread;
    int interrupted;
} pcpy_call;

int pcpy_progress(void *user, double fraction);
#define PCPY_RELEASE(call) ((call).interrupted = 0, (call).thread = PyEval_SaveThread())
#define PCPY_ACQUIRE(call) PyEval_RestoreThread((call).thread)

/* After the call (GIL held): 0 when it succeeded and no Ctrl-C is pending; else -1 with the exception
 * set (pcpy_fail's, or the pending KeyboardInterrupt), the result freed. */
int pcpy_check(const pcpy_call *call, pc_status status, pc_result *result);

/* After a failed call (GIL held): the pending KeyboardInterrupt, or ValueError (bad argument),
 * MemoryError (host or GPU memory) or RuntimeError (the rest) with pc_last_error()'s text. NULL. */
PyObject *pcpy_fail(const pcpy_call *call, pc_status status);

int pcpy_backend(const char *name, pc_backend *out); /* 0, or -1 with ValueError */

/* A capsule owning the result (pc_result_free when the last array pointing into it goes). */
PyObject *pcpy_result_capsule(pc_result *result);
/* An array over `data` (owned by the capsule's result), or None where the result has none. */
PyObject *pcpy_array(PyObject *capsule, const void *data, int nd, npy_intp d0, npy_intp d1, int type);

PyObject *pcpy_kmeans(PyObject *self, PyObject *args, PyObject *kw);
PyObject *pcpy_meanshift(PyObject *self, PyObject *args, PyObject *kw);
PyObject *pcpy_meanshift_image(PyObject *self, PyObject *args, PyObject *kw);
PyObject *pcpy_hca(PyObject *self, PyObject *args, PyObject *kw);
PyObject *pcpy_hca_label(PyObject *self, PyObject *args, PyObject *kw);
PyObject *pcpy_hca_auto_m(PyObject *self, PyObject *args);

#endif
