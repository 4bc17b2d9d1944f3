#!/bin/sh
# parclust segment end to end (read, cluster, write) on generated scenes of the hca-rgb and hca-4band
# workloads (BENCHMARKS.md): RGB uint8 of 5, 12.4 and 115 Mpix, 4-band uint8 of 4, 24 and 100 Mpix.
# HCA at m = 32, 6 clusters, on all cores. Each size is generated (not timed), segmented RUNS times,
# and removed; the run with the median total is reported, with the peak memory (max RSS) of that run
# beside the size of the pixels plus the labels.
#
# usage: sh bench/bench_segment.sh BUILD_DIR [WORK_DIR] [RUNS]
# The input is read from the page cache (it was just written): "read" is GDAL decoding, not the disk.
set -e
B=${1:-build}
D=${2:-$B/bench_segment_tmp}
RUNS=${3:-3}
P=$B/parclust
[ -x "$P" ] || { echo "no $P: build first"; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian: time)"; exit 1; }
mkdir -p "$D"
echo "# parclust segment, HCA m 32 -k 6, $(nproc) cores, $(date +%F)"
printf '%-10s %12s %5s %9s %9s %9s %9s %9s %11s %11s\n' workload size bands Mpix read_s cluster_s write_s total_s maxrss_MiB pix+lab_MiB
for spec in "rgb-5 2592 1944 3" "rgb-12.4 4080 3040 3" "rgb-115 12400 9300 3" \
            "4band-4 2000 2000 4" "4band-24 6000 4000 4" "4band-100 10000 10000 4"; do
    set -- $spec
    name=$1 w=$2 h=$3 bands=$4
    "$P" generate scene --width "$w" --height "$h" --bands "$bands" --classes 6 --seed 11 -o "$D/scene.tif" >/dev/null
    : >"$D/runs.txt"
    r=0
    while [ $r -lt "$RUNS" ]; do
        /usr/bin/time -v "$P" segment "$D/scene.tif" -k 6 -o "$D/labels.tif" >"$D/out.txt" 2>"$D/time.txt"
        awk -v rss="$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$D/time.txt")" \
            '/time read/ {r=$3} /time compact/ {c=$3} /time cluster/ {k=$3} /time write/ {w=$3} /time total/ {t=$3}
             / valid \(/ {for (i = 1; i <= NF; i++) if ($(i+1) == "valid") v = $i}
             END {printf "%s %s %s %s %s %s %s\n", t, r, c + k, w, rss, v, 0}' "$D/out.txt" >>"$D/runs.txt"
        r=$((r + 1))
    done
    # median run by total time
    sort -n "$D/runs.txt" | awk -v n="$RUNS" -v name="$name" -v w="$w" -v h="$h" -v b="$bands" \
        'NR == int((n + 1) / 2) {
            mpix = w * h / 1e6; need = (w * h * b + 4 * $6) / 1048576
            printf "%-10s %12s %5d %9.1f %9.3f %9.3f %9.3f %9.3f %11.0f %11.0f\n", name, w "x" h, b, mpix, $2, $3, $4, $1, $5 / 1024, need }'
    rm -f "$D/scene.tif" "$D/labels.tif"
done
rm -f "$D/out.txt" "$D/time.txt" "$D/runs.txt"
rmdir "$D" 2>/dev/null || true
