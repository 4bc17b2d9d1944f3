#!/bin/sh
# The installed library as another project sees it: `cmake --install` into a fresh prefix, then a
# ten-line C program built against it with pkg-config and with find_package(parclust), each run
# against the installed libparclust.so (not the build tree's) and checked for the right clusters.
#
# usage: sh install_test.sh BUILD_DIR WORKDIR [EXTRA_CFLAGS]
#   EXTRA_CFLAGS: what a sanitizer build compiles with (its runtime must come first when linking).
set -u
B=$1
W=$2
XFLAGS=${3:-}
rm -rf "$W" && mkdir -p "$W/src" || exit 1
fail=0
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

cmake --install "$B" --prefix "$W/prefix" >"$W/install.log" 2>&1 || { cat "$W/install.log"; echo "FAIL cmake --install"; exit 1; }
LIBDIR=$(ls -d "$W"/prefix/lib*/ | head -1)
ls "$LIBDIR"/libparclust.so.* >/dev/null 2>&1 || bad "no versioned libparclust.so.N under $LIBDIR"
soname=$(objdump -p "$LIBDIR"/libparclust.so 2>/dev/null | awk '/SONAME/ { print $2 }')
case $soname in libparclust.so.[0-9]*) ;; *) bad "soname is '$soname', not libparclust.so.MAJOR" ;; esac
[ -x "$W/prefix/bin/parclust" ] || bad "the CLI was not installed"
[ -f "$W/prefix/include/parclust.h" ] || bad "the header was not installed"

cat >"$W/src/app.c" <<'EOF'
#include <parclust.h>
#include <stdio.h>
int main(void) {
    float x[] = {0, 0, 0.1f, 0, 0, 0.1f, 5, 5, 5.1f, 5, 5, 5.1f};
    pc_points v = pc_points_f32(x, 6, 2);
    pc_kmeans_params p; pc_kmeans_params_init(&p); p.k = 2;
    pc_result *r = NULL;
    if (pc_kmeans(&v, &p, &r) != PC_OK) { fprintf(stderr, "%s\n", pc_last_error()); return 1; }
    const int *l = pc_result_labels(r);
    printf("%s %d\n", pc_version(), l[0] == l[2] && l[3] == l[5] && l[0] != l[3]);
    pc_result_free(r); return 0; }
EOF
# check_run NAME PROGRAM: the program runs against the installed library and finds the two clusters
check_run() {
    if ! out=$(LD_LIBRARY_PATH= "$2" 2>&1); then bad "$1: the program failed: $out"; return; fi
    case $out in *" 1") echo "ok   $1: $out" ;; *) bad "$1: wrong clusters: $out" ;; esac
    LD_LIBRARY_PATH= ldd "$2" | grep -q "$W/prefix/.*libparclust.so" || bad "$1: not linked to the installed library"
}

# 1. pkg-config
if PKG_CONFIG_PATH="$LIBDIR/pkgconfig" pkg-config --exists parclust; then
    flags=$(PKG_CONFIG_PATH="$LIBDIR/pkgconfig" pkg-config --cflags --libs parclust)
    # shellcheck disable=SC2086 # flags are a list
    if cc $XFLAGS "$W/src/app.c" -o "$W/app-pkgconfig" $flags -Wl,-rpath,"$LIBDIR" 2>"$W/pc.log"; then
        check_run pkg-config "$W/app-pkgconfig"
    else
        bad "pkg-config build: $(cat "$W/pc.log")"
    fi
else
    bad "pkg-config does not find parclust under $LIBDIR/pkgconfig"
fi

# 2. CMake's find_package
cat >"$W/src/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.18)
project(app C)
find_package(parclust 0 REQUIRED CONFIG)
add_executable(app app.c)
target_link_libraries(app PRIVATE parclust::parclust)
EOF
if cmake -S "$W/src" -B "$W/app-build" -DCMAKE_PREFIX_PATH="$W/prefix" -DCMAKE_C_FLAGS="$XFLAGS" \
    -DCMAKE_EXE_LINKER_FLAGS="$XFLAGS" >"$W/cm.log" 2>&1 && cmake --build "$W/app-build" >>"$W/cm.log" 2>&1; then
    check_run find_package "$W/app-build/app"
else
    bad "find_package build: $(tail -20 "$W/cm.log")"
fi
echo "install: $fail failed"
[ "$fail" -eq 0 ]
