#!/bin/sh
# HCA-MS on the GPU machine (issue 15 items 2 and 4): builds with CUDA (sm_90), runs the HCA tests of
# label cuda (refine_cuda: the GPU's HCA-MS against the CPU's), compute-sanitizer memcheck on a quick
# refine_cuda, then bench_refine with the pixels on the GPU on the 115-Mpix RGB and 100-Mpix 4-band
# images, and on 2 idle cores (taskset -c 2,3: the RGB image, and the 4-band one at 1 Mpix). Logs under $OUT (or ./gpu-refine-out).
OUT=${OUT:-gpu-refine-out}
mkdir -p "$OUT"
nvidia-smi -L; lscpu | grep "Model name"
cmake -S . -B b -DCMAKE_BUILD_TYPE=Release -DPARCLUST_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DPARCLUST_GDAL=OFF \
  > "$OUT/cmake.log" 2>&1 || tail -20 "$OUT/cmake.log"
cmake --build b -j16 --target test_refine_cuda test_hca_cuda test_heca_cuda bench_refine parclust_cli \
  > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
(cd b && PC_CUDA_TEST_QUICK=1 timeout 120 ctest -R "^(refine_cuda|hca_cuda|heca_cuda)$" --output-on-failure) \
  > "$OUT/ctest.log" 2>&1; tail -8 "$OUT/ctest.log"
PC_TEST_QUICK=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 b/tests/test_refine_cuda \
  > "$OUT/memcheck.log" 2>&1
echo "memcheck rc=$?"; tail -4 "$OUT/memcheck.log"
B=b/bench/bench_refine
for img in "3 115" "4 100"; do
  set -- $img
  timeout ${GPU_LIMIT:-60} $B --gpu --mpix $2 --bands $1 --repeats 3
done > "$OUT/bench.log" 2>&1
cat "$OUT/bench.log"
# 2 idle cores: the RGB image whole; the 4-band one at 1 Mpix (at 100 Mpix its 10 M border pixels'
# climbs take many minutes on 2 cores).
for img in "3 115" "4 1"; do
  set -- $img
  taskset -c 2,3 env OMP_NUM_THREADS=2 timeout ${CPU_LIMIT:-90} $B --threads 2 --mpix $2 --bands $1 --repeats 1
done > "$OUT/bench_cpu.log" 2>&1
cat "$OUT/bench_cpu.log"
