# (1) the dequantization's bound at M = 64, 128 (the wgmma kernel shares dequant8): base vs nodeq, two
# interleaved rounds; (2) issue 14's quantize bars at HEAD (kernels unchanged since 6d06cc6).
set -u
L=$OUT/log.txt
case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H200*) ;; *) echo "not an H200"; exit 3 ;; esac
VARIANTS=nodeq MS=64,128 bash scratch/s49b.sh > /dev/null 2>&1
source benchmarks/device_build.sh 90a >> $L 2>&1
echo "== quantize benchmarks" >> $L
timeout 150 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider \
  -k "test_quantize_large or test_quantize_decode or test_event_timing_floor or m16" > /tmp/bench_q.log 2>&1
grep -E "^quantize|^NVFP4Linear|passed|failed" /tmp/bench_q.log >> $L
cat $L | grep -v "^ *$" | tail -60
