#!/usr/bin/env bash
# Stop 52 call 5: the quantize test that failed in call 4, alone and then in the whole suite (no -x); issue 14's
# W4A16 bars with the GEMV rule (M = 1, 4, 16, 64, 128; default flush); the served model at batch 1.
set -u
L=$OUT/log.txt
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $L 2>&1 || { cat $L; tail -40 $OUT/build.log; exit 1; }
echo "tree: $(cat scratch/head)" >> $L
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_quantize_gpu.py > $OUT/quantize_alone.log 2>&1
echo "test_quantize_gpu.py alone: $(tail -1 $OUT/quantize_alone.log)" >> $L
start=$(date +%s)
timeout 240 python3 -m pytest -q -p no:cacheprovider tests > $OUT/suite.log 2>&1
echo "whole suite rc=$? in $(( $(date +%s) - start )) s: $(tail -1 $OUT/suite.log)" >> $L
grep -E "^FAILED|^E  " $OUT/suite.log | head -30 >> $L
timeout 200 python3 benchmarks/weight_only_bench.py --m 1,4,16,64,128 --json $OUT/w4a16.json > $OUT/w4a16.log 2>&1
grep -E "geomean|decode|batch|flush" $OUT/w4a16.log >> $L
timeout 200 python3 benchmarks/serve_bench.py --variants bf16 w4a16 --batches 1 --json $OUT/serve.json > $OUT/serve.log 2>&1
grep -E "tok/s|transformers" $OUT/serve.log >> $L
cat $L
