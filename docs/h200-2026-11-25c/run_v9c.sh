set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
echo "== weight_only_bench 1..128 (final model)" >> $L
timeout 150 python3 benchmarks/weight_only_bench.py --m 1,2,4,8,16,64,128 --json $OUT/w4a16_final.json >> $L 2>&1; tail -4 $L
echo "== GPU tests" >> $L
timeout 330 python3 -m pytest tests/test_gpu.py tests/test_weight_only.py tests/test_mx_hopper.py tests/test_nn.py tests/test_mx_nn.py tests/test_ops.py tests/test_sass.py -q -rs -p no:cacheprovider > $OUT/pytest.log 2>&1; grep -E "passed|failed|^FAILED|^ERROR" $OUT/pytest.log | tail -8 | tee -a $L
echo "== sanitizer" >> $L
for c in sm90_wgmma_64x128x128_prepass_splitk_bf16xnvfp4 sm90_wgmma_128x256x128_prepass_splitk_bf16xnvfp4 sm90_wgmma_64x256x128_prepass_splitk; do
  timeout 60 compute-sanitizer --tool memcheck --print-limit 5 python3 benchmarks/sanitize_cases.py --config $c > /tmp/s.log 2>&1; echo "memcheck $c: $(tail -1 /tmp/s.log)" >> $L
done
timeout 60 compute-sanitizer --tool memcheck --print-limit 5 python3 benchmarks/sanitize_cases.py > /tmp/s.log 2>&1; echo "memcheck resolver: $(tail -1 /tmp/s.log)" >> $L
timeout 90 compute-sanitizer --tool racecheck --print-limit 5 python3 benchmarks/sanitize_cases.py --config sm90_wgmma_64x128x128_prepass_splitk_bf16xnvfp4 > /tmp/s.log 2>&1; echo "racecheck: $(tail -1 /tmp/s.log)" >> $L
timeout 90 compute-sanitizer --tool synccheck --print-limit 5 python3 benchmarks/sanitize_cases.py --config sm90_wgmma_64x128x128_prepass_splitk_bf16xnvfp4 > /tmp/s.log 2>&1; echo "synccheck: $(tail -1 /tmp/s.log)" >> $L
tail -8 $L
