"""parclust.KMeans against scikit-learn's KMeans (Lloyd) from the same initial centres."""
import numpy as np
import pytest
from sklearn.cluster import KMeans as SKKMeans
from sklearn.datasets import make_blobs

import parclust


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_same_labels_as_sklearn_from_same_centres(dtype):
    X, _ = make_blobs(n_samples=3000, n_features=3, centers=6, cluster_std=1.5, random_state=3)
    X = X.astype(dtype)
    rng = np.random.default_rng(7)
    init = X[rng.choice(len(X), 6, replace=False)]
    ours = parclust.KMeans(6, init=init, max_iter=100, tol=1e-4, n_jobs=2).fit(X)
    ref = SKKMeans(6, init=init, n_init=1, max_iter=100, tol=1e-4, algorithm="lloyd").fit(X)
    np.testing.assert_array_equal(ours.labels_, ref.labels_)
    np.testing.assert_allclose(ours.cluster_centers_, ref.cluster_centers_, rtol=0, atol=1e-4)
    assert ours.n_iter_ == ref.n_iter_
    assert ours.inertia_ == pytest.approx(ref.inertia_, rel=1e-5)
    assert ours.cluster_centers_.dtype == dtype
    # predict, transform and score as scikit-learn's on new points, from the same centres
    Y, _ = make_blobs(n_samples=500, n_features=3, centers=6, random_state=4)
    Y = Y.astype(dtype)
    ref.cluster_centers_ = ours.cluster_centers_.astype(dtype)
    np.testing.assert_array_equal(ours.predict(Y), ref.predict(Y))
    np.testing.assert_allclose(ours.transform(Y), ref.transform(Y), rtol=1e-4, atol=1e-4)
    assert ours.score(Y) == pytest.approx(ref.score(Y), rel=1e-4)
    np.testing.assert_array_equal(ours.predict(X), ours.labels_)


def test_algorithms_give_lloyds_result():
    """Hamerly's bounds skip distances, never change a result: labels, centres and iterations equal to
    Lloyd's, and both equal to scikit-learn's Lloyd from the same centres."""
    X, _ = make_blobs(n_samples=4000, n_features=5, centers=12, cluster_std=2.0, random_state=11)
    X = X.astype(np.float32)
    init = X[np.random.default_rng(3).choice(len(X), 12, replace=False)]
    fits = {a: parclust.KMeans(12, init=init, max_iter=200, tol=1e-4, algorithm=a, backend="openmp", n_jobs=2).fit(X)
            for a in ("lloyd", "hamerly", "auto")}
    assert fits["lloyd"].algorithm_ == "lloyd"
    assert fits["hamerly"].algorithm_ == "hamerly"
    assert fits["auto"].algorithm_ == "hamerly"  # k >= 8 on the CPU
    for a in ("hamerly", "auto"):
        np.testing.assert_array_equal(fits[a].labels_, fits["lloyd"].labels_)
        np.testing.assert_array_equal(fits[a].cluster_centers_, fits["lloyd"].cluster_centers_)
        assert fits[a].n_iter_ == fits["lloyd"].n_iter_
    ref = SKKMeans(12, init=init, n_init=1, max_iter=200, tol=1e-4, algorithm="lloyd").fit(X)
    np.testing.assert_array_equal(fits["hamerly"].labels_, ref.labels_)
    with pytest.raises(ValueError, match="algorithm must be 'auto', 'lloyd' or 'hamerly', got 'elkan'"):
        parclust.KMeans(2, algorithm="elkan").fit(X)


def test_inits_and_seed():
    X, y = make_blobs(n_samples=2000, n_features=2, centers=4, cluster_std=0.5, random_state=0)
    for init in ("k-means++", "random", "k-means||"):
        a = parclust.KMeans(4, init=init, random_state=5).fit(X)
        b = parclust.KMeans(4, init=init, random_state=5).fit(X)
        np.testing.assert_array_equal(a.labels_, b.labels_)  # the seed decides
        from sklearn.metrics import adjusted_rand_score
        assert adjusted_rand_score(y, a.labels_) > 0.99, init


def test_bad_input_messages():
    X = np.random.default_rng(0).normal(size=(100, 2))
    with pytest.raises(ValueError, match="n_samples=3 should be >= n_clusters=8: k \\(8\\) must not exceed"):
        parclust.KMeans(8).fit(X[:3])
    bad = X.copy()
    bad[17, 1] = np.nan
    with pytest.raises(ValueError, match=r"NaN or infinity: point 17, dimension 1 is not finite"):
        parclust.KMeans(2).fit(bad)
    bad[17, 1] = np.inf
    with pytest.raises(ValueError, match=r"point 17, dimension 1 is not finite \(inf\)"):
        parclust.KMeans(2).fit(bad.astype(np.float32))
    with pytest.raises(ValueError, match="Expected 2D array"):
        parclust.KMeans(2).fit(X[:, 0])
    with pytest.raises(ValueError, match="init must be"):
        parclust.KMeans(2, init="bogus").fit(X)
    with pytest.raises(ValueError, match="expected \\(n_clusters, n_features\\) = \\(2, 2\\)"):
        parclust.KMeans(2, init=np.zeros((3, 2))).fit(X)
    with pytest.raises(ValueError, match="backend must be"):
        parclust.KMeans(2, backend="gpu").fit(X)
    with pytest.raises(ValueError, match="max_iter"):  # the library's own check of its parameters
        parclust.KMeans(2, max_iter=0).fit(X)
