# H200: walk probe (smem carve-out, cooperative launch, grid barrier) and the resident poll in one trip (10 loads)
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L
echo "tree: $(cat scratch/head)" >> $L
nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/walk_probe scratch/walk_probe.cu >> $L 2>&1 && /tmp/walk_probe >> $L 2>&1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
R=$PWD
build() {  # name, edit scripts...
  local k=$1; shift
  rm -rf /tmp/src_$k /tmp/pkg_$k && mkdir /tmp/src_$k && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$k/
  (cd /tmp/src_$k && for e in "$@"; do python3 $R/scratch/$e || exit 1; done && NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$k . > /tmp/build_$k.log 2>&1)
}
build exchange "walk_variants.py exchange" &
build p10 poll9.py &
build p10exchange poll9.py "walk_variants.py exchange" &
wait
for k in exchange p10 p10exchange; do [ -d /tmp/pkg_$k/nvfp4_gemm ] || { echo "build $k failed" >> $L; tail -20 /tmp/build_$k.log >> $L; }; done
for r in 1 2; do
  python3 scratch/walk_time.py main >> $L 2>&1
  for k in p10 exchange p10exchange; do PYTHONPATH=/tmp/pkg_$k:/tmp/site python3 scratch/walk_time.py $k >> $L 2>&1; done
done
PYTHONPATH=/tmp/pkg_p10:/tmp/site python3 scratch/l2_variant.py p10-check >> $L 2>&1
cat $L
