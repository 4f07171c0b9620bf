set -o pipefail
Q=csrc/include/nvfp4_gemm/quantize
use() { cp scratch/$1/quantize_common.cuh scratch/$1/nvfp4_quantize.cuh $Q/; }
for v in d_base d_ps d_s d_p; do
  use $v
  source benchmarks/device_build.sh 90a > $OUT/build_$v.log 2>&1 || { tail -30 $OUT/build_$v.log; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
for round in 1 2 3; do for v in d_base d_ps d_s d_p; do
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 60 python3 scratch/decode_span2.py $v 2>&1 | tail -1
done; done
use d_ps
