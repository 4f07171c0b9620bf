#!/usr/bin/env bash
# Stop 52 call 6: which earlier test file makes test_quantize_gpu.py fail in the whole suite (it passes alone).
set -u
L=$OUT/log.txt
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $L 2>&1 || { cat $L; tail -40 $OUT/build.log; exit 1; }
echo "tree: $(cat scratch/head)" >> $L
for first in tests/test_gpu.py tests/test_gemv.py tests/test_nn.py; do
  timeout 120 python3 -m pytest -q -x -p no:cacheprovider $first tests/test_quantize_gpu.py > $OUT/pair.log 2>&1
  echo "== $first then test_quantize_gpu.py: $(tail -1 $OUT/pair.log)" >> $L
  grep -E "^E  |^FAILED|Error" $OUT/pair.log | head -12 >> $L
done
cat $L
