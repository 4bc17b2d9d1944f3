"""parclust.HCA: grid-based hierarchical clustering (pc_hca) as a scikit-learn clusterer."""
import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._common import run, validate, fit_points, library_view, threads


class HCA(ClusterMixin, BaseEstimator):
    """HCA: a grid of m cells per dimension over the points' box; each non-empty cell is linked to its
    densest neighbour, cells reaching the same local maximum form a component, and adjacent components
    are joined by single linkage into a dendrogram that is cut to n_clusters (or at distance_threshold).
    Made for many points in few dimensions (1 to 8): pixels of multispectral images. Its cost is a few
    passes over the points, whatever their number.

    Parameters
    ----------
    n_clusters : int or None, default 2
        Clusters to cut the dendrogram to; None with distance_threshold.
    distance_threshold : float or None
        Cut height in [0, 1] (merges at heights <= it), with n_clusters=None.
    m : int or 'auto', default 32
        Cells per dimension; 'auto': the library's rule from the number of points and dimensions
        (pc_hca_auto_m).
    min_cluster_size : int or None
        Clusters smaller than this join the nearest kept one (or become noise); None: 0.1% of the
        points, at least 2; 0: off.
    noise : bool, default False
        Points of too-small clusters get label -1.
    backend : 'auto', 'seq', 'openmp' or 'cuda'
    n_jobs : int or None
        OpenMP threads (None or -1: all cores).

    Attributes
    ----------
    labels_ : (n_samples,) int32, clusters numbered by size, largest first; -1 for noise
    cluster_centers_ : (n_clusters_, n_features) float32, the clusters' means
    n_clusters_ : int
    n_components_ : int, the dendrogram's leaves (the grid's components)
    linkage_ : (n_components_ - 1, 4) float64, the dendrogram in SciPy's linkage format
        (scipy.cluster.hierarchy.dendrogram(model.linkage_) draws it)
    children_ : (n_components_ - 1, 2) intp, the nodes merged at each step (scikit-learn's format)
    distances_ : (n_components_ - 1,) float64, the merge heights
    m_ : int, the cells per dimension used
    n_features_in_ : int
    backend_ : str, the backend that ran

    predict(X) gives each row the cluster of its grid cell (-1 for a cell without training points);
    the estimator keeps a reference to the training array (not a copy), whose grid it rebuilds.
    """

    def __init__(self, n_clusters=2, *, distance_threshold=None, m=32, min_cluster_size=None, noise=False,
                 backend="auto", n_jobs=None):
        self.n_clusters = n_clusters
        self.distance_threshold = distance_threshold
        self.m = m
        self.min_cluster_size = min_cluster_size
        self.noise = noise
        self.backend = backend
        self.n_jobs = n_jobs

    def _params(self, m):
        if (self.n_clusters is None) == (self.distance_threshold is None):
            raise ValueError("Exactly one of n_clusters and distance_threshold has to be set, and the other "
                             "needs to be None.")
        return dict(m=m, clusters=0 if self.n_clusters is None else int(self.n_clusters),
                    threshold=0.0 if self.distance_threshold is None else float(self.distance_threshold),
                    min_cluster_size=-1 if self.min_cluster_size is None else int(self.min_cluster_size),
                    noise=bool(self.noise), backend=self.backend, threads=threads(self.n_jobs))

    def fit(self, X, y=None):
        """Cluster X (n_samples, 1 to 8 features); y is ignored. Returns self."""
        auto = isinstance(self.m, str) and self.m == "auto"
        params = self._params(0 if auto else int(self.m))
        X = fit_points(self, X)
        r = run(_core.hca, X, **params)
        self.m_ = _core.hca_auto_m(X.shape[0], X.shape[1]) if auto else params["m"]
        self.labels_ = r["labels"]
        centers = r["centers"]  # None when every point is noise
        self.cluster_centers_ = np.empty((0, X.shape[1]), np.float32) if centers is None else centers
        self.n_clusters_ = self.cluster_centers_.shape[0]
        self.n_components_ = r["n_components"]
        self.linkage_ = r["dendrogram"]
        self.children_ = self.linkage_[:, :2].astype(np.intp)
        self.distances_ = self.linkage_[:, 2].copy()
        self.backend_ = r["backend"]
        self._fit_X = X
        return self

    def fit_predict(self, X, y=None):
        return self.fit(X).labels_

    def predict(self, X):
        """The cluster of each row's grid cell (int32; -1 where the training points left the cell empty)."""
        check_is_fitted(self)
        X = library_view(validate(self, X, reset=False))
        return _core.hca_label(self._fit_X, X, **self._params(self.m_))
