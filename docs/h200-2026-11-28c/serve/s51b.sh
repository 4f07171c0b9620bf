#!/usr/bin/env bash
NEED_GPU=H200 source benchmarks/device_build.sh 90a || exit $?
echo "tree: $(cat scratch/head)"
start=$(date +%s)
cd benchmarks && python3 serve_bench.py --json $OUT/serve.json 2>&1 | grep -v Warning | tee $OUT/serve.log | tail -12
echo "serve_bench: $(( $(date +%s) - start )) s"
