set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
use() { cp scratch/$1/direct_gemm.cuh scratch/$1/launcher.cuh csrc/include/nvfp4_gemm/sm90/; }
for v in base r2b; do
  use $v
  source benchmarks/device_build.sh 90a >> $L 2>&1 || { echo "build $v failed" >> $L; tail -30 $OUT/build.log >> $L; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  rm -rf /tmp/pkg_$v && mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
echo "== tests (r2b)" >> $L
PYTHONPATH=/tmp/pkg_r2b:/tmp/site timeout 120 python3 -m pytest tests/test_weight_only.py tests/test_gpu.py tests/test_mx_hopper.py -q -x -p no:cacheprovider 2>&1 | tail -2 >> $L
for r in 1 2; do for v in r2b base; do
  echo "== weight_only_bench $v round $r" >> $L
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 100 python3 benchmarks/weight_only_bench.py --m 1,4,16 --iters 30 --json $OUT/dec_${v}_$r.json > $OUT/dec_${v}_$r.txt 2>&1; tail -2 $OUT/dec_${v}_$r.txt >> $L
done; done
for v in base r2b; do for shape in 1x28672x8192 16x28672x8192; do
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 100 ncu --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy --clock-control none --kernel-name regex:direct_decode --launch-skip 2 --launch-count 1 \
    python3 benchmarks/profile_one.py $shape sm90_direct_16x128x128_splitk_bf16xnvfp4:1 --format=bf16xnvfp4 > $OUT/ncu_${v}_$shape.txt 2>&1
done; done
date >> $L
