set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
for v in cfg_base cfg_new; do
  cp scratch/$v/configs.toml csrc/configs.toml
  source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  rm -rf /tmp/pkg_$v && mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
echo "== tests (cfg_new)" >> $L
timeout 240 python3 -m pytest tests/test_weight_only.py tests/test_sass.py tests/test_gpu.py -q -x -p no:cacheprovider 2>&1 | tail -3 >> $L
timeout 100 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_cases.py --config sm90_wgmma_128x256x128_prepass_splitk_fp16xnvfp4 > /tmp/m.log 2>&1; echo "memcheck fp16 128x256: $(tail -1 /tmp/m.log)" >> $L
timeout 150 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_cases.py --config sm90_wgmma_64x256x128_prepass_splitk_fp16xnvfp4 > /tmp/r.log 2>&1; echo "racecheck fp16 64x256: $(tail -1 /tmp/r.log)" >> $L
for r in 1 2; do for v in cfg_new cfg_base; do
  echo "== weight_only_bench fp16 $v round $r" >> $L
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 150 python3 benchmarks/weight_only_bench.py --dtype float16 --m 64,128 --iters 30 --json $OUT/fp16_${v}_$r.json >> $L 2>&1; tail -2 $L
done; done
