#!/bin/sh
# The case of issue 19 from the command line: three blobs (generate blobs, 300 points, 2-D) scaled
# by powers of ten from 1e-30 to 1e30 get the same partition from k-means, mean shift (gaussian and
# flat, bandwidth scaled alike) and HCA as the blobs themselves (score's ARI between the two
# labelings is 1). Before the fix k-means found one cluster at 1e20 and 1e-26.
#
# usage: sh cli_scale_test.sh PATH_TO_parclust WORKDIR
P=$1
W=$2
rm -rf "$W" && mkdir -p "$W" || exit 1
pass=0
fail=0

"$P" generate blobs --n 300 --dim 2 --clusters 3 --seed 1 -o "$W/p.csv" >/dev/null || exit 1

# labels ALGO SCALE FILE: clusters the points times SCALE into FILE
labels() {
    awk -F, -v s="$2" 'NR > 1 || $1 ~ /^[-0-9.]/ { printf "%.9g,%.9g\n", $1 * s, $2 * s }' "$W/p.csv" >"$W/s.csv"
    h=$(awk -v s="$2" 'BEGIN { printf "%.9g", 1.5 * s }')
    case $1 in
    kmeans) "$P" kmeans "$W/s.csv" -k 3 --labels "$3" ;;
    gaussian | flat) "$P" meanshift "$W/s.csv" --kernel "$1" --bandwidth "$h" --labels "$3" ;;
    hca) "$P" hca "$W/s.csv" --clusters 3 --labels "$3" ;;
    esac >"$W/run.out" 2>&1
}

for algo in kmeans gaussian flat hca; do
    labels $algo 1 "$W/ref.csv" || { echo "FAIL $algo on the unscaled points: $(cat "$W/run.out")"; fail=$((fail + 1)); continue; }
    for s in 1e-30 1e-26 1e-22 1e-10 1e10 1e18 1e20 1e30; do
        if labels $algo $s "$W/l.csv" && "$P" score --truth "$W/ref.csv" --pred "$W/l.csv" >"$W/score.out" 2>&1 &&
            grep -q '^ARI 1.000000$' "$W/score.out"; then
            pass=$((pass + 1))
        else
            echo "FAIL $algo on the points x $s: $(cat "$W/run.out" "$W/score.out" | tr '\n' ' ')"
            fail=$((fail + 1))
        fi
    done
done
echo "cli_scale: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
