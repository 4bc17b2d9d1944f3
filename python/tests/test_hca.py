"""parclust.HCA: its dendrogram in SciPy's format, labels, predict."""
import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

import parclust

hierarchy = pytest.importorskip("scipy.cluster.hierarchy")


def data(seed=2, n=6000):
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0, 0], [6, 0, 1], [0, 7, 2], [5, 6, -4]], dtype=float)
    truth = rng.integers(0, 4, size=n)
    return rng.normal(centres[truth], 0.7), truth


def test_linkage_accepted_by_scipy_and_cut_agrees():
    X, truth = data()
    model = parclust.HCA(n_clusters=4, m=16, n_jobs=2).fit(X)
    Z = model.linkage_
    assert Z.shape == (model.n_components_ - 1, 4)
    hierarchy.is_valid_linkage(Z, throw=True)
    assert hierarchy.is_monotonic(Z)
    tree = hierarchy.dendrogram(Z, no_plot=True)
    assert len(tree["leaves"]) == model.n_components_
    np.testing.assert_array_equal(model.children_, Z[:, :2].astype(np.intp))
    np.testing.assert_array_equal(model.distances_, Z[:, 2])
    assert model.n_clusters_ == 4
    assert adjusted_rand_score(truth, model.labels_) > 0.95
    # the clusters' centres are their points' means
    for c in range(4):
        np.testing.assert_allclose(model.cluster_centers_[c], X[model.labels_ == c].mean(axis=0), atol=1e-4)
    # SciPy's cut of the same tree at a height gives as many groups of components as the library's
    # cut at that height has clusters (no small clusters merged away)
    for t in (0.0, 0.5, 0.99):
        groups = hierarchy.fcluster(Z, t, criterion="distance")
        cut = parclust.HCA(n_clusters=None, distance_threshold=t, m=16, min_cluster_size=0).fit(X)
        assert len(np.unique(groups)) == cut.n_clusters_, t


def test_predict_is_the_cluster_of_the_cell():
    X, _ = data()
    model = parclust.HCA(n_clusters=4, m=16, n_jobs=2).fit(X)
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    np.testing.assert_array_equal(model.predict(X[::3].astype(np.float32)), model.labels_[::3])
    far = np.full((1, 3), 1e6)  # beyond the box: the border cell's cluster, or -1 where it was empty
    assert model.predict(far)[0] >= -1


def test_auto_m():
    X, truth = data()
    model = parclust.HCA(4, m="auto").fit(X)
    assert model.m_ == parclust._core.hca_auto_m(len(X), 3) >= 2
    fixed = parclust.HCA(4, m=model.m_).fit(X)
    np.testing.assert_array_equal(model.labels_, fixed.labels_)
    np.testing.assert_array_equal(model.predict(X), model.labels_)


def test_threshold_noise_and_types():
    X, truth = data()
    a = parclust.HCA(n_clusters=None, distance_threshold=0.5, m=16).fit(X)
    assert a.n_clusters_ >= 1
    with pytest.raises(ValueError, match="Exactly one of n_clusters and distance_threshold"):
        parclust.HCA(n_clusters=3, distance_threshold=0.5).fit(X)
    pixels = np.random.default_rng(0).integers(0, 256, size=(5000, 3), dtype=np.uint8)
    pixels[:2500] //= 4
    for dtype in (np.uint8, np.uint16):
        m = parclust.HCA(2, m=8, noise=True, min_cluster_size=100).fit(pixels.astype(dtype))
        assert m.labels_.min() >= -1 and m.labels_.max() < m.n_clusters_
    with pytest.raises(ValueError, match="1 to 8 dimensions"):
        parclust.HCA(2).fit(np.zeros((10, 9)))
