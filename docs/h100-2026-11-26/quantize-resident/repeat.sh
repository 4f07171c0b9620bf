set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
date -u >> $L
for v in base new; do
  cp scratch/res/$v/*.cuh csrc/include/nvfp4_gemm/quantize/
  source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  rm -rf /tmp/pkg_$v && mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
echo "== quantize GPU tests (new)" >> $L
PYTHONPATH=/tmp/pkg_new:/tmp/site timeout 200 python3 -m pytest tests/test_quantize_gpu.py -q -p no:cacheprovider 2>&1 | tail -1 >> $L
for r in 1 2 3; do for v in base new; do
  echo "== bench $v round $r" >> $L
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 120 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider -k "test_quantize_large" --benchmark-disable 2>&1 | grep "quantize .* bf16 8192" >> $L
done; done
for v in base new; do PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 100 python3 scratch/res/mid_sizes.py $v >> $L 2>&1; done
