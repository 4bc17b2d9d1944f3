#!/bin/sh
# Outputs never destroy what the user has (issue 19 items 2, 3 and 8): an output that is an input,
# however spelt (./name, a symbolic link, a hard link), or that is another output, is refused before
# any work; a set of outputs appears together or not at all (a directory among the targets leaves an
# earlier target byte for byte as it was); names up to the filesystem's 255 bytes work; no staging
# file is left behind; a full disk is reported as such, naming the file.
#
# usage: sh cli_outputs_test.sh PATH_TO_parclust WORKDIR
#
# The full-disk cases run twice: with a file-size limit (ulimit -f; the writers then fail with EFBIG,
# "File too large", anywhere), and, where this user may mount (root), on small tmpfs filesystems in a
# private mount namespace (unshare -m) for the real ENOSPC. POSIX sh only.

P=$1
W=$2
if [ -z "$P" ] || [ -z "$W" ]; then
    echo "usage: sh cli_outputs_test.sh PATH_TO_parclust WORKDIR"
    exit 2
fi
case $P in /*) ;; *) P=$(pwd)/$P ;; esac
case $W in /*) ;; *) W=$(pwd)/$W ;; esac
rm -rf "$W" && mkdir -p "$W/keep" "$W/mnt" && cd "$W" || { echo "FAIL cannot create $W"; exit 1; }

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
# run NAME ARGS...: parclust with stdout/stderr in NAME.out/.err (in $W/logs), exit code in $rc
mkdir -p logs
run() {
    _n=$1
    shift
    "$P" "$@" >"logs/$_n.out" 2>"logs/$_n.err"
    rc=$?
}
# Staging and temporary files anywhere under $W (outside logs and keep).
staging() { find "$W" \( -name '.pc-*' -o -name '*.tmp.*' \) -print | head -3; }
# The files the commands read, as they were: every refusal must leave them byte for byte.
inputs_intact() {
    for _f in keep/*; do
        cmp -s "$_f" "$(basename "$_f")" || { echo "$(basename "$_f") changed"; return 1; }
    done
    return 0
}
# refused DESC PATTERN ARGS...: exit 1, one error line matching PATTERN, nothing on stdout (refused
# before any work), inputs intact, no staging file.
n_case=0
refused() {
    _d=$1
    _pat=$2
    shift 2
    n_case=$((n_case + 1))
    run "r$n_case" "$@"
    _why=""
    [ $rc -eq 1 ] || _why="exit $rc, expected 1;"
    [ "$(wc -l <"logs/r$n_case.err" | tr -d ' ')" = 1 ] && grep -q "error: .*$_pat" "logs/r$n_case.err" ||
        _why="$_why stderr '$(head -c 300 "logs/r$n_case.err")' does not say '$_pat';"
    [ -s "logs/r$n_case.out" ] && _why="$_why work done before the refusal ($(head -1 "logs/r$n_case.out"));"
    _m=$(inputs_intact) || _why="$_why $_m;"
    [ -z "$(staging)" ] || _why="$_why left $(staging);"
    if [ -z "$_why" ]; then ok "$_d"; else bad "$_d: $_why"; fi
}

# ------------------------------------------------------------------ inputs

run gen generate blobs -o pts.csv --n 300 --clusters 3 --seed 3
run geni generate blobs -o init.csv --n 3 --clusters 3 --seed 4
run gens generate scene --width 341 --height 48 --bands 3 --classes 3 -o sc.npy --labels tr.npy
if [ ! -s pts.csv ] || [ ! -s init.csv ] || [ ! -s sc.npy ] || [ ! -s tr.npy ]; then
    bad "cannot make the inputs: $(cat logs/gen.err logs/geni.err logs/gens.err)"
    echo "cli_outputs: $pass passed, $fail failed"
    exit 1
fi
cp pts.csv init.csv sc.npy tr.npy keep/
# Other names of the same files: symbolic links and hard links, with the extensions each option takes.
ln -s pts.csv lnk.csv && ln -s pts.csv lnk.png && ln -s pts.csv lnk.txt
ln pts.csv hard.csv && ln pts.csv hard.svg && ln pts.csv hard.txt
ln -s init.csv init_lnk.csv && ln init.csv init_hard.npy
ln -s sc.npy sc_lnk.png && ln sc.npy sc_hard.npy && ln -s tr.npy tr_lnk.png && ln tr.npy tr_hard.npy
mkdir sub && ln -s . here

# ------------------------------------------------------------------ an output that is an input

MS="meanshift pts.csv --bandwidth 3"
HC="hca pts.csv"
KM="kmeans pts.csv -k 3"
# Every output option of every command, the spellings of the input's name taken in turn.
# shellcheck disable=SC2086
{
    refused "meanshift --labels ./pts.csv" "refusing to overwrite an input" $MS --labels ./pts.csv
    refused "meanshift --centers a link to the input" "refusing to overwrite an input" $MS --centers lnk.csv
    refused "meanshift --modes a hard link of the input" "refusing to overwrite an input" $MS --modes hard.csv
    refused "meanshift --plot a link to the input" "refusing to overwrite an input" $MS --plot lnk.png
    refused "hca --labels through a linked folder" "refusing to overwrite an input" $HC --labels here/pts.csv
    refused "hca --centers $W/./pts.csv" "refusing to overwrite an input" $HC --centers "$W/./pts.csv"
    refused "hca --dendrogram a link to the input" "refusing to overwrite an input" $HC --dendrogram lnk.txt
    refused "hca --components a hard link of the input" "refusing to overwrite an input" $HC --components hard.txt
    refused "hca --plot a hard link of the input" "refusing to overwrite an input" $HC --plot hard.svg
    refused "kmeans --labels a hard link of the input" "refusing to overwrite an input" $KM --labels hard.csv
    refused "kmeans --centers sub/../pts.csv" "refusing to overwrite an input" $KM --centers sub/../pts.csv
    refused "kmeans --plot a link to the input" "refusing to overwrite an input" $KM --plot lnk.png
}
refused "meanshift: input through a link, --labels the file itself" "refusing to overwrite" \
    meanshift lnk.csv --labels pts.csv
refused "kmeans --labels the --init file" "the --init file" kmeans pts.csv -k 3 --init init.csv --labels ./init.csv
refused "kmeans --centers a link to the --init file" "the --init file" kmeans pts.csv -k 3 --init init.csv \
    --centers init_lnk.csv
refused "kmeans --labels a hard link of the --init file" "the --init file" kmeans pts.csv -k 3 --init init.csv \
    --labels init_hard.npy
refused "segment -o the image (./)" "refusing to overwrite" segment sc.npy -k 3 -o ./sc.npy
refused "segment -o a hard link of the image" "refusing to overwrite" segment sc.npy -k 3 -o sc_hard.npy
refused "segment --preview a link to the image" "refusing to overwrite" segment sc.npy -k 3 -o o.npy \
    --preview sc_lnk.png
refused "segment -o the --truth raster" "the --truth raster" segment sc.npy -k 3 -o tr_hard.npy --truth tr.npy
refused "segment --preview a link to the --truth raster" "the --truth raster" segment sc.npy -k 3 -o o.npy \
    --truth tr.npy --preview tr_lnk.png

# ------------------------------------------------------------------ two outputs, one file

refused "--labels x.csv --centers ./x.csv" "are the same file" kmeans pts.csv -k 3 --labels x.csv --centers ./x.csv
refused "--labels x.csv --centers sub/../x.csv" "are the same file" kmeans pts.csv -k 3 --labels x.csv \
    --centers sub/../x.csv
refused "--labels x.csv --modes here/x.csv (a linked folder)" "are the same file" $MS --labels x.csv \
    --modes here/x.csv
[ -e x.csv ] && bad "two outputs, one file: x.csv was made" || ok "two outputs, one file: no x.csv made"
printf 'old\n' >y.csv && cp y.csv keep/y.csv && ln -s y.csv y_lnk.csv && ln y.csv y_hard.csv
refused "existing file: --labels y.csv --centers a link to it" "are the same file" $HC --labels y.csv \
    --centers y_lnk.csv
refused "existing file: --labels y.csv --modes a hard link of it" "are the same file" $MS --labels y.csv \
    --modes y_hard.csv
refused "hca --dendrogram d.txt --components ./d.txt" "are the same file" $HC --dendrogram d.txt \
    --components ./d.txt
refused "generate -o g.csv --labels ./g.csv" "are the same file" generate blobs -o g.csv --labels ./g.csv
refused "generate scene -o s.npy --labels $W/s.npy" "are the same file" generate scene --width 16 --height 16 \
    -o s.npy --labels "$W/s.npy"
printf 'old\n' >o.npy && cp o.npy keep/o.npy && ln -s o.npy o_lnk.png
refused "segment -o o.npy --preview a link to it" "are the same file" segment sc.npy -k 3 -o o.npy \
    --preview o_lnk.png

# ------------------------------------------------------------------ targets that cannot be replaced

mkdir adir.csv adir.txt adir.png adir.npy
ln -s adir.csv dlink.csv
printf 'previous contents\n' >prev.csv && cp prev.csv keep/prev.csv
printf 'previous npy\n' >prev.npy && cp prev.npy keep/prev.npy
refused "kmeans --labels prev.csv --centers a directory" "adir.csv': is a directory" $KM --labels prev.csv \
    --centers adir.csv
refused "kmeans --labels prev.csv --centers a link to a directory" "is a directory" $KM --labels prev.csv \
    --centers dlink.csv
refused "meanshift --labels prev.csv --modes a directory" "is a directory" $MS --labels prev.csv --modes adir.csv
refused "hca --labels prev.csv --components a directory" "is a directory" $HC --labels prev.csv --components adir.txt
refused "hca --labels prev.csv --plot a directory" "is a directory" $HC --labels prev.csv --plot adir.png
refused "generate -o prev.csv --labels a directory" "is a directory" generate blobs -o prev.csv --labels adir.csv
refused "generate scene -o prev.npy --labels a directory" "is a directory" generate scene --width 16 --height 16 \
    -o prev.npy --labels adir.npy
refused "segment -o prev.npy --preview a directory" "is a directory" segment sc.npy -k 3 -o prev.npy --preview adir.png
ln -s /dev/null null.csv
refused "--labels a link to /dev/null" "not a regular file" $KM --labels null.csv
if [ -c /dev/null ]; then ok "/dev/null is still a device"; else bad "/dev/null was replaced"; fi
refused "--labels under a file (pts.csv/x.csv)" "cannot write to directory" $KM --labels pts.csv/x.csv
refused "--labels in a missing folder" "cannot write to directory" $KM --labels nodir/x.csv

# ------------------------------------------------------------------ names as long as allowed

name250=$(printf '%0246d' 0 | tr 0 n)
name255=$(printf '%0251d' 0 | tr 0 m)
run long250 kmeans pts.csv -k 3 --labels "$name250.csv" --centers "$name250.npy" --plot "$name250.png"
if [ $rc -eq 0 ] && [ "$(wc -l <"$name250.csv" | tr -d ' ')" = 300 ] && [ -s "$name250.npy" ] && [ -s "$name250.png" ]; then
    ok "250-character output names"
else
    bad "250-character output names: exit $rc, $(head -c 300 logs/long250.err)"
fi
run long255 hca pts.csv --labels "$name255.csv" --dendrogram "$name255.txt"
if [ $rc -eq 0 ] && [ "$(wc -l <"$name255.csv" | tr -d ' ')" = 300 ] && [ -s "$name255.txt" ]; then
    ok "255-byte output names (hca)"
else
    bad "255-byte output names (hca): exit $rc, $(head -c 300 logs/long255.err)"
fi
run long255s segment sc.npy -k 3 -o "$name255.npy" --preview "$name255.png"
run long255g generate blobs --n 50 -o "x$name250.csv" --labels "y$name250.npy"
if [ $rc -eq 0 ] && [ -s "x$name250.csv" ] && [ -s "$name255.npy" ] && [ -s "$name255.png" ]; then
    ok "255-byte output names (segment, generate)"
else
    bad "255-byte output names (segment, generate): exit $rc, $(cat logs/long255s.err logs/long255g.err | head -c 300)"
fi
refused "a 256-byte name: refused before the work" "File name too long" $KM --labels "x$name255.csv"
rm -f ./*"$name250"* ./*"$name255"*

# ------------------------------------------------------------------ writing fails: the real cause

# full NAME LIMIT_BLOCKS PATTERN TARGET ARGS...: parclust under ulimit -f (SIGXFSZ ignored, so writes
# fail with EFBIG); expect exit 1, the message naming TARGET and PATTERN, TARGET's previous contents
# kept, no staging file.
full() {
    _n=$1
    _lim=$2
    _pat=$3
    _t=$4
    shift 4
    printf 'previous %s\n' "$_n" >"$_t"
    cp "$_t" keep/
    (trap '' XFSZ; ulimit -f "$_lim" && exec "$P" "$@") >"logs/$_n.out" 2>"logs/$_n.err"
    rc=$?
    _why=""
    [ $rc -eq 1 ] || _why="exit $rc, expected 1;"
    grep -q "error: .*$_t.*$_pat" "logs/$_n.err" || _why="$_why stderr '$(head -c 300 "logs/$_n.err")';"
    grep -q "out of memory\|I/O error" "logs/$_n.err" && _why="$_why the wrong cause;"
    _m=$(inputs_intact) || _why="$_why $_m;"
    [ -z "$(staging)" ] || _why="$_why left $(staging);"
    if [ -z "$_why" ]; then ok "$_n: '$_pat' naming $_t"; else bad "$_n: $_why"; fi
    rm -f "$_t" "keep/$_t"
}
run genbig generate blobs -o big.csv --n 3000 --seed 5
cp big.csv keep/
full "plot .png, file too large" 20 "File too large" p.png kmeans pts.csv -k 3 --plot p.png
full "plot .svg, file too large" 20 "File too large" p.svg kmeans big.csv -k 3 --plot p.svg
full "labels .csv, file too large" 5 "File too large" l.csv kmeans big.csv -k 3 --labels l.csv
full "segment labels .npy, file too large" 20 "File too large" l.npy segment sc.npy -k 3 -o l.npy
full "generate scene .npy, file too large" 20 "File too large" g.npy generate scene --width 200 --height 200 -o g.npy

# On a real full filesystem: small tmpfs mounts in a private mount namespace, where allowed.
if unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs "$1"' sh "$W/mnt" 2>/dev/null; then
    # tmpfs: the sizes are whole 4096-byte pages, all free. Each case is chosen so that the estimate
    # checked before the work fits and the file itself does not: the writer meets ENOSPC.
    # onfs NAME SIZE ARGS...: parclust with a tmpfs of SIZE on $W/mnt; ls -A of it after into NAME.ls
    onfs() {
        _n=$1
        _s=$2
        shift 2
        unshare -m sh -c 'mount -t tmpfs -o size="$1" tmpfs "$2" || exit 99; n=$3; shift 3
                          "$@" >"logs/$n.out" 2>"logs/$n.err"; r=$?; ls -A mnt >"logs/$n.ls"; exit $r' \
            sh "$_s" "$W/mnt" "$_n" "$P" "$@"
        rc=$?
    }
    enospc() {
        _n=$1
        _t=$2
        _why=""
        [ $rc -eq 1 ] || _why="exit $rc, expected 1;"
        grep -q "error: .*$_t: write failed: No space left on device" "logs/$_n.err" ||
            _why="$_why stderr '$(head -c 300 "logs/$_n.err")';"
        [ -s "logs/$_n.ls" ] && _why="$_why left on the filesystem: $(cat "logs/$_n.ls");"
        if [ -z "$_why" ]; then ok "$_n: 'No space left on device' naming $_t"; else bad "$_n: $_why"; fi
    }
    # 200 clusters: 16368 int16 labels and a 128-byte header (33 KB) pass the lower bound of a byte a
    # pixel (16.1 KiB), not the 24 KiB of the filesystem.
    onfs "segment labels .npy on a full disk" 24k segment sc.npy --algorithm kmeans -k 200 -o mnt/l.npy
    enospc "segment labels .npy on a full disk" mnt/l.npy
    # The preview (341 x 48: 49152 bytes of rows, 12 pages) and the PNG's chunks beyond them.
    onfs "segment preview .png on a full disk" 48k segment sc.npy -k 3 -o l.npy --preview mnt/p.png
    enospc "segment preview .png on a full disk" mnt/p.png
    rm -f l.npy
    # The centres, written first, take far more than the 2 bytes a value the estimate counts.
    run gencent generate blobs -o wide.csv --n 200 --dim 1000 --clusters 4 --seed 6
    cp wide.csv keep/
    onfs "plot .png on a full disk" 2560k kmeans wide.csv -k 100 --centers mnt/c.csv --plot mnt/p.png
    enospc "plot .png on a full disk" mnt/p.png
    # Known not to fit: refused before the work.
    onfs "room checked first" 64k kmeans pts.csv -k 3 --labels mnt/l.csv --plot mnt/p.png
    if [ $rc -eq 1 ] && grep -q "error: --labels 'mnt/l.csv': no room on its filesystem: the outputs there need" "logs/room checked first.err" &&
        [ ! -s "logs/room checked first.out" ] && [ ! -s "logs/room checked first.ls" ]; then
        ok "no room for a plot: refused before the work"
    else
        bad "no room for a plot: exit $rc, $(head -c 300 "logs/room checked first.err")"
    fi
else
    echo "skip full-filesystem (ENOSPC) cases: cannot mount a tmpfs here (needs root and unshare)"
fi

[ -z "$(staging)" ] && ok "no staging or temporary file anywhere in $W" || bad "left behind: $(staging)"
echo "cli_outputs: $pass passed, $fail failed"
[ $fail -eq 0 ]
