# Hopper v13 on the H200 (device tool): stream-K rows of the wgmma kernel. Build, GPU tests (every sm90 row,
# the stream-K test), compute-sanitizer on stream-K rows, the weight-only bench (every candidate timed), the
# NVFP4 sweep at M = 64, 128 on the model layers.
set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -40 $OUT/build.log >> $L; cp $OUT/build.log $OUT/build_full.log; exit 1; }
echo "== GPU tests" >> $L
timeout 420 python3 -m pytest tests/test_weight_only.py tests/test_gpu.py tests/test_mx_hopper.py tests/test_sass.py \
  tests/test_resolver.py tests/test_nn.py -q -p no:cacheprovider > $OUT/pytest.log 2>&1; tail -3 $OUT/pytest.log >> $L
echo "== sanitizer" >> $L
for cfg in sm90_wgmma_128x128x128_prepass_splitk_streamk_bf16xnvfp4 sm90_wgmma_64x256x128_prepass_splitk_streamk; do
  timeout 150 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_cases.py --config $cfg > /tmp/mem.log 2>&1
  echo "memcheck $cfg: $(tail -1 /tmp/mem.log) / $(grep -c ': ok' /tmp/mem.log) ok, $(grep -c MISMATCH /tmp/mem.log) mismatch" >> $L
  timeout 150 compute-sanitizer --tool racecheck --racecheck-report all --print-limit 10 python3 benchmarks/sanitize_cases.py --config $cfg > /tmp/race.log 2>&1
  echo "racecheck $cfg: $(tail -1 /tmp/race.log)" >> $L
done
timeout 120 compute-sanitizer --tool synccheck python3 benchmarks/sanitize_cases.py --config sm90_wgmma_128x128x128_prepass_splitk_streamk_bf16xnvfp4 > /tmp/sync.log 2>&1
echo "synccheck: $(tail -1 /tmp/sync.log)" >> $L
echo "== weight_only_bench" >> $L
timeout 300 python3 benchmarks/weight_only_bench.py --m 64,128 --json $OUT/w4a16.json >> $L 2>&1; tail -4 $L
