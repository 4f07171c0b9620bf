set -o pipefail
Q=csrc/include/nvfp4_gemm/quantize
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/log.txt
for v in pc1 pc4 pc16; do
  cp scratch/$v/quantize_common.cuh $Q/
  source benchmarks/device_build.sh 90a >> $OUT/log.txt 2>&1 || { tail -30 $OUT/build.log; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
for round in 1 2 3; do for v in pc1 pc4 pc16; do
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 60 python3 scratch/decode_span3.py $v 2>&1 | tail -1 >> $OUT/log.txt
done; done
echo "== tests (pc16 installed)" >> $OUT/log.txt
timeout 300 python3 -m pytest -q -x tests/test_quantize_gpu.py 2>&1 | tail -3 >> $OUT/log.txt
cat $OUT/log.txt
