"""parclust.KMeans: Lloyd's k-means (pc_kmeans) with scikit-learn's KMeans interface."""
import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._common import run, validate, fit_points, float_dtype, nearest, squared_distances, threads

_INITS = ("k-means++", "random", "k-means||")


class KMeans(TransformerMixin, ClusterMixin, BaseEstimator):
    """k-means clustering by Lloyd's iterations, on all cores or the GPU.

    From the same initial centres it takes scikit-learn's KMeans(algorithm="lloyd") steps: the same
    labels, and centres to float32 precision (the library computes in float32).

    Parameters
    ----------
    n_clusters : int, default 8
    init : 'k-means++', 'random', 'k-means||' or array of shape (n_clusters, n_features)
    n_init : 'auto' or int, default 'auto' (1 for 'k-means++', 'k-means||' and an array; 10 for 'random')
        Runs from different initial centres; the lowest inertia wins.
    max_iter : int, default 300
    tol : float, default 1e-4
        scikit-learn's rule: stop when the centres' total squared movement is <= tol times the mean
        variance of the features (or no label changed).
    random_state : None, int or RandomState
        An int is the library's seed: the same seed gives the same centres on every backend and in the CLI.
    backend : 'auto', 'seq', 'openmp' or 'cuda'
    algorithm : 'auto', 'lloyd' or 'hamerly', default 'auto'
        How each iteration finds the nearest centres. On the CPU every choice gives the same labels,
        centres and iterations (Lloyd's, bit for bit); Hamerly's bounds skip the distances they prove
        unneeded ('auto': Hamerly for n_clusters >= 8, on the CPU and the GPU, else Lloyd). On the GPU
        Hamerly's are those of Lloyd with fixed-point sums; the GPU's default Lloyd sums in float from
        n_clusters x (n_features + 1) > 4096, so there the two differ in the last bits.
    n_jobs : int or None
        OpenMP threads (None or -1: all cores).

    Attributes
    ----------
    cluster_centers_ : (n_clusters, n_features), float64 for float64 input, else float32
    labels_ : (n_samples,) int32
    inertia_ : float
    n_iter_ : int
    n_features_in_ : int
    backend_ : str, the backend that ran
    algorithm_ : str, the algorithm that ran ('lloyd' or 'hamerly')
    """

    def __init__(self, n_clusters=8, *, init="k-means++", n_init="auto", max_iter=300, tol=1e-4, random_state=None,
                 backend="auto", algorithm="auto", n_jobs=None):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.backend = backend
        self.algorithm = algorithm
        self.n_jobs = n_jobs

    def _seed(self):
        if isinstance(self.random_state, (int, np.integer)) and not isinstance(self.random_state, bool):
            return int(self.random_state) & 0xFFFFFFFFFFFFFFFF
        return int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))

    def fit(self, X, y=None):
        """Cluster X (n_samples, n_features); y is ignored. Returns self."""
        X = fit_points(self, X)
        centers = None
        if isinstance(self.init, str):
            if self.init not in _INITS:
                raise ValueError("init must be 'k-means++', 'random', 'k-means||' or an array of shape "
                                 "(n_clusters, n_features), got %r" % (self.init,))
            init = self.init
        else:
            init = "given"
            centers = np.ascontiguousarray(self.init, dtype=np.float32)
            if centers.shape != (self.n_clusters, X.shape[1]):
                raise ValueError("init: the initial centres have shape %s, expected (n_clusters, n_features) = "
                                 "(%d, %d)" % (centers.shape, self.n_clusters, X.shape[1]))
        n_init = self.n_init
        if n_init == "auto":
            n_init = 10 if init == "random" else 1
        if init == "given":
            n_init = 1
        try:
            r = run(_core.kmeans, X, int(self.n_clusters), init=init, centers=centers, n_init=int(n_init),
                    max_iter=int(self.max_iter), tol=float(self.tol), seed=self._seed(), backend=self.backend,
                    threads=threads(self.n_jobs), algorithm=self.algorithm)
        except ValueError as e:
            if X.shape[0] < self.n_clusters:  # scikit-learn's words first, then the library's
                raise ValueError("n_samples=%d should be >= n_clusters=%d: %s" % (X.shape[0], self.n_clusters, e)) \
                    from None
            raise
        self.labels_ = r["labels"]
        self.cluster_centers_ = r["centers"].astype(float_dtype(X), copy=False)
        self.inertia_ = r["inertia"]
        self.n_iter_ = r["n_iter"]
        self.backend_ = r["backend"]
        self.algorithm_ = r["algorithm"]
        return self

    def _check(self, X):
        check_is_fitted(self)
        return validate(self, X, reset=False)

    def predict(self, X):
        """Index of the nearest centre for each row of X (int32)."""
        return nearest(self._check(X), self.cluster_centers_)[0]

    def fit_predict(self, X, y=None):
        return self.fit(X).labels_

    def transform(self, X):
        """Distances from each row of X to every centre, (n_samples, n_clusters)."""
        return np.sqrt(squared_distances(self._check(X), self.cluster_centers_))

    def fit_transform(self, X, y=None):
        return self.fit(X).transform(X)

    def score(self, X, y=None):
        """Opposite of the sum of squared distances of X to the nearest centres."""
        return -float(np.sum(nearest(self._check(X), self.cluster_centers_)[1], dtype=np.float64))

    def _more_tags(self):  # scikit-learn < 1.6
        return {"preserves_dtype": [np.float64, np.float32]}

    def __sklearn_tags__(self):  # scikit-learn >= 1.6
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags
