#!/usr/bin/env bash
# Stop 53 call 3: the files after test_sm120_sass.py (call 2 ran every file before it in one process, 0 failures,
# then ran out of time compiling the sm120 SASS proof libraries, which need no GPU).
set -u
L=$OUT/log.txt
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $L 2>&1 || { cat $L; exit 1; }
echo "tree: $(cat scratch/head)" >> $L
start=$(date +%s)
timeout 300 python3 -m pytest -p no:cacheprovider --tb=short -rfE --durations=10 tests/test_task_shapes.py tests/test_timing.py tests/test_tools_format.py tests/test_tuning.py tests/test_weight_only.py > $OUT/rest.log 2>&1
echo "the files after test_sm120_sass.py, one process: rc=$? in $(( $(date +%s) - start )) s: $(tail -1 $OUT/rest.log)" >> $L
grep -E "^(FAILED|ERROR)" $OUT/rest.log | head -20 >> $L
cat $L
