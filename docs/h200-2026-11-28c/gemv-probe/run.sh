#!/usr/bin/env bash
NEED_GPU=H200 source benchmarks/device_build.sh 90a || exit $?
mkdir -p /tmp/gemv_build && GEMV_BUILD=/tmp/gemv_build timeout 500 python3 scratch/gemv/gemv_probe.py 2>&1 | grep -v -i "warn" | tee $OUT/gemv.log | tail -20
