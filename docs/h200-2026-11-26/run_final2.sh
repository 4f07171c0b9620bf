# Hopper v12 final check (two k32 batches in flight, 559ac9c) on the H200 (device tool): build the tree, the wgmma rate probe, GPU tests,
# compute-sanitizer on pinned wgmma rows, the weight-only bench at decode and batch sizes.
set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
git log -1 --format=%h >> $L 2>/dev/null
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
CUT=/tmp/site/cutlass_library/source/include
GEN=$(find build -path '*generated/include' -type d | head -1)
echo "== wgmma_rate probe" >> $L
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -Icsrc/include -I$GEN -I$CUT \
  -o /tmp/wgmma_rate benchmarks/probes/wgmma_rate.cu >> $L 2>&1 && /tmp/wgmma_rate | tee $OUT/rate.txt >> $L 2>&1
echo "== GPU tests" >> $L
timeout 330 python3 -m pytest tests/test_weight_only.py tests/test_gpu.py tests/test_mx_hopper.py tests/test_sass.py \
  tests/test_nn.py tests/test_mx_nn.py tests/test_ops.py -q -p no:cacheprovider > $OUT/pytest.log 2>&1; tail -3 $OUT/pytest.log >> $L
echo "== sanitizer" >> $L
for cfg in sm90_wgmma_64x128x128_prepass_splitk_bf16xnvfp4 sm90_wgmma_128x256x128_prepass_splitk_bf16xnvfp4 sm90_wgmma_64x256x128_prepass_splitk sm90_wgmma_128x128x128_prepass_splitk_bf16xmxfp4; do
  timeout 150 compute-sanitizer --tool racecheck --racecheck-report all --print-limit 10 python3 benchmarks/sanitize_cases.py --config $cfg > /tmp/race.log 2>&1
  echo "racecheck $cfg: $(tail -1 /tmp/race.log) / $(grep -c ': ok' /tmp/race.log) ok, $(grep -c MISMATCH /tmp/race.log) mismatch" >> $L
  timeout 120 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_cases.py --config $cfg > /tmp/mem.log 2>&1
  echo "memcheck $cfg: $(tail -1 /tmp/mem.log)" >> $L
done
timeout 120 compute-sanitizer --tool synccheck python3 benchmarks/sanitize_cases.py --config sm90_wgmma_64x128x128_prepass_splitk_bf16xnvfp4 > /tmp/sync.log 2>&1
echo "synccheck 64x128 bf16: $(tail -1 /tmp/sync.log)" >> $L
echo "== weight_only_bench" >> $L
timeout 240 python3 benchmarks/weight_only_bench.py --m 1,2,4,8,16,64,128 --json $OUT/w4a16.json >> $L 2>&1; tail -4 $L
