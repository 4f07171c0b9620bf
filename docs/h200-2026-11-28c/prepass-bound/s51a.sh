#!/usr/bin/env bash
NEED_GPU=H200 source benchmarks/device_build.sh 90a || exit $?
echo "tree: $(cat scratch/head) + prepass-skip bound (uncommitted)"
for r in 1 2; do
  python3 scratch/s51_prepass.py 2>&1 | tee -a $OUT/log.txt | grep -v "^$" | tail -14
  NVFP4_SKIP_PREPARED_TOKENS=1 python3 scratch/s51_prepass.py 2>&1 | tee -a $OUT/log.txt | tail -14
done
