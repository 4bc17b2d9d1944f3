#!/bin/sh
# The CLI end to end on the data path workloads of issue 12: read, cluster, write and the peak memory.
#   hca-npy      parclust hca on a 100-Mpix 4-band uint8 .npy (N x 4) to labels .npy   (target <= 1.0 s)
#   segment-tif  parclust segment on the 100-Mpix 4-band GeoTIFF of bench_segment.sh    (target <= 1.5 s)
#   kmeans-npy   parclust kmeans on a 10M x 3 float32 .npy, k 8, to labels .npy         (read + write <= 20%)
# Each input is generated once (not timed) and read from the page cache; every command runs RUNS times
# and the run with the median wall time is reported with its stages (the CLI's "time" lines; other_s
# is the rest: start-up, checks, exit) and its maximum resident set beside the size of the input.
# OLD says what the output replaces: keep (default) the previous run's, back to back, as a user re-running
# at once; synced: the same, but written out to disk first (sync, then 1 s), as after a while (ext4 then
# frees the old file's blocks and cached pages, 0.1-0.2 s for 400 MB, where a file still in memory only
# costs its pages); none: no file (removed and synced before each run).
#
# usage: sh bench/bench_cli_io.sh BUILD_DIR [WORK_DIR] [RUNS] [OLD]
set -e
B=${1:-build}
D=${2:-$B/bench_cli_io_tmp}
RUNS=${3:-5}
OLD=${4:-keep}
case $OLD in keep | synced | none) ;; *) echo "OLD is keep, synced or none, not '$OLD'"; exit 2 ;; esac
P=$B/parclust
[ -x "$P" ] || { echo "no $P: build first"; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian: time)"; exit 1; }
mkdir -p "$D"
echo "# parclust CLI end to end, $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date +%F), old outputs: $OLD"
printf '%-12s %9s %9s %9s %9s %9s %11s %10s\n' workload read_s cluster_s write_s other_s total_s maxrss_MiB input_MiB

[ -f "$D/scene.tif" ] || "$P" generate scene --width 10000 --height 10000 --bands 4 --classes 6 --seed 11 \
    --dtype uint8 -o "$D/scene.tif" >/dev/null
if [ ! -f "$D/image.npy" ]; then # the scene's pixels as rows: (H, W, 4) written as (H x W, 4)
    "$P" generate scene --width 10000 --height 10000 --bands 4 --classes 6 --seed 11 --dtype uint8 \
        -o "$D/scene.npy" >/dev/null
    /usr/bin/python3 -c "import numpy as np, sys; np.save(sys.argv[2], np.load(sys.argv[1], mmap_mode='r').reshape(-1, 4))" \
        "$D/scene.npy" "$D/image.npy"
    rm -f "$D/scene.npy"
fi
[ -f "$D/points.npy" ] || "$P" generate blobs --n 10000000 --dim 3 --clusters 8 --seed 3 -o "$D/points.npy" >/dev/null

# measure NAME INPUT OUTPUT COMMAND...: RUNS runs, the median by total time
measure() {
    name=$1 input=$2 output=$3
    shift 3
    cat "$D/scene.tif" "$D/image.npy" "$D/points.npy" >/dev/null # into the page cache
    : >"$D/runs.txt"
    r=0
    while [ $r -lt "$RUNS" ]; do
        case $OLD in
        synced) sync && sleep 1 ;;
        none) rm -f "$output" && sync && sleep 1 ;;
        esac
        /usr/bin/time -v "$@" >"$D/out.txt" 2>"$D/time.txt" || { cat "$D/out.txt" "$D/time.txt"; exit 1; }
        # total: the wall clock of the whole process (start-up and exit included); stages: the CLI's lines
        awk -v rss="$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$D/time.txt")" \
            -v wall="$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$D/time.txt")" \
            '/^ *time read/ {r=$3} /^ *time (compact|cluster)/ {c+=$3} /^ *time write/ {w=$3}
             END {n = split(wall, p, ":"); t = p[n] + 60 * p[n - 1]; printf "%s %s %s %s %s\n", t, r + 0, c + 0, w + 0, rss}' \
            "$D/out.txt" >>"$D/runs.txt"
        r=$((r + 1))
    done
    sort -n "$D/runs.txt" | awk -v n="$RUNS" -v name="$name" -v in_mib="$(($(stat -c %s "$input") / 1048576))" \
        'NR == int((n + 1) / 2) {
            printf "%-12s %9.3f %9.3f %9.3f %9.3f %9.3f %11.0f %10d\n", name, $2, $3, $4, $1 - $2 - $3 - $4, $1, $5 / 1024, in_mib }'
}

measure hca-npy "$D/image.npy" "$D/labels.npy" "$P" hca "$D/image.npy" -m 32 --clusters 6 --labels "$D/labels.npy" --verbose
measure segment-tif "$D/scene.tif" "$D/labels.tif" "$P" segment "$D/scene.tif" -k 6 -o "$D/labels.tif"
measure kmeans-npy "$D/points.npy" "$D/klabels.npy" "$P" kmeans "$D/points.npy" -k 8 --seed 1 --labels "$D/klabels.npy" --verbose
