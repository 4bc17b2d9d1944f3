#!/bin/sh
# The CLI's array writers alone: each command runs once without the output and once with it in each
# format, and the difference is what writing that output costs (the rest of the run is the same).
#   hca      100-Mpix 4-band uint8 .npy (bench_cli_io.sh's image.npy), -m 32 --clusters 6: 10^8 labels
#   kmeans   10M x 3 float32 .npy (bench_cli_io.sh's points.npy), k 8: 10^7 labels
#   generate 2M x 3 float32 points as text ("%.9g" values) and .npy
# Every command runs RUNS times and the fastest wall time is kept (the inputs stay in the page cache;
# the outputs go to OUT_DIR, which should be on the disk the user would write to, not a tmpfs).
#
# usage: sh bench/bench_cli_writers.sh PARCLUST INPUT_DIR [OUT_DIR] [RUNS]
#   INPUT_DIR holds image.npy and points.npy as bench_cli_io.sh makes them (run it once first).
set -e
P=${1:?usage: bench_cli_writers.sh PARCLUST INPUT_DIR [OUT_DIR] [RUNS]}
I=${2:?usage: bench_cli_writers.sh PARCLUST INPUT_DIR [OUT_DIR] [RUNS]}
O=${3:-$I/writers_out}
RUNS=${4:-3}
mkdir -p "$O"
cat "$I/image.npy" "$I/points.npy" >/dev/null

# best NAME COMMAND...: the fastest of RUNS wall times, in seconds
best() {
    name=$1
    shift
    b=
    r=0
    while [ $r -lt "$RUNS" ]; do
        s=$(date +%s.%N)
        "$@" >/dev/null
        e=$(date +%s.%N)
        b=$(echo "$s $e ${b:-1e9}" | awk '{t = $2 - $1; print (t < $3 ? t : $3)}')
        r=$((r + 1))
    done
    printf '%-34s %8.3f s' "$name" "$b"
    if [ -n "$base" ]; then
        printf '   write %6.3f s' "$(echo "$b $base" | awk '{print $1 - $2}')"
    fi
    printf '\n'
    rm -f "$O"/out.*
}

echo "# $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date +%F), $P"
base=
best "hca, no output" "$P" hca "$I/image.npy" -m 32 --clusters 6
base=$b
best "hca --labels .npy (10^8)" "$P" hca "$I/image.npy" -m 32 --clusters 6 --labels "$O/out.npy"
best "hca --labels .csv (10^8)" "$P" hca "$I/image.npy" -m 32 --clusters 6 --labels "$O/out.csv"
base=
best "kmeans, no output" "$P" kmeans "$I/points.npy" -k 8 --seed 1
base=$b
best "kmeans --labels .npy (10^7)" "$P" kmeans "$I/points.npy" -k 8 --seed 1 --labels "$O/out.npy"
best "kmeans --labels .txt (10^7)" "$P" kmeans "$I/points.npy" -k 8 --seed 1 --labels "$O/out.txt"
base=
best "generate 2M x 3 .npy" "$P" generate blobs --n 2000000 --dim 3 -o "$O/out.npy"
base=$b
best "generate 2M x 3 .csv (6M %.9g)" "$P" generate blobs --n 2000000 --dim 3 -o "$O/out.csv"
