# H200: the resident kernel's walk by parts (diagnostic builds), dirty and clean flush
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L
echo "tree: $(cat scratch/head)" >> $L
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
R=$PWD
for k in exchange nowait nosts; do
  rm -rf /tmp/src_$k /tmp/pkg_$k && mkdir /tmp/src_$k && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$k/
  (cd /tmp/src_$k && python3 $R/scratch/walk_variants.py $k && NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$k . > /tmp/build_$k.log 2>&1) &
done
wait
for k in exchange nowait nosts; do [ -d /tmp/pkg_$k/nvfp4_gemm ] || { echo "build $k failed" >> $L; tail -20 /tmp/build_$k.log >> $L; }; done
for r in 1 2; do
  python3 scratch/walk_time.py main >> $L 2>&1
  for k in exchange nowait nosts; do PYTHONPATH=/tmp/pkg_$k:/tmp/site python3 scratch/walk_time.py $k >> $L 2>&1; done
done
cat $L
