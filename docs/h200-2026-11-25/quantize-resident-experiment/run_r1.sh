set -o pipefail
Q=csrc/include/nvfp4_gemm/quantize
mkdir -p scratch/new_r && cp $Q/quantize_common.cuh $Q/nvfp4_quantize.cuh scratch/new_r/
use() { cp scratch/$1/quantize_common.cuh scratch/$1/nvfp4_quantize.cuh $Q/; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
use new_r
source benchmarks/device_build.sh 90a > $OUT/build_new.log 2>&1 || { tail -30 $OUT/build_new.log; exit 1; }
timeout 240 python3 -m pytest tests/test_quantize_gpu.py -q -x -p no:cacheprovider > $OUT/pytest_quantize_gpu.log 2>&1; grep -E "passed|failed|^FAILED|^E  " $OUT/pytest_quantize_gpu.log | head -12
for round in 1 2; do for v in new_r base_r; do
  use $v
  source benchmarks/device_build.sh 90a > $OUT/build_$v.log 2>&1 || { tail -30 $OUT/build_$v.log; exit 1; }
  timeout 100 python3 scratch/mid_sizes.py $v > $OUT/mid_${v}_$round.log 2>&1; cat $OUT/mid_${v}_$round.log | tail -12
  timeout 60 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider -k "large and not mx" > $OUT/bench_large_${v}_$round.log 2>&1; grep -E "^quantize|failed" $OUT/bench_large_${v}_$round.log | sed "s/^/$v /" | cut -c1-120
done; done
use new_r
source benchmarks/device_build.sh 90a > $OUT/build_new2.log 2>&1
timeout 90 compute-sanitizer --tool memcheck --print-limit 5 python3 benchmarks/sanitize_quantize.py > $OUT/memcheck.log 2>&1; tail -2 $OUT/memcheck.log
timeout 90 compute-sanitizer --tool racecheck --print-limit 5 python3 benchmarks/sanitize_quantize.py > $OUT/racecheck.log 2>&1; tail -2 $OUT/racecheck.log
timeout 90 compute-sanitizer --tool synccheck --print-limit 5 python3 benchmarks/sanitize_quantize.py > $OUT/synccheck.log 2>&1; tail -2 $OUT/synccheck.log
timeout 100 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider -k "decode and dynamic" > $OUT/bench_decode.log 2>&1; grep -E "^quantize|failed" $OUT/bench_decode.log | cut -c1-110
