set -o pipefail
FILES="csrc/include/nvfp4_gemm/quantize/quantize.h csrc/include/nvfp4_gemm/quantize/quantize_common.cuh csrc/include/nvfp4_gemm/quantize/nvfp4_quantize.cuh csrc/binding.cpp csrc/torch_op.cpp python/nvfp4_gemm/quantization.py"
use() { for f in $FILES; do cp scratch/$1/$(basename $f) $f; done; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
use base
source benchmarks/device_build.sh 90a > $OUT/build_base.log 2>&1 || { tail -20 $OUT/build_base.log; exit 1; }
echo "== base"; timeout 100 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider -k "large or (decode and dynamic)" > $OUT/bench_quantize_base.log 2>&1; grep -E "^quantize|failed" $OUT/bench_quantize_base.log | cut -c1-110
use new
source benchmarks/device_build.sh 90a > $OUT/build_new.log 2>&1 || { tail -20 $OUT/build_new.log; exit 1; }
echo "== new"; timeout 100 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider -k "decode or floor or large" > $OUT/bench_quantize.log 2>&1; grep -E "^quantize|failed" $OUT/bench_quantize.log | cut -c1-110
timeout 100 python3 -m pytest benchmarks/test_bench_quantize.py -k linear -s -q -p no:cacheprovider > $OUT/bench_linear.log 2>&1; grep -E "^NVFP4Linear|passed|failed" $OUT/bench_linear.log | head -12
timeout 200 python3 -m pytest tests/test_quantize_gpu.py tests/test_mx_quantize_gpu.py tests/test_quantize.py tests/test_mx_quantize.py tests/test_nn.py tests/test_mx_nn.py -q -rs -p no:cacheprovider > $OUT/pytest_quantize.log 2>&1; grep -E "passed|failed|^FAILED|^ERROR|^E  " $OUT/pytest_quantize.log | head -10
timeout 60 compute-sanitizer --tool memcheck --print-limit 5 python3 benchmarks/sanitize_quantize.py > $OUT/memcheck_quantize.log 2>&1; tail -1 $OUT/memcheck_quantize.log
timeout 60 compute-sanitizer --tool racecheck --print-limit 5 python3 benchmarks/sanitize_quantize.py > $OUT/racecheck_quantize.log 2>&1; tail -1 $OUT/racecheck_quantize.log
timeout 60 compute-sanitizer --tool synccheck --print-limit 5 python3 benchmarks/sanitize_quantize.py > $OUT/synccheck_quantize.log 2>&1; tail -1 $OUT/synccheck_quantize.log
