#!/bin/sh
# Runs every fuzz target of a -DPARCLUST_FUZZ=ON build for a bounded time each, from the seeds of
# make_corpus.py plus what earlier runs found (kept in BUILD/fuzz-corpus/TARGET), and fails on the
# first crash, leak, timeout (a unit over 10 s) or memory blow-up (over 2 GiB), leaving the input that
# did it in BUILD/fuzz-artifacts/. Usage: fuzz/run.sh BUILD SECONDS [TARGET ...]
# For hours: fuzz/run.sh BUILD 14400 fuzz_npy (docs/FUZZING.md).
set -eu
# Absolute: the CLI targets work in a folder of their own (fuzz_cli.c chdir()s), where libFuzzer
# would not find a relative corpus folder again.
BUILD=$(cd "$1" && pwd)
SECONDS_EACH=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
targets=${*:-$(cat "$BUILD/fuzz/targets.txt")}
mkdir -p "$BUILD/fuzz-artifacts"
# The readers' memory limit (half of the physical memory by default) under libFuzzer's 2 GiB: an
# input that claims more is then refused by the readers' own limit, as a real run's would be.
PARCLUST_MAX_MEMORY=${PARCLUST_MAX_MEMORY:-1G}
export PARCLUST_MAX_MEMORY
rm -rf "$BUILD/fuzz-seeds"
/usr/bin/python3 "$here/make_corpus.py" "$BUILD/fuzz-seeds" "$BUILD/parclust" ||
    python3 "$here/make_corpus.py" "$BUILD/fuzz-seeds" "$BUILD/parclust"
for t in $targets; do
    mkdir -p "$BUILD/fuzz-corpus/$t" "$BUILD/fuzz-seeds/$t"
    log="$BUILD/fuzz-artifacts/$t.log"
    # -close_fd_mask=3: the commands' messages would drown the fuzzer's (which it still prints).
    if ! "$BUILD/fuzz/$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
        -close_fd_mask=3 -print_final_stats=1 -artifact_prefix="$BUILD/fuzz-artifacts/$t-" \
        "$BUILD/fuzz-corpus/$t" "$BUILD/fuzz-seeds/$t" >"$log" 2>&1; then
        tail -n 60 "$log" >&2
        echo "fuzz: $t FAILED (log $log, input in $BUILD/fuzz-artifacts/)" >&2
        exit 1
    fi
    summary=$(grep -E "^#[0-9]+.*(DONE|cov:)" "$log" | tail -n 1)
    echo "fuzz: $t ok for ${SECONDS_EACH}s: $summary"
done
