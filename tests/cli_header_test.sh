#!/bin/sh
# No row dropped without a word (issue 19 item 4) and text files read as they are (item 8), from the
# command line. Before, a first row with any non-numeric field (1.0,abc  NA,2  1,2 # note  1_000,2)
# was taken as a header and dropped without a word, so the labels file had one row fewer than the
# data; 0x10 was read as 16; CR-only files had "no data rows"; UTF-16 files "a NUL byte". Now a
# first row is a header only when none of its fields is a number, a mixed row is an error naming
# the file, line and column, --header yes|no|auto says it outright, and every run prints how many
# rows it read and whether it skipped a header. POSIX sh.
#
# usage: sh cli_header_test.sh PATH_TO_parclust WORKDIR
P=$1
W=$2
if [ -z "$P" ] || [ -z "$W" ]; then
    echo "usage: sh cli_header_test.sh PATH_TO_parclust WORKDIR"
    exit 2
fi
rm -rf "$W" && mkdir -p "$W" || exit 1
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() {
    echo "FAIL $*"
    sed -n '1,3p' "$W/run.err" | sed 's/^/     stderr: /'
    sed -n '1,4p' "$W/run.out" | sed 's/^/     stdout: /'
    fail=$((fail + 1))
}
lines() { wc -l <"$1" | tr -d ' '; }
# run ARGS...: parclust with stdout and stderr in $W/run.out and $W/run.err, the exit code in $rc
run() {
    rm -f "$W/l.csv"
    "$P" "$@" >"$W/run.out" 2>"$W/run.err"
    rc=$?
}
# cluster CMD FILE EXTRA...: each clustering command, labels to $W/l.csv
cluster() {
    _c=$1
    _f=$2
    shift 2
    case $_c in
    meanshift) run meanshift "$_f" --bandwidth 2 --labels "$W/l.csv" "$@" ;;
    kmeans) run kmeans "$_f" -k 3 --labels "$W/l.csv" "$@" ;;
    hca) run hca "$_f" --clusters 3 --labels "$W/l.csv" "$@" ;;
    esac
}
# error_at DESC TEXT...: exit 1, one stderr line with "error" and every TEXT, no labels written
error_at() {
    _d=$1
    shift
    _why=
    [ $rc -eq 1 ] || _why="exit $rc"
    [ "$(lines "$W/run.err")" = 1 ] && grep -q 'error' "$W/run.err" || _why="$_why, stderr not one error line"
    for _t in "$@"; do
        grep -qF -- "$_t" "$W/run.err" || _why="$_why, stderr lacks '$_t'"
    done
    [ ! -e "$W/l.csv" ] || _why="$_why, labels written"
    if [ -z "$_why" ]; then ok; else bad "$_d:$_why"; fi
}
# labels_match DESC ROWS FILE HEADER: exit 0, ROWS labels, and the line saying ROWS rows were read
# from FILE with HEADER ("no header" or "header on line 1 skipped")
labels_match() {
    _why=
    [ $rc -eq 0 ] || _why="exit $rc"
    [ -f "$W/l.csv" ] && [ "$(lines "$W/l.csv")" = "$2" ] || _why="$_why, labels has $(lines "$W/l.csv" 2>/dev/null) rows, not $2"
    grep -qxF "  read $2 rows from $3, $4" "$W/run.out" || _why="$_why, no line '  read $2 rows from $3, $4'"
    if [ -z "$_why" ]; then ok; else bad "$1:$_why"; fi
}

N=60
"$P" generate blobs --n $N --clusters 3 --box 10 --spread 0.5 --seed 3 -o "$W/p.csv" >/dev/null || {
    echo "FAIL cannot generate the points"
    exit 1
}
# with FIRST: the points after a first row FIRST
with() { { printf '%s\n' "$1"; cat "$W/p.csv"; } >"$W/$2"; }

for c in meanshift kmeans hca; do
    # The data as written: every row read, no header.
    cluster $c "$W/p.csv"
    labels_match "$c plain CSV" $N "$W/p.csv" "no header"
    # A real header: skipped, and said so.
    with "x,y" h.csv
    cluster $c "$W/h.csv"
    labels_match "$c CSV with a header" $N "$W/h.csv" "header on line 1 skipped"
    # The issue's first rows: each an error naming the file, line and column...
    with "1.0,abc" m1.csv
    cluster $c "$W/m1.csv"
    error_at "$c first row 1.0,abc" "m1.csv: line 1, column 2: 'abc' is not a number"
    with "NA,2" m2.csv
    cluster $c "$W/m2.csv"
    error_at "$c first row NA,2" "m2.csv: line 1, column 1: 'NA' is not a number"
    with "1_000,2" m3.csv
    cluster $c "$W/m3.csv"
    error_at "$c first row 1_000,2" "m3.csv: line 1, column 1: '1_000' is not a number"
    # ... but a comment after the numbers is a comment, as np.loadtxt has it: the row is data.
    with "1,2 # note" m4.csv
    cluster $c "$W/m4.csv"
    labels_match "$c first row '1,2 # note'" $((N + 1)) "$W/m4.csv" "no header"
    # --header yes: the first row goes whatever it holds, and the labels match the rows left.
    cluster $c "$W/m1.csv" --header yes
    labels_match "$c --header yes on 1.0,abc" $N "$W/m1.csv" "header on line 1 skipped"
    cluster $c "$W/p.csv" --header=yes
    labels_match "$c --header=yes on numbers" $((N - 1)) "$W/p.csv" "header on line 1 skipped"
    # --header no: the first row is data, text in it an error with its place.
    cluster $c "$W/p.csv" --header no
    labels_match "$c --header no" $N "$W/p.csv" "no header"
    cluster $c "$W/h.csv" --header no
    error_at "$c --header no on a header" "h.csv: line 1, column 1: 'x' is not a number"
    cluster $c "$W/h.csv" --header auto
    labels_match "$c --header auto" $N "$W/h.csv" "header on line 1 skipped"
    # A misspelt --header is a command-line error.
    cluster $c "$W/p.csv" --header maybe
    if [ $rc -eq 2 ] && [ "$(lines "$W/run.err")" = 1 ] && grep -q "yes, no or auto, got 'maybe'" "$W/run.err"; then
        ok
    else
        bad "$c --header maybe: exit $rc"
    fi
