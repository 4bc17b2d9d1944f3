"""No copy of arrays the library reads in place; the GIL released; Ctrl-C stops a fit."""
import os
import signal
import threading
import time
import tracemalloc

import numpy as np
import pytest

import parclust


def peak_bytes(fn):
    """The most memory NumPy and Python allocated during fn() (NumPy reports its buffers to tracemalloc;
    the library's own malloc'd results are not counted)."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8, np.uint16])
def test_no_copy_of_packed_rows(dtype):
    rng = np.random.default_rng(1)
    X = (rng.random((400_000, 3)) * 200).astype(dtype)  # 1.2 MB (uint8) to 9.6 MB (float64)
    wide = (rng.random((400_000, 5)) * 200).astype(dtype)
    for data in (X, wide[:, 1:4]):  # C order, and rows of a wider array (row stride 5 values)
        peak = peak_bytes(lambda: parclust.HCA(3, m=8, n_jobs=2).fit(data))
        assert peak < 200_000, (dtype, data.strides, peak)
    if dtype == np.float32:
        peak = peak_bytes(lambda: parclust.KMeans(3, max_iter=2, n_jobs=2).fit(X))
        assert peak < 200_000, peak
        model = parclust.KMeans(3, max_iter=2).fit(X)
        # labels and centres are the library's own arrays, handed over without a copy
        assert model.labels_.base is not None and model.labels_.dtype == np.int32


def test_other_layouts_converted_once():
    X = np.asfortranarray(np.random.default_rng(2).random((200_000, 3)).astype(np.float32))
    peak = peak_bytes(lambda: parclust.HCA(3, m=8).fit(X))
    assert X.nbytes <= peak < 2 * X.nbytes + 200_000  # one C-order copy
    a = parclust.HCA(3, m=8).fit(X).labels_
    np.testing.assert_array_equal(a, parclust.HCA(3, m=8).fit(np.ascontiguousarray(X)).labels_)
    ints = np.random.default_rng(3).integers(0, 50, size=(1000, 2))  # int64: float64, as check_array does
    np.testing.assert_array_equal(parclust.HCA(2, m=8).fit(ints).labels_,
                                  parclust.HCA(2, m=8).fit(ints.astype(np.float64)).labels_)


def test_ctrl_c_stops_a_fit():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    X = np.random.default_rng(4).normal(size=(20_000, 3)).astype(np.float32)
    # all pairs on the CPU (the callback runs between shifts: 4e8 pairs each), no early stop: minutes on
    # 2 cores, seconds on 16
    fit = parclust.MeanShift(bandwidth=2.0, kernel="gaussian", tol=0.0, max_iter=100_000, backend="openmp", n_jobs=2)
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            fit.fit(X)
    finally:  # a fit that ended first must not leave the signal to hit a later test
        timer.cancel()
        timer.join()
    assert time.monotonic() - start < 10
    assert not hasattr(fit, "labels_")


def test_gil_released_during_fit():
    X = np.random.default_rng(5).normal(size=(6_000, 3)).astype(np.float32)
    done = threading.Event()
    worker = threading.Thread(target=lambda: (parclust.MeanShift(bandwidth=2.0, kernel="gaussian", tol=0.0,
                                                                 max_iter=40, n_jobs=1).fit(X), done.set()))
    ticks = 0
    worker.start()
    time.sleep(0.05)
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    worker.join()
    assert ticks > 20  # the main thread ran while the fit did


def test_cuda_backend():
    if not parclust.info()["cuda_available"]:
        with pytest.raises((RuntimeError, ValueError)):
            parclust.KMeans(2, backend="cuda").fit(np.zeros((10, 2)) + np.arange(10)[:, None])
        pytest.skip("no CUDA device (or built without CUDA): the error above is what a user gets")
    rng = np.random.default_rng(6)
    X = rng.normal(size=(50_000, 3)).astype(np.float32) + rng.integers(0, 4, size=(50_000, 1)) * 5
    init = X[:4].copy()
    gpu = parclust.KMeans(4, init=init, backend="cuda").fit(X)
    cpu = parclust.KMeans(4, init=init, backend="seq").fit(X)
    assert gpu.backend_ == "cuda"
    assert np.mean(gpu.labels_ == cpu.labels_) > 0.9999
    h_gpu = parclust.HCA(4, backend="cuda").fit(X)
    h_cpu = parclust.HCA(4, backend="seq").fit(X)
    assert h_gpu.backend_ == "cuda"
    np.testing.assert_array_equal(h_gpu.labels_, h_cpu.labels_)
    np.testing.assert_array_equal(h_gpu.linkage_, h_cpu.linkage_)
    ms_gpu = parclust.MeanShift(bandwidth=1.0, backend="cuda").fit(X[:5000])
    ms_cpu = parclust.MeanShift(bandwidth=1.0, backend="seq").fit(X[:5000])
    assert ms_gpu.backend_ == "cuda"
    from sklearn.metrics import adjusted_rand_score
    assert adjusted_rand_score(ms_cpu.labels_, ms_gpu.labels_) > 0.999
    image = (rng.random((300, 400, 3)) * 255).astype(np.uint8)
    np.testing.assert_array_equal(parclust.segment(image, n_clusters=5, backend="cuda"),
                                  parclust.segment(image, n_clusters=5, backend="seq"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.uint8, np.uint16])
def test_row_strided_views_give_the_contiguous_results(dtype):
    rng = np.random.default_rng(8)
    wide = (rng.random((3000, 6)) * 60 + np.repeat(rng.integers(0, 3, size=(3000, 1)) * 60, 6, axis=1)).astype(dtype)
    view, packed = wide[::2, 1:4], np.ascontiguousarray(wide[::2, 1:4])
    assert not view.flags.c_contiguous
    for make in (lambda: parclust.HCA(3, m=8), lambda: parclust.KMeans(3, random_state=1),
                 lambda: parclust.MeanShift(bandwidth=20.0)):
        a, b = make().fit(view), make().fit(packed)
        np.testing.assert_array_equal(a.labels_, b.labels_)
        np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
