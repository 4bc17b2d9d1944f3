#!/usr/bin/python3
"""parclust segment and parclust generate scene on real files.

Usage: segment_test.py PATH_TO_parclust WORKDIR HAVE_GDAL(0|1)

Images are made here with NumPy (and written with GDAL's Python bindings when the CLI has GDAL):
regions of known colours with a little noise, nodata pixels in known places. The references are
computed here, independently of parclust: the true region map (labels must equal it up to a
renaming of the clusters, checked as a bijection), the nodata map (label -1 exactly there), the
regions' mean colours (the preview's colours, decoded from the PNG by our own reader), the matched
accuracy (SciPy's Hungarian method). Bad input must give exit 1 or 2, one line on stderr with
"error", and leave no output and no temporary file behind.
"""
import os
import re
import struct
import subprocess
import sys
import zlib

from checks import Checks, raster_test_args, require

require("segment", ["numpy", "scipy.optimize"], "python3-numpy python3-scipy")
import numpy as np
from scipy.optimize import linear_sum_assignment

P, W, HAVE_GDAL = raster_test_args("segment")
if HAVE_GDAL:
    from osgeo import gdal, osr

    gdal.UseExceptions()

check = Checks("segment")


def run(*args):
    r = subprocess.run([P] + [str(a) for a in args], capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout, r.stderr


def w(name):
    return os.path.join(W, name)


def leftovers():
    return [f for f in os.listdir(W) if f.startswith(".pc-") or ".tmp." in f]  # staging names


def bijective(labels, truth, valid):
    """labels equal truth up to renaming, on the valid pixels; -1 exactly on the others."""
    if labels.shape != truth.shape:
        return False, "shape %s, expected %s" % (labels.shape, truth.shape)
    if not np.array_equal(labels < 0, ~valid):
        return False, "-1 at %d pixels, nodata at %d (%d differ)" % (
            (labels < 0).sum(), (~valid).sum(), ((labels < 0) != ~valid).sum())
    a, b = labels[valid], truth[valid]
    pairs = set(zip(a.tolist(), b.tolist()))
    if len(pairs) != len(set(a.tolist())) or len(pairs) != len(set(b.tolist())):
        return False, "not one cluster per region: %d label/region pairs, %d labels, %d regions" % (
            len(pairs), len(set(a.tolist())), len(set(b.tolist())))
    return True, ""


def matched_accuracy(truth, pred):
    t = np.unique(truth, return_inverse=True)[1]
    p = np.unique(pred, return_inverse=True)[1]
    c = np.zeros((t.max() + 1, p.max() + 1), np.int64)
    np.add.at(c, (t, p), 1)
    r, q = linear_sum_assignment(-c)
    return c[r, q].sum() / len(truth)


def expect_error(desc, rc, err, code, pattern, outputs=()):
    lines = [l for l in err.splitlines() if l.strip()]
    ok = rc == code and len(lines) == 1 and "error" in lines[0] and re.search(pattern, lines[0]) is not None
    left = [o for o in outputs if os.path.exists(o)] + leftovers()
    check(ok and not left, desc, "exit %d (expected %d), stderr %r, left behind %s" % (rc, code, err, left))


def read_png(path):
    """Our own PNG reader (8-bit RGB, any filter, zlib): the preview's pixels."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        assert zlib.crc32(kind + body) == struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0], "bad CRC"
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    width, height, depth, ctype = ihdr[:4]
    assert depth == 8 and ctype == 2
    raw = zlib.decompress(idat)
    out = np.zeros((height, width, 3), np.uint8)
    stride = 1 + 3 * width
    prev = np.zeros(3 * width, np.int32)
    for y in range(height):
        f = raw[y * stride]
        line = np.frombuffer(raw[y * stride + 1:(y + 1) * stride], np.uint8).astype(np.int32)
        assert f in (0, 2), "filter %d not expected from parclust" % f
        cur = line if f == 0 else (line + prev) & 255
        out[y] = cur.reshape(width, 3)
        prev = cur
    return out


# ---------------------------------------------------------------- images made here

rng = np.random.default_rng(int(os.environ.get("PARCLUST_SEGMENT_SEED", "20261121")))
H, WD = 48, 64


def regions(h=H, wd=WD):
    """Three regions: left third, a disc, the rest; nodata: a 3-pixel frame and a few scattered pixels."""
    y, x = np.mgrid[0:h, 0:wd]
    truth = np.full((h, wd), 2, np.int32)
    truth[:, : wd // 3] = 0
    truth[(y - h / 2) ** 2 + (x - 2 * wd / 3) ** 2 < (h / 4) ** 2] = 1
    valid = np.ones((h, wd), bool)
    valid[:3, :] = valid[-3:, :] = valid[:, :3] = valid[:, -3:] = False
    valid[rng.integers(3, h - 3, 10), rng.integers(3, wd - 3, 10)] = False
    return truth, valid


def image(truth, valid, colours, noise, dtype, nodata):
    img = np.asarray(colours, np.float64)[truth] + rng.normal(0, noise, truth.shape + (len(colours[0]),))
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        img = np.clip(np.rint(img), info.min, info.max)
    img = img.astype(dtype)
    img[~valid] = nodata
    return img


def write_tif(path, img, nodata=None, gt=(300000.0, 2.5, 0.0, 5100000.0, 0.0, -2.5), epsg=32631):
    types = {np.uint8: gdal.GDT_Byte, np.uint16: gdal.GDT_UInt16, np.int16: gdal.GDT_Int16,
             np.float32: gdal.GDT_Float32}
    bands = img.shape[2] if img.ndim == 3 else 1
    ds = gdal.GetDriverByName("GTiff").Create(path, img.shape[1], img.shape[0], bands, types[img.dtype.type])
    ds.SetGeoTransform(gt)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(epsg)
    ds.SetProjection(srs.ExportToWkt())
    for b in range(bands):
        band = ds.GetRasterBand(b + 1)
        if nodata is not None:
            band.SetNoDataValue(nodata)
        band.WriteArray(img[:, :, b] if img.ndim == 3 else img)
    ds = None


def read_tif(path):
    """The dataset and its band 1, nodata read as -1 (label rasters are of the smallest type)."""
    ds = gdal.Open(path)
    band = ds.GetRasterBand(1)
    lab = band.ReadAsArray().astype(np.int64)
    if band.GetNoDataValue() is not None:
        lab[lab == band.GetNoDataValue()] = -1
    return ds, lab


def stretch(v, lo, hi):
    return np.clip(np.rint(255 * (v - lo) / (hi - lo)), 0, 255)


COL3 = [(30, 60, 200), (200, 40, 40), (60, 190, 70)]

# ---------------------------------------------------------------- NumPy images (every build)

truth, valid = regions()
img = image(truth, valid, COL3, 3, np.uint8, 0)
np.save(w("rgb.npy"), img)
rc, out, err = run("segment", w("rgb.npy"), "-k", 3, "--nodata", 0, "-o", w("rgb_labels.npy"))
ok = rc == 0 and os.path.exists(w("rgb_labels.npy"))
if ok:
    ok, why = bijective(np.load(w("rgb_labels.npy")), truth, valid)
else:
    why = "exit %d: %s" % (rc, err)
check(ok, "npy uint8 (H, W, 3), --nodata 0: HCA labels = the regions, -1 exactly at nodata", why)
m = re.search(r"(\d+) valid", out)
check(m is not None and int(m.group(1)) == valid.sum(), "valid pixel count printed (%d)" % valid.sum(), out[:300])
sizes = [int(s) for s in re.findall(r"cluster \d+: (\d+) pixels", out)]
check(sorted(sizes) == sorted(np.bincount(truth[valid]).tolist()), "cluster pixel counts printed",
      "%s vs %s" % (sizes, np.bincount(truth[valid]).tolist()))
check(all(s in out for s in ("time read", "time cluster", "time write")), "per-stage timings printed")

f32 = image(truth, valid, [(0.1, 0.5), (0.8, 0.2), (0.4, 0.9)], 0.01, np.float32, np.nan)
np.save(w("f32.npy"), f32)
rc, out, err = run("segment", w("f32.npy"), "--algorithm", "kmeans", "-k", 3, "--seed", 1, "-o", w("f32_labels.npy"))
ok, why = bijective(np.load(w("f32_labels.npy")), truth, valid) if rc == 0 else (False, err)
check(ok, "npy float32 with NaN pixels, k-means: labels = regions, NaN -> -1", why)

gray = image(truth, valid, [(20,), (120,), (230,)], 2, np.uint8, 0)[:, :, 0]
np.save(w("gray.npy"), gray)
np.save(w("gray_truth.npy"), np.where(valid, truth, -1).astype(np.int32))
rc, out, err = run("segment", w("gray.npy"), "--nodata", 0, "-k", 3, "-o", w("gray_labels.npy"),
                   "--truth", w("gray_truth.npy"))
m = re.search(r"accuracy ([0-9.]+)\s+ARI ([0-9.-]+)\s+NMI ([0-9.]+)", out)
check(rc == 0 and m and float(m.group(1)) == 1.0 and float(m.group(2)) == 1.0,
      "npy (H, W) single band with --truth: accuracy 1, ARI 1", out + err)

np.save(w("allnan.npy"), np.full((8, 8, 2), np.nan, np.float32))
rc, out, err = run("segment", w("allnan.npy"), "-o", w("allnan_labels.npy"))
expect_error("all-NaN image: clear error, no output", rc, err, 1, "every pixel is nodata", [w("allnan_labels.npy")])

raw = open(w("rgb.npy"), "rb").read()
open(w("short.npy"), "wb").write(raw[: len(raw) // 2])
rc, out, err = run("segment", w("short.npy"), "-o", w("short_labels.npy"))
expect_error("truncated .npy: clear error, no output", rc, err, 1, "truncated", [w("short_labels.npy")])

rc, out, err = run("segment", w("rgb.npy"), "--bands", "1,4", "-o", w("b4.npy"))
expect_error("band 4 of a 3-band .npy: clear error", rc, err, 1, "no band 4", [w("b4.npy")])

rc, out, err = run("segment", w("rgb.npy"), "--algorithm", "kmeans", "-k", 5000, "-o", w("kbig.npy"))
expect_error("k-means with k > valid pixels: clear error", rc, err, 1, "more than the", [w("kbig.npy")])

rc, out, err = run("segment", w("missing.npy"), "-o", w("m.npy"))
expect_error("missing input file", rc, err, 1, "cannot open", [w("m.npy")])
rc, out, err = run("segment", w("rgb.npy"), "--algorithm", "dbscan", "-o", w("x.npy"))
expect_error("unknown --algorithm: usage error", rc, err, 2, "hca, heca, kmeans or meanshift")
rc, out, err = run("segment", w("rgb.npy"), "--algorithm", "kmeans", "-k", 3, "-m", 16, "-o", w("x.npy"))
expect_error("-m with k-means: usage error", rc, err, 2, "does not apply")
rc, out, err = run("segment", w("rgb.npy"))
expect_error("no -o: usage error", rc, err, 2, "no output file")
rc, out, err = run("segment", w("rgb.npy"), "-o", w("nodir/x.npy"))
expect_error("output in a missing directory: clear error", rc, err, 1, "cannot write to directory")
os.mkdir(w("adir.npy"))
rc, out, err = run("segment", w("rgb.npy"), "-k", 3, "--nodata", 0, "-o", w("adir.npy"))
expect_error("output path is a directory: error, nothing half-written", rc, err, 1, "adir.npy")
os.mkdir(w("pdir.png"))
rc, out, err = run("segment", w("rgb.npy"), "-k", 3, "--nodata", 0, "-o", w("with_preview.npy"), "--preview",
                   w("pdir.png"))
expect_error("preview cannot be written: labels not left either", rc, err, 1, "pdir.png", [w("with_preview.npy")])

# Preview colours: each region in its mean colour, stretched by the valid range of each band; nodata black.
rc, out, err = run("segment", w("rgb.npy"), "-k", 3, "--nodata", 0, "-o", w("pv.npy"), "--preview", w("pv.png"))
ok, why = rc == 0, err
if ok:
    pic = read_png(w("pv.png")).astype(int)
    fv = img.astype(np.float64)
    lo, hi = fv[valid].min(axis=0), fv[valid].max(axis=0)
    want = np.zeros(truth.shape + (3,))
    for r in range(3):
        want[truth == r] = stretch(fv[(truth == r) & valid].mean(axis=0), lo, hi)
    want[~valid] = 0
    diff = np.abs(pic - want).max() if pic.shape == want.shape else 999
    ok, why = diff <= 1, "largest colour difference %s, shape %s" % (diff, pic.shape)
check(ok, "preview PNG: regions in their stretched mean colours, nodata black", why)
rc, out, err = run("segment", w("rgb.npy"), "-k", 3, "--nodata", 0, "-o", w("pv2.npy"), "--preview", w("pv2.png"),
                   "--preview-size", 16)
ok = rc == 0 and read_png(w("pv2.png")).shape == (12, 16, 3)
check(ok, "preview subsampled to --preview-size 16 (64 x 48 -> 16 x 12)", err)

# generate scene as .npy (no GDAL needed), then HCA at its default m = 32 against the truth.
rc, out, err = run("generate", "scene", "--width", 200, "--height", 160, "--bands", 4, "--classes", 5, "--seed", 3,
                   "-o", w("scene.npy"), "--labels", w("scene_truth.npy"))
check(rc == 0, "generate scene .npy", err)
sc, st = np.load(w("scene.npy")), np.load(w("scene_truth.npy"))
check(sc.shape == (160, 200, 4) and sc.dtype == np.uint8 and st.shape == (160, 200),
      "scene .npy: (H, W, B) uint8 and (H, W) truth", "%s %s" % (sc.shape, st.shape))
border = st < 0
check(np.array_equal(border, (sc == 0).all(axis=2)) and border[0].all() and border[:, -1].all()
      and sorted(set(st[~border].tolist())) == list(range(5)),
      "scene: nodata (0) exactly on the border, truth -1 there, all 5 classes present")
rc, out, err = run("segment", w("scene.npy"), "--nodata", 0, "-k", 5, "-o", w("scene_l.npy"), "--truth",
                   w("scene_truth.npy"))
m = re.search(r"accuracy ([0-9.]+)", out)
lab = np.load(w("scene_l.npy")) if rc == 0 else None
ref = matched_accuracy(st[~border], lab[~border]) if lab is not None else 0
check(m and float(m.group(1)) >= 0.95 and abs(ref - float(m.group(1))) < 1e-6,
      "HCA (m 32) on a generated scene: matched accuracy >= 0.95, equal to SciPy's Hungarian (%.4f)" % ref, out + err)

# Mean shift: the CLI passes its options to pc_meanshift_image; once the library has it, it must find
# the regions of a simple two-region image.
two = np.where(np.arange(40)[None, :] < 20, 50, 200).repeat(30, 0).astype(np.uint8)
two = np.clip(two.astype(int) + rng.normal(0, 2, two.shape), 1, 255).astype(np.uint8)
np.save(w("two.npy"), two)
rc, out, err = run("segment", w("two.npy"), "--algorithm", "meanshift", "--spatial-bandwidth", 6,
                   "--range-bandwidth", 20, "--min-region-size", 20, "-o", w("two_l.npy"))
t2 = (np.arange(40)[None, :] >= 20).repeat(30, 0).astype(np.int32)
ok, why = bijective(np.load(w("two_l.npy")), t2, np.ones_like(t2, bool)) if rc == 0 else (False, err)
check(ok, "meanshift (--spatial-bandwidth 6 --range-bandwidth 20): two regions found", why)
rc, out, err = run("segment", w("two.npy"), "--algorithm", "meanshift", "--range-bandwidth", -1, "-o", w("x.npy"))
expect_error("meanshift --range-bandwidth -1: usage error", rc, err, 2, "must be > 0")

# ---------------------------------------------------------------- rasters through GDAL

if not HAVE_GDAL:
    rc, out, err = run("segment", w("rgb.npy"), "-o", w("x.tif"))
    expect_error("no GDAL: a GeoTIFF output is refused, naming GDAL", rc, err, 1, "without raster support \\(GDAL\\)")
    open(w("img.tif"), "wb").write(b"II*\0")
    rc, out, err = run("segment", w("img.tif"), "-o", w("x.npy"))
    expect_error("no GDAL: a GeoTIFF input is refused, naming GDAL", rc, err, 1, "without raster support \\(GDAL\\)")
else:
    gt = (300000.0, 2.5, 0.0, 5100000.0, 0.0, -2.5)
    write_tif(w("rgb.tif"), img, nodata=0, gt=gt, epsg=32631)
    rc, out, err = run("segment", w("rgb.tif"), "-k", 3, "-o", w("rgb_l.tif"), "--preview", w("rgb_l.png"))
    ok, why = rc == 0, err
    if ok:
        ds, lab = read_tif(w("rgb_l.tif"))
        srs_in, srs_out = osr.SpatialReference(), osr.SpatialReference(wkt=ds.GetProjection())
        srs_in.ImportFromEPSG(32631)
        band = ds.GetRasterBand(1)
        ok = (ds.GetGeoTransform() == gt and srs_out.IsSame(srs_in) and band.GetNoDataValue() == 255
              and band.DataType == gdal.GDT_Byte and (ds.RasterXSize, ds.RasterYSize) == (WD, H))
        why = "gt %s, nodata %s, type %s, srs same %s" % (ds.GetGeoTransform(), band.GetNoDataValue(),
                                                         band.DataType, srs_out.IsSame(srs_in))
        check(ok, "GeoTIFF out: same size, geotransform and projection (EPSG:32631), Byte (3 clusters), nodata 255",
              why)
        ok, why = bijective(lab, truth, valid)
    check(ok, "GeoTIFF uint8 RGB, band nodata 0: labels = regions, -1 exactly at nodata", why)
    check(rc == 0 and read_png(w("rgb_l.png")).shape == (H, WD, 3), "GeoTIFF in, preview PNG of the image's size")

    u16 = image(truth, valid, [(1000, 30000), (40000, 2000), (20000, 60000)], 300, np.uint16, 65535)
    write_tif(w("u16.tif"), u16, nodata=65535)
    rc, out, err = run("segment", w("u16.tif"), "-k", 3, "-o", w("u16_l.tif"))
    ok, why = bijective(read_tif(w("u16_l.tif"))[1], truth, valid) if rc == 0 else (False, err)
    check(ok and "UInt16" in out, "GeoTIFF uint16, nodata 65535: labels = regions", why)

    f32t = image(truth, valid, [(0.1, 0.5, 0.3), (0.8, 0.2, 0.3), (0.4, 0.9, 0.3)], 0.01, np.float32, -9999)
    f32t[5, 10] = np.nan  # a NaN without being the nodata value
    v2 = valid.copy()
    v2[5, 10] = False
    write_tif(w("f32.tif"), f32t, nodata=-9999)
    rc, out, err = run("segment", w("f32.tif"), "-k", 3, "-o", w("f32_l.tif"))
    ok, why = bijective(read_tif(w("f32_l.tif"))[1], truth, v2) if rc == 0 else (False, err)
    check(ok, "GeoTIFF float32, nodata -9999 and one NaN: labels = regions, both -1", why)

    # --nodata given for float32 pixels: 0.1 matches 0.1f; an infinity gets no cluster either.
    f32o = image(truth, valid, [(1.0, 5.0, 2.0), (8.0, 2.0, 7.0), (4.0, 9.0, 4.0)], 0.05, np.float32, 0.1)
    f32o[7, 3] = np.inf
    v3 = valid.copy()
    v3[7, 3] = False
    write_tif(w("f32o.tif"), f32o)
    rc, out, err = run("segment", w("f32o.tif"), "--nodata", 0.1, "-k", 3, "-o", w("f32o_l.tif"))
    ok, why = bijective(read_tif(w("f32o_l.tif"))[1], truth, v3) if rc == 0 else (False, err)
    check(ok, "GeoTIFF float32, --nodata 0.1 and one infinity: labels = regions, both -1", why)

    # An output that is the input itself is refused, and the input survives.
    before = open(w("f32o.tif"), "rb").read()
    rc, out, err = run("segment", w("f32o.tif"), "-k", 3, "-o", w("f32o.tif"))
    expect_error("output = input: refused", rc, err, 1, "refusing to overwrite")
    check(open(w("f32o.tif"), "rb").read() == before, "output = input: the input is unchanged")
    gdal.GetDriverByName("PNG").CreateCopy(w("in.png"), gdal.Open(w("rgb.tif")))
    rc, out, err = run("segment", w("in.png"), "-k", 3, "-o", w("in_l.tif"), "--preview", w("in.png"))
    expect_error("preview = input: refused", rc, err, 1, "refusing to overwrite", [w("in_l.tif")])

    i16 = image(truth, valid, [(-3000, 100), (2500, -2000), (0, 3000)], 50, np.int16, -32768)
    write_tif(w("i16.tif"), i16, nodata=-32768)
    rc, out, err = run("segment", w("i16.tif"), "-k", 3, "-o", w("i16_l.tif"))
    ok, why = bijective(read_tif(w("i16_l.tif"))[1], truth, valid) if rc == 0 else (False, err)
    means = [[float(v) for v in m.split(", ")] for m in re.findall(r"mean \(([^)]*)\)", out)]
    want = sorted(i16[valid & (truth == r)].astype(float).mean(axis=0).round(0).tolist() for r in range(3))
    got = sorted([[round(v) for v in m] for m in means])
    check(ok and got == [[round(v) for v in m] for m in want],
          "GeoTIFF int16 with negative values: labels = regions, cluster means in int16 units", "%s %s %s" % (why, got, want))

    # Six bands; the regions differ only in band 5. Bands 1,2 alone see one region; --bands 5,1 sees all.
    six = np.repeat(image(truth, valid, [(90,), (90,), (90,)], 0, np.uint8, 0), 6, axis=2)
    six[:, :, 4] = image(truth, valid, [(20,), (120,), (230,)], 2, np.uint8, 0)[:, :, 0]
    write_tif(w("six.tif"), six, nodata=0)
    rc, out, err = run("segment", w("six.tif"), "--bands", "5,1", "-k", 3, "-o", w("six_l.tif"))
    ok, why = bijective(read_tif(w("six_l.tif"))[1], truth, valid) if rc == 0 else (False, err)
    check(ok and "2 bands" in out, "6-band GeoTIFF, --bands 5,1: the regions (seen in band 5 only)", why)
    rc, out, err = run("segment", w("six.tif"), "--bands", "1,2", "--threshold", 0.5, "-o", w("six_12.tif"))
    k12 = re.search(r"hca: (\d+) clusters", out)
    check(rc == 0 and k12 and int(k12.group(1)) == 1, "6-band GeoTIFF, --bands 1,2 (flat bands): one cluster", out + err)
    rc, out, err = run("segment", w("six.tif"), "--bands", "2,7", "-o", w("six_7.tif"))
    expect_error("--bands 2,7 of a 6-band image: clear error", rc, err, 1, "no band 7 \\(the image has 6 bands\\)",
                 [w("six_7.tif")])

    write_tif(w("none.tif"), np.zeros((20, 30, 3), np.uint8), nodata=0)
    rc, out, err = run("segment", w("none.tif"), "-o", w("none_l.tif"))
    expect_error("all-nodata GeoTIFF: clear error, no output", rc, err, 1, "every pixel is nodata", [w("none_l.tif")])

    raw = open(w("u16.tif"), "rb").read()
    open(w("trunc.tif"), "wb").write(raw[: len(raw) * 2 // 3])
    rc, out, err = run("segment", w("trunc.tif"), "-o", w("trunc_l.tif"))
    expect_error("truncated GeoTIFF: clear error, no output", rc, err, 1, "trunc.tif", [w("trunc_l.tif")])
    open(w("junk.tif"), "wb").write(bytes(rng.integers(0, 256, 5000, dtype=np.uint8)))
    rc, out, err = run("segment", w("junk.tif"), "-o", w("junk_l.tif"))
    expect_error("random bytes as .tif: clear error", rc, err, 1, "not a raster format GDAL recognises", [w("junk_l.tif")])
    os.mkdir(w("tdir.tif"))
    rc, out, err = run("segment", w("rgb.tif"), "-k", 3, "-o", w("tdir.tif"))
    expect_error("GeoTIFF output over a directory: error, nothing half-written", rc, err, 1, "tdir.tif")

    # A PNG (no georeferencing) in, a GeoTIFF out.
    gdal.GetDriverByName("PNG").CreateCopy(w("rgb.png"), gdal.Open(w("rgb.tif")))
    rc, out, err = run("segment", w("rgb.png"), "--nodata", 0, "-k", 3, "-o", w("png_l.tif"))
    ok, why = bijective(read_tif(w("png_l.tif"))[1], truth, valid) if rc == 0 else (False, err)
    check(ok, "PNG input through GDAL: labels = regions", why)

    # The scene generator as GeoTIFF: georeferenced, nodata border, HCA >= 95% at m = 32.
    for dtype in ("uint8", "uint16", "float32"):
        rc, out, err = run("generate", "scene", "--width", 240, "--height", 180, "--classes", 6, "--seed", 11,
                           "--dtype", dtype, "-o", w("sc_%s.tif" % dtype), "--labels", w("sc_%s_truth.tif" % dtype))
        if rc != 0:
            check(False, "generate scene --dtype %s" % dtype, err)
            continue
        ds = gdal.Open(w("sc_%s.tif" % dtype))
        srs = osr.SpatialReference(wkt=ds.GetProjection())
        arr = ds.ReadAsArray()
        nd = ds.GetRasterBand(1).GetNoDataValue()
        tr = read_tif(w("sc_%s_truth.tif" % dtype))[1]
        check(ds.RasterCount == 4 and srs.GetAuthorityCode(None) == "32633" and ds.GetGeoTransform()[1] == 10
              and np.array_equal((arr == nd).all(axis=0), tr < 0) and (tr < 0).sum() > 0,
              "scene %s GeoTIFF: 4 bands, EPSG:32633, 10 m, nodata exactly where the truth is -1" % dtype)
        # the bands' statistics, stored in the file: exact over the valid pixels (NumPy's, in float64)
        ok, why = True, ""
        for b in range(4):
            v = arr[b][tr >= 0].astype(np.float64)
            got = ds.GetRasterBand(b + 1).GetStatistics(False, False)
            want = [v.min(), v.max(), v.mean(), v.std()]
            # (GDAL keeps 14 digits: a float32 minimum or maximum is that value once rounded to float32)
            if dtype == "float32" and got is not None:
                got = [float(np.float32(got[0])), float(np.float32(got[1]))] + list(got[2:])
            if got is None or got[:2] != want[:2] or not np.allclose(got[2:], want[2:], rtol=1e-9, atol=1e-12):
                ok, why = False, "band %d: %s, NumPy %s" % (b + 1, got, want)
        check(ok and ds.GetRasterBand(1).GetMetadataItem("STATISTICS_APPROXIMATE") is None,
              "scene %s GeoTIFF: exact band statistics (min, max as NumPy's, as float32 for float32; mean, std to 1e-9)" % dtype, why)
        rc, out, err = run("segment", w("sc_%s.tif" % dtype), "-k", 6, "-o", w("sc_%s_l.tif" % dtype), "--truth",
                           w("sc_%s_truth.tif" % dtype))
        m = re.search(r"accuracy ([0-9.]+)", out)
        lab = read_tif(w("sc_%s_l.tif" % dtype))[1] if rc == 0 else None
        ref = matched_accuracy(tr[tr >= 0], lab[tr >= 0]) if lab is not None else 0
        check(m and float(m.group(1)) >= 0.95 and abs(ref - float(m.group(1))) < 1e-6 and
              np.array_equal(lab < 0, tr < 0),
              "HCA on the %s scene: accuracy >= 0.95 (SciPy: %.4f), border -1" % (dtype, ref), out + err)

check.finish()
