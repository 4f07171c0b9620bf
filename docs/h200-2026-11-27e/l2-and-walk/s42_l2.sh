# H200: (1) the L2-dirty probe; (2) the resident kernel's early walked steps loaded evict-first, by L2 steps
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L
echo "tree: $(cat scratch/head)" >> $L
nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/l2_probe scratch/l2_probe.cu >> $L 2>&1 && /tmp/l2_probe >> $L 2>&1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
rm -rf /tmp/vsrc /tmp/pkg_v && mkdir /tmp/vsrc && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/vsrc/
R=$PWD; (cd /tmp/vsrc && python3 $R/scratch/variant.py) >> $L 2>&1 || exit 1
(cd /tmp/vsrc && NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_v . > /tmp/build_v.log 2>&1) || { tail -20 /tmp/build_v.log >> $L; exit 1; }
echo "variant built" >> $L
for r in 1 2; do
  python3 scratch/l2_variant.py base >> $L 2>&1
  for s in 1000 8 4 0; do NVFP4_Q_L2_STEPS=$s PYTHONPATH=/tmp/pkg_v:/tmp/site python3 scratch/l2_variant.py "L2=$s" >> $L 2>&1; done
done
cat $L
