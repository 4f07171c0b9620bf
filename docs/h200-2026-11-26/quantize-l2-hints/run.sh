set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
use() { cp scratch/$1/*.cuh csrc/include/nvfp4_gemm/quantize/; }
for v in q_base q_l2a q_l2b; do
  use $v
  source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  rm -rf /tmp/pkg_$v && mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
for v in q_l2a q_l2b; do
  echo "== quantize GPU tests $v" >> $L
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 150 python3 -m pytest tests/test_quantize_gpu.py -q -p no:cacheprovider 2>&1 | tail -1 >> $L
done
for r in 1 2 3; do for v in q_l2a q_base q_l2b; do
  echo "== $v round $r" >> $L
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 120 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider -k "test_quantize_large" --benchmark-disable 2>&1 | grep "quantize .* bf16 8192" >> $L
done; done
