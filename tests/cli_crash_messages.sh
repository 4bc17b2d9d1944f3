#!/bin/sh
# Messages a user can act on (issue 18, item 5): each class of refusal, one case each, must exit with
# its code and say in one line the file, the place in it (line, column, band, option) and what was
# expected. The cases are made here (text by printf, .npy and rasters by NumPy and GDAL's Python
# bindings where present). Usage: cli_crash_messages.sh PARCLUST DIR HAS_GDAL
set -u
BIN=$1
DIR=$2
HAS_GDAL=${3:-1}
PY=/usr/bin/python3
rm -rf "$DIR"
mkdir -p "$DIR"
cd "$DIR" || exit 1
failures=0
classes=0

# case CLASS RC PATTERN ARGS...: exit RC, one line on stderr ("parclust CMD: error: ..." for RC != 0,
# "warning:" lines for 0) matching PATTERN (grep -E).
case_() {
    class=$1 want=$2 pattern=$3
    shift 3
    classes=$((classes + 1))
    "$BIN" "$@" >out.txt 2>err.txt
    rc=$?
    lines=$(grep -c "" err.txt)
    if [ "$rc" != "$want" ] || ! grep -Eq -- "$pattern" err.txt || { [ "$want" != 0 ] && [ "$lines" != 1 ]; }; then
        echo "FAIL $class: exit $rc (expected $want), $lines line(s): $(cat err.txt)" >&2
        failures=$((failures + 1))
    else
        printf '  %-28s %s\n' "$class" "$(grep -E -- "$pattern" err.txt | head -n 1)"
    fi
}

printf 'x,y\n' >header_only.csv
: >empty.csv
printf '1,2\n3\n' >ragged.csv
printf '1,2\n3,abc\n' >word.csv
printf '1,2\n3,nan\n' >nan.csv
printf '1,2\n0x10,3\n' >hex.csv
printf 'x,y\n1,2\n' | iconv -t UTF-16 >utf16.csv 2>/dev/null || printf '\377\376x\000,\000y\000\n\000' >utf16.csv
printf '1,2\n\001\002,4\n' >binary.csv
printf '0\n1\n2\n1\n0\n1\n' >labels6.csv
printf '0\n1\n2\n1\n0\n' >labels5.csv
printf '0\n1.5\n' >labels_float.csv

# text points and labels
case_ "missing file" 1 "missing\.csv: cannot open: No such file" kmeans missing.csv -k 2
case_ "empty file" 1 "empty\.csv: no data rows" kmeans empty.csv -k 2
case_ "header only" 1 "header_only\.csv: no data rows \(only the header, line 1\)" kmeans header_only.csv -k 2
case_ "ragged row" 1 "ragged\.csv: line 2 has 1 value, expected 2" kmeans ragged.csv -k 2
case_ "not a number" 1 "word\.csv: line 2, column 2: 'abc' is not a number" kmeans word.csv -k 2
case_ "not finite" 1 "nan\.csv: line 2, column 2: value is not finite" kmeans nan.csv -k 2
case_ "hexadecimal" 1 "hex\.csv: line 2, column 1: '0x10' is not a number \(hexadecimal is not read" kmeans hex.csv -k 2
case_ "UTF-16 text" 1 "utf16\.csv: the file is UTF-16LE text; UTF-8 \(or ASCII\) is expected" kmeans utf16.csv -k 2
case_ "binary text" 1 "binary\.csv: line 2 contains the control byte 0x01 \(offset 4\): a binary file" kmeans binary.csv -k 2
case_ "labels counts differ" 1 "labels6\.csv has 6 labels but labels5\.csv has 5" score --truth labels6.csv --pred labels5.csv
case_ "label not an integer" 1 "labels_float\.csv: line 2, column 1: label is not an integer \('1\.5'\)" \
    score --truth labels6.csv --pred labels_float.csv

# .npy
if $PY -c "import numpy" 2>/dev/null; then
    $PY - <<'EOF'
