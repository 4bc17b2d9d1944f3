"""parclust.MeanShift against scikit-learn's MeanShift (flat kernel) on generated blobs."""
import numpy as np
import pytest
from sklearn.cluster import MeanShift as SKMeanShift
from sklearn.metrics import adjusted_rand_score

import parclust


def blobs(seed, sizes, dim, h):
    """Blobs of standard deviation 0.2 h, at least 5 h apart: each fits in the kernel at its mean."""
    rng = np.random.default_rng(seed)
    centres = []
    while len(centres) < len(sizes):
        c = rng.uniform(-12 * h, 12 * h, size=dim)
        if all(np.linalg.norm(c - o) >= 5 * h for o in centres):
            centres.append(c)
    X = np.concatenate([rng.normal(c, 0.2 * h, size=(n, dim)) for c, n in zip(centres, sizes)])
    return X, np.repeat(np.arange(len(sizes)), sizes)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_same_partition_as_sklearn_flat_kernel(dtype):
    h = 1.5
    X, _ = blobs(11, [150, 80, 110, 50], 2, h)
    X = X.astype(dtype)
    ours = parclust.MeanShift(bandwidth=h, kernel="flat", n_jobs=2).fit(X)
    ref = SKMeanShift(bandwidth=h).fit(X)
    assert len(ours.cluster_centers_) == len(ref.cluster_centers_) == 4
    assert adjusted_rand_score(ref.labels_, ours.labels_) == 1.0
    # each sklearn centre is one of ours (matched by the labels of the points)
    for c in range(4):
        mine = ours.labels_[ref.labels_ == c][0]
        np.testing.assert_allclose(ours.cluster_centers_[mine], ref.cluster_centers_[c], atol=1e-3 * h)
    assert ours.modes_.shape == X.shape and ours.n_iter_ >= 1
    np.testing.assert_array_equal(ours.predict(X[::7]), ours.labels_[::7])
    # new points drawn near the blobs go to their blob's cluster
    Y, truth = blobs(11, [20, 20, 20, 20], 2, h)
    assert adjusted_rand_score(truth, ours.predict(Y)) == 1.0


def test_kernels_and_parameters():
    X, truth = blobs(5, [200, 100, 150], 3, 1.0)
    for kernel in ("gaussian", "epanechnikov", "flat"):
        ms = parclust.MeanShift(bandwidth=1.0, kernel=kernel, n_jobs=2).fit(X)
        assert adjusted_rand_score(truth, ms.labels_) == 1.0, kernel
    ms = parclust.MeanShift(bandwidth=1.0, blurring=True, backend="seq").fit(X)
    assert adjusted_rand_score(truth, ms.labels_) == 1.0
    np.testing.assert_array_equal(ms.predict(X), ms.labels_)
    ms = parclust.MeanShift().fit(X)  # bandwidth estimated as scikit-learn does
    assert ms.bandwidth_ > 0


def test_bad_input_messages():
    X, _ = blobs(5, [50, 50], 2, 1.0)
    with pytest.raises(ValueError, match="bandwidth"):
        parclust.MeanShift(bandwidth=-1.0).fit(X)
    with pytest.raises(ValueError, match="kernel must be"):
        parclust.MeanShift(bandwidth=1.0, kernel="box").fit(X)
    X[3, 0] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity: point 3, dimension 0 is not finite"):
        parclust.MeanShift(bandwidth=1.0).fit(X)
    with pytest.raises(ValueError, match="Found array with dim 3"):
        parclust.MeanShift(bandwidth=1.0).fit(np.zeros((2, 3, 4)))
