#!/usr/bin/python3
"""parclust segment: what the header of an image tells is checked before a pixel is read (issue 19,
items 6 and the raster part of 8).

Usage: segment_limits_test.py PATH_TO_parclust WORKDIR HAVE_GDAL(0|1)

Huge images are made cheaply: a .npy header followed by a sparse file of the full size, and GeoTIFFs
created with SPARSE_OK (no tile written: 1-2 MB on disk for 10^10 pixels). Reading one of them
takes minutes and gigabytes, so a refusal in under 2 s, with nothing printed of the read ("segment:
FILE, W x H pixels ..."), shows the limit was checked from the header; so does, for runs that do
not fit in --max-memory and stream, a first line "streaming: ..." within 2 s. Without GDAL only the .npy
cases run.
"""
import os
import re
import subprocess
import sys
import time

from checks import Checks, raster_test_args, require

require("segment_limits", ["numpy"], "python3-numpy")
import numpy as np

P, W, HAVE_GDAL = raster_test_args("segment_limits")
if HAVE_GDAL:
    from osgeo import gdal

    gdal.UseExceptions()

check = Checks("segment_limits")
PHYS = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def run(*args):
    t0 = time.monotonic()
    r = subprocess.run([P] + [str(a) for a in args], capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout, r.stderr, time.monotonic() - t0


def w(name):
    return os.path.join(W, name)


def refused_early(desc, args, pattern, outputs=(), code=1, seconds=2.0):
    """Exit `code`, one error line matching `pattern`, within `seconds`, nothing of a read or a
    clustering on stdout, and none of the outputs created."""
    rc, out, err, t = run(*args)
    lines = err.strip().splitlines()
    made = [o for o in outputs if os.path.exists(o)]
    ok = (rc == code and len(lines) == 1 and "error" in lines[0] and re.search(pattern, lines[0]) is not None
          and t < seconds and "segment:" not in out and "clusters (" not in out and "time " not in out and not made)
    check(ok, desc, "rc %d, %.2f s, stdout %r, stderr %r, outputs made %s" % (rc, t, out[-300:], err[-400:], made))
    return lines[0] if lines else ""


def streams_at_once(desc, args, pattern, outputs=(), seconds=2.0):
    """A run too large for memory that streams: its first line, within `seconds`, says so and how
    (matching `pattern`); the run is then stopped, having written nothing."""
    import select
    t0 = time.monotonic()
    p = subprocess.Popen([P] + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ready, _, _ = select.select([p.stdout], [], [], seconds)
    line = p.stdout.readline() if ready else ""
    t = time.monotonic() - t0
    p.kill()
    p.communicate()
    made = [o for o in outputs if os.path.exists(o)] + [f for f in os.listdir(W) if f.startswith(".pc-")]
    check(re.search(pattern, line) is not None and t < seconds and not made, desc,
          "%.2f s, first line %r, outputs made %s" % (t, line, made))
    return line


def write_npy_header(path, descr, shape, sparse=True):
    """A .npy of this shape whose data are a hole: the file has its full size, no block on disk."""
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": descr, "fortran_order": False, "shape": shape})
        start = f.tell()
        size = start + int(np.prod(shape)) * np.dtype(descr).itemsize
        if sparse:
            f.truncate(size)
    return size


def labels_of(path):
    if path.endswith(".npy"):
        return np.load(path)
    ds = gdal.Open(path)  # kept: a band outliving its dataset crashes the bindings
    band = ds.GetRasterBand(1)  # labels of the smallest type: nodata read as -1
    lab = band.ReadAsArray().astype(np.int64)
    lab[lab == band.GetNoDataValue()] = -1
    return lab


# ------------------------------------------------------------------ item 6: limits from the header (.npy)
write_npy_header(w("huge.npy"), "|u1", (100000, 100000))
# 10^10 pixels: more than HCA holds in memory, and than half of this machine's memory (--max-memory's default).
streams_at_once("npy 100000 x 100000, HCA: streamed, said at once, before any pixel is read",
                ["segment", w("huge.npy"), "-k", 3, "-o", w("huge_l.npy")],
                r"^streaming: .*more than (--max-memory's default [\d.]+ GiB|the [\d.]+ GiB of|the \d+ HCA takes in "
                r"memory).*: HCA in 3 passes over \d+-row windows", [w("huge_l.npy")])
streams_at_once("npy 100000 x 100000, mean shift: by strips, said at once",
                ["segment", w("huge.npy"), "--algorithm", "meanshift", "-o", w("huge_l.npy")],
                r"^streaming: .*: mean shift in 1 pass over strips of \d+ rows", [w("huge_l.npy")])
# k-means has no pixel limit: 10^10 pixels need 10 GB + 32 bytes a pixel = 330 GB: streamed too.
streams_at_once("npy 100000 x 100000, k-means: streamed, said at once",
                ["segment", w("huge.npy"), "--algorithm", "kmeans", "-k", 3, "-o", w("huge_l.npy")],
                r"^streaming: the run would hold [\d.]+ GiB .*: k-means in 2 passes and one per iteration", [w("huge_l.npy")])
# --max-memory too small for even a window of one row: refused at once, both sizes named.
refused_early("npy 100000 x 100000, HCA in --max-memory 200K: refused at once, the limit and the least needed named",
              ["segment", w("huge.npy"), "-k", 3, "-o", w("huge_l.npy"), "--max-memory", "200K"],
              r"huge\.npy: --max-memory is too small to stream this image: 0\.2 MiB allowed, at least [\d.]+ MiB needed",
              [w("huge_l.npy")])
write_npy_header(w("k_big.npy"), "|u1", (1000, 1000))
refused_early("k-means -k beyond the image's pixels: refused from the header",
              ["segment", w("k_big.npy"), "--algorithm", "kmeans", "-k", 2000000, "-o", w("k_big_l.npy")],
              r"-k 2000000 is more than the 1000000 pixels of the image", [w("k_big_l.npy")])
write_npy_header(w("nine.npy"), "|u1", (20000, 20000, 9))
refused_early("npy 20000 x 20000 x 9 bands, HCA: refused at once, the 8-band limit named",
              ["segment", w("nine.npy"), "-k", 3, "-o", w("nine_l.npy")],
              r"HCA clusters at most 8 bands \(dimensions\), 9 chosen", [w("nine_l.npy")])
refused_early("npy 9 bands chosen with --bands, HCA: refused at once",
              ["segment", w("nine.npy"), "--bands", "1,2,3,4,5,6,7,8,9", "-k", 3, "-o", w("nine_l.npy")],
              r"at most 8 bands.*9 chosen", [w("nine_l.npy")])
rc, out, err, t = run("segment", w("nine.npy"), "--bands", "1,2", "-k", 3, "-o", w("nine_l.npy"),
                      "--algorithm", "kmeans", "--truth", w("no_such_truth.npy"))
check(rc == 1 and "no_such_truth.npy: cannot open" in err and "segment:" not in out and t < 2,
      "2 of the 9 bands and a missing --truth: the truth refused before the 3.6 GB file is read", err + out)
write_npy_header(w("short.npy"), "|u1", (20000, 20000), sparse=False)
refused_early("npy whose data are shorter than its shape: 'truncated' before any row is read",
              ["segment", w("short.npy"), "-k", 3, "-o", w("short_l.npy")], r"short\.npy: truncated",
              [w("short_l.npy")])
for f in ("huge.npy", "nine.npy", "k_big.npy"):
    os.remove(w(f))

# ------------------------------------------------------------------ --truth checked before clustering (.npy)
rng = np.random.default_rng(5)
img = np.zeros((30, 40), np.uint8)
img[:, 20:] = 200
img = (img + rng.integers(0, 5, img.shape)).astype(np.uint8)
np.save(w("small.npy"), img)
truth = (img > 100).astype(np.int32)
np.save(w("truth_ok.npy"), truth)
np.save(w("truth_small.npy"), truth[:20, :20].copy())
np.save(w("truth_float.npy"), truth.astype(np.float32))
with open(w("truth_cut.npy"), "wb") as f:
    f.write(open(w("truth_ok.npy"), "rb").read()[:-100])
os.makedirs(w("truth_dir.npy"), exist_ok=True)
outs = [w("small_l.npy"), w("small_p.png")]
ALGS = ("hca", "kmeans", "meanshift")
# The wrong size with every algorithm; the other faults each with one (the check is the same code).
for name, pattern, algs in (
        ("truth_small.npy", r"--truth .*truth_small\.npy: labels must have shape \(30, 40\)", ALGS),
        ("truth_float.npy", r"--truth .*labels must be \|i1, <i2, <i4 or <i8", ALGS[:1]),
        ("truth_cut.npy", r"--truth .*truth_cut\.npy: truncated", ALGS[1:2]),
        ("truth_dir.npy", r"--truth .*truth_dir\.npy: is a directory", ALGS[2:]),
        ("missing.npy", r"--truth .*missing\.npy: cannot open", ALGS[:1])):
    for alg in algs:
        refused_early("--truth %s with %s: refused before clustering, no output made" % (name, alg),
                      ["segment", w("small.npy"), "--algorithm", alg] + (["-k", 2] if alg != "meanshift" else []) +
                      ["-o", outs[0], "--preview", outs[1], "--truth", w(name)], pattern, outs)
rc, out, err, t = run("segment", w("small.npy"), "-k", 2, "-o", outs[0], "--truth", w("truth_ok.npy"))
check(rc == 0 and "ARI 1.000000" in out, "--truth of the right size still scores (ARI 1)", out + err)

# ------------------------------------------------------------------ item 8: --nodata nan (.npy)
f32 = np.where(img > 100, 0.8, 0.2).astype(np.float32) + rng.normal(0, 0.01, img.shape).astype(np.float32)
nan_at = np.zeros(img.shape, bool)
nan_at[5, 5:15] = True
nan_at[25, 30] = True
f32[nan_at] = np.nan
f32[10, 10] = -9999.0  # an ordinary value here: .npy has no nodata of its own
np.save(w("f32nan.npy"), f32)
for spelling in (["--nodata", "nan"], ["--nodata=NaN"], ["--nodata", "-nan"]):
    rc, out, err, t = run("segment", w("f32nan.npy"), "-k", 3, "-o", w("f32nan_l.npy"), *spelling)
    lab = np.load(w("f32nan_l.npy")) if rc == 0 else None
    check(rc == 0 and np.array_equal(lab < 0, nan_at),
          "float32 .npy, %s: accepted, label -1 exactly at the NaN pixels" % " ".join(spelling), err)
rc, out, err, t = run("segment", w("small.npy"), "-k", 2, "-o", w("u8nan_l.npy"), "--nodata", "nan")
lab = np.load(w("u8nan_l.npy")) if rc == 0 else None
check(rc == 0 and (lab >= 0).all() and "1200 valid" in out,
      "uint8 .npy, --nodata nan: accepted, matches no integer pixel (all 1200 valid)", out + err)
rc, out, err, t = run("segment", w("small.npy"), "-k", 2, "-o", w("x.npy"), "--nodata", "nonsense")
check(rc == 2 and "not a number" in err, "--nodata nonsense: still refused as not a number", err)

# ------------------------------------------------------------------ item 8: what a non-image is (.npy)
os.makedirs(w("adir.npy"), exist_ok=True)
open(w("empty.npy"), "wb").close()
refused_early("a directory as the .npy image: 'is a directory'",
              ["segment", w("adir.npy"), "-k", 2, "-o", w("x.npy")], r"adir\.npy: is a directory")
refused_early("an empty .npy: 'empty file (0 bytes)'",
              ["segment", w("empty.npy"), "-k", 2, "-o", w("x.npy")], r"empty\.npy: empty file \(0 bytes\)")

if HAVE_GDAL:
    drv = gdal.GetDriverByName("GTiff")

    def sparse_tif(path, width, height, bands, dtype=gdal.GDT_Byte, nodata=None):
        ds = drv.Create(path, width, height, bands, dtype, options=["SPARSE_OK=YES", "TILED=YES"])
        if nodata is not None:
            for b in range(bands):
                ds.GetRasterBand(b + 1).SetNoDataValue(nodata)
        ds = None

    def write_tif(path, arr, dtype, nodata=None):
        arr = arr if arr.ndim == 3 else arr[:, :, None]
        ds = drv.Create(path, arr.shape[1], arr.shape[0], arr.shape[2], dtype)
        for b in range(arr.shape[2]):
            band = ds.GetRasterBand(b + 1)
            if nodata is not None:
                band.SetNoDataValue(nodata)
            band.WriteArray(arr[:, :, b])
        ds = None

    # ---------------------------------------------------------------- item 6 (GeoTIFF): the case
    sparse_tif(w("huge.tif"), 100000, 100000, 1)
    check(os.path.getsize(w("huge.tif")) < 4 << 20, "sparse 100000 x 100000 GeoTIFF made (%d bytes on disk)" %
          os.path.getsize(w("huge.tif")))
    streams_at_once("GeoTIFF 100000 x 100000, HCA: streamed, said at once, not after 77 s of reading",
                    ["segment", w("huge.tif"), "-k", 3, "-o", w("huge_l.tif")],
                    r"^streaming: .*: HCA in 3 passes", [w("huge_l.tif")])
    streams_at_once("GeoTIFF 100000 x 100000, mean shift: by strips, said at once",
                    ["segment", w("huge.tif"), "--algorithm", "meanshift", "-o", w("huge_l.tif")],
                    r"^streaming: .*: mean shift in 1 pass over strips", [w("huge_l.tif")])
    streams_at_once("GeoTIFF 100000 x 100000, k-means: streamed, said at once",
                    ["segment", w("huge.tif"), "--algorithm", "kmeans", "-k", 3, "-o", w("huge_l.tif")],
                    r"^streaming: .*: k-means in 2 passes and one per iteration", [w("huge_l.tif")])
    # With a nodata value the valid pixels are unknown until read: the choice to stream counts every pixel
    # valid (a run read into memory and then found too large would have read 160 GB for nothing).
    sparse_tif(w("huge_f.tif"), 100000, 100000, 4, gdal.GDT_Float32, nodata=-9999)
    streams_at_once("GeoTIFF 100000 x 100000 x 4 Float32 with nodata, HCA: streamed, said at once",
                    ["segment", w("huge_f.tif"), "-k", 3, "-o", w("huge_l.tif")],
                    r"^streaming: the run would hold [\d.]+ GiB in memory \(the chosen bands [\d.]+ GiB", [w("huge_l.tif")])
    sparse_tif(w("nine.tif"), 10000, 10000, 9)
    refused_early("GeoTIFF 10000 x 10000 x 9 bands, HCA: the 8-band limit at once",
                  ["segment", w("nine.tif"), "-k", 3, "-o", w("nine_l.tif")],
                  r"nine\.tif: HCA clusters at most 8 bands \(dimensions\), 9 chosen", [w("nine_l.tif")])
    refused_early("GeoTIFF 9 bands, 9 chosen with --bands, HCA: refused at once",
                  ["segment", w("nine.tif"), "--bands", "9,8,7,6,5,4,3,2,1", "-k", 3, "-o", w("nine_l.tif")],
                  r"at most 8 bands.*9 chosen", [w("nine_l.tif")])
    for f in ("huge.tif", "huge_f.tif", "nine.tif"):
        os.remove(w(f))

    # ---------------------------------------------------------------- --truth of the wrong size (GeoTIFF)
    write_tif(w("small.tif"), img, gdal.GDT_Byte)
    write_tif(w("truth_ok.tif"), truth, gdal.GDT_Int32)
    write_tif(w("truth_small.tif"), truth[:20, :20], gdal.GDT_Int32)
    with open(w("truth_text.tif"), "w") as f:
        f.write("these are not labels\n")
    touts = [w("small_l.tif"), w("small_p.png")]
    for name, pattern, algs in (
            ("truth_small.tif", r"--truth .*truth_small\.tif: 20 x 20 pixels, the image is 40 x 30", ALGS),
            ("truth_text.tif", r"--truth .*truth_text\.tif: not a raster format GDAL recognises", ALGS[1:2]),
            ("truth_small.npy", r"--truth .*truth_small\.npy: labels must have shape \(30, 40\)", ALGS[2:])):
        for alg in algs:
            refused_early("GeoTIFF image, --truth %s with %s: refused before clustering, no output made" % (name, alg),
                          ["segment", w("small.tif"), "--algorithm", alg] + (["-k", 2] if alg != "meanshift" else [])
                          + ["-o", touts[0], "--preview", touts[1], "--truth", w(name)], pattern, touts)
    rc, out, err, t = run("segment", w("small.tif"), "-k", 2, "-o", touts[0], "--truth", w("truth_ok.tif"))
    check(rc == 0 and "ARI 1.000000" in out, "GeoTIFF --truth of the right size still scores (ARI 1)", out + err)

    # ---------------------------------------------------------------- item 8: --nodata nan (GeoTIFF)
    f32n = f32.copy()
    f32n[20, 2:8] = -9999.0  # the band's own nodata value
    write_tif(w("f32.tif"), f32n, gdal.GDT_Float32, nodata=-9999)
    rc, out, err, t = run("segment", w("f32.tif"), "-k", 3, "-o", w("f32_l.tif"))
    lab = labels_of(w("f32_l.tif")) if rc == 0 else None
    minus = nan_at | (f32n == -9999)
    check(rc == 0 and np.array_equal(lab < 0, minus), "Float32 GeoTIFF, band nodata -9999: -1 at NaN and -9999", err)
    rc, out, err, t = run("segment", w("f32.tif"), "-k", 3, "-o", w("f32_l.tif"), "--nodata", "nan")
    lab = labels_of(w("f32_l.tif")) if rc == 0 else None
    check(rc == 0 and np.array_equal(lab < 0, nan_at),
          "Float32 GeoTIFF, --nodata nan: accepted, -1 exactly at NaN (the file's -9999 overridden, clustered)", err)
    write_tif(w("u8nd.tif"), img, gdal.GDT_Byte, nodata=int(img[0, 0]))
    rc, out, err, t = run("segment", w("u8nd.tif"), "-k", 2, "-o", w("u8nd_l.tif"), "--nodata", "nan")
    lab = labels_of(w("u8nd_l.tif")) if rc == 0 else None
    check(rc == 0 and (lab >= 0).all(), "Byte GeoTIFF with a nodata value, --nodata nan: every pixel valid", err)

    # ---------------------------------------------------------------- item 8: what a non-raster is
    os.makedirs(w("adir.tif"), exist_ok=True)
    open(w("empty.tif"), "w").close()
    with open(w("notes.txt"), "w") as f:
        f.write("hello, this is text\n")
    with open(w("cut.tif"), "wb") as f:
        f.write(open(w("small.tif"), "rb").read()[:9])
    for name, pattern in (("adir.tif", r"adir\.tif: is a directory"),
                          ("empty.tif", r"empty\.tif: empty file \(0 bytes\)"),
                          ("notes.txt", r"notes\.txt: not a raster format GDAL recognises"),
                          ("cut.tif", r"cut\.tif: GDAL cannot read it as a raster .*: \S")):
        line = refused_early("%s as the image: says what it is" % name,
                             ["segment", w(name), "-k", 2, "-o", w("x.tif")], pattern)
        check("unknown GDAL error" not in line, "%s: not 'unknown GDAL error'" % name, line)

    # ---------------------------------------------------------------- item 8: Float64 beyond float32
    f64 = np.where(img > 100, 0.8, 0.2) + rng.normal(0, 0.01, img.shape)
    big = np.zeros(img.shape, bool)
    big[3, 3:8] = True  # 5 values beyond float32, both signs
    f64[3, 3:6] = 1e300
    f64[3, 6:8] = -5e38
    nd = np.zeros(img.shape, bool)
    nd[28, 1:4] = True  # the band's nodata, -DBL_MAX, is not counted: it is nodata anyway
    f64[nd] = -np.finfo(np.float64).max
    write_tif(w("f64.tif"), f64, gdal.GDT_Float64, nodata=float(-np.finfo(np.float64).max))
    rc, out, err, t = run("segment", w("f64.tif"), "-k", 2, "-o", w("f64_l.tif"))
    lab = labels_of(w("f64_l.tif")) if rc == 0 else None
    check(rc == 0 and re.search(r"warning: .*f64\.tif: 5 values beyond float32's range .*nodata", err) is not None
          and np.array_equal(lab < 0, big | nd),
          "Float64 GeoTIFF, 5 values beyond float32: warned with the count (not the 3 nodata), those pixels -1", err)
    i32 = np.where(img > 100, 16777218, 2).astype(np.int32)
    i32[7, 7:14] = 16777217  # 7 values float32 rounds; 16777218 it holds
    write_tif(w("i32.tif"), i32, gdal.GDT_Int32)
    rc, out, err, t = run("segment", w("i32.tif"), "-k", 2, "-o", w("i32_l.tif"))
    check(rc == 0 and re.search(r"warning: .*i32\.tif: 7 values beyond 2\^24 rounded", err) is not None
          and "beyond float32's range" not in err, "Int32 GeoTIFF, 7 values float32 rounds: warned with the count", err)
    rc, out, err, t = run("segment", w("small.tif"), "-k", 2, "-o", w("quiet_l.tif"))
    check(rc == 0 and "warning" not in err, "Byte GeoTIFF: no warning", err)

check.finish()