import numpy as np
a = np.arange(12, dtype='<f4').reshape(6, 2)
np.save('ok.npy', a)
open('truncated.npy', 'wb').write(open('ok.npy', 'rb').read()[:-5])
np.save('fortran.npy', np.asfortranarray(a))
np.save('big_endian.npy', a.astype('>f4'))
np.save('bool.npy', np.ones((4, 2), bool))
np.save('three_d.npy', np.zeros((2, 2, 2), 'f4'))
b = bytearray(open('ok.npy', 'rb').read())
b[b.find(b'(6, 2)'):b.find(b'(6, 2)') + 6] = b'(7, 2)'
open('lying.npy', 'wb').write(bytes(b))
EOF
    case_ ".npy truncated" 1 "truncated\.npy: truncated: expected 48 bytes of data, found 43" kmeans truncated.npy -k 2
    case_ ".npy header lies" 1 "lying\.npy: truncated: expected 56 bytes of data, found 48" kmeans lying.npy -k 2
    case_ ".npy Fortran order" 1 "fortran\.npy: Fortran-order arrays are not supported; save with np\.ascontiguousarray" \
        kmeans fortran.npy -k 2
    case_ ".npy big-endian" 1 "big_endian\.npy: big-endian dtype '>f4' is not supported; save as '<f4'" kmeans big_endian.npy -k 2
    case_ ".npy dtype" 1 "bool\.npy: unsupported dtype '\|b1' \(expected <f4" kmeans bool.npy -k 2
    case_ ".npy dimensions" 1 "three_d\.npy: array has 3 dimensions; expected shape \(n, d\) or \(n,\)" kmeans three_d.npy -k 2
    case_ "--init shape" 1 "ok\.npy: 6 centres of 2 values, expected 2 of 2" kmeans ok.npy -k 2 --init ok.npy
    case_ "k beyond the points" 1 "ok\.npy: k \(9\) must not exceed the number of points \(6\)" kmeans ok.npy -k 9
    # outputs
    case_ "output folder missing" 1 "--labels 'nodir/l\.csv': cannot write to directory 'nodir': No such file" \
        kmeans ok.npy -k 2 --labels nodir/l.csv
    case_ "output is the input" 1 "--labels 'ok\.npy' is the input 'ok\.npy' \(the same file\)" kmeans ok.npy -k 2 --labels ok.npy
    case_ "output format" 2 "--labels 'labels\.xyz': unknown output format \(use \.csv, \.txt, \.tsv or \.npy\)" \
        kmeans ok.npy -k 2 --labels labels.xyz
    mkdir -p adir.csv
    case_ "output a directory" 1 "--labels 'adir\.csv': is a directory" kmeans ok.npy -k 2 --labels adir.csv
    # limits
    export PARCLUST_MAX_MEMORY=16
    case_ "memory limit" 1 "labels6\.csv: line 5: the labels read so far exceed the memory limit, 16 bytes \(from PARCLUST_MAX_MEMORY\)" \
        score --truth labels6.csv --pred labels6.csv
    unset PARCLUST_MAX_MEMORY
else
    echo "  (.npy cases skipped: no NumPy for $PY)"
fi

# options
case_ "option value" 2 "--bandwidth must be a finite number > 0, got -1" meanshift labels6.csv --bandwidth -1
case_ "unknown option" 2 "unknown option '--bandwdith'|--bandwdith" meanshift labels6.csv --bandwdith 1

# rasters
: >zero.tif
if [ "$HAS_GDAL" = 1 ]; then
    case_ "0-byte raster" 1 "zero\.tif: empty file \(0 bytes\)" segment zero.tif -k 2 -o out.tif
else # a build without GDAL refuses every raster, saying why
    case_ "0-byte raster" 1 "built without raster support \(GDAL\)" segment zero.tif -k 2 -o out.tif
fi
if [ "$HAS_GDAL" = 1 ] && $PY -c "from osgeo import gdal" 2>/dev/null; then
    $PY - <<'EOF'
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
def tif(name, t, data, nodata=None):
    ds = gdal.GetDriverByName('GTiff').Create(name, data.shape[1], data.shape[0], 1, t)
    b = ds.GetRasterBand(1)
    if nodata is not None:
        b.SetNoDataValue(nodata)
    b.WriteArray(data)
    ds = None
tif('int32.tif', gdal.GDT_Int32, np.arange(32).reshape(4, 8) * 1000 + 16777217)
tif('uint32.tif', gdal.GDT_UInt32, np.arange(32, dtype=np.uint32).reshape(4, 8) + 4000000000)
f = np.arange(32.).reshape(4, 8)
f[0, 0] = 1e300
tif('float64.tif', gdal.GDT_Float64, f)
tif('nodata.tif', gdal.GDT_Byte, np.zeros((4, 8), np.uint8), nodata=0)
open('corrupt.tif', 'wb').write(b'II*\x00' + bytes(range(256)) * 4)
EOF
    case_ "corrupt GeoTIFF" 1 "corrupt\.tif: " segment corrupt.tif -k 2 -o out.tif
    case_ "band out of range" 1 "int32\.tif: no band 2 \(the image has 1 band\)" segment int32.tif -k 2 -o out.tif --bands 2
    case_ "all nodata" 1 "nodata\.tif: every pixel is nodata \(or NaN\) in the chosen bands" segment nodata.tif -k 2 -o out.tif
    case_ "Int32 beyond 2^24" 0 "warning: int32\.tif: 32 values beyond 2\^24 rounded to float32's 24-bit precision" \
        segment int32.tif -k 2 -o out.tif
    case_ "UInt32 beyond 2^24" 0 "warning: uint32\.tif: [0-9]+ values beyond 2\^24 rounded" segment uint32.tif -k 2 -o out.tif
    case_ "Float64 beyond float32" 0 "warning: float64\.tif: 1 value beyond float32's range .* their pixels are nodata" \
        segment float64.tif -k 2 -o out.tif
else
    echo "  (GeoTIFF cases skipped: no GDAL)"
fi

if [ $failures -ne 0 ]; then
    echo "cli_crash_messages: $failures of $classes classes failed"
    exit 1
fi
echo "cli_crash_messages: $classes refusal classes passed"
