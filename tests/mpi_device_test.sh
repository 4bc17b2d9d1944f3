#!/bin/sh
# Runs an MPI test program (argument 2) under mpirun (argument 1) with 1 to 4 ranks, oversubscribed.
# Exits 77 (skipped) when the program says so at P = 1 (no CUDA device), else non-zero at the first
# failing P.
mpiexec=$1 program=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=2
for p in 1 2 3 4; do
    "$mpiexec" -q --oversubscribe -np "$p" "$program"
    rc=$?
    [ "$rc" = 77 ] && [ "$p" = 1 ] && exit 77
    [ "$rc" = 0 ] || { echo "mpi_device_test: $program failed with P=$p (exit $rc)"; exit 1; }
done
