#!/bin/sh
# The parclust program on real files: happy paths, backends agreeing, and bad input failing cleanly.
#
# usage: sh cli_test.sh PATH_TO_parclust WORKDIR
#
# Exit codes the CLI promises (tools/parclust/cli.h): 0 success, 1 the run failed (bad data, I/O),
# 2 the command line is wrong. Every failure must print exactly one line on stderr containing
# "error", must not crash (exit code < 128), and must leave no output file (and no temporary file)
# behind. POSIX sh only: bytes are made with printf octal escapes and read back with od / head -c.

P=$1
W=$2
if [ -z "$P" ] || [ -z "$W" ]; then
    echo "usage: sh cli_test.sh PATH_TO_parclust WORKDIR"
    echo "cli: 0 passed, 1 failed"
    exit 2
fi
case $P in /*) ;; *) P=$(pwd)/$P ;; esac
if [ ! -x "$P" ]; then
    echo "FAIL parclust binary not found or not executable: $P"
    echo "cli: 0 passed, 1 failed"
    exit 1
fi
rm -rf "$W" && mkdir -p "$W" || { echo "FAIL cannot create $W"; echo "cli: 0 passed, 1 failed"; exit 1; }

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
# check DESC COMMAND...: passes when COMMAND succeeds
check() {
    _d=$1
    shift
    if "$@"; then ok "$_d"; else bad "$_d"; fi
}
lines() { wc -l <"$1" | tr -d ' '; }
# first 8 bytes as hex, no spaces
magic8() { head -c 8 "$1" | od -An -tx1 | tr -d ' \n'; }
# run NAME ARGS...: runs parclust, stdout/stderr to $W/NAME.out/.err, exit code in $rc
run() {
    _n=$1
    shift
    "$P" "$@" >"$W/$_n.out" 2>"$W/$_n.err"
    rc=$?
}
show_err() { sed -n '1,3p' "$W/$1.err" | sed 's/^/     stderr: /'; }
# clusters K from "mean shift: N points, D dimensions, K clusters, ..."
summary_k() { sed -n 's/^mean shift: [0-9]* points, [0-9]* dimensions, \([0-9]*\) clusters,.*/\1/p' "$W/$1.out"; }
summary_n() { sed -n 's/^mean shift: \([0-9]*\) points,.*/\1/p' "$W/$1.out"; }
tmp_files() { find "$W" \( -name '*.tmp.*' -o -name '.pc-*' \) | head -5; }  # temporary and staging names

# ------------------------------------------------------------------ happy paths

N=600
run gen generate blobs -o "$W/pts.csv" --labels "$W/truth.csv" --n $N --clusters 3 --box 10 --spread 0.5 --seed 8
if [ $rc -eq 0 ] && [ "$(lines "$W/pts.csv")" = $N ] && [ "$(lines "$W/truth.csv")" = $N ]; then
    ok "generate blobs .csv: exit 0, $N rows of points and of labels"
else
    bad "generate blobs .csv: exit $rc, rows $(lines "$W/pts.csv" 2>/dev/null) / $(lines "$W/truth.csv" 2>/dev/null), expected $N"
    show_err gen
fi
check "generate prints nothing on stderr" test ! -s "$W/gen.err"
check "generate .csv has 2 comma-separated columns" \
    test "$(awk -F, 'NF != 2 { bad = 1 } END { print bad + 0 }' "$W/pts.csv")" = 0

run gennpy generate blobs -o "$W/pts.npy" --labels "$W/truth.npy" --n $N --clusters 3 --box 10 --spread 0.5 --seed 8
if [ $rc -eq 0 ] && [ "$(magic8 "$W/pts.npy" | cut -c1-12)" = 934e554d5059 ] && [ -s "$W/truth.npy" ]; then
    ok "generate blobs .npy: exit 0, files start with the NumPy magic"
else
    bad "generate blobs .npy: exit $rc, magic '$(magic8 "$W/pts.npy" 2>/dev/null)'"
    show_err gennpy
fi

# Same points as CSV with a header, TSV, space-separated and .npy.
{ echo "x,y"; cat "$W/pts.csv"; } >"$W/hdr.csv"
tr ',' '\t' <"$W/pts.csv" >"$W/pts.tsv"
tr ',' ' ' <"$W/pts.csv" >"$W/pts.txt"
for f in hdr.csv pts.tsv pts.txt pts.npy; do
    run "ms_$f" meanshift "$W/$f" --bandwidth 2 --labels "$W/l_$f.csv" --centers "$W/c_$f.csv" --modes "$W/m_$f.csv"
    k=$(summary_k "ms_$f")
    n=$(summary_n "ms_$f")
    if [ $rc -ne 0 ] || [ -z "$k" ]; then
        bad "meanshift $f: exit $rc, summary line $(head -1 "$W/ms_$f.out")"
        show_err "ms_$f"
        continue
    fi
    if [ "$n" = $N ] && [ "$(lines "$W/l_$f.csv")" = $N ] && [ "$(lines "$W/c_$f.csv")" = "$k" ] &&
        [ "$(lines "$W/m_$f.csv")" = $N ] && [ ! -s "$W/ms_$f.err" ]; then
        ok "meanshift $f: exit 0, $N labels, $k centres, $N modes, stderr empty"
    else
        bad "meanshift $f: n=$n labels $(lines "$W/l_$f.csv") centres $(lines "$W/c_$f.csv") (k=$k) modes $(lines "$W/m_$f.csv")"
    fi
    check "meanshift $f: centres and modes have 2 columns" \
        test "$(cat "$W/c_$f.csv" "$W/m_$f.csv" | awk -F, 'NF != 2 { bad = 1 } END { print bad + 0 }')" = 0