done

# Hexadecimal is not a number to NumPy, nor here (it was read as 16).
{ cat "$W/p.csv"; echo "0x10,2"; } >"$W/hex.csv"
cluster kmeans "$W/hex.csv"
error_at "0x10 in the data" "hex.csv: line $((N + 1)), column 1: '0x10' is not a number" "hexadecimal"

# CR-only line ends (classic Mac OS): every row, header included, read as a line.
{ echo "x,y"; cat "$W/p.csv"; } | tr '\n' '\r' >"$W/cr.csv"
cluster kmeans "$W/cr.csv"
labels_match "CR-only line ends" $N "$W/cr.csv" "header on line 1 skipped"
{ echo "x,y"; cat "$W/p.csv"; } | sed 's/$/\r/' >"$W/crlf.csv"
cluster meanshift "$W/crlf.csv"
labels_match "CRLF line ends" $N "$W/crlf.csv" "header on line 1 skipped"

# UTF-16 (with and without a byte-order mark, either byte order): named, with UTF-8 expected.
for enc in UTF-16 UTF-16LE UTF-16BE; do
    { echo "x,y"; cat "$W/p.csv"; } | iconv -f UTF-8 -t $enc >"$W/u16.csv" || { bad "iconv to $enc"; continue; }
    cluster hca "$W/u16.csv"
    error_at "$enc CSV" "u16.csv: the file is UTF-16" "UTF-8 (or ASCII) is expected"
    # converted as the message says, it is read
    iconv -f "$(sed 's/.*the file is \(UTF-16[LB]E\) text.*/\1/' "$W/run.err")" -t UTF-8 <"$W/u16.csv" >"$W/u8.csv"
    cluster hca "$W/u8.csv"
    labels_match "$enc CSV converted as told" $N "$W/u8.csv" "header on line 1 skipped"
done

# kmeans --init FILE: its rows and header are reported too.
{ echo "cx,cy"; head -3 "$W/p.csv"; } >"$W/init.csv"
cluster kmeans "$W/p.csv" --init "$W/init.csv"
labels_match "kmeans --init with a header" $N "$W/p.csv" "no header"
grep -qxF "  read 3 rows from $W/init.csv, header on line 1 skipped" "$W/run.out" && ok ||
    bad "kmeans --init: no line saying 3 rows were read from init.csv after its header"
cluster kmeans "$W/p.csv" --init "$W/init.csv" --header no
error_at "kmeans --init with a header, --header no" "init.csv: line 1, column 1: 'cx' is not a number"

# .npy: rows reported, no header to speak of.
"$P" generate blobs --n $N --clusters 3 --box 10 --spread 0.5 --seed 3 -o "$W/p.npy" >/dev/null
cluster meanshift "$W/p.npy" --header yes
if [ $rc -eq 0 ] && [ "$(lines "$W/l.csv")" = $N ] && grep -qxF "  read $N rows from $W/p.npy (float32, mapped: no copy)" "$W/run.out"; then
    ok
else
    bad ".npy: exit $rc, $(lines "$W/l.csv" 2>/dev/null) labels"
fi

# score reads label files by the same rules.
"$P" kmeans "$W/p.csv" -k 3 --labels "$W/pred.csv" >/dev/null
{ echo "label"; cat "$W/pred.csv"; } >"$W/truth.csv"
run score --truth "$W/truth.csv" --pred "$W/pred.csv"
if [ $rc -eq 0 ] && grep -qx "points $N" "$W/run.out" && grep -qx 'ARI 1.000000' "$W/run.out" &&
    grep -qxF "  read $N rows from $W/truth.csv, header on line 1 skipped" "$W/run.out" &&
    grep -qxF "  read $N rows from $W/pred.csv, no header" "$W/run.out"; then
    ok
else
    bad "score with a header in --truth"
fi
run score --truth "$W/truth.csv" --pred "$W/pred.csv" --header no
error_at "score --header no on a header" "truth.csv: line 1, column 1: 'label' is not a number"
run score --truth "$W/truth.csv" --pred "$W/pred.csv" --header yes
error_at "score --header yes drops a label of pred" "has $N labels after its header row but" "has $((N - 1)) after its header row"

echo "cli_header: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
