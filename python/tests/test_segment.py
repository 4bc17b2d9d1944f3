"""parclust.segment on images with and without nodata."""
import numpy as np
import pytest

import parclust


def scene(dtype=np.uint8, seed=0):
    """A 120 x 160 image of 3 bands: four quadrants of different colours plus noise."""
    rng = np.random.default_rng(seed)
    colours = np.array([[30, 60, 90], [200, 40, 40], [40, 200, 60], [220, 220, 200]])
    truth = np.zeros((120, 160), dtype=np.int32)
    truth[:60, 80:] = 1
    truth[60:, :80] = 2
    truth[60:, 80:] = 3
    image = colours[truth] + rng.normal(0, 6, size=(120, 160, 3))
    return np.clip(image, 0, 255).astype(dtype), truth


def same_partition(a, b):
    from sklearn.metrics import adjusted_rand_score
    return adjusted_rand_score(a.ravel(), b.ravel()) == 1.0


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_hca_and_kmeans_find_the_quadrants(dtype):
    image, truth = scene(dtype)
    labels = parclust.segment(image, n_clusters=4, m=16)
    assert labels.shape == truth.shape and labels.dtype == np.int32
    assert same_partition(labels, truth)
    # the same as the estimator on the pixels as rows
    np.testing.assert_array_equal(labels.ravel(), parclust.HCA(4, m=16).fit(image.reshape(-1, 3)).labels_)
    km = parclust.segment(image, algorithm="kmeans", n_clusters=4, random_state=0)
    assert same_partition(km, truth)


def test_nodata_value_and_mask():
    image, truth = scene()
    image[:10] = 0  # a nodata border
    labels = parclust.segment(image, n_clusters=4, m=16, nodata=0)
    assert (labels[:10] == -1).all() and (labels[10:] >= 0).all()
    assert same_partition(labels[10:], truth[10:])
    mask = np.zeros(truth.shape, dtype=bool)
    mask[:, :5] = True
    labels2 = parclust.segment(image, algorithm="kmeans", n_clusters=4, random_state=1, nodata=mask)
    assert (labels2[:, :5] == -1).all() and (labels2[:, 5:] >= 0).all()
    f = image.astype(np.float32)
    f[50, 50] = np.nan  # NaN is nodata whatever nodata says
    assert parclust.segment(f, n_clusters=4, m=16)[50, 50] == -1


def test_meanshift_regions():
    image, truth = scene()
    labels = parclust.segment(image, algorithm="meanshift", spatial_bandwidth=4, range_bandwidth=30,
                              min_region_size=50)
    assert same_partition(labels, truth)
    image[0, :] = 0
    mask = np.zeros(truth.shape, dtype=bool)
    mask[0, :] = True
    labels = parclust.segment(image, algorithm="meanshift", spatial_bandwidth=4, range_bandwidth=30,
                              min_region_size=50, nodata=mask)
    assert (labels[0] == -1).all() and same_partition(labels[1:], truth[1:])


def test_bad_images():
    with pytest.raises(ValueError, match="image must be"):
        parclust.segment(np.zeros(10, dtype=np.uint8))
    with pytest.raises(ValueError, match="algorithm must be"):
        parclust.segment(np.zeros((4, 4), dtype=np.uint8), algorithm="dbscan")
    with pytest.raises(ValueError, match="no valid pixel"):
        parclust.segment(np.zeros((4, 4), dtype=np.uint8), nodata=0)
    with pytest.raises(ValueError, match="mask must have the image's shape"):
        parclust.segment(np.zeros((4, 4), dtype=np.uint8), nodata=np.zeros((3, 3), dtype=bool))
