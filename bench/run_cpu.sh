#!/bin/sh
# Runs the CPU mean shift benchmarks and prints one Markdown section headed by the date and machine,
# ready to append to bench/RESULTS.md. usage: sh bench/run_cpu.sh [BUILD_DIR] [--quick]
set -eu
BUILD=${1:-build}
QUICK=${2:-}
B=$BUILD/bench/bench_meanshift
[ -x "$B" ] || { echo "build first: sh build.sh" >&2; exit 1; }
echo "## $(date -u +%Y-%m-%d) CPU mean shift: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
echo
echo "### ms-agnolucci (3D blobs, gaussian, h = 2, 10 iterations, no stop, no cut-off)"
echo
if [ "$QUICK" = "--quick" ]; then $B agnolucci --sizes 100,1000,10000; else $B agnolucci --sizes 100,1000,10000,100000; fi
echo
echo "### thread sweep (10k points, same workload)"
echo
$B threads --n 10000
echo
echo "### ms-bindi (3 blobs, h = 1, 50 iterations, no eps stop)"
echo
$B bindi
echo
echo "### neighbour grid vs all pairs (2D lattice of tight clusters, flat kernel, h = 0.3)"
echo
if [ "$QUICK" = "--quick" ]; then $B grid --n 100000 --clusters 1000; else $B grid --n 1000000 --clusters 10000; fi
echo
echo "### many dimensions (blobs, gaussian, h = sqrt(D), 3 iterations, no stop; one point of 10^6 values)"
echo
$B highd --iterations 3
echo
echo "### peers on the same data, same run"
echo
/usr/bin/python3 "$(dirname "$0")/peers.py" "$BUILD/parclust" --n 10000
