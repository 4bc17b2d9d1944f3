#!/bin/sh
# Outputs that survive a crash (issue 18, item 2): runs of parclust killed with SIGKILL at random
# moments leave each output holding its old file or the complete new one (byte for byte as a run that
# was not killed writes it), and no file in the folder beyond the outputs but the killed runs' own
# staging files (".pc-PID-..."); the next run removes those once they are older than a day and their
# run is gone, and keeps a running process's and recent ones. Two runs writing the same outputs at
# once both succeed and leave complete files. (SIGKILL keeps what was written in the page cache; the
# fsyncs that make this hold across a power cut are checked by tests/test_output_files.c.)
# Usage: cli_crash_kill.sh PARCLUST DIR [SEED]   (the seed of the kill times, printed, to replay a failure)
set -eu
BIN=$1
DIR=$2
SEED=${3:-$(date +%s)}
rm -rf "$DIR"
mkdir -p "$DIR/ref" "$DIR/out"
cd "$DIR"
echo "kill times from seed $SEED"
fail() {
    echo "FAIL: $*" >&2
    exit 1
}

gen() { # seed points labels
    "$BIN" generate blobs --n 600000 --dim 3 --clusters 4 --seed "$1" -o "$2" --labels "$3" >/dev/null
}
km() { # k labels centres
    "$BIN" kmeans ref/input.npy -k "$1" --seed 5 --threads 1 --labels "$2" --centers "$3" >/dev/null
}
gen 1 ref/old.csv ref/old.npy
gen 2 ref/new.csv ref/new.npy
gen 3 ref/other.csv ref/other.npy
gen 7 ref/input.npy ref/input_truth.npy
km 3 ref/km_old.npy ref/km_old.csv
km 4 ref/km_new.npy ref/km_new.csv

now_ms() { echo $(($(date +%s%N) / 1000000)); }
t0=$(now_ms)
gen 2 out/points.csv out/labels.npy
t1=$(now_ms)
km 4 out/labels.npy out/centres.csv
t2=$(now_ms)
rm -f out/*
GEN_MS=$((t1 - t0 + 1))
KM_MS=$((t2 - t1 + 1))
echo "a whole run takes $GEN_MS ms (generate), $KM_MS ms (kmeans)"

# The i-th kill time in seconds, uniform in [0, 1.2 x the run's time].
delay() { # i ms
    awk -v s="$SEED" -v i="$1" -v ms="$2" 'BEGIN { srand(s); for (j = 0; j <= i; j++) x = rand(); printf "%.3f", x * 1.2 * ms / 1000 }'
}

# Each file of the outputs is the old one or the new one, whole.
old_or_new() { # file old new
    cmp -s "$1" "$2" || cmp -s "$1" "$3" || fail "$1 is neither the old nor the new file ($(wc -c <"$1") bytes)"
}

killed_pids=""
stray_check() { # the files of out/ beyond the outputs are staging files of killed runs
    for f in $(ls -A out); do
        case $f in
        points.csv | labels.npy | centres.csv) continue ;;
        esac
        ok=0
        for p in $killed_pids; do
            case $f in .pc-$p-*) ok=1 ;; esac
        done
        [ $ok = 1 ] || fail "stray file out/$f (runs killed: $killed_pids)"
    done
}

kill_run() { # i what
    i=$1
    if [ "$2" = gen ]; then
        cp ref/old.csv out/points.csv
        cp ref/old.npy out/labels.npy
        d=$(delay "$i" "$GEN_MS")
        "$BIN" generate blobs --n 600000 --dim 3 --clusters 4 --seed 2 -o out/points.csv --labels out/labels.npy \
            >/dev/null 2>&1 &
    else
        cp ref/km_old.npy out/labels.npy
        cp ref/km_old.csv out/centres.csv
        d=$(delay "$i" "$KM_MS")
        "$BIN" kmeans ref/input.npy -k 4 --seed 5 --threads 1 --labels out/labels.npy --centers out/centres.csv \
            >/dev/null 2>&1 &
    fi
    pid=$!
    sleep "$d"
    kill -9 "$pid" 2>/dev/null || true
    rc=0
    wait "$pid" || rc=$?
    killed_pids="$killed_pids $pid"
    if [ "$2" = gen ]; then
        old_or_new out/points.csv ref/old.csv ref/new.csv
        old_or_new out/labels.npy ref/old.npy ref/new.npy
        [ $rc != 0 ] || { cmp -s out/points.csv ref/new.csv && cmp -s out/labels.npy ref/new.npy; } ||
            fail "run $i finished (rc 0) but left an old output"
    else
        old_or_new out/labels.npy ref/km_old.npy ref/km_new.npy
        old_or_new out/centres.csv ref/km_old.csv ref/km_new.csv
    fi
    stray_check
    left=$(ls -A out | grep -c "^\.pc-$pid-" || true)
    echo "  $2 run $i killed after ${d}s (rc $rc): outputs old or new; $left staging file(s) of its own left"
}

i=0
while [ $i -lt 10 ]; do
    kill_run $i gen
    i=$((i + 1))
done
while [ $i -lt 15 ]; do
    kill_run $i km
    i=$((i + 1))
done

# The next run removes what the killed runs left once it is a day old; a running process's (this
# shell's pid) and a recent one stay.
rm -f out/centres.csv
ls -A out | grep "^\.pc-" >leftovers.txt || true
while read -r f; do touch -d '2 days ago' "out/$f"; done <leftovers.txt
echo x >"out/.pc-$$-1.csv"
touch -d '2 days ago' "out/.pc-$$-1.csv"
set -- $killed_pids
echo x >"out/.pc-$1-99.csv" # recent
gen 2 out/points.csv out/labels.npy
cmp -s out/points.csv ref/new.csv && cmp -s out/labels.npy ref/new.npy || fail "the run after the kills: outputs not new"
# Sorted in the C locale: ls's own order follows the locale (en_US puts labels.npy before .pc-*).
remaining=$(ls -A out | LC_ALL=C sort | tr '\n' ' ')
expected=$(printf '%s\n' ".pc-$1-99.csv" ".pc-$$-1.csv" labels.npy points.csv | LC_ALL=C sort | tr '\n' ' ')
[ "$remaining" = "$expected" ] ||
    fail "after the cleaning run: $remaining (expected the two kept staging files and the outputs: $expected)"
echo "  the next run removed $(wc -l <leftovers.txt) stale staging files, kept a running pid's and a recent one"
rm -f "out/.pc-$$-1.csv" "out/.pc-$1-99.csv"

# Two runs writing the same outputs at once: both succeed, each file whole (one run's or the other's).
for round in 1 2 3; do
    cp ref/old.csv out/points.csv
    cp ref/old.npy out/labels.npy
    gen 2 out/points.csv out/labels.npy &
    a=$!
    gen 3 out/points.csv out/labels.npy &
    b=$!
    wait $a || fail "concurrent run A failed"
    wait $b || fail "concurrent run B failed"
    old_or_new out/points.csv ref/new.csv ref/other.csv
    old_or_new out/labels.npy ref/new.npy ref/other.npy
    [ "$(ls -A out | tr '\n' ' ')" = "labels.npy points.csv " ] || fail "concurrent runs left: $(ls -A out)"
done
echo "  two runs at once, 3 times: both succeeded, each output whole, nothing else left"
echo "cli_crash_kill: passed"
