#!/usr/bin/env bash
# Stop 52 call 4: the GEMV rows as committed (one token, rule fitted): every GPU test, compute-sanitizer on the
# GEMV rows, then issue 14's W4A16 bars and the served model at batch 1.
set -u
L=$OUT/log.txt
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $L 2>&1 || { cat $L; tail -40 $OUT/build.log; exit 1; }
echo "tree: $(cat scratch/head)" >> $L
start=$(date +%s)
timeout 330 python3 -m pytest -q -p no:cacheprovider tests -x > $OUT/tests.log 2>&1
echo "tests rc=$? in $(( $(date +%s) - start )) s" >> $L
tail -3 $OUT/tests.log >> $L
for c in sm90_gemv_1x4x1024_bf16xnvfp4 sm90_gemv_1x4x1024_fp16xnvfp4 sm90_gemv_1x4x1024_bf16xmxfp4; do
  for tool in memcheck racecheck synccheck; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 python3 benchmarks/sanitize_cases.py --config $c > $OUT/san_${tool}_$c.log 2>&1
    echo "$tool $c rc=$? $(grep -c ': ok' $OUT/san_${tool}_$c.log) ok, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/san_${tool}_$c.log | tail -1)" >> $L
  done
done
cat $L
