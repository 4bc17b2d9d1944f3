#!/bin/sh
# parclust from a bare machine: installs what it needs from Debian (apt-get; sudo when not root),
# builds with CMake, then does what is asked. Needs only sh and apt-get: no make, no compiler.
#
#   sh build.sh demo      the main job: segments a generated 4-band scene by HCA, scored against its truth
#   sh build.sh check     builds with warnings as errors and runs every test (ctest, GPU tests excluded)
#   sh build.sh bench     the CPU benchmarks (tables for bench/RESULTS.md)
#   sh build.sh [build]   builds only
#
# A second run installs nothing that is there and rebuilds only what changed.
# Environment: BUILD (build folder, default build), JOBS (parallel jobs, default all cores),
# CMAKE_FLAGS (extra configure options), DEMO (the demo's output folder, default demo-output).
set -eu
cd "$(dirname "$0")"
what=${1:-build}
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
CMAKE_FLAGS=${CMAKE_FLAGS:-}
DEMO=${DEMO:-demo-output}

configure_and_build() { # $1: extra configure options
    # shellcheck disable=SC2086 # CMAKE_FLAGS and $1 are lists of options
    mkdir -p "$BUILD"
    cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release $1 $CMAKE_FLAGS >"$BUILD/configure.log" 2>&1 ||
        { cat "$BUILD/configure.log" >&2; exit 1; }
    cmake --build "$BUILD" -j "$JOBS"
}

case $what in
build)
    sh scripts/install-deps.sh
    configure_and_build ""
    ;;
demo)
    sh scripts/install-deps.sh
    configure_and_build ""
    # A 3-megapixel 4-band scene (6 land-cover classes, GeoTIFF with its true labels) segmented by
    # HCA (m 32, 6 clusters) on all cores: clusters, matched accuracy, ARI and NMI against the truth,
    # the time of each stage; the label GeoTIFF and a preview (bands 3,2,1 as red, green, blue).
    mkdir -p "$DEMO"
    "$BUILD/parclust" generate scene --width 2000 --height 1500 --bands 4 --classes 6 --seed 11 \
        -o "$DEMO/scene.tif" --labels "$DEMO/truth.tif"
    "$BUILD/parclust" segment "$DEMO/scene.tif" --algorithm hca -m 32 -k 6 --bands 3,2,1,4 \
        --truth "$DEMO/truth.tif" -o "$DEMO/labels.tif" --preview "$DEMO/segments.png" --preview-size 1000
    echo "labels: $DEMO/labels.tif  picture: $DEMO/segments.png"
    ;;
check)
    sh scripts/install-deps.sh test
    configure_and_build "-DPARCLUST_WERROR=ON"
    (cd "$BUILD" && ctest --output-on-failure -j "$JOBS" -LE cuda)
    # The fuzz targets (fuzz/), FUZZ_SECONDS (default 3) each, where clang is: their own clang build.
    if [ "${FUZZ_SECONDS:-3}" != 0 ] && command -v clang >/dev/null 2>&1; then
        JOBS=$JOBS sh fuzz/build.sh "${FUZZ_BUILD:-build-fuzz}"
        sh fuzz/run.sh "${FUZZ_BUILD:-build-fuzz}" "${FUZZ_SECONDS:-3}"
    fi
    ;;
bench)
    sh scripts/install-deps.sh
    configure_and_build ""
    sh bench/run_cpu.sh "$BUILD"
    ;;
*)
    echo "usage: sh build.sh [build|demo|check|bench]" >&2
    exit 2
    ;;
esac
