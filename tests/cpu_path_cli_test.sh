#!/bin/sh
# `parclust info` and the meanshift/hca --verbose lines name the CPU kernels' path; PARCLUST_CPU_PATH
# asks for a lower one. The reference is the processor's own flags (/proc/cpuinfo), read here.
# Usage: cpu_path_cli_test.sh PARCLUST
set -u
cli=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { # name, expected, actual
    if [ "$2" != "$3" ]; then
        echo "FAIL: $1: expected '$2', got '$3'"
        fail=1
    fi
}
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || echo)
has() { case " $flags " in *" $1 "*) return 0 ;; esac; return 1; }
best=baseline
if has avx2 && has fma && has bmi2; then
    best=avx2
    if has avx512f && has avx512bw && has avx512dq && has avx512vl && has avx512cd; then best=avx512; fi
fi
# Builds other than GCC on x86-64 have the baseline path only: then every line says baseline.
got=$("$cli" info | sed -n 's/^CPU path: //p')
if [ "$got" = baseline ] && [ "$best" != baseline ]; then
    echo "note: this build has the baseline path only"
    best=baseline
fi
check "info" "$best" "$got"
for want in baseline avx2 avx512; do
    expect=$want
    [ $want = avx512 ] && [ $best != avx512 ] && expect=$best
    [ $want = avx2 ] && [ $best = baseline ] && expect=baseline
    check "info with PARCLUST_CPU_PATH=$want" "$expect" "$(PARCLUST_CPU_PATH=$want "$cli" info | sed -n 's/^CPU path: //p')"
done
check "info with an unknown PARCLUST_CPU_PATH" "$best" "$(PARCLUST_CPU_PATH=sse9 "$cli" info | sed -n 's/^CPU path: //p')"
"$cli" generate blobs --n 200 --dim 4 --seed 3 -o "$tmp/p.csv" >/dev/null || fail=1
got=$(PARCLUST_CPU_PATH=baseline "$cli" meanshift "$tmp/p.csv" --backend seq --verbose --labels "$tmp/l.csv" |
      sed -n 's/^CPU path: //p')
check "meanshift --verbose" baseline "$got"
got=$("$cli" hca "$tmp/p.csv" --backend seq --verbose --labels "$tmp/h.csv" | sed -n 's/^CPU path: \([a-z0-9]*\).*/\1/p')
check "hca --verbose" "$best" "$got"
[ $fail = 0 ] && echo "cpu_path_cli: ok (best path $best)"
exit $fail
