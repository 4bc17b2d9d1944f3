#!/usr/bin/python3
"""parclust segment: the label raster's type, nodata value, georeferencing and creation options, and
GeoTIFFs read by several threads (issue 12, items 3 and 6).

Usage: segment_output_test.py PATH_TO_parclust WORKDIR HAVE_GDAL(0|1)

Every label GeoTIFF is read back with GDAL's Python bindings: its data type (Byte for up to 255
clusters, UInt16 beyond, or what --ot asks), its nodata value (255, 65535, -1), its geotransform and
projection (the input's), its IMAGE_STRUCTURE metadata (--co), and its labels, which must equal
those of --ot Int32 and of the .npy output, pixel for pixel, nodata read as -1. Reading: the labels
of a GeoTIFF read with 1, 2 and 3 threads, and of the same pixels as .npy (read by another path),
are the same. Refusals exit 2 (the command line) or 1 (the data), with one line and no output.
"""
import os
import re
import subprocess
import sys


from checks import Checks, raster_test_args, require

require("segment_output", ["numpy"], "python3-numpy")
import numpy as np

P, W, HAVE_GDAL = raster_test_args("segment_output")
if HAVE_GDAL:
    from osgeo import gdal, osr

    gdal.UseExceptions()
check = Checks("segment_output")
rng = np.random.default_rng(12)


