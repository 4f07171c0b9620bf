#!/usr/bin/env bash
NEED_GPU=H200 source benchmarks/device_build.sh 90a || exit $?
python3 scratch/s51_profile.py bf16,w4a16 1,64 2>&1 | grep -v -i warn | tee $OUT/profile.log
python3 -m pip list 2>/dev/null | grep -i -E "^(transformers|torch|accelerate) " | tee -a $OUT/profile.log
