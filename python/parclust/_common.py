"""What the estimators share: input checks that never copy what the library reads in place, n_jobs,
and nearest-centre search for predict and transform."""
import os

import numpy as np

# The library reads these in place; anything else is converted once, to the first (check_array's rule).
VIEW_DTYPES = [np.float64, np.float32, np.uint8, np.uint16]


def library_view(X):
    """X itself when the library can read it (rows of packed values, any positive row stride),
    else one C-contiguous copy."""
    n, d = X.shape
    item = X.itemsize
    rows = n == 1 or (X.strides[0] >= d * item and X.strides[0] % item == 0)
    values = d == 1 or X.strides[1] == item
    if rows and values and X.flags.aligned and X.dtype.isnative:
        return X
    return np.ascontiguousarray(X)


try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _validate_data

    _NO_FINITE_CHECK = {"ensure_all_finite": False}
except ImportError:  # Debian 12's 1.2
    def _validate_data(estimator, X, **kwargs):
        return estimator._validate_data(X, **kwargs)

    _NO_FINITE_CHECK = {"force_all_finite": False}


def validate(estimator, X, reset):
    """scikit-learn's check_array for predict and transform (NaN and inf refused there), n_features_in_."""
    return _validate_data(estimator, X, reset=reset, dtype=VIEW_DTYPES)


def fit_points(estimator, X, reset=True):
    """scikit-learn's checks (2-D, numbers, not sparse, at least one sample and feature; sets
    n_features_in_) without its pass over the values: the library checks them (NaN, inf) itself."""
    X = _validate_data(estimator, X, reset=reset, dtype=VIEW_DTYPES, copy=False, **_NO_FINITE_CHECK)
    return library_view(X)


def threads(n_jobs):
    """scikit-learn's n_jobs as OpenMP threads: None and -1 all cores (0: OpenMP's default)."""
    if n_jobs is None or n_jobs == -1:
        return 0
    n_jobs = int(n_jobs)
    if n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning")
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + n_jobs)
    return n_jobs


def float_dtype(X):
    return X.dtype if X.dtype in (np.float32, np.float64) else np.float64


def squared_distances(X, C):
    """(n, k) squared Euclidean distances, in X's float type, in row chunks of bounded memory."""
    dtype = float_dtype(X)
    X = np.asarray(X, dtype=dtype)
    C = np.asarray(C, dtype=dtype)
    cc = np.einsum("ij,ij->i", C, C)
    out = np.empty((X.shape[0], C.shape[0]), dtype=dtype)
    step = max(1, (1 << 22) // max(1, C.shape[0]))
    for i in range(0, X.shape[0], step):
        x = X[i:i + step]
        d = x @ C.T
        d *= -2
        d += np.einsum("ij,ij->i", x, x)[:, None]
        d += cc[None, :]
        np.maximum(d, 0, out=d)
        out[i:i + step] = d
    return out


def nearest(X, C):
    """Index of the nearest row of C for each row of X (int32), and the squared distance to it."""
    dtype = float_dtype(X)
    X = np.asarray(X, dtype=dtype)
    labels = np.empty(X.shape[0], dtype=np.int32)
    dist = np.empty(X.shape[0], dtype=dtype)
    step = max(1, (1 << 22) // max(1, C.shape[0]))
    for i in range(0, X.shape[0], step):
        d = squared_distances(X[i:i + step], C)
        labels[i:i + step] = np.argmin(d, axis=1)
        dist[i:i + step] = d[np.arange(d.shape[0]), labels[i:i + step]]
    return labels, dist


def run(function, X, *args, **kwargs):
    """function(X, ...) from parclust._core; a refusal of non-finite values says so in scikit-learn's
    words ("Input X contains NaN or infinity") before the library's own message, which names the place.
    The values are looked at only then: the library checks them while it reads them."""
    try:
        return function(X, *args, **kwargs)
    except ValueError as e:
        if X.dtype.kind == "f" and not np.isfinite(X).all():
            raise ValueError("Input X contains NaN or infinity: %s" % e) from None
        raise
