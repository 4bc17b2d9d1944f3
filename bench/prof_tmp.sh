set -u
B=build-gpu
OUT=${OUT:-gpu-logs}
[ -f $B/bench/bench_meanshift ] || sh bench/run_gpu_meanshift_sums.sh >/dev/null 2>&1
for p in mma:0 tf32:2; do
  PC_MEANSHIFT_CUDA_PATH=$p timeout 300 ncu -k regex:mma_dot --launch-skip 12 --launch-count 1 --clock-control none \
    --metrics "regex:sm__pipe_.*_cycles_active.avg.pct_of_peak_sustained_active,regex:sm__inst_executed_pipe_.*.avg.pct_of_peak_sustained_active,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio,sm__cycles_elapsed.avg.per_second" \
    $B/bench/bench_meanshift gpu-exp --sizes 250000 --paths $p > $OUT/ncu-$(echo $p | tr : _).log 2>&1
  echo "== $p"; grep -E "sm__|smsp__" $OUT/ncu-$(echo $p | tr : _).log | awk '$NF+0 > 0.5' | head -60
done
