# Stop 48, call 3 (any Hopper): do the resident kernel's evict-last lines outlive it? (scratch/s48_persist.py, override build)
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L
export PYTHONUNBUFFERED=1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
Q=csrc/include/nvfp4_gemm/quantize/quantize_common.cuh
if [ ! -d /tmp/pkg_ovr/nvfp4_gemm ]; then
  cp $Q /tmp/q_tree.cuh; python3 scratch/s48_override.py
  NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_ovr . > /tmp/build_ovr.log 2>&1
  cp /tmp/q_tree.cuh $Q
fi
for r in 1 2; do PYTHONPATH=/tmp/pkg_ovr:/tmp/site timeout 120 python3 scratch/s48_persist.py >> $L 2>&1; done
cat $L
