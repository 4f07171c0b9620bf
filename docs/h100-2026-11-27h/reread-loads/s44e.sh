# H200 (or H100): the resident kernel's re-read loads (scratch/s44e_variants.py: L1 no-allocate, L2-only, one in
# flight, and a timing-only probe reading the re-reads from shared memory) against the tree (1555030's kernel);
# interleaved rounds of s44_time.py (the first checks every exact build).
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L
echo "tree: ce73df3 (kernel of 1555030)" >> $L
export PYTHONUNBUFFERED=1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
Q=csrc/include/nvfp4_gemm/quantize/quantize_common.cuh
cp $Q /tmp/q_tree.cuh
for v in na cg a1 ldsprobe; do
  cp /tmp/q_tree.cuh $Q && python3 scratch/s44e_variants.py $v && s=$(date +%s) && \
    NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$v . > /tmp/build_$v.log 2>&1
  echo "$v build: $(( $(date +%s) - s )) s" >> $L
  [ -d /tmp/pkg_$v/nvfp4_gemm ] || { echo "$v build failed" >> $L; tail -20 /tmp/build_$v.log >> $L; }
done
cp /tmp/q_tree.cuh $Q
for r in checked timed timed; do
  timeout 90 python3 scratch/s44_time.py base $r >> $L 2>&1
  for v in na cg a1 ldsprobe; do
    label=$v; [ $v = ldsprobe ] && label=l2_ldsprobe
    PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 90 python3 scratch/s44_time.py $label $r >> $L 2>&1
  done
  echo "round $r done $(date +%T)" >> $L
done
cat $L
