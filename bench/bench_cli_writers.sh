#!/bin/sh
# The CLI's array outputs end to end: the "time write" line of --verbose (staging, writing, commit)
# and the run's total, for labels in each format:
#   hca      100-Mpix 4-band uint8 .npy (bench_cli_io.sh's image.npy), -m 32 --clusters 6: 10^8 labels
#   kmeans   10M x 3 float32 .npy (bench_cli_io.sh's points.npy), k 8: 10^7 labels
# Every command runs RUNS times (the median by write time is shown); the output is removed before each
# run, as a first run finds it (replacing a file adds the filesystem's cost of deleting the old one).
# The writers alone, in process: build/bench/bench_writers OUT_DIR.
#
# usage: sh bench/bench_cli_writers.sh PARCLUST INPUT_DIR [OUT_DIR] [RUNS]
#   INPUT_DIR holds image.npy and points.npy as bench_cli_io.sh makes them (run it once first);
#   OUT_DIR (default INPUT_DIR/writers_out) should be on the disk a user would write to.
set -e
P=${1:?usage: bench_cli_writers.sh PARCLUST INPUT_DIR [OUT_DIR] [RUNS]}
I=${2:?usage: bench_cli_writers.sh PARCLUST INPUT_DIR [OUT_DIR] [RUNS]}
O=${3:-$I/writers_out}
RUNS=${4:-5}
mkdir -p "$O"
cat "$I/image.npy" "$I/points.npy" >/dev/null # into the page cache

echo "# $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date +%F), $P"
printf '%-30s %9s %9s %9s\n' output write_s total_s MiB

# measure NAME OUT COMMAND...: RUNS runs of COMMAND --verbose writing OUT, the median by write time
measure() {
    name=$1 out=$2
    shift 2
    : >"$O/runs.txt"
    r=0
    while [ $r -lt "$RUNS" ]; do
        rm -f "$out"
        "$@" --verbose >"$O/run.txt"
        awk '/^ *time write/ {w = $3} /^ *time total/ {t = $3} END {print w, t}' "$O/run.txt" >>"$O/runs.txt"
        r=$((r + 1))
    done
    sort -n "$O/runs.txt" | awk -v n="$RUNS" -v name="$name" -v mib="$(($(stat -c %s "$out") / 1048576))" \
        'NR == int((n + 1) / 2) { printf "%-30s %9.3f %9.3f %9d\n", name, $1, $2, mib }'
    rm -f "$out"
}

for ext in npy csv; do
    measure "hca --labels .$ext (10^8)" "$O/labels.$ext" "$P" hca "$I/image.npy" -m 32 --clusters 6 --labels "$O/labels.$ext"
done
for ext in npy txt; do
    measure "kmeans --labels .$ext (10^7)" "$O/klabels.$ext" "$P" kmeans "$I/points.npy" -k 8 --seed 1 --labels "$O/klabels.$ext"
done