done
for f in pts.tsv pts.txt pts.npy; do
    check "meanshift: labels from $f equal those from hdr.csv" cmp -s "$W/l_$f.csv" "$W/l_hdr.csv.csv"
done
check "meanshift finds the 3 generated blobs" test "$(summary_k ms_hdr.csv)" = 3

# Outputs as .npy, read back by score.
run msnpy meanshift "$W/pts.npy" --bandwidth 2 --labels "$W/l.npy" --centers "$W/c.npy"
check "meanshift writes .npy labels and centres" \
    test $rc -eq 0 -a "$(magic8 "$W/l.npy" | cut -c1-12)" = 934e554d5059 -a "$(magic8 "$W/c.npy" | cut -c1-12)" = 934e554d5059
run score_npy score --truth "$W/truth.npy" --pred "$W/l.npy"
ari=$(sed -n 's/^ARI //p' "$W/score_npy.out")
check "score on .npy labels: exit 0, ARI $ari >= 0.99" \
    awk -v rc=$rc -v a="$ari" 'BEGIN { exit !(rc == 0 && a != "" && a + 0 >= 0.99) }'

# Well-separated grid: mean shift recovers the truth.
run gengrid generate grid --clusters 4 --box 10 --spread 0.5 --dim 2 --n 2000 -o "$W/grid.csv" --labels "$W/grid_truth.csv"
check "generate grid: exit 0, 2000 rows" test $rc -eq 0 -a "$(lines "$W/grid.csv")" = 2000
run msgrid meanshift "$W/grid.csv" --bandwidth 2 --labels "$W/grid_pred.csv" --plot "$W/grid.png"
check "meanshift grid: exit 0, 4 clusters" test $rc -eq 0 -a "$(summary_k msgrid)" = 4
run score score --truth "$W/grid_truth.csv" --pred "$W/grid_pred.csv"
ari=$(sed -n 's/^ARI //p' "$W/score.out")
check "score grid truth vs meanshift: exit 0, ARI $ari >= 0.99" \
    awk -v rc=$rc -v a="$ari" 'BEGIN { exit !(rc == 0 && a != "" && a + 0 >= 0.99) }'
run self score --truth "$W/grid_pred.csv" --pred "$W/grid_pred.csv"
check "score of a labeling against itself: ARI 1.000000" \
    test $rc -eq 0 -a "$(sed -n 's/^ARI //p' "$W/self.out")" = 1.000000
check "--plot .png starts with the PNG signature" test "$(magic8 "$W/grid.png")" = 89504e470d0a1a0a
run svg meanshift "$W/grid.csv" --bandwidth 2 --plot "$W/grid.svg"
check "--plot .svg: exit 0, contains <svg" grep -q '<svg' "$W/grid.svg"

# Backends: the same file gives byte-identical outputs.
run genbig generate blobs -o "$W/big.csv" --n 3000 --clusters 5 --spread 1.5 --seed 3
run seq meanshift "$W/big.csv" --bandwidth 1.5 --backend seq --labels "$W/seq_l.csv" --modes "$W/seq_m.csv"
seq_rc=$rc
run omp meanshift "$W/big.csv" --bandwidth 1.5 --backend openmp --threads 2 --labels "$W/omp_l.csv" --modes "$W/omp_m.csv"
check "backend seq and openmp: exit 0 both" test $seq_rc -eq 0 -a $rc -eq 0
check "backend seq and openmp: identical labels files" cmp -s "$W/seq_l.csv" "$W/omp_l.csv"
check "backend seq and openmp: identical modes files" cmp -s "$W/seq_m.csv" "$W/omp_m.csv"
run omps meanshift "$W/big.csv" --bandwidth 1.5 --backend openmp --threads 2 --schedule static --labels "$W/omps_l.csv"
check "openmp --schedule static: identical labels" cmp -s "$W/seq_l.csv" "$W/omps_l.csv"
run seqflat meanshift "$W/big.csv" --bandwidth 1.5 --kernel flat --backend seq --labels "$W/seqf_l.csv"
run ompflat meanshift "$W/big.csv" --bandwidth 1.5 --kernel flat --backend openmp --labels "$W/ompf_l.csv"
check "flat kernel, seq and openmp: identical labels" cmp -s "$W/seqf_l.csv" "$W/ompf_l.csv"

run info info
check "info: exit 0, lists the seq or openmp backend" \
    sh -c "test $rc -eq 0 && grep -Eq 'openmp|seq' '$W/info.out'"
run version --version
check "--version: exit 0, prints 'parclust X.Y.Z' as info does" \
    sh -c "test $rc -eq 0 && grep -Eq '^parclust [0-9]+\.[0-9]+\.[0-9]+' '$W/version.out' &&
        test \"\$(cat '$W/version.out')\" = \"\$(head -1 '$W/info.out')\""