def run(*args):
    r = subprocess.run([P] + [str(a) for a in args], capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout, r.stderr


def w(name):
    return os.path.join(W, name)


def refused(desc, args, code, pattern, outputs):
    rc, out, err = run(*args)
    lines = [l for l in err.splitlines() if l.strip()]
    ok = rc == code and len(lines) == 1 and "error" in lines[0] and re.search(pattern, lines[0]) is not None
    left = [o for o in outputs if os.path.exists(o)] + [f for f in os.listdir(W) if f.startswith(".pc-")]
    check(ok and not left, desc, "exit %d (expected %d), stderr %r, left behind %s" % (rc, code, err, left))


def regions(h, wd):
    """Three regions (left third, a disc, the rest) and nodata pixels: a frame and scattered ones."""
    yy, xx = np.mgrid[0:h, 0:wd]
    truth = np.full((h, wd), 2, np.int32)
    truth[:, : wd // 3] = 0
    truth[(yy - h / 2) ** 2 + (xx - 2 * wd / 3) ** 2 < (min(h, wd) / 4) ** 2] = 1
    valid = np.ones((h, wd), bool)
    valid[0, :] = valid[-1, :] = valid[:, 0] = valid[:, -1] = False
    valid[rng.integers(0, h, 40), rng.integers(0, wd, 40)] = False
    return truth, valid


def image(truth, valid, colours, noise, dtype, nodata):
    img = np.array(colours, float)[truth] + rng.normal(0, noise, truth.shape + (len(colours[0]),))
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        img = np.clip(np.rint(img), info.min + 1, info.max - 1)
    img = img.astype(dtype)
    img[~valid] = nodata
    return img


def write_tif(path, img, gdal_type, nodata, options=()):
    h, wd, b = img.shape
    ds = gdal.GetDriverByName("GTiff").Create(path, wd, h, b, gdal_type, list(options))
    ds.SetGeoTransform(GT)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32632)
    ds.SetProjection(srs.ExportToWkt())
    for i in range(b):
        band = ds.GetRasterBand(i + 1)
        band.WriteArray(img[:, :, i])
        band.SetNoDataValue(nodata)
    ds = None


def read_labels(path):
    """(type name, nodata, labels with nodata as -1, dataset) of a label GeoTIFF."""
    ds = gdal.Open(path)
    band = ds.GetRasterBand(1)
    lab = band.ReadAsArray().astype(np.int64)
    nd = band.GetNoDataValue()
    lab[lab == nd] = -1
    return gdal.GetDataTypeName(band.DataType), nd, lab, ds


GT = (600000.0, 5.0, 0.0, 5200000.0, 0.0, -5.0)
COL3 = [(30, 60, 200), (200, 40, 40), (60, 190, 70)]
truth, valid = regions(60, 80)
rgb = image(truth, valid, COL3, 3, np.uint8, 0)
np.save(w("rgb.npy"), rgb)

# ---------------------------------------------------------------- every build: the options' rules

refused("--ot with .npy labels: refused (their type follows the cluster count)", ["segment", w("rgb.npy"), "--nodata",
        0, "-k", 3, "--ot", "Byte", "-o", w("x.npy")], 2, r"\.npy labels are int8, int16 or int32 by the cluster count", [w("x.npy")])
refused("--co with .npy labels: refused", ["segment", w("rgb.npy"), "--nodata", 0, "-k", 3, "--co",
        "COMPRESS=LZW", "-o", w("x.npy")], 2, r"--ot and --co are for GeoTIFF labels", [w("x.npy")])
refused("--ot Float32: refused, naming the three types", ["segment", w("rgb.npy"), "--ot", "Float32", "-o",
        w("x.tif")], 2, r"--ot must be Byte, UInt16 or Int32, got 'Float32'", [w("x.tif")])
rc, out, err = run("segment", w("rgb.npy"), "--nodata", 0, "-k", 3, "-o", w("rgb_l.npy"))
lab = np.load(w("rgb_l.npy")) if rc == 0 else None
check(lab is not None and lab.dtype == np.int8 and lab.shape == truth.shape and np.array_equal(lab < 0, ~valid),
      ".npy labels of 3 clusters: int8 (H, W) with -1 at nodata", err)
rc, out, err = run("segment", w("rgb.npy"), "--nodata", 0, "-k", 3, "-o", w("rgb_l2.npy"), "--truth", w("rgb_l.npy"))
check(rc == 0 and "accuracy 1.000000  ARI 1.000000" in out, "--truth takes the int8 labels of its own .npy output",
      out + err)

if not HAVE_GDAL:
    refused("no GDAL: GeoTIFF labels refused, naming GDAL", ["segment", w("rgb.npy"), "--ot", "UInt16", "-o",
            w("x.tif")], 1, r"without raster support \(GDAL\)", [w("x.tif")])
    check.finish()

# ---------------------------------------------------------------- the type follows the clusters

write_tif(w("rgb.tif"), rgb, gdal.GDT_Byte, 0)
srs_in = osr.SpatialReference()
srs_in.ImportFromEPSG(32632)
runs = {}
for name, extra in (("auto", []), ("int32", ["--ot", "Int32"]), ("uint16", ["--ot", "uint16"]),
                    ("byte", ["--ot", "BYTE"])):
    rc, out, err = run("segment", w("rgb.tif"), "-k", 3, "-o", w("rgb_%s.tif" % name), *extra)
    runs[name] = read_labels(w("rgb_%s.tif" % name)) if rc == 0 else (None, None, None, None)
    if rc != 0:
        check(False, "segment rgb.tif %s" % " ".join(extra), err)
t, nd, lab, ds = runs["auto"]
rgb_lab = lab
if ds is not None:
    gt_ok = ds.GetGeoTransform() == GT and osr.SpatialReference(wkt=ds.GetProjection()).IsSame(srs_in)
    check(t == "Byte" and nd == 255 and gt_ok and (ds.RasterXSize, ds.RasterYSize) == (80, 60),
          "3 clusters: Byte, nodata 255, the input's geotransform and EPSG:32632",
          "%s %s %s %s" % (t, nd, ds.GetGeoTransform(), ds.GetProjection()[:60]))
    check("(Byte, nodata 255)" in out, "the type and nodata value are printed", out)
    check(np.array_equal(lab < 0, ~valid) and np.array_equal(lab, np.load(w("rgb_l.npy"))),
          "Byte labels = the .npy labels, nodata exactly at the nodata pixels")
for name, want in (("int32", ("Int32", -1)), ("uint16", ("UInt16", 65535)), ("byte", ("Byte", 255))):
    t2, nd2, lab2, ds2 = runs[name]
    check((t2, nd2) == want and lab2 is not None and np.array_equal(lab2, lab),
          "--ot %s: %s with nodata %s, the same labels" % (name, want[0], want[1]), "%s %s" % (t2, nd2))

# Many clusters: k-means -k 300 on 2400 pixels of random colours.
many = rng.integers(1, 255, (40, 60, 3)).astype(np.uint8)
many[0, :5] = 0
mvalid = (many != 0).any(axis=2)
write_tif(w("many.tif"), many, gdal.GDT_Byte, 0)
np.save(w("many.npy"), many)
km = ["--algorithm", "kmeans", "-k", 300, "--seed", 3, "--threads", 1]
rc1, out1, err1 = run("segment", w("many.tif"), *km, "-o", w("many.tif.tif"))
rc2, out2, err2 = run("segment", w("many.tif"), *km, "--ot", "Int32", "-o", w("many_i32.tif"))
rc3, out3, err3 = run("segment", w("many.npy"), *km, "--nodata", 0, "-o", w("many.npy.npy"))
if rc1 == 0 and rc2 == 0 and rc3 == 0:
    t, nd, lab, _ = read_labels(w("many.tif.tif"))
    t2, nd2, lab2, _ = read_labels(w("many_i32.tif"))
    check(t == "UInt16" and nd == 65535 and lab.max() == 299 and (lab >= 0).sum() == mvalid.sum(),
          "k-means -k 300: UInt16, nodata 65535, labels 0..299", "%s %s max %d" % (t, nd, lab.max()))
    check(np.array_equal(lab, lab2) and np.array_equal(lab, np.load(w("many.npy.npy"))),
          "-k 300: UInt16 labels = --ot Int32 labels = .npy labels")
else:
    check(False, "k-means -k 300 runs", err1 + err2 + err3)
refused("--ot Byte with k-means -k 300: refused before reading", ["segment", w("many.tif")] + km +
        ["--ot", "Byte", "-o", w("x.tif")], 2, r"--ot Byte holds at most 255 clusters \(labels 0-254, nodata 255\)",
        [w("x.tif")])

# Mean shift finds the clusters as it goes: 2 x 2 blocks of distinct colours, one region each.
blocks = rng.permutation(np.arange(400))
cols = np.stack([blocks % 20 * 12 + 10, blocks // 20 * 12 + 10, (blocks * 7) % 200 + 20], axis=1)
ms_img = np.kron(cols.reshape(20, 20, 3), np.ones((2, 2, 1))).astype(np.uint8)
write_tif(w("ms.tif"), ms_img, gdal.GDT_Byte, 0)
ms = ["--algorithm", "meanshift", "--spatial-bandwidth", 1, "--range-bandwidth", 1, "--min-region-size", 0]
rc, out, err = run("segment", w("ms.tif"), *ms, "-o", w("ms_l.tif"))
k = re.search(r"meanshift: (\d+) clusters", out)
if rc == 0 and k:
    t, nd, lab, _ = read_labels(w("ms_l.tif"))
    check(int(k.group(1)) > 255 and t == "UInt16" and lab.max() == int(k.group(1)) - 1,
          "mean shift, %s regions: UInt16" % k.group(1), "%s max %d" % (t, lab.max()))
    refused("--ot Byte when mean shift finds %s regions: refused after clustering, nothing written" % k.group(1),
            ["segment", w("ms.tif")] + ms + ["--ot", "Byte", "-o", w("ms_b.tif")], 1,
            r"--ot Byte holds at most 255 clusters .* the run found %s" % k.group(1), [w("ms_b.tif")])
else:
    check(False, "mean shift on 400 blocks", out + err)

# ---------------------------------------------------------------- creation options

for co, key, want in (("COMPRESS=LZW", "COMPRESSION", "LZW"), ("COMPRESS=NONE", "COMPRESSION", None)):
    rc, out, err = run("segment", w("rgb.tif"), "-k", 3, "--co", co, "-o", w("co.tif"))
    if rc == 0:
        t, nd, lab2, ds = read_labels(w("co.tif"))
        check(ds.GetMetadata("IMAGE_STRUCTURE").get(key) == want and np.array_equal(lab2, rgb_lab),
              "--co %s: %s=%s in the file's metadata, the same labels" % (co, key, want),
              ds.GetMetadata("IMAGE_STRUCTURE"))
    else:
        check(False, "--co %s" % co, err)
rc, out, err = run("segment", w("rgb.tif"), "-k", 3, "-o", w("def.tif"))
ds = gdal.Open(w("def.tif")) if rc == 0 else None
md = ds.GetMetadata("IMAGE_STRUCTURE") if ds else {}
check(ds and md.get("COMPRESSION") == "DEFLATE" and ds.GetRasterBand(1).GetBlockSize() == [512, 512],
      "defaults: DEFLATE, 512 x 512 tiles", md)
rc, out, err = run("segment", w("rgb.tif"), "-k", 3, "--co", "TILED=NO", "--co", "blockysize=16", "-o", w("st.tif"))
ds = gdal.Open(w("st.tif")) if rc == 0 else None
check(ds and ds.GetRasterBand(1).GetBlockSize() == [80, 16] and np.array_equal(read_labels(w("st.tif"))[2], rgb_lab),
      "--co TILED=NO --co blockysize=16: strips of 16 rows, the same labels", err)
for co, pattern in (("COMPRES=LZW", r"--co: driver GTiff does not support creation option COMPRES"),
                    ("COMPRESS=FOO", r"--co: 'FOO' is an unexpected value for COMPRESS"),
                    ("COMPRESS", r"--co 'COMPRESS': expected NAME=VALUE"),
                    ("COMPRESS=JPEG", r"--co: COMPRESS=JPEG is lossy"),
                    ("NBITS=4", r"--co: NBITS would cut bits"),
                    ("PREDICTOR=3", r"--co: GDAL cannot write a GeoTIFF with these options: PREDICTOR=3"),
                    ("BLOCKXSIZE=100", r"--co: GDAL cannot write .*100")):
    refused("--co %s: refused before reading, saying why" % co, ["segment", w("rgb.tif"), "-k", 3, "--co", co,
            "-o", w("bad.tif")], 2, pattern, [w("bad.tif")])
rc, out, err = run("segment", w("rgb.tif"), "-k", 3, "--co", "ZLEVEL=99", "-o", w("z.tif"))
check(rc == 0 and re.search(r"warning: --co: ZLEVEL=99", err) and os.path.exists(w("z.tif")),
      "--co ZLEVEL=99 (GDAL ignores it): written, with GDAL's warning", err)

# A Byte label raster as --truth: its nodata (255) is no label.
rc, out, err = run("segment", w("rgb.tif"), "-k", 3, "-o", w("again.tif"), "--truth", w("rgb_auto.tif"))
check(rc == 0 and "ARI 1.000000" in out, "--truth a Byte label GeoTIFF (nodata 255): ARI 1", out + err)

# ---------------------------------------------------------------- reading on several threads

# 1.1 MB of pixels and more (several readers), blocks of odd heights, nodata in many rows of every window.
big_truth, big_valid = regions(600, 620)
for y in range(0, 600, 7):
    big_valid[y, (y * 13) % 620] = False
for dtype, gdal_type, nodata, cols in ((np.uint8, gdal.GDT_Byte, 0, COL3),
                                       (np.int16, gdal.GDT_Int16, -32768, [(-3000, 200, 9), (2500, -2000, 7),
                                                                           (0, 3000, -5)]),
                                       (np.float64, gdal.GDT_Float64, -9999.0, [(0.1, 5e5, 2), (0.8, -2e5, 3),
                                                                                (0.4, 9e5, 4)])):
    img = image(big_truth, big_valid, cols, 0.01 if dtype == np.float64 else 3, dtype, nodata)
    name = np.dtype(dtype).name
    write_tif(w("big_%s.tif" % name), img, gdal_type, nodata, ["TILED=YES", "BLOCKXSIZE=64", "BLOCKYSIZE=48",
                                                                "COMPRESS=DEFLATE"])
    reads = [("big_%s.tif" % name, 1), ("big_%s.tif" % name, 2)]
    if dtype == np.uint8:
        write_tif(w("big_%s_strips.tif" % name), img, gdal_type, nodata, ["BLOCKYSIZE=3"])
        reads += [("big_%s.tif" % name, 3), ("big_%s_strips.tif" % name, 2)]
    results = []
    for f, threads in reads:
        rc, out, err = run("segment", w(f), "-k", 3, "--threads", threads, "-o", w("bl.tif"))
        m = re.search(r"(\d+) valid", out)
        results.append((read_labels(w("bl.tif"))[2] if rc == 0 else None, int(m.group(1)) if m else -1, err))
    same = all(r[0] is not None and np.array_equal(r[0], results[0][0]) for r in results)
    good = results[0][0] is not None and np.array_equal(results[0][0] < 0, ~big_valid)
    counts = [r[1] for r in results]
    check(same and good and counts == [int(big_valid.sum())] * len(reads),
          "%s GeoTIFF (tiles 64 x 48%s) read with 1, 2%s threads: the same labels, nodata exactly where it is, "
          "%d valid pixels" % (name, ", strips of 3 rows" if len(reads) > 2 else "",
                               " and 3" if len(reads) > 2 else "", big_valid.sum()),
          "%s %s %s" % (counts, same, [r[2] for r in results if r[2]]))
    if dtype == np.uint8:
        np.save(w("big.npy"), img)
        rc, out, err = run("segment", w("big.npy"), "-k", 3, "--nodata", 0, "-o", w("big_npy.npy"))
        check(rc == 0 and np.array_equal(np.load(w("big_npy.npy")), results[1][0]),
              "uint8: the GeoTIFF read on 2 threads gives the labels of the same pixels as .npy", err)

check.finish()
