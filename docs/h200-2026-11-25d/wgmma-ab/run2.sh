set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
use() { cp scratch/$1/common.cuh scratch/$1/wgmma_gemm.cuh csrc/include/nvfp4_gemm/sm90/; }
for v in w_base w_c; do
  use $v
  source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  rm -rf /tmp/pkg_$v && mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
echo "== tests (w_c)" >> $L
timeout 240 python3 -m pytest tests/test_weight_only.py tests/test_gpu.py tests/test_mx_hopper.py tests/test_sass.py -q -x -p no:cacheprovider >> $L 2>&1; tail -2 $L
for cfg in sm90_wgmma_64x128x128_prepass_splitk_bf16xnvfp4 sm90_wgmma_128x256x128_prepass_splitk_bf16xnvfp4 sm90_wgmma_64x256x128_prepass_splitk; do
  timeout 150 compute-sanitizer --tool racecheck --racecheck-report all --print-limit 10 python3 benchmarks/sanitize_cases.py --config $cfg > /tmp/race_$cfg.log 2>&1
  echo "racecheck w_c $cfg: $(tail -1 /tmp/race_$cfg.log)" >> $L; grep "ok\|MISMATCH" /tmp/race_$cfg.log | head -3 >> $L
done
cp /tmp/race_sm90_wgmma_64x128x128_prepass_splitk_bf16xnvfp4.log $OUT/race_64x128_bf16.log
timeout 100 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_cases.py --config sm90_wgmma_64x128x128_prepass_splitk_bf16xnvfp4 > /tmp/m.log 2>&1; echo "memcheck w_c 64x128 bf16: $(tail -1 /tmp/m.log)" >> $L
for r in 1 2; do for v in w_c w_base; do
  echo "== weight_only_bench $v round $r" >> $L
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 130 python3 benchmarks/weight_only_bench.py --m 64,128 --iters 30 --json $OUT/w4a16_${v}_$r.json >> $L 2>&1; tail -2 $L
done; done
