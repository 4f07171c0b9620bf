# Stop 50 on an H200: the stop-49 timing-only bounds of the W4A16 direct kernel (docs/h200-2026-11-28/w4a16-bounds/:
# variant.py, s49_time.py, s49b.sh, copied to scratch/ as they ran there) after the clean L2 flush, M = 1, 16, two
# interleaved rounds; first the timing tests at this tree (the flush test fixed after the flush-kinds calls).
set -u
L=$OUT/log.txt
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $OUT/tests.txt 2>&1 || { cat $OUT/tests.txt; exit 1; }
echo "tree: $(cat scratch/head)" >> $OUT/tests.txt
timeout 100 python3 -m pytest tests/test_gpu.py tests/test_timing.py -q -p no:cacheprovider -k "flush or span_timing or timing" >> $OUT/tests.txt 2>&1
tail -3 $OUT/tests.txt
NVFP4_GEMM_L2_FLUSH=clean VARIANTS="nodeq dq9 bare_notok" MS=1,16 bash scratch/s49b.sh > /dev/null 2>&1
grep -v "^ *$" $L | tail -60