run help --help
check "parclust --help: exit 0, prints usage" sh -c "test $rc -eq 0 && grep -qi usage '$W/help.out'"
for c in meanshift generate score info; do
    run "help_$c" $c --help
    check "parclust $c --help: exit 0, prints usage" sh -c "test $rc -eq 0 && grep -qi usage '$W/help_$c.out'"
done
run noargs
check "parclust without arguments: exit 2, usage on stderr" sh -c "test $rc -eq 2 && grep -qi usage '$W/noargs.err'"

# ------------------------------------------------------------------ bad input

OL=$W/out_labels.csv
OC=$W/out_centers.csv
OM=$W/out_modes.npy
OP=$W/out_plot.png

# expect_error DESC CODES MENTION ARGS...: parclust ARGS must exit with one of CODES ("1" or 2),
# print one line on stderr containing "error" (and MENTION, case-insensitive, when not empty), and
# leave none of $OL $OC $OM $OP and no temporary file.
expect_error() {
    _d=$1 _codes=$2 _mention=$3
    shift 3
    rm -f "$OL" "$OC" "$OM" "$OP"
    "$P" "$@" >"$W/e.out" 2>"$W/e.err"
    rc=$?
    _why=
    if [ $rc -ge 128 ]; then _why="$_why crashed (exit $rc)"; fi
    case "|$_codes|" in
    *"|$rc|"*) ;;
    *) _why="$_why exit $rc, expected $_codes" ;;
    esac
    _nl=$(lines "$W/e.err")
    # a message without a final newline still counts as a line
    if [ -s "$W/e.err" ] && [ "$(tail -c 1 "$W/e.err" | od -An -tx1 | tr -d ' ')" != 0a ]; then _nl=$((_nl + 1)); fi
    if [ "$_nl" != 1 ]; then _why="$_why $_nl lines on stderr"; fi
    grep -q error "$W/e.err" || _why="$_why no 'error' on stderr"
    if [ -n "$_mention" ] && ! grep -qi "$_mention" "$W/e.err"; then _why="$_why stderr does not mention '$_mention'"; fi
    for _f in "$OL" "$OC" "$OM" "$OP"; do
        if [ -e "$_f" ]; then _why="$_why left $(basename "$_f") behind"; fi
    done
    _t=$(tmp_files)
    if [ -n "$_t" ]; then _why="$_why left temporary files: $_t"; fi
    if [ -z "$_why" ]; then
        ok "$_d: exit $rc, $(cat "$W/e.err")"
    else
        bad "$_d:$_why"
        sed -n '1,3p' "$W/e.err" | sed 's/^/     stderr: /'
    fi
}
OUTS="--labels $OL --centers $OC --modes $OM --plot $OP"

