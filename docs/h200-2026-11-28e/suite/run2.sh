#!/usr/bin/env bash
# Stop 53 call 2: the whole GPU suite in one process with the fix, but for the sm120 host proofs (they compile
# a proof library per row with nvcc and need no GPU: the CPU CI runs them).
set -u
L=$OUT/log.txt
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $L 2>&1 || { cat $L; exit 1; }
echo "tree: $(cat scratch/head)" >> $L
start=$(date +%s)
timeout 540 python3 -m pytest -p no:cacheprovider --tb=short -rfE --durations=25 tests --ignore=tests/test_sm120_host_proofs.py > $OUT/suite.log 2>&1
echo "whole suite but the sm120 host proofs, one process: rc=$? in $(( $(date +%s) - start )) s: $(tail -1 $OUT/suite.log)" >> $L
grep -E "^(FAILED|ERROR)" $OUT/suite.log | head -20 >> $L
cat $L
