set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
git log -1 --format=%H >> $L 2>/dev/null
nvcc -O3 -arch=sm_90a -o /tmp/cluster_occupancy benchmarks/probes/cluster_occupancy.cu && /tmp/cluster_occupancy >> $L 2>&1
use() { cp scratch/v9/$1/common.cuh scratch/v9/$1/direct_gemm.cuh scratch/v9/$1/wgmma_gemm.cuh scratch/v9/$1/launcher.cuh csrc/include/nvfp4_gemm/sm90/; cp scratch/v9/$1/configs.toml csrc/; cp scratch/v9/$1/sm90_model.py python/nvfp4_gemm/; }
for v in base new; do
  use $v
  source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  rm -rf /tmp/pkg_$v && mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
echo "== split-route and new-config tests (new)" >> $L
timeout 170 python3 -m pytest tests/test_weight_only.py -q -x -p no:cacheprovider -k "splits_reduce or every_weight_only_config" >> $L 2>&1; tail -2 $L
for v in new base; do
  echo "== weight_only_bench $v" >> $L
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 130 python3 benchmarks/weight_only_bench.py --m 64,128 --iters 30 --json $OUT/w4a16_$v.json >> $L 2>&1; tail -3 $L
done
echo "== sweep_hopper new" >> $L
PYTHONPATH=/tmp/pkg_new:/tmp/site timeout 150 python3 benchmarks/sweep_hopper.py --m 64,128 --iters 20 --json $OUT/sweep_new.json >> $L 2>&1; tail -6 $L
