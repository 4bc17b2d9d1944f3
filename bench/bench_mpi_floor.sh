#!/bin/sh
# The floor for bench_mpi.sh's weak scaling: PROCS independent `parclust kmeans --backend seq` runs at
# once (no MPI), each on the same PER x DIM file, k K, ITERS iterations, bound to cores 0..PROCS-1: what
# PROCS cores of this machine give when nothing is exchanged. Prints each run's k-means line.
# usage: bench/bench_mpi_floor.sh PARCLUST     (env: PROCS PER DIM K ITERS WORK)
set -eu
P1=$1
PROCS=${PROCS:-16}
PER=${PER:-1000000}
DIM=${DIM:-16}
K=${K:-100}
ITERS=${ITERS:-10}
W=${WORK:-/tmp/bench_mpi}
mkdir -p "$W"
export OMP_NUM_THREADS=1
"$P1" generate blobs -o "$W/floor.npy" --n "$PER" --dim "$DIM" --clusters "$K" --seed 1 > /dev/null
cat "$W/floor.npy" > /dev/null
echo "== $PROCS x parclust kmeans --backend seq at once, $PER x $DIM, k $K"
i=0
while [ "$i" -lt "$PROCS" ]; do
    taskset -c "$i" "$P1" kmeans "$W/floor.npy" -k "$K" --max-iter "$ITERS" --tol 0 --init random --backend seq \
        > "$W/floor.$i.txt" 2>&1 &
    i=$((i + 1))
done
wait
cat "$W"/floor.*.txt | grep '^k-means'
rm -f "$W"/floor.*
