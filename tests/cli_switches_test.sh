#!/bin/sh
# Switches mean what they say, and option values are judged for what they are (issue 19, items 5
# and 8).
#
# usage: sh cli_switches_test.sh PATH_TO_parclust WORKDIR
#
# Every subcommand's --help is walked and every switch it lists (an option line with no value
# placeholder: "  --blurring           move ...") is run three more ways: "=no" must give exactly what
# leaving it out gives, "=1" exactly what giving it gives, "=maybe" exit 2 with one line naming the
# accepted words. "Exactly" is what a user sees: the exit code, stdout with timings blanked, and the
# bytes of every output file. Where a switch has an effect on these, giving it must change them, so a
# switch that ignores its value cannot pass. --help is a switch of every subcommand too. Then the
# spellings (any case), option values in both "--name value" and "--name=value" forms, and the value
# messages: a number too small or too large for a double is not "not a number", a misspelt k-means
# --init is not "cannot open", and generate refuses box or spread values whose points float32 cannot
# hold instead of writing inf. POSIX sh.

P=$1
W=$2
if [ -z "$P" ] || [ -z "$W" ]; then
    echo "usage: sh cli_switches_test.sh PATH_TO_parclust WORKDIR"
    echo "cli_switches: 0 passed, 1 failed"
    exit 2
fi
case $P in /*) ;; *) P=$(pwd)/$P ;; esac
if [ ! -x "$P" ]; then
    echo "FAIL parclust binary not found or not executable: $P"
    echo "cli_switches: 0 passed, 1 failed"
    exit 1
fi
rm -rf "$W" && mkdir -p "$W" || { echo "FAIL cannot create $W"; echo "cli_switches: 0 passed, 1 failed"; exit 1; }

# The checks run as jobs side by side (each parclust run is mostly the start of a program linked
# to GDAL); each job works in its own directory $D and prints "ok ..." / "FAIL ..." lines, counted
# at the end.
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; }
show() { sed -n '1,3p' "$D/$1.err" | sed 's/^/     stderr: /'; }

# observe NAME ARGS...: runs parclust (outputs go under $D/o, emptied first) and writes $D/NAME.obs:
# the exit code, stdout with timings blanked, and a checksum of each output file. $rc is the exit code.
observe() {
    _n=$1
    shift
    rm -rf "$D/o" && mkdir "$D/o"
    "$P" "$@" >"$D/$_n.out" 2>"$D/$_n.err"
    rc=$?
    {
        echo "exit $rc"
        sed 's/[0-9][0-9]*\.[0-9][0-9]* s/T s/g' "$D/$_n.out"
        for _f in "$D"/o/*; do
            [ -e "$_f" ] && echo "file ${_f##*/} $(cksum <"$_f")"
        done
    } >"$D/$_n.obs"
}
# (a GPU's free memory, which `parclust info` reports, moves between two runs: left out)
same() { [ "$(sed 's/[0-9]* of [0-9]* MiB free now/N MiB free now/' "$D/$1.obs")" = \
           "$(sed 's/[0-9]* of [0-9]* MiB free now/N MiB free now/' "$D/$2.obs")" ]; }
# how two observations differ, for the failure message
differ() { diff "$D/$1.obs" "$D/$2.obs" | sed -n '1,6p' | sed 's/^/     /'; }
# a usage error: exit 2, one stderr line with "error" and the words in $2, no output file
usage_error() {
    [ "$rc" -eq 2 ] && [ "$(wc -l <"$D/$1.err")" -eq 1 ] && grep -q "error" "$D/$1.err" &&
        grep -q -- "$2" "$D/$1.err" && ! grep -q '^file ' "$D/$1.obs"
}

# ------------------------------------------------------------------ inputs

"$P" generate blobs -o "$W/b.csv" --labels "$W/t.csv" --n 120 --seed 5 --spread 0.8 >/dev/null &&
    printf '25,25\n25.5,25\n' >>"$W/b.csv" && printf '0\n0\n' >>"$W/t.csv" &&
    "$P" generate blobs -o "$W/q_points.csv" --labels "$W/q.csv" --n 122 --seed 6 --clusters 2 >/dev/null &&
    "$P" kmeans "$W/b.csv" -k 3 --centers "$W/c.csv" >/dev/null &&
    "$P" generate scene -o "$W/s.npy" --width 40 --height 30 --classes 4 >/dev/null ||
    { echo "FAIL cannot make the inputs"; echo "cli_switches: 0 passed, 1 failed"; exit 1; }

