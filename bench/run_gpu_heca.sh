#!/bin/sh
# HECA / HCA-MS on the GPU machine (issue 15): builds the tests and bench_heca with CUDA (sm_90), runs
# the heca tests (heca_cuda: the GPU against the CPU), compute-sanitizer memcheck on a quick run of
# heca_cuda, then bench_heca on the 115-Mpix RGB and 100-Mpix 4-band images: 2 OpenMP threads (the
# 2-core figure), all 16 cores, and --backend cuda. Logs under $OUT (or ./gpu-heca-out).
OUT=${OUT:-gpu-heca-out}
mkdir -p "$OUT"
nvidia-smi -L; lscpu | grep "Model name"
cmake -S . -B b -DCMAKE_BUILD_TYPE=Release -DPARCLUST_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DPARCLUST_WERROR=ON \
  -DPARCLUST_GDAL=OFF > "$OUT/cmake.log" 2>&1 || tail -20 "$OUT/cmake.log"
cmake --build b -j16 --target test_heca test_heca_cuda bench_heca > "$OUT/build.log" 2>&1 || tail -30 "$OUT/build.log"
(cd b && ctest -R "^(heca|heca_cuda)$" --output-on-failure) > "$OUT/ctest.log" 2>&1; tail -12 "$OUT/ctest.log"
PC_TEST_QUICK=1 compute-sanitizer --tool memcheck --error-exitcode 1 b/tests/test_heca_cuda > "$OUT/memcheck.log" 2>&1
echo "memcheck rc=$?"; tail -4 "$OUT/memcheck.log"
B=b/bench/bench_heca
for img in "3 115" "4 100"; do
  set -- $img
  OMP_NUM_THREADS=2 timeout 120 $B --mpix $2 --bands $1 --repeats 1 --threads 2
  timeout 60 $B --mpix $2 --bands $1 --repeats 1
  timeout 60 $B --mpix $2 --bands $1 --repeats 2 --backend cuda
done > "$OUT/bench.log" 2>&1
cat "$OUT/bench.log"
