#!/usr/bin/env bash
# Stop 53 call 1: the illegal address of the whole GPU suite. Hypothesis: test_mx_quantize.py's
# test_cuda_path_runs_the_kernel_it_names fakes device 0 / stream 0 and leaves a host amax scratch under
# GPU 0's default-stream key; the first dynamic quantize on that stream gets a host pointer.
set -u
L=$OUT/log.txt
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $L 2>&1 || { cat $L; exit 1; }
echo "tree: $(cat scratch/head) + the test fix (working tree)" >> $L
cp scratch/old_test_mx_quantize.py tests/test_mx_quantize_before.py
K="cuda_path_runs_the_kernel_it_names or test_random_data_bitwise"
timeout 120 python3 -m pytest -x -p no:cacheprovider --tb=line -q tests/test_mx_quantize_before.py tests/test_quantize_gpu.py -k "$K" > $OUT/repro_before.log 2>&1
echo "before the fix: rc=$? $(tail -1 $OUT/repro_before.log)" >> $L
grep -m3 -E "Error|illegal" $OUT/repro_before.log >> $L
rm tests/test_mx_quantize_before.py
timeout 120 python3 -m pytest -x -p no:cacheprovider --tb=line -q tests/test_mx_quantize.py tests/test_quantize_gpu.py -k "$K" > $OUT/repro_after.log 2>&1
echo "after the fix: rc=$? $(tail -1 $OUT/repro_after.log)" >> $L
timeout 400 python3 -m pytest -p no:cacheprovider --tb=short -q -rfE tests > $OUT/suite.log 2>&1
echo "whole suite, one process: rc=$? $(tail -1 $OUT/suite.log)" >> $L
grep -E "^(FAILED|ERROR)" $OUT/suite.log | head -20 >> $L
cat $L
