set -o pipefail
source benchmarks/device_build.sh 90a > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt; python3 -c "import torch;print(torch.__version__)" >> $OUT/gpu.txt
timeout 300 python3 -m pytest tests/test_quantize_gpu.py tests/test_quantize.py tests/test_nn.py tests/test_mx_nn.py -q -rs -p no:cacheprovider > $OUT/pytest_gpu.log 2>&1; grep -E "passed|failed|^FAILED|^ERROR|^E  " $OUT/pytest_gpu.log | head -10
timeout 90 compute-sanitizer --tool memcheck --print-limit 5 python3 benchmarks/sanitize_quantize.py > $OUT/memcheck_quantize.log 2>&1; tail -1 $OUT/memcheck_quantize.log
timeout 90 compute-sanitizer --tool racecheck --print-limit 5 python3 benchmarks/sanitize_quantize.py > $OUT/racecheck_quantize.log 2>&1; tail -1 $OUT/racecheck_quantize.log
timeout 90 compute-sanitizer --tool synccheck --print-limit 5 python3 benchmarks/sanitize_quantize.py > $OUT/synccheck_quantize.log 2>&1; tail -1 $OUT/synccheck_quantize.log
timeout 120 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider -k "decode or floor or large" > $OUT/bench_quantize.log 2>&1; grep -E "^quantize|failed" $OUT/bench_quantize.log | cut -c1-110
timeout 100 python3 -m pytest benchmarks/test_bench_quantize.py -k linear -s -q -p no:cacheprovider > $OUT/bench_linear.log 2>&1; grep -E "^NVFP4Linear|failed" $OUT/bench_linear.log
