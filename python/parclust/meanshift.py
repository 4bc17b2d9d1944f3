"""parclust.MeanShift: mean shift (pc_meanshift) with scikit-learn's MeanShift interface."""
import math

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._common import fit_points, nearest, run, squared_distances, threads, validate


class MeanShift(ClusterMixin, BaseEstimator):
    """Mean shift clustering from every point, on all cores or the GPU.

    With kernel='flat' (the default, scikit-learn's kernel) a point moves to the mean of the points
    within `bandwidth`; 'gaussian' and 'epanechnikov' weigh them. Modes closer than merge_radius form
    one cluster.

    Parameters
    ----------
    bandwidth : float or None
        h, in data units; None: sklearn.cluster.estimate_bandwidth(X) (a quantile of the distances).
    kernel : 'flat', 'gaussian' or 'epanechnikov', default 'flat'
    radius : float or None
        Cut-off: only points within it count. None: h for flat and epanechnikov, unbounded for
        gaussian. A finite radius lets the library use its neighbour grid.
    max_iter : int, default 300
    tol : float or None
        A point stops once a shift moves it by <= tol; None: 1e-3 h (scikit-learn's rule).
    merge_radius : float or None
        Modes closer than this form one cluster; None: h / 2.
    blurring : bool, default False
        Blurring mean shift: the points move too.
    backend : 'auto', 'seq', 'openmp' or 'cuda'
    n_jobs : int or None
        OpenMP threads (None or -1: all cores).

    Attributes
    ----------
    cluster_centers_ : (n_clusters, n_features) float32, the mean of each cluster's modes
    labels_ : (n_samples,) int32, clusters numbered by size, largest first
    modes_ : (n_samples, n_features) float32, where each point converged
    n_iter_ : int, the most shifts any point took
    bandwidth_ : float, the bandwidth used
    n_features_in_ : int
    backend_ : str, the backend that ran

    predict(X) shifts each row of X over the training points (NumPy, O(n_samples) a row per shift) to
    its mode and returns the cluster of the nearest training mode; the estimator keeps a reference to
    the training array (not a copy) for it.
    """

    def __init__(self, bandwidth=None, *, kernel="flat", radius=None, max_iter=300, tol=None, merge_radius=None,
                 blurring=False, backend="auto", n_jobs=None):
        self.bandwidth = bandwidth
        self.kernel = kernel
        self.radius = radius
        self.max_iter = max_iter
        self.tol = tol
        self.merge_radius = merge_radius
        self.blurring = blurring
        self.backend = backend
        self.n_jobs = n_jobs

    def fit(self, X, y=None):
        """Cluster X (n_samples, n_features); y is ignored. Returns self."""
        X = fit_points(self, X)
        h = self.bandwidth
        if h is None:
            from sklearn.cluster import estimate_bandwidth

            h = estimate_bandwidth(X, n_jobs=self.n_jobs)
            if not h > 0:  # one point, or all equal: any bandwidth gives one cluster
                h = 1.0
        r = run(_core.meanshift, X, float(h), kernel=self.kernel, radius=0.0 if self.radius is None else float(self.radius),
                            eps=-1.0 if self.tol is None else float(self.tol), max_iter=int(self.max_iter),
                            merge_radius=-1.0 if self.merge_radius is None else float(self.merge_radius),
                            blurring=bool(self.blurring), backend=self.backend, threads=threads(self.n_jobs))
        self.labels_ = r["labels"]
        self.cluster_centers_ = r["centers"]
        self.modes_ = r["modes"]
        self.n_iter_ = r["n_iter"]
        self.bandwidth_ = float(h)
        self.backend_ = r["backend"]
        self._fit_X = X
        return self

    def fit_predict(self, X, y=None):
        return self.fit(X).labels_

    def _climb(self, X):
        """Non-blurring mean shift of the rows of X over the training points, in float64."""
        R = np.asarray(self._fit_X, dtype=np.float64)
        h = self.bandwidth_
        radius = self.radius
        if radius is None:
            radius = math.inf if self.kernel == "gaussian" else h
        eps = 1e-3 * h if self.tol is None else float(self.tol)
        Y = np.array(X, dtype=np.float64)
        step = max(1, (1 << 22) // R.shape[0])
        for i in range(0, Y.shape[0], step):
            y = Y[i:i + step]
            active = np.arange(y.shape[0])
            for _ in range(int(self.max_iter)):
                d2 = squared_distances(y[active], R)
                w = (d2 <= radius * radius).astype(np.float64)
                if self.kernel == "gaussian":
                    w *= np.exp(-d2 / (2 * h * h))
                elif self.kernel == "epanechnikov":
                    w *= np.maximum(0.0, 1 - d2 / (h * h))
                s = w.sum(axis=1)
                moved = s > 0
                new = y[active].copy()
                new[moved] = (w[moved] @ R) / s[moved, None]
                shift = np.sqrt(((new - y[active]) ** 2).sum(axis=1))
                y[active] = new
                active = active[shift > eps]
                if active.size == 0:
                    break
            Y[i:i + step] = y
        return Y

    def predict(self, X):
        """The cluster of the nearest training mode to where each row of X converges (int32)."""
        check_is_fitted(self)
        X = validate(self, X, reset=False)
        modes = X.astype(np.float64) if self.blurring else self._climb(X)
        return self.labels_[nearest(modes, self.modes_.astype(np.float64))[0]]
