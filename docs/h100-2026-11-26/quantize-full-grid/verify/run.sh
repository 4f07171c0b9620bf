set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
date -u >> $L
git log --oneline -1 >> $L 2>&1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
echo "== quantize benchmarks (large, decode, NVFP4Linear M=16)" >> $L
timeout 300 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider -k "test_quantize_large or test_quantize_decode or test_nvfp4_linear_m16 or test_event_timing" --benchmark-disable 2>&1 | grep -E "quantize|copy|linear|gemm|floor|us" | grep -v "^benchmarks" > $OUT/bench_quantize.txt; cat $OUT/bench_quantize.txt >> $L
timeout 150 python3 scratch/fg/mid.py final >> $L 2>&1
echo "== W4A16" >> $L
timeout 330 python3 benchmarks/weight_only_bench.py --m 1,4,16,64,128 --iters 30 --json $OUT/w4a16.json > $OUT/w4a16.txt 2>&1; tail -4 $OUT/w4a16.txt >> $L
date -u >> $L