# The subcommands: their words on the command line, and arguments that make them run quickly and
# write files that show what the switches change (b.csv: three blobs and a far pair of points that
# HCA's minimum cluster size turns into noise with --noise; s.npy: a small scene with small classes).
cmd_words() { if [ "$1" = scene ]; then echo "generate scene"; else echo "$1"; fi; }
# runc NAME CMD EXTRA...: observe CMD with its quick arguments, then EXTRA
runc() {
    _n=$1
    _c=$2
    shift 2
    case $_c in
    meanshift) observe "$_n" meanshift "$W/b.csv" --backend seq --labels "$D/o/l.csv" --modes "$D/o/m.csv" "$@" ;;
    hca) observe "$_n" hca "$W/b.csv" --backend seq --min-cluster-size 5 --labels "$D/o/l.csv" "$@" ;;
    kmeans) observe "$_n" kmeans "$W/b.csv" -k 3 --backend seq --labels "$D/o/l.csv" "$@" ;;
    segment) observe "$_n" segment "$W/s.npy" -o "$D/o/l.npy" --preview "$D/o/p.png" --min-cluster-size 100 \
        --backend seq "$@" ;;
    generate) observe "$_n" generate blobs -o "$D/o/g.csv" --n 20 "$@" ;;
    scene) observe "$_n" generate scene -o "$D/o/s.npy" --width 16 --height 12 "$@" ;;
    score) observe "$_n" score --truth "$W/t.csv" --pred "$W/q.csv" "$@" ;;
    info) observe "$_n" info "$@" ;;
    esac
}
# The switches a --help lists: option lines whose name is followed by the description (two spaces or
# more), not by a value placeholder ("  --bandwidth H        ...", "  -o, --output OUT ...").
switches() {
    # shellcheck disable=SC2046 # the words of the command are meant to split
    "$P" $(cmd_words "$1") --help | awk '/^  -/ {
        l = substr($0, 3); n = index(l, " ")
        t = n ? substr(l, 1, n - 1) : l; r = n ? substr(l, n) : ""
        if (r == "" || substr(r, 1, 2) == "  ") print t }'
}
# The switches that change what a user sees with the quick arguments above.
has_effect() {
    case "$1 $2" in
    "meanshift --blurring" | "meanshift --verbose" | "hca --noise" | "hca --verbose" | "kmeans --verbose" | \
        "segment --palette" | "segment --noise") return 0 ;;
    esac
    return 1
}
# The switches each --help must list (the walk below tests every one it finds; this guards the walk).
expected() {
    case $1 in
    meanshift) echo "--blurring --no-grid --verbose" ;;
    hca) echo "--noise --verbose" ;;
    kmeans) echo "--verbose" ;;
    segment) echo "--palette --noise" ;;
    *) echo "" ;;
    esac
}

# ------------------------------------------------------------------ every switch of every subcommand

