# H200: the resident walk's loops unified (every batch kLoadSteps loads), the exchange without the table; all with the one-trip poll
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L
echo "tree: $(cat scratch/head)" >> $L
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
R=$PWD
build() {
  local k=$1; shift
  rm -rf /tmp/src_$k /tmp/pkg_$k && mkdir /tmp/src_$k && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$k/
  (cd /tmp/src_$k && for e in "$@"; do python3 $R/scratch/$e || exit 1; done && NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$k . > /tmp/build_$k.log 2>&1)
}
build p10 poll9.py &
build p10u poll9.py unified.py &
build p10u_nowait poll9.py unified.py "walk_variants.py nowait" &
build p10_notable poll9.py notable.py &
build p10u_exchange poll9.py unified.py "walk_variants.py exchange" &
wait
for k in p10 p10u p10u_nowait p10_notable p10u_exchange; do [ -d /tmp/pkg_$k/nvfp4_gemm ] || { echo "build $k failed" >> $L; tail -20 /tmp/build_$k.log >> $L; }; done
PYTHONPATH=/tmp/pkg_p10u:/tmp/site python3 scratch/l2_variant.py p10u-check >> $L 2>&1
for r in 1 2; do
  python3 scratch/walk_time.py main >> $L 2>&1
  for k in p10 p10u p10u_exchange p10_notable p10u_nowait; do PYTHONPATH=/tmp/pkg_$k:/tmp/site python3 scratch/walk_time.py $k >> $L 2>&1; done
done
cat $L
