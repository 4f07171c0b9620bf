set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
use() { cp scratch/$1/common.cuh scratch/$1/wgmma_gemm.cuh csrc/include/nvfp4_gemm/sm90/; }
for v in w_base w_pf w_kg; do
  use $v
  source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  rm -rf /tmp/pkg_$v && mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
echo "== tests (w_kg)" >> $L
timeout 200 python3 -m pytest tests/test_weight_only.py tests/test_gpu.py tests/test_mx_hopper.py -q -x -p no:cacheprovider >> $L 2>&1; tail -2 $L
for v in w_kg w_pf w_base; do
  echo "== weight_only_bench $v" >> $L
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 130 python3 benchmarks/weight_only_bench.py --m 64,128 --iters 30 --json $OUT/w4a16_$v.json >> $L 2>&1; tail -3 $L
done