walk() { # CMD: its --help's switches, each as given, =no, =1 and =maybe; then --help itself
    c=$1
    found=$(switches "$c" | tr '\n' ' ')
    missing=
    for s in $(expected "$c"); do
        case " $found " in *" $s "*) ;; *) missing="$missing $s" ;; esac
    done
    if [ -z "$missing" ]; then
        ok "$c --help lists the switches [$found]"
    else
        bad "$c --help: switches$missing not found among [$found] (an option line without a placeholder)"
    fi

    runc base "$c"
    if [ "$rc" -ne 0 ]; then
        bad "$c: the quick run exits $rc"
        show base
        return
    fi
    for s in $found; do
        t="$c $s"
        runc on "$c" "$s"
        on_rc=$rc
        runc no "$c" "$s=no"
        runc one "$c" "$s=1"
        if [ $on_rc -ne 0 ]; then
            bad "$t: exit $on_rc"
            show on
        elif has_effect "$c" "$s" && same base on; then
            bad "$t: changes nothing that it should change"
        else
            ok "$t: runs$(has_effect "$c" "$s" && echo ', and changes the outputs')"
        fi
        if same base no; then ok "$t=no: as if not given"; else
            bad "$t=no differs from leaving $s out:"
            differ base no
        fi
        if same on one; then ok "$t=1: as $s"; else
            bad "$t=1 differs from $s:"
            differ on one
        fi
        runc maybe "$c" "$s=maybe"
        if usage_error maybe "takes yes/no, true/false or 1/0, got 'maybe'"; then
            ok "$t=maybe: exit 2, one line naming the accepted values"
        else
            bad "$t=maybe: exit $rc (expected 2 and one line naming yes/no, true/false, 1/0)"
            show maybe
        fi
    done

    # --help is a switch of every subcommand
    runc help "$c" --help=yes
    if [ "$rc" -eq 0 ] && grep -q '^usage: parclust' "$D/help.out" && ! grep -q '^file ' "$D/help.obs"; then
        ok "$c --help=yes: the help, and nothing written"
    else
        bad "$c --help=yes: exit $rc, not the help"
    fi
    runc help_no "$c" --help=no
    if same base help_no; then ok "$c --help=no: as if not given"; else
        bad "$c --help=no differs from leaving --help out:"
        differ base help_no
    fi
    runc help_bad "$c" --help=maybe
    if usage_error help_bad "yes/no"; then ok "$c --help=maybe: exit 2"; else
        bad "$c --help=maybe: exit $rc (expected 2)"
        show help_bad
    fi
}

# ------------------------------------------------------------------ spellings

spellings() {
    runc base meanshift
    runc on meanshift --blurring
    for v in False NO 0; do
        runc v meanshift "--blurring=$v"
        if same base v; then ok "--blurring=$v: not blurring"; else bad "--blurring=$v: blurring"; fi
    done
    for v in TRUE Yes; do
        runc v meanshift "--blurring=$v"
        if same on v; then ok "--blurring=$v: blurring"; else bad "--blurring=$v: not blurring"; fi
    done
    for v in "" on; do
        runc v meanshift "--blurring=$v"
        if usage_error v "got '$v'"; then ok "--blurring='$v': exit 2"; else
            bad "--blurring='$v': exit $rc (expected 2)"
            show v
        fi
    done
    # a switch's value is never the next argument: "yes" here is a stray argument, not the value
    runc v meanshift --blurring yes
    if usage_error v "unexpected argument 'yes'"; then ok "--blurring yes: 'yes' is an unexpected argument"; else
        bad "--blurring yes: exit $rc (expected 2, unexpected argument)"
        show v
    fi
    # --noise=no is no HCA option: k-means takes it as not given; --noise=true is refused as with --noise
    runc km segment --algorithm kmeans -k 3
    runc kmno segment --algorithm kmeans -k 3 --noise=false
    if same km kmno; then ok "segment --algorithm kmeans --noise=false: as if not given"; else
        bad "segment --algorithm kmeans --noise=false differs from leaving it out:"
        differ km kmno
    fi
    runc kmyes segment --algorithm kmeans -k 3 --noise=true
    if usage_error kmyes "does not apply"; then ok "segment --algorithm kmeans --noise=true: does not apply, exit 2"; else
        bad "segment --algorithm kmeans --noise=true: exit $rc (expected 2: an HCA option)"
        show kmyes
    fi
}

# ------------------------------------------------------------------ options with values, both forms

both_forms() { # CMD NAME VALUE
    runc sep "$1" "$2" "$3"
    sep_rc=$rc
    runc eq "$1" "$2=$3"
    if [ $sep_rc -eq 0 ] && same sep eq; then ok "$1 $2 $3 and $2=$3: the same run"; else
        bad "$1 $2 $3 (exit $sep_rc) and $2=$3 (exit $rc) differ"
        differ sep eq
    fi
}
forms() {
    both_forms meanshift --bandwidth 1.5
    both_forms kmeans --init "$W/c.csv"
    both_forms hca --clusters 2
    both_forms segment --bands 1,2
    both_forms scene --noise 0.05
}

# ------------------------------------------------------------------ value messages (item 8)

