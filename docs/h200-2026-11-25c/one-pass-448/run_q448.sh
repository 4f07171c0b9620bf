L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
for v in qb qm; do
  cp scratch/q448/$v/quantize_common.cuh csrc/include/nvfp4_gemm/quantize/
  source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  rm -rf /tmp/pkg_$v && mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
for r in 1 2 3; do for v in qb qm; do
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 60 python3 scratch/q448/span.py $v >> $L 2>&1
done; done
echo "== tests (qm)" >> $L
timeout 200 python3 -m pytest tests/test_quantize_gpu.py tests/test_nn.py -q -p no:cacheprovider >> $L 2>&1; tail -1 $L
timeout 90 compute-sanitizer --tool memcheck --print-limit 5 python3 benchmarks/sanitize_quantize.py > /tmp/s.log 2>&1; echo "memcheck: $(tail -1 /tmp/s.log)" >> $L
timeout 90 compute-sanitizer --tool racecheck --print-limit 5 python3 benchmarks/sanitize_quantize.py > /tmp/s.log 2>&1; echo "racecheck: $(tail -1 /tmp/s.log)" >> $L
timeout 60 compute-sanitizer --tool synccheck --print-limit 5 python3 benchmarks/sanitize_quantize.py > /tmp/s.log 2>&1; echo "synccheck: $(tail -1 /tmp/s.log)" >> $L
echo "== bench decode dynamic (qm)" >> $L
timeout 100 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider -k "decode and dynamic" >> $L 2>&1
grep -E "span|memcheck|racecheck|synccheck|passed|failed" $L | tail -20