printf 'x,y\n1,2\n3\n4,5\n' >"$W/ragged.csv"
printf '1,2\n3,abc\n' >"$W/text.csv"
printf '1,2\nnan,3\n4,5\n' >"$W/nan.csv"
printf '1,2\n3,inf\n4,5\n' >"$W/inf.csv"
printf '1,2\n3,-Infinity\n' >"$W/ninf.csv"
printf '1,2\n3,1e39\n' >"$W/big.csv_"
mv "$W/big.csv_" "$W/overflow.csv"
: >"$W/empty.csv"
printf 'x,y,z\n' >"$W/header_only.csv"
printf '\n\n\n' >"$W/blank_lines.csv"
printf ',\n,\n,\n' >"$W/d0.csv"
printf '\t\n\t\n' >"$W/d0.tsv"
# .npy of shape (5, 0), version 1.0, header padded to 64 bytes as numpy does
dict="{'descr': '<f4', 'fortran_order': False, 'shape': (5, 0), }"
hlen=$((128 - 10))
pad=$((hlen - ${#dict} - 1))
{
    printf '\223NUMPY\001\000'
    printf "\\$(printf '%03o' $hlen)\\000"
    printf '%s' "$dict"
    printf "%${pad}s\n" ''
} >"$W/d0.npy"
check "hand-made (5, 0) .npy is $((hlen + 10)) bytes" test "$(wc -c <"$W/d0.npy" | tr -d ' ')" = $((hlen + 10))
head -c 300 "$W/pts.npy" >"$W/trunc.npy"
head -c 40 "$W/pts.npy" >"$W/trunc_header.npy"
printf 'not numpy at all\n' >"$W/fake.npy"
mkdir -p "$W/is_a_dir.csv"

expect_error "missing input file" 1 "nope.csv" meanshift "$W/nope.csv" $OUTS
expect_error "ragged CSV" 1 "line 3" meanshift "$W/ragged.csv" $OUTS
expect_error "non-numeric CSV" 1 "abc" meanshift "$W/text.csv" $OUTS
expect_error "CSV with NaN" 1 "" meanshift "$W/nan.csv" $OUTS
expect_error "CSV with inf" 1 "" meanshift "$W/inf.csv" $OUTS
expect_error "CSV with -Infinity" 1 "" meanshift "$W/ninf.csv" $OUTS
expect_error "CSV with a value beyond float32" 1 "" meanshift "$W/overflow.csv" $OUTS
expect_error "empty file" 1 "" meanshift "$W/empty.csv" $OUTS
expect_error "header line only" 1 "" meanshift "$W/header_only.csv" $OUTS
expect_error "blank lines only" 1 "" meanshift "$W/blank_lines.csv" $OUTS
expect_error "D = 0: CSV rows of delimiters only" 1 "" meanshift "$W/d0.csv" $OUTS
expect_error "D = 0: TSV rows of tabs only" 1 "" meanshift "$W/d0.tsv" $OUTS
expect_error "D = 0: .npy of shape (5, 0)" 1 "" meanshift "$W/d0.npy" $OUTS
expect_error "truncated .npy (data cut)" 1 "truncated" meanshift "$W/trunc.npy" $OUTS
expect_error "truncated .npy (header cut)" 1 "" meanshift "$W/trunc_header.npy" $OUTS
expect_error "text file named .npy" 1 "" meanshift "$W/fake.npy" $OUTS
expect_error "input is a directory" 1 "" meanshift "$W/is_a_dir.csv" $OUTS
# A bandwidth <= 0 is a wrong option value; the CLI reports it once the library rejects it, after
# reading the input, with exit 1 (cli.h would have it 2, like --eps -1): either is accepted here.
expect_error "--bandwidth 0" 2 "bandwidth" meanshift "$W/pts.csv" --bandwidth 0 $OUTS
expect_error "--bandwidth -1" 2 "bandwidth" meanshift "$W/pts.csv" --bandwidth -1 $OUTS
expect_error "--bandwidth abc" 2 "bandwidth" meanshift "$W/pts.csv" --bandwidth abc $OUTS
expect_error "--bandwidth nan" 2 "bandwidth" meanshift "$W/pts.csv" --bandwidth nan $OUTS
expect_error "--bandwidth without a value" 2 "bandwidth" meanshift "$W/pts.csv" $OUTS --bandwidth
expect_error "--eps -1" 2 "eps" meanshift "$W/pts.csv" --eps -1 $OUTS
expect_error "--threads 0" 2 "threads" meanshift "$W/pts.csv" --threads 0 $OUTS
expect_error "--max-iter 1.5" 2 "max-iter" meanshift "$W/pts.csv" --max-iter 1.5 $OUTS
expect_error "unknown option --foo" 2 "foo" meanshift "$W/pts.csv" --foo $OUTS
expect_error "two input files" 2 "" meanshift "$W/pts.csv" "$W/pts.tsv" $OUTS
expect_error "no input file" 2 "" meanshift --bandwidth 1 $OUTS
expect_error "unknown subcommand" 2 "frobnicate" frobnicate "$W/pts.csv" $OUTS
expect_error "--kernel bogus" 2 "bogus" meanshift "$W/pts.csv" --kernel bogus $OUTS
expect_error "--backend bogus" 2 "bogus" meanshift "$W/pts.csv" --backend bogus $OUTS
expect_error "--schedule bogus" 2 "bogus" meanshift "$W/pts.csv" --schedule bogus $OUTS
expect_error "--cuda-kernel bogus" 2 "bogus" meanshift "$W/pts.csv" --cuda-kernel bogus $OUTS
expect_error "--cuda-block 5" 2 "cuda-block" meanshift "$W/pts.csv" --cuda-block 5 $OUTS
expect_error "--labels with extension .xyz" 2 "xyz" meanshift "$W/pts.csv" --labels "$W/out.xyz" --centers "$OC"
check "--labels .xyz: no .xyz file" test ! -e "$W/out.xyz"
expect_error "--plot with extension .jpg" 2 "jpg" meanshift "$W/pts.csv" --plot "$W/out.jpg" --labels "$OL"
check "--plot .jpg: no .jpg file" test ! -e "$W/out.jpg"
expect_error "--labels into a missing directory" 1 "no_such_dir" meanshift "$W/pts.csv" --labels "$W/no_such_dir/l.csv"
check "--labels into a missing directory: nothing written there" test ! -e "$W/no_such_dir"
check "--labels into a missing directory: no *.tmp.* left in $W" test -z "$(tmp_files)"
# The target is a directory: the temporary file is written, then the rename fails; it must be removed.
expect_error "--labels onto a directory" 1 "is_a_dir" meanshift "$W/pts.csv" --labels "$W/is_a_dir.csv"
check "--labels onto a directory: the directory is still there, no *.tmp.* left" \
    test -d "$W/is_a_dir.csv" -a -z "$(tmp_files)"
# Several outputs, the second failing: the set appears together or not at all.
rm -f "$OL"
"$P" meanshift "$W/pts.csv" --bandwidth 2 --labels "$OL" --centers "$W/no_such_dir/c.csv" >/dev/null 2>&1
check "--centers into a missing directory: --labels not written either" test ! -e "$OL"
rm -f "$OL"
# A failed run leaves an existing output file as it was.
echo "old contents" >"$W/keep.csv"
"$P" meanshift "$W/ragged.csv" --labels "$W/keep.csv" >/dev/null 2>&1
check "failed run leaves an existing --labels file untouched" test "$(cat "$W/keep.csv")" = "old contents"

if grep -q 'CUDA devices: 0' "$W/info.out"; then
    expect_error "--backend cuda without a GPU" 1 "cuda" meanshift "$W/pts.csv" --backend cuda $OUTS
else
    echo "skip --backend cuda without a GPU: this machine has a CUDA device"
fi

printf '0\n1\n1\n' >"$W/three.csv"
printf '0\n1\n1\n0\n' >"$W/four.csv"
printf '0\n1.5\n1\n' >"$W/frac.csv"
expect_error "score: label files of different lengths" 1 "" score --truth "$W/three.csv" --pred "$W/four.csv"
expect_error "score: non-integer label" 1 "" score --truth "$W/three.csv" --pred "$W/frac.csv"
expect_error "score: missing --pred" 2 "" score --truth "$W/three.csv"
expect_error "score: missing file" 1 "" score --truth "$W/three.csv" --pred "$W/nope.csv"

GO="$W/gen_err.csv"
GL="$W/gen_err_labels.csv"
expect_error "generate --clusters larger than --n" "2" "clusters" generate blobs -o "$GO" --labels "$GL" --n 5 --clusters 10
check "generate --clusters > --n: no output files" test ! -e "$GO" -a ! -e "$GL"
expect_error "generate: unknown kind" 2 "nosuchkind" generate nosuchkind -o "$GO"
expect_error "generate: no -o" 2 "" generate blobs --n 10
expect_error "generate: --n 0" 2 "" generate blobs -o "$GO" --n 0
check "generate failures: no output files" test ! -e "$GO" -a ! -e "$GL"

# ------------------------------------------------------------------ hca

# fields of "hca: N points, D dimensions, m M, C non-empty cells, G components, K clusters, ..."
hca_field() { sed -n "s/^hca: .* \([0-9][0-9]*\) $2,.*/\1/p" "$W/$1.out" | head -1; }
hca_n() { sed -n 's/^hca: \([0-9]*\) points,.*/\1/p' "$W/$1.out" | head -1; }
# all rows of FILE have N comma-separated fields
fields_ok() { test "$(awk -F, -v n="$2" 'NF != n { bad = 1 } END { print bad + 0 }' "$1")" = 0; }

HN=20000
run genhca generate hca8 --n $HN -o "$W/hca8.csv" --labels "$W/hca8_truth.csv"
check "generate hca8: exit 0, $HN points and labels" \
    test $rc -eq 0 -a "$(lines "$W/hca8.csv")" = $HN -a "$(lines "$W/hca8_truth.csv")" = $HN
run genhcanpy generate hca8 --n $HN -o "$W/hca8.npy"
run hca hca "$W/hca8.csv" -m 32 --clusters 8 --labels "$W/hca_l.csv" --centers "$W/hca_c.csv" \
    --dendrogram "$W/hca_d.csv" --components "$W/hca_g.csv" --plot "$W/hca.png"
hca_rc=$rc
G=$(hca_field hca components)
if [ $hca_rc -eq 0 ] && [ "$(hca_n hca)" = $HN ] && [ "$(hca_field hca clusters)" = 8 ] && [ -n "$G" ] &&
    [ ! -s "$W/hca.err" ]; then
    ok "hca hca8 -m 32 --clusters 8: exit 0, $HN points, $G components, 8 clusters, stderr empty"
else
    bad "hca hca8 -m 32 --clusters 8: exit $hca_rc, summary '$(head -1 "$W/hca.out")'"
    show_err hca
fi
check "hca: summary line says 2 dimensions, m 32" \
    sh -c "grep -q '^hca: $HN points, 2 dimensions, m 32, [0-9]* non-empty cells, ' '$W/hca.out'"
check "hca: $HN labels" test "$(lines "$W/hca_l.csv" 2>/dev/null)" = $HN
check "hca: 8 centres" test "$(lines "$W/hca_c.csv" 2>/dev/null)" = 8
check "hca: centres have 2 comma-separated columns" fields_ok "$W/hca_c.csv" 2
run hcascore score --truth "$W/hca8_truth.csv" --pred "$W/hca_l.csv"
acc=$(sed -n 's/^accuracy //p' "$W/hcascore.out")
check "score hca8 truth vs hca: exit 0, accuracy $acc >= 0.97" \
    awk -v rc=$rc -v a="$acc" 'BEGIN { exit !(rc == 0 && a != "" && a + 0 >= 0.97) }'
if [ -n "$G" ] && [ "$G" -ge 2 ]; then
    check "hca --dendrogram: $((G - 1)) rows" test "$(lines "$W/hca_d.csv")" = $((G - 1))
    check "hca --dendrogram: 4 comma-separated fields per row" fields_ok "$W/hca_d.csv" 4
    # SciPy linkage: heights in [0, 1], non-decreasing; new node n + i; the last row holds all leaves
    check "hca --dendrogram: heights in [0, 1] non-decreasing, children < node ids, last row has $G leaves" \
        awk -F, -v g="$G" '
            { if ($3 < 0 || $3 > 1 || (NR > 1 && $3 < prev) || $1 >= g + NR - 1 || $2 >= g + NR - 1 || $1 == $2) bad = 1
              prev = $3; last = $4 }
            END { exit !(bad + 0 == 0 && last == g) }' "$W/hca_d.csv"
else
    bad "hca: no component count in the summary line (or fewer than 2 components): '$G'"
fi
check "hca --components: header and $G rows" \
    test "$(head -1 "$W/hca_g.csv")" = "component,cell,density,points" -a "$(lines "$W/hca_g.csv")" = $((G + 1))
check "hca --components: 4 fields, components numbered 0.., points sum to $HN, density <= points" \
    awk -F, -v g="$G" -v n=$HN '
        NR > 1 { if (NF != 4 || $1 != NR - 2 || $3 < 1 || $3 > $4) bad = 1; s += $4 }
        END { exit !(bad + 0 == 0 && s == n) }' "$W/hca_g.csv"
check "hca --plot .png starts with the PNG signature" test "$(magic8 "$W/hca.png")" = 89504e470d0a1a0a

# Backends and input formats: the same labels, dendrogram and components, byte for byte.
run hcaseq hca "$W/hca8.csv" -m 32 --clusters 8 --backend seq --labels "$W/hcas_l.csv" \
    --dendrogram "$W/hcas_d.csv" --components "$W/hcas_g.csv"
seq_rc=$rc
run hcaomp hca "$W/hca8.csv" -m 32 --clusters 8 --backend openmp --threads 2 --labels "$W/hcao_l.csv" \
    --dendrogram "$W/hcao_d.csv" --components "$W/hcao_g.csv"
check "hca backend seq and openmp: exit 0 both" test $seq_rc -eq 0 -a $rc -eq 0
check "hca backend seq and openmp: identical labels files" cmp -s "$W/hcas_l.csv" "$W/hcao_l.csv"
check "hca backend seq and openmp: identical components files" cmp -s "$W/hcas_g.csv" "$W/hcao_g.csv"
check "hca backend seq and openmp: identical dendrogram files" cmp -s "$W/hcas_d.csv" "$W/hcao_d.csv"
check "hca backend seq and auto: identical labels files" cmp -s "$W/hcas_l.csv" "$W/hca_l.csv"
for t in 3 4; do
    run "hcaomp$t" hca "$W/hca8.csv" -m 32 --clusters 8 --backend openmp --threads $t --labels "$W/hcao${t}_l.csv" \
        --components "$W/hcao${t}_g.csv"
    check "hca openmp --threads $t: labels and components as seq" \
        sh -c "cmp -s '$W/hcas_l.csv' '$W/hcao${t}_l.csv' && cmp -s '$W/hcas_g.csv' '$W/hcao${t}_g.csv'"
done
run hcanpy hca "$W/hca8.npy" -m 32 --clusters 8 --labels "$W/hcan_l.npy"
check "hca on .npy input, .npy labels: exit 0, NumPy magic" \
    test $rc -eq 0 -a "$(magic8 "$W/hcan_l.npy" | cut -c1-12)" = 934e554d5059
run hcanpy2 hca "$W/hca8.npy" -m 32 --clusters 8 --labels "$W/hcan_l.csv"
check "hca: labels from .npy input equal those from .csv" cmp -s "$W/hcan_l.csv" "$W/hca_l.csv"
run hcathr hca "$W/hca8.csv" -m 32 --threshold 0.5 --labels "$W/hcat_l.csv"
check "hca --threshold 0.5: exit 0, $HN labels" test $rc -eq 0 -a "$(lines "$W/hcat_l.csv" 2>/dev/null)" = $HN
run help_hca hca --help
check "parclust hca --help: exit 0, prints usage" sh -c "test $rc -eq 0 && grep -qi usage '$W/help_hca.out'"

OD=$W/out_dendrogram.csv
OG=$W/out_components.csv
HOUTS="--labels $OL --centers $OC --plot $OP --dendrogram $OD --components $OG"
# hca_error DESC CODES MENTION ARGS...: expect_error, and the dendrogram and components files are
# not written either
hca_error() {
    rm -f "$OD" "$OG"
    expect_error "$@"
    if [ -e "$OD" ] || [ -e "$OG" ]; then bad "$1: left the dendrogram or components file behind"; fi
}
printf '1,2,3,4,5,6,7,8,9\n2,3,4,5,6,7,8,9,1\n3,4,5,6,7,8,9,1,2\n' >"$W/d9.csv"
hca_error "hca -m 1" 2 " -m" hca "$W/hca8.csv" -m 1 $HOUTS
hca_error "hca -m abc" 2 " -m" hca "$W/hca8.csv" -m abc $HOUTS
hca_error "hca --clusters 0" 2 "clusters" hca "$W/hca8.csv" --clusters 0 $HOUTS
hca_error "hca --threshold 2" 2 "threshold" hca "$W/hca8.csv" --threshold 2 $HOUTS
hca_error "hca --threshold -0.1" 2 "threshold" hca "$W/hca8.csv" --threshold -0.1 $HOUTS
hca_error "hca --clusters and --threshold both" 2 "threshold" hca "$W/hca8.csv" --clusters 3 --threshold 0.5 $HOUTS
hca_error "hca on 9-dimensional input" 1 "dimensions" hca "$W/d9.csv" $HOUTS
hca_error "hca on CSV with NaN" 1 "" hca "$W/nan.csv" $HOUTS
hca_error "hca on an empty file" 1 "" hca "$W/empty.csv" $HOUTS
hca_error "hca on a missing file" 1 "nope.csv" hca "$W/nope.csv" $HOUTS
# .npy dendrograms and components are read back by tests/cli_arrays_test.py; unknown extensions are refused.
hca_error "hca --dendrogram with extension .xyz" 2 "xyz" hca "$W/hca8.csv" --dendrogram "$W/out_d.xyz" --labels "$OL"
check "hca --dendrogram .xyz: no .xyz file" test ! -e "$W/out_d.xyz"
hca_error "hca --components with extension .xyz" 2 "xyz" hca "$W/hca8.csv" --components "$W/out_g.xyz" --labels "$OL"
check "hca --components .xyz: no .xyz file" test ! -e "$W/out_g.xyz"
hca_error "hca --labels into a missing directory" 1 "no_such_dir" hca "$W/hca8.csv" --labels "$W/no_such_dir/l.csv" \
    --dendrogram "$OD" --components "$OG"
check "hca --labels into a missing directory: nothing written there" test ! -e "$W/no_such_dir"
hca_error "hca --dendrogram into a missing directory" 1 "no_such_dir" hca "$W/hca8.csv" --labels "$OL" \
    --dendrogram "$W/no_such_dir/d.csv"
hca_error "hca --backend bogus" 2 "bogus" hca "$W/hca8.csv" --backend bogus $HOUTS
hca_error "hca unknown option --foo" 2 "foo" hca "$W/hca8.csv" --foo $HOUTS
hca_error "hca without an input file" 2 "" hca -m 8 $HOUTS
if grep -q 'CUDA devices: 0' "$W/info.out"; then
    hca_error "hca --backend cuda without a GPU" 1 "cuda" hca "$W/hca8.csv" --backend cuda $HOUTS
else
    echo "skip hca --backend cuda without a GPU: this machine has a CUDA device"
fi

# ------------------------------------------------------------------ kmeans

# fields of "k-means: N points, D dimensions, K clusters, I iterations, inertia X, T s (backend)"
km_field() { sed -n "s/^k-means: .* \([0-9][0-9]*\) $2,.*/\1/p" "$W/$1.out" | head -1; }
km_inertia() { sed -n 's/^k-means: .*, inertia \([-+0-9.eE]*\), .*/\1/p' "$W/$1.out" | head -1; }

run km kmeans "$W/pts.csv" -k 3 --n-init 3 --labels "$W/km_l.csv" --centers "$W/km_c.csv" --plot "$W/km.png"
km_rc=$rc
if [ $km_rc -eq 0 ] && [ "$(sed -n 's/^k-means: \([0-9]*\) points,.*/\1/p' "$W/km.out")" = $N ] &&
    [ "$(km_field km clusters)" = 3 ] && [ -n "$(km_field km iterations)" ] && [ ! -s "$W/km.err" ]; then
    ok "kmeans -k 3: exit 0, $N points, 3 clusters, $(km_field km iterations) iterations, stderr empty"
else
    bad "kmeans -k 3: exit $km_rc, summary '$(head -1 "$W/km.out")'"
    show_err km
fi
check "kmeans: summary line says 2 dimensions and a positive inertia ($(km_inertia km))" \
    sh -c "grep -q '^k-means: $N points, 2 dimensions, 3 clusters, ' '$W/km.out' &&
        awk -v i='$(km_inertia km)' 'BEGIN { exit !(i != \"\" && i + 0 > 0) }'"
check "kmeans: $N labels, all in 0..2" \
    test "$(lines "$W/km_l.csv" 2>/dev/null)" = $N -a \
    "$(awk '$1 !~ /^[012]$/ { bad = 1 } END { print bad + 0 }' "$W/km_l.csv" 2>/dev/null)" = 0
check "kmeans: 3 centres" test "$(lines "$W/km_c.csv" 2>/dev/null)" = 3
check "kmeans: centres have 2 comma-separated columns" fields_ok "$W/km_c.csv" 2
check "kmeans --plot .png starts with the PNG signature" test "$(magic8 "$W/km.png")" = 89504e470d0a1a0a
run kmscore score --truth "$W/truth.csv" --pred "$W/km_l.csv"
ari=$(sed -n 's/^ARI //p' "$W/kmscore.out")
check "score blobs truth vs kmeans: exit 0, ARI $ari >= 0.99" \
    awk -v rc=$rc -v a="$ari" 'BEGIN { exit !(rc == 0 && a != "" && a + 0 >= 0.99) }'
# Its own centres as --init: the labels do not change and it stops after one iteration (the
# centres move by less than the tolerance).
run kmgiven kmeans "$W/pts.npy" -k 3 --init "$W/km_c.csv" --labels "$W/kmg_l.csv" --centers "$W/kmg_c.npy"
check "kmeans --init CENTRES.csv from its own centres: exit 0, same labels, 1 iteration" \
    sh -c "test $rc -eq 0 && cmp -s '$W/km_l.csv' '$W/kmg_l.csv' && test '$(km_field kmgiven iterations)' = 1"
check "kmeans --centers .npy starts with the NumPy magic" test "$(magic8 "$W/kmg_c.npy" | cut -c1-12)" = 934e554d5059
run kmseq kmeans "$W/big.csv" -k 7 --init random --backend seq --labels "$W/kms_l.csv" --centers "$W/kms_c.csv"
seq_rc=$rc
run kmomp kmeans "$W/big.csv" -k 7 --init random --backend openmp --threads 2 --labels "$W/kmo_l.csv" --centers "$W/kmo_c.csv"
check "kmeans backend seq and openmp: exit 0 both, identical labels files" \
    sh -c "test $seq_rc -eq 0 -a $rc -eq 0 && cmp -s '$W/kms_l.csv' '$W/kmo_l.csv'"
for i in kmeans++ random kmeans-par; do
    run "kminit_$i" kmeans "$W/pts.csv" -k 3 --init $i --seed 5 --labels "$W/kmi_l.csv"
    check "kmeans --init $i: exit 0, $N labels" test $rc -eq 0 -a "$(lines "$W/kmi_l.csv" 2>/dev/null)" = $N
done
run help_kmeans kmeans --help
check "parclust kmeans --help: exit 0, prints usage" sh -c "test $rc -eq 0 && grep -qi usage '$W/help_kmeans.out'"

KOUTS="--labels $OL --centers $OC --plot $OP"
printf '1,2\n3,4\n' >"$W/init_2x2.csv"
printf '1,2,3\n4,5,6\n7,8,9\n' >"$W/init_3x3.csv"
printf '1,2\nnan,3\n4,5\n' >"$W/init_nan.csv"
expect_error "kmeans -k 0" 2 " -k" kmeans "$W/pts.csv" -k 0 $KOUTS
expect_error "kmeans without -k" 2 " -k" kmeans "$W/pts.csv" $KOUTS
expect_error "kmeans -k abc" 2 " -k" kmeans "$W/pts.csv" -k abc $KOUTS
expect_error "kmeans -k larger than the number of points" 1 "$N" kmeans "$W/pts.csv" -k $((N + 1)) $KOUTS
expect_error "kmeans --init file of 2 centres for -k 3" 1 "init_2x2" kmeans "$W/pts.csv" -k 3 --init "$W/init_2x2.csv" $KOUTS
expect_error "kmeans --init file of 3-dimensional centres for 2-D points" 1 "init_3x3" \
    kmeans "$W/pts.csv" -k 3 --init "$W/init_3x3.csv" $KOUTS
expect_error "kmeans --init file with NaN" 1 "init_nan" kmeans "$W/pts.csv" -k 3 --init "$W/init_nan.csv" $KOUTS
# neither an init name nor a file: a wrong command line (cli_switches_test.sh checks the message)
expect_error "kmeans --init missing file" 2 "nope_init" kmeans "$W/pts.csv" -k 3 --init "$W/nope_init.csv" $KOUTS
expect_error "kmeans --tol -1" 2 "tol" kmeans "$W/pts.csv" -k 3 --tol -1 $KOUTS
expect_error "kmeans --tol nan" 2 "tol" kmeans "$W/pts.csv" -k 3 --tol nan $KOUTS
expect_error "kmeans --max-iter 0" 2 "max-iter" kmeans "$W/pts.csv" -k 3 --max-iter 0 $KOUTS
expect_error "kmeans --n-init 0" 2 "n-init" kmeans "$W/pts.csv" -k 3 --n-init 0 $KOUTS
expect_error "kmeans on CSV with NaN" 1 "" kmeans "$W/nan.csv" -k 2 $KOUTS
expect_error "kmeans on an empty file" 1 "" kmeans "$W/empty.csv" -k 2 $KOUTS
expect_error "kmeans on a missing file" 1 "nope.csv" kmeans "$W/nope.csv" -k 2 $KOUTS
expect_error "kmeans --cuda-variant bogus" 2 "bogus" kmeans "$W/pts.csv" -k 3 --cuda-variant bogus $KOUTS
run kmvar kmeans "$W/pts.csv" -k 3 --backend seq --labels "$W/kmv0_l.csv"
for v in fast seed gemm direct tensor; do
    run "kmvar_$v" kmeans "$W/pts.csv" -k 3 --backend seq --cuda-variant $v --labels "$W/kmv_l.csv"
    check "kmeans --cuda-variant $v is a known name (on the CPU it changes nothing): same labels" \
        cmp -s "$W/kmv_l.csv" "$W/kmv0_l.csv"
done
expect_error "kmeans --backend bogus" 2 "bogus" kmeans "$W/pts.csv" -k 3 --backend bogus $KOUTS
expect_error "kmeans unknown option --foo" 2 "foo" kmeans "$W/pts.csv" -k 3 --foo $KOUTS
expect_error "kmeans without an input file" 2 "" kmeans -k 3 $KOUTS
expect_error "kmeans --labels with extension .xyz" 2 "xyz" kmeans "$W/pts.csv" -k 3 --labels "$W/out.xyz" --centers "$OC"
if grep -q 'CUDA devices: 0' "$W/info.out"; then
    expect_error "kmeans --backend cuda without a GPU" 1 "cuda" kmeans "$W/pts.csv" -k 3 --backend cuda $KOUTS
else
    echo "skip kmeans --backend cuda without a GPU: this machine has a CUDA device"
fi

# The kind names the generator, not a value that happens to read "scene" (it ran the scene generator).
expect_error "generate blobs -o scene: the output's format, not a scene" 2 "unknown output format" \
    generate blobs --n 10 -o scene
run genscene_after generate --n 10 blobs -o "$W/after.csv"
check "generate --n 10 blobs: the kind after an option" test "$rc" = 0 -a "$(lines "$W/after.csv")" = 10

check "no *.tmp.* files anywhere in $W at the end" test -z "$(tmp_files)"

echo "cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
