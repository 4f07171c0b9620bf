set -o pipefail
D=csrc/include/nvfp4_gemm/sm90
use() { for f in common.cuh direct_gemm.cuh launcher.cuh; do cp scratch/$1/$f $D/$f; done; }
for round in 1 2; do for v in base90 new90; do
  use $v
  source benchmarks/device_build.sh 90a > $OUT/build_$v.log 2>&1 || { tail -20 $OUT/build_$v.log; exit 1; }
  echo "== $v round $round"; timeout 100 python3 -m pytest benchmarks/test_bench_quantize.py -k linear -s -q -p no:cacheprovider > $OUT/bench_linear_${v}_$round.log 2>&1; grep -E "^NVFP4Linear|failed" $OUT/bench_linear_${v}_$round.log | sed 's/NVFP4Linear //'
  if [ $round = 1 ]; then timeout 150 python3 benchmarks/weight_only_bench.py --m 1,16 > $OUT/weight_only_$v.log 2>&1; grep -E "^\s+(1|16) " $OUT/weight_only_$v.log | cut -c1-60; fi
done; done
use new90
