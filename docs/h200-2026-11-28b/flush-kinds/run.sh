# Stop 50 on an H200: issue 14's speed bars under both L2 flushes (nvfp4_gemm.timing: "dirty" = the 256 MB
# memset every earlier record used, "clean" = the memset then a read of it), rounds interleaved; the
# plain-read ceiling of the W4A16 decode ratio (floor.py); the timing tests. `bash run.sh 2`: the second
# round (clean first), without floor.py.
set -u
CALL=${1:-1}
L=$OUT/log.txt
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $L 2>&1 || { cat $L; tail -30 $OUT/build.log; exit 1; }
echo "tree: $(cat scratch/head)" >> $L
timeout 100 python3 -m pytest tests/test_gpu.py -q -p no:cacheprovider -k "flush or span_timing" >> $L 2>&1
[ "$CALL" = 1 ] && timeout 100 python3 docs/h200-2026-11-28b/flush-kinds/floor.py >> $L 2>&1
order="dirty clean"; [ "$CALL" = 2 ] && order="clean dirty"
for kind in $order; do
  echo "== quantize bars, flush $kind" >> $L
  NVFP4_L2_FLUSH=$kind timeout 100 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider \
    -k "test_quantize_large or m16" > /tmp/q_$kind.log 2>&1
  grep -E "^quantize|^NVFP4Linear|passed|failed" /tmp/q_$kind.log >> $L
done
for run in $order; do
  echo "== weight_only_bench, flush $run" >> $L
  NVFP4_L2_FLUSH=$run timeout 150 python3 benchmarks/weight_only_bench.py --m 1,4,16,64,128 --json $OUT/w4a16_${run}_$CALL.json \
    > /tmp/w_$run.log 2>&1
  grep -E "geomean|decode|batch|flush|^ +(1|4|16|64|128) " /tmp/w_$run.log >> $L
done
cat $L
