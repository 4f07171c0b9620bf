set -o pipefail
mkdir -p /tmp/res; L=/tmp/res/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
use() { cp scratch/$1/direct_gemm.cuh scratch/$1/launcher.cuh csrc/include/nvfp4_gemm/sm90/; }
for v in base r4; do
  use $v
  source benchmarks/device_build.sh 90a >> $L 2>&1 || { echo "build $v failed" >> $L; tail -30 $OUT/build.log >> $L; cp $L $OUT/; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  rm -rf /tmp/pkg_$v && mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
echo "== tests (r4)" >> $L
PYTHONPATH=/tmp/pkg_r4:/tmp/site timeout 150 python3 -m pytest tests/test_weight_only.py tests/test_gpu.py tests/test_mx_hopper.py -q -x -p no:cacheprovider 2>&1 | tail -3 >> $L
for r in 1 2; do for v in r4 base; do
  echo "== weight_only_bench $v round $r" >> $L
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 100 python3 benchmarks/weight_only_bench.py --m 1,4,16 --iters 30 --json /tmp/res/dec_${v}_$r.json > /tmp/res/dec_${v}_$r.txt 2>&1; tail -2 /tmp/res/dec_${v}_$r.txt >> $L
done; done
date >> $L
tar czf $OUT/r4.tgz -C /tmp/res .
cat $L