value_error() { # DESC EXPECTED-TEXT NOT-EXPECTED-TEXT
    if usage_error v "$2" && { [ -z "$3" ] || ! grep -q -- "$3" "$D/v.err"; }; then ok "$1: exit 2, says '$2'"; else
        bad "$1: exit $rc, expected 2 and '$2'${3:+ (not '$3')}"
        show v
    fi
}
numbers() {
    runc v meanshift --bandwidth 1e-320
    value_error "--bandwidth 1e-320 (subnormal)" "1e-320 is too small" "not a number"
    runc v meanshift --bandwidth=1e-400
    value_error "--bandwidth=1e-400 (underflows to 0)" "1e-400 is too small" "not a number"
    runc v meanshift --bandwidth 1e400
    value_error "--bandwidth 1e400 (overflows)" "1e400 is too large" "not a number"
    runc v meanshift --merge-radius -1e999
    value_error "--merge-radius -1e999 (overflows)" "too large" "not a number"
    runc v meanshift --bandwidth 1e-3x
    value_error "--bandwidth 1e-3x" "'1e-3x' is not a number" ""
    runc v meanshift --bandwidth nan
    value_error "--bandwidth nan" "'nan' is not a number" ""
    runc v kmeans -k 99999999999999999999
    value_error "-k 99999999999999999999" "must be between 1 and" "not an integer"

    runc v kmeans --init kmeans+
    value_error "--init kmeans+" "neither an initialisation (kmeans++, random, kmeans-par) nor an existing file" \
        "cannot open"
    runc v kmeans --init "$W/no_such_dir/centres.csv"
    value_error "--init of a missing file" "neither an initialisation" "cannot open"
    runc v kmeans --init kmeans-par
    if [ "$rc" -eq 0 ]; then ok "--init kmeans-par: runs"; else bad "--init kmeans-par: exit $rc"; show v; fi
}
generate_limits() {
    runc v generate --box 1e39
    value_error "generate --box 1e39" "option --box: 1e+39 is too large.*3.4e+38.*at most 3.4e+38" ""
    runc v generate --spread 1e38
    value_error "generate --spread 1e38" "option --spread: 1e+38 is too large.*at most 3.96e+37" ""
    runc v generate --box 3e38 --spread 1e37
    value_error "generate --box 3e38 --spread 1e37 (together beyond float32)" "option --box: 3e+38 is too large" ""
    observe v generate grid -o "$D/o/g.csv" --n 2000 --clusters 2000 --box 1e37
    value_error "generate grid --clusters 2000 --box 1e37 (a lattice 44 boxes wide)" "lattice of 2000 clusters" ""
    runc v generate --box -1
    value_error "generate --box -1" "--box must be a finite number >= 0" ""
    runc v generate --spread inf
    value_error "generate --spread inf" "--spread must be a finite number >= 0" ""
    runc v generate --n 2000000000 --dim 4
    value_error "generate --n 2000000000 --dim 4" "more than the 2^31" ""
    # The largest box that fits is written, finite, and read back.
    observe v generate rings -o "$D/o/g.csv" --n 50 --box 3.4e38 --spread 0
    if [ "$rc" -eq 0 ] && ! grep -qi 'inf\|nan' "$D/o/g.csv" && "$P" hca "$D/o/g.csv" >/dev/null 2>&1; then
        ok "generate rings --box 3.4e38: finite points that hca reads"
    else
        bad "generate rings --box 3.4e38: exit $rc, or inf/nan written, or hca refuses the file"
        show v
    fi
}

# ------------------------------------------------------------------ run the jobs side by side

jobs_run=
for j in "walk meanshift" "walk hca" "walk kmeans" "walk segment" "walk generate" "walk scene" "walk score" \
    "walk info" spellings forms numbers generate_limits; do
    n=$(echo "$j" | tr ' ' _)
    mkdir -p "$W/$n"
    # shellcheck disable=SC2086 # the job's words are meant to split
    (D=$W/$n && $j >"$W/$n.log" 2>&1) &
    jobs_run="$jobs_run $n"
done
wait
pass=0
fail=0
for n in $jobs_run; do
    cat "$W/$n.log"
    pass=$((pass + $(grep -c '^ok ' "$W/$n.log")))
    fail=$((fail + $(grep -c '^FAIL ' "$W/$n.log")))
done
if [ $((pass + fail)) -lt 97 ]; then # a job that died early must not look like a pass
    bad "only $((pass + fail)) checks ran"
    fail=$((fail + 1))
fi
echo "cli_switches: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
