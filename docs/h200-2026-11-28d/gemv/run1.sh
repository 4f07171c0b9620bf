#!/usr/bin/env bash
# Stop 52 call 1: build with the GEMV rows, its tests and the weight-only tests, then the sweep.
set -u
L=$OUT/log.txt
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $L 2>&1 || { cat $L; tail -40 $OUT/build.log; exit 1; }
echo "tree: $(cat scratch/head)" >> $L
timeout 240 python3 -m pytest -q -p no:cacheprovider tests/test_gemv.py tests/test_weight_only.py tests/test_registry.py -x > $OUT/tests.log 2>&1
tail -5 $OUT/tests.log >> $L
S="2112x7168,7168x7168,14336x4096,28672x8192,8192x28672,6144x4096,4096x4096,28672x4096,4096x14336,1024x4096,2048x2048,512x4096,3072x3072,5120x5120,8192x8192,2048x8192,8192x2048,10240x8192,1280x8192,8192x1024,16384x4096,4096x8192"
timeout 200 python3 scratch/gemv/sweep.py bf16xnvfp4 1,2,4 $S > $OUT/sweep_bf16.csv 2>&1
timeout 60 python3 scratch/gemv/sweep.py fp16xnvfp4 1,4 2112x7168,7168x7168,14336x4096,4096x4096 > $OUT/sweep_fp16.csv 2>&1
timeout 60 python3 scratch/gemv/sweep.py bf16xmxfp4 1,4 2112x7168,7168x7168,14336x4096,4096x4096 > $OUT/sweep_mx.csv 2>&1
cat $L; cat $OUT/sweep_bf16.csv $OUT/sweep_fp16.csv $OUT/sweep_mx.csv | tail -80
