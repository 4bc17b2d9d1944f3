#!/bin/sh
# Installs from Debian's repositories what building (and, with "test", testing) parclust needs.
# Does nothing for packages already present; uses sudo when not run as root.
set -e
# make: what CMake's default generator drives (build.sh itself needs only sh). libgdal-dev: the CLI's raster input/output (parclust segment on GeoTIFF, PNG, ...); optional to
# the build, which works without it, but installed so that the demo and the tests have it.
packages="cmake make gcc libc6-dev libgdal-dev"
if [ "${1:-}" = "test" ]; then
    # python3-gdal and gdal-bin: the segment tests read the label rasters back with GDAL; pkgconf:
    # the installed-library test builds a program with pkg-config.
    # clang and libclang-rt-dev (libFuzzer): the fuzz targets' short runs (fuzz/run.sh).
    packages="$packages clang libclang-rt-dev pkgconf python3 python3-numpy python3-scipy python3-sklearn python3-gdal gdal-bin"
    # The Python package's tests build its extension (Python's headers, setuptools), run pytest, and
    # install it with pip as the README says (--target, and a venv).
    packages="$packages python3-dev python3-setuptools python3-pytest python3-pip python3-wheel python3-venv"
    # Open MPI: parclust-mpi and its tests (built only where CMake finds MPI).
    packages="$packages libopenmpi-dev openmpi-bin"
fi
if [ "${1:-}" = "python" ]; then
    # pip install ./python (README, "Python"): a virtual environment that sees Debian's NumPy and
    # scikit-learn, and what builds the package without a download.
    packages="$packages python3 python3-dev python3-numpy python3-scipy python3-sklearn python3-setuptools \
python3-wheel python3-venv python3-pip"
fi
missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: run as root, or install sudo, to install:$missing" >&2; exit 1; }
    SUDO=sudo
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
