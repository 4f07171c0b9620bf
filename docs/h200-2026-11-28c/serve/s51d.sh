#!/usr/bin/env bash
NEED_GPU=H200 source benchmarks/device_build.sh 90a || exit $?
echo "tree: $(cat scratch/head) + serve_bench --profile, timing.kernel_breakdown (uncommitted)"
python3 -m pytest tests/test_gpu.py -q -k "breakdown or kernel_span or l2_flushes" 2>&1 | tail -3
python3 -m pytest tests/test_timing.py -q 2>&1 | tail -1
cd benchmarks && python3 serve_bench.py --profile 6 --json $OUT/serve.json 2>&1 | grep -v Warning | grep -v "return forward_call" | tee $OUT/serve.log | tail -80
