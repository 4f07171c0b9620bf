#!/usr/bin/env bash
# Stop 52 call 7: the other test files before test_quantize_gpu.py, then it (-x), the first failure's message.
set -u
L=$OUT/log.txt
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $L 2>&1 || { cat $L; tail -40 $OUT/build.log; exit 1; }
echo "tree: $(cat scratch/head)" >> $L
timeout 280 python3 -m pytest -x -p no:cacheprovider --tb=short -rA tests/test_mx_hopper.py tests/test_mx_nn.py tests/test_mx_quantize_gpu.py tests/test_ops.py tests/test_parallel.py tests/test_probes.py tests/test_quantize.py tests/test_checkpoints.py tests/test_errors_and_limits.py tests/test_quantize_gpu.py > $OUT/group.log 2>&1
echo "rc=$?: $(tail -1 $OUT/group.log)" >> $L
grep -E "^E  |^FAILED|^PASSED" $OUT/group.log | grep -B3 -A12 -m1 "FAILED\|^E " >> $L
grep -E "^(PASSED|FAILED)" $OUT/group.log | grep -B2 -m1 FAILED >> $L
cat $L
