set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
date -u >> $L
echo "== cooperative start probe" >> $L
nvcc -O3 -std=c++17 -arch=sm_90a -Icsrc/include -o /tmp/csp benchmarks/probes/cooperative_start_probe.cu >> $L 2>&1
timeout 60 /tmp/csp >> $L 2>&1; echo "probe rc $?" >> $L
for v in base full; do
  cp scratch/fg/$v/*.cuh csrc/include/nvfp4_gemm/quantize/
  source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  rm -rf /tmp/pkg_$v && mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
for r in 1 2 3; do for v in base full; do
  echo "== bench $v round $r" >> $L
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 120 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider -k "test_quantize_large" --benchmark-disable 2>&1 | grep "quantize .* bf16 8192" >> $L
done; done
for v in base full; do PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 150 python3 scratch/fg/mid.py $v >> $L 2>&1; done
export PYTHONPATH=/tmp/pkg_full:/tmp/site
echo "== GPU tests (full)" >> $L
timeout 400 python3 -m pytest tests/test_quantize_gpu.py tests/test_nn.py -q -p no:cacheprovider -x 2>&1 | tail -6 >> $L
echo "== memcheck resident cases" >> $L
timeout 200 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_quantize.py --cases 6,7,8 2>&1 | tail -5 >> $L
echo "== racecheck 6" >> $L
timeout 200 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_quantize.py --cases 6 2>&1 | tail -3 >> $L
