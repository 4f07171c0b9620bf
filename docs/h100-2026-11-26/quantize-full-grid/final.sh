set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
date -u >> $L
nvcc -O3 -std=c++17 -arch=sm_90a -Icsrc/include -o /tmp/csp benchmarks/probes/cooperative_start_probe.cu && timeout 60 /tmp/csp > $OUT/cooperative_start_probe.txt 2>&1
echo "probe rc $?" >> $L
for v in base final; do
  cp scratch/fg/$v/*.cuh csrc/include/nvfp4_gemm/quantize/
  source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  rm -rf /tmp/pkg_$v && mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
for r in 1 2 3; do for v in base final; do
  echo "== bench $v round $r" >> $L
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 120 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider -k "test_quantize_large" --benchmark-disable 2>&1 | grep "quantize .* bf16 8192" >> $L
done; done
for v in base final; do PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 150 python3 scratch/fg/mid.py $v >> $L 2>&1; done
export PYTHONPATH=/tmp/pkg_final:/tmp/site
echo "== GPU tests (final)" >> $L
timeout 500 python3 -m pytest tests/test_quantize_gpu.py tests/test_nn.py tests/test_mx_nn.py tests/test_ops.py tests/test_mx_quantize_gpu.py -q -p no:cacheprovider 2>&1 | tail -4 >> $L
echo "== memcheck" >> $L
timeout 300 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_quantize.py 2>&1 | tail -16 >> $L
echo "== racecheck 6,7,8" >> $L
timeout 300 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_quantize.py --cases 6,7,8 2>&1 | tail -5 >> $L
echo "== synccheck 6,8" >> $L
timeout 200 compute-sanitizer --tool synccheck python3 benchmarks/sanitize_quantize.py --cases 6,8 2>&1 | tail -4 >> $L
echo "== ncu final 8192x7168" >> $L
timeout 200 ncu --cache-control none --clock-control none -k regex:"resident" -s 1 -c 1 --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct python3 scratch/res/ncu1.py 2>&1 | grep -E "duration|bytes|hit_rate" >> $L
