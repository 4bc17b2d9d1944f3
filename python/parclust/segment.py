"""parclust.segment: an image's pixels clustered into an (H, W) label image."""
import numpy as np

from . import _core
from ._common import library_view, threads
from .hca import HCA
from .kmeans import KMeans

_IMAGE_PARAMS = {"spatial_bandwidth": 8.0, "range_bandwidth": 16.0, "min_region_size": 20, "tol": 0.01,
                 "max_iter": 20}


def _invalid(pixels, nodata, shape):
    """Boolean nodata mask of the pixels (rows), or None when every pixel is valid."""
    invalid = None
    if pixels.dtype.kind == "f":
        bad = ~np.isfinite(pixels).all(axis=1)
        if bad.any():
            invalid = bad
    if nodata is None:
        return invalid
    if np.ndim(nodata) == 0:
        value = float(nodata)
        if np.isnan(value):  # NaN pixels are nodata already
            return invalid
        if pixels.dtype.kind == "f":
            mark = (pixels == pixels.dtype.type(value)).any(axis=1)
        elif value.is_integer() and np.iinfo(pixels.dtype).min <= value <= np.iinfo(pixels.dtype).max:
            mark = (pixels == pixels.dtype.type(value)).any(axis=1)
        else:  # no pixel of this type can hold the value
            mark = None
    else:
        mark = np.asarray(nodata, dtype=bool)
        if mark.shape != shape:
            raise ValueError("nodata: a mask must have the image's shape (H, W) = %s, got %s" % (shape, mark.shape))
        mark = mark.reshape(-1)
    if mark is None or not mark.any():
        return invalid
    return mark if invalid is None else invalid | mark


def segment(image, algorithm="hca", *, nodata=None, backend="auto", n_jobs=None, **params):
    """Segments an image by clustering its pixels; returns (H, W) int32 labels, -1 for nodata.

    image : (H, W) or (H, W, B) array of uint8, uint16 or float32, read in place (other types are
        converted to float32 once).
    algorithm : 'hca' (the default), 'kmeans' or 'meanshift'.
    nodata : None, a value (a pixel equal to it in any band is nodata), or an (H, W) boolean mask, True
        where a pixel is nodata. NaN and infinite pixels are always nodata.
    params : 'hca': HCA's (n_clusters, distance_threshold, m, min_cluster_size, noise); 'kmeans':
        KMeans's (n_clusters, init, n_init, max_iter, tol, random_state); 'meanshift': spatial_bandwidth
        (pixels, 8), range_bandwidth (band units, 16), min_region_size (20), tol (0.01), max_iter (20):
        mean shift in the joint spatial-range domain, regions fused and small ones pruned.

    HCA and k-means cluster the valid pixels (in place when all are valid); mean shift sees the whole
    image with its nodata mask.
    """
    img = np.asarray(image)
    if img.ndim == 2:
        img = img[:, :, None]
    if img.ndim != 3:
        raise ValueError("image must be (H, W) or (H, W, B), got %d dimensions" % np.ndim(image))
    if img.dtype not in (np.uint8, np.uint16, np.float32):
        img = img.astype(np.float32)
    H, W, B = img.shape
    if H * W == 0 or B == 0:
        raise ValueError("image is empty: shape %s" % (img.shape,))
    pixels = library_view(img.reshape(H * W, B))
    invalid = _invalid(pixels, nodata, (H, W))
    if algorithm == "meanshift":
        unknown = set(params) - set(_IMAGE_PARAMS)
        if unknown:
            raise TypeError("segment(algorithm='meanshift'): unknown parameter(s) %s" % ", ".join(sorted(unknown)))
        p = dict(_IMAGE_PARAMS, **params)
        valid = None if invalid is None else np.ascontiguousarray(~invalid, dtype=np.uint8)
        r = _core.meanshift_image(pixels, W, H, valid, spatial_bandwidth=float(p["spatial_bandwidth"]),
                                  range_bandwidth=float(p["range_bandwidth"]),
                                  min_region_size=int(p["min_region_size"]), eps=float(p["tol"]),
                                  max_iter=int(p["max_iter"]), backend=backend, threads=threads(n_jobs))
        return r["labels"]
    if algorithm == "hca":
        estimator = HCA(backend=backend, n_jobs=n_jobs, **params)
    elif algorithm == "kmeans":
        estimator = KMeans(backend=backend, n_jobs=n_jobs, **params)
    else:
        raise ValueError("algorithm must be 'hca', 'kmeans' or 'meanshift', got %r" % (algorithm,))
    if invalid is None:
        return estimator.fit(pixels).labels_.reshape(H, W)
    keep = ~invalid
    if not keep.any():
        raise ValueError("image has no valid pixel")
    labels = np.full(H * W, -1, dtype=np.int32)
    labels[keep] = estimator.fit(pixels[keep]).labels_
    return labels.reshape(H, W)
