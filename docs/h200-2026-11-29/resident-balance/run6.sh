# issue 14's quantize bars at HEAD (the official benchmark), the memset flush, then the clean flush for the large rows
set -u
L=$OUT/log.txt
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $L 2>&1 || { cat $L; tail -30 $OUT/build.log; exit 1; }
echo "tree: $(cat scratch/head)" >> $L
echo "== quantize bars, flush dirty (the default)" >> $L
timeout 200 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider \
  -k "test_quantize_large or test_quantize_decode or m16" > $OUT/bench_dirty.log 2>&1
grep -E "^quantize|^NVFP4Linear|passed|failed" $OUT/bench_dirty.log >> $L
for r in 1 2; do
  echo "== quantize large rows, flush clean, round $r" >> $L
  NVFP4_GEMM_L2_FLUSH=clean timeout 60 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider \
    -k "test_quantize_large" > $OUT/bench_clean_$r.log 2>&1
  grep -E "^quantize|passed|failed" $OUT/bench_clean_$r.log >> $L
  echo "== quantize large rows, flush dirty, round $r" >> $L
  timeout 60 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider \
    -k "test_quantize_large" > $OUT/bench_dirty_$r.log 2>&1
  grep -E "^quantize|passed|failed" $OUT/bench_dirty_$r.log >> $L
done
cat $L
