#!/bin/sh
# HECA and HCA-MS with the pixels on the GPU (issue 15 item 4) and the CUDA checks after a change of the
# HCA kernels, on the GPU machine: builds with CUDA (sm_90), bench_refine --gpu (HCA, HCA-MS and HECA by
# pc_heca_device, in one run) on the 115-Mpix RGB and 100-Mpix 4-band images, heca_cuda and refine_cuda,
# compute-sanitizer memcheck and racecheck on their quick runs, then every test of label cuda.
# Logs under $OUT (or ./gpu-heca-out).
OUT=${OUT:-gpu-heca-out}
mkdir -p "$OUT"
nvidia-smi -L; lscpu | grep "Model name"
cmake -S . -B b -DCMAKE_BUILD_TYPE=Release -DPARCLUST_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DPARCLUST_GDAL=OFF \
  > "$OUT/cmake.log" 2>&1 || tail -20 "$OUT/cmake.log"
cmake --build b -j16 --target test_refine_cuda test_heca_cuda bench_refine > "$OUT/build.log" 2>&1 ||
  { tail -40 "$OUT/build.log"; exit 1; }
for img in "3 115" "4 100"; do
  set -- $img
  timeout ${GPU_LIMIT:-90} b/bench/bench_refine --gpu --mpix $2 --bands $1 --repeats ${REPEATS:-3}
done > "$OUT/bench.log" 2>&1
cat "$OUT/bench.log"
timeout 200 b/tests/test_heca_cuda > "$OUT/heca_cuda.log" 2>&1; echo "heca_cuda rc=$?"; tail -12 "$OUT/heca_cuda.log"
for tool in memcheck racecheck; do
  for t in test_heca_cuda test_refine_cuda; do
    PC_TEST_QUICK=1 timeout 150 compute-sanitizer --tool $tool --error-exitcode 1 b/tests/$t > "$OUT/$tool-$t.log" 2>&1
    echo "$tool $t rc=$?"; tail -2 "$OUT/$tool-$t.log"
  done
done
[ -n "$SKIP_ALL" ] && exit 0
cmake --build b -j16 > "$OUT/build_all.log" 2>&1 || { tail -40 "$OUT/build_all.log"; exit 1; }
(cd b && timeout ${CTEST_LIMIT:-400} ctest -L cuda --output-on-failure) > "$OUT/ctest_cuda.log" 2>&1
tail -25 "$OUT/ctest_cuda.log"
