#!/bin/sh
# Issue 13's benchmark: a raster larger than the machine's memory segmented by HCA in bounded memory,
# from disk. The scene (100000 x 80000 pixels, 4 bands of uint8: 32 GB, `generate scene` writes it in
# blocks) is made once and kept. Then, each time from a cold page cache (sync and drop_caches: run as
# root): what the disk delivers alone (dd of the whole file), and `parclust segment FILE -m 32 -k 6
# --max-memory MEM -o labels.tif` under /usr/bin/time -v (wall time, peak resident memory), with the
# run's own lines (the way it went, its passes and their times). Megapixels per second are the image's
# pixels over the wall time, disk reads and the label raster's writing included.
#
# usage: sh bench/bench_segment_big.sh BUILD_DIR WORK_DIR [MAX_MEMORY] [EXTRA SEGMENT OPTIONS...]
set -e
B=$1
D=$2
MEM=${3:-2G}
[ $# -ge 2 ] && shift 2
[ $# -ge 1 ] && shift
P=$B/parclust
[ -x "$P" ] || { echo "no $P: build first"; exit 1; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian: time)"; exit 1; }
mkdir -p "$D"
W=100000 H=80000
if [ ! -f "$D/big.tif" ]; then
    echo "# generating $D/big.tif ($W x $H x 4 uint8)"
    "$P" generate scene --width $W --height $H --bands 4 --seed 8 -o "$D/big.tif" >/dev/null
fi
cold() { sync && echo 3 >/proc/sys/vm/drop_caches; }
echo "# $(date +%F), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), \
$(free -g | awk '/Mem:/ {print $2}') GiB of memory, $(du -h "$D/big.tif" | cut -f1) raster"
cold
dd if="$D/big.tif" of=/dev/null bs=16M 2>"$D/dd.txt"
echo "disk alone (dd, cold cache): $(tail -n 1 "$D/dd.txt")"
cold
rm -f "$D/labels.tif"
/usr/bin/time -v "$P" segment "$D/big.tif" -m 32 -k 6 --max-memory "$MEM" -o "$D/labels.tif" "$@" \
    >"$D/out.txt" 2>"$D/time.txt" || { cat "$D/out.txt" "$D/time.txt"; exit 1; }
grep -E "^streaming|^segment:|time |stage " "$D/out.txt"
wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$D/time.txt")
rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$D/time.txt")
echo "$wall $rss" | awk -v px=$((W * H)) '{n = split($1, p, ":"); t = p[n] + 60 * p[n - 1] + (n > 2 ? 3600 * p[1] : 0);
    printf "wall %.1f s, %.0f Mpix/s end to end, peak RSS %.2f GiB\n", t, px / t / 1e6, $2 / 1048576}'
