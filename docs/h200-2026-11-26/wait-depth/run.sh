set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
use() { cp scratch/$1/wgmma_gemm.cuh csrc/include/nvfp4_gemm/sm90/; }
for v in w_cur w_q4w2 w_q4w1; do
  use $v
  source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  rm -rf /tmp/pkg_$v && mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
for v in w_q4w2 w_q4w1; do
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 150 python3 -m pytest tests/test_weight_only.py -q -p no:cacheprovider -k "every_weight_only_config" 2>&1 | tail -1 >> $L
done
for r in 1 2; do for v in w_q4w2 w_cur w_q4w1; do
  echo "== $v round $r" >> $L
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 150 python3 benchmarks/weight_only_bench.py --m 64,128 --iters 30 --json $OUT/w_${v}_$r.json >> $L 2>&1; tail -1 $L
done; done
