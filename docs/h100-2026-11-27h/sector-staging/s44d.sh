# H200: the resident kernel with its scale bytes staged in shared memory and stored as whole sectors (a CTA per
# 8 rows x 64 columns, warps reading 32 blocks of one row; scratch/s44q/st1.cuh: one re-read in flight, st2.cuh:
# two) against the tree (1555030's kernel); interleaved rounds of s44_time.py (the first checks every build).
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L
case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H200*) ;; *) echo "not an H200"; exit 3 ;; esac
echo "tree: $(git rev-parse --short HEAD 2>/dev/null || cat scratch/head)" >> $L
export PYTHONUNBUFFERED=1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
Q=csrc/include/nvfp4_gemm/quantize/quantize_common.cuh
cp $Q /tmp/q_tree.cuh
for v in st1 st2; do
  cp scratch/s44q/$v.cuh $Q && s=$(date +%s) && \
    NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$v . > /tmp/build_$v.log 2>&1
  echo "$v build: $(( $(date +%s) - s )) s" >> $L
  [ -d /tmp/pkg_$v/nvfp4_gemm ] || { echo "$v build failed" >> $L; tail -20 /tmp/build_$v.log >> $L; }
done
cp /tmp/q_tree.cuh $Q
for r in checked timed timed; do
  timeout 90 python3 scratch/s44_time.py base $r >> $L 2>&1
  for v in st1 st2; do PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 90 python3 scratch/s44_time.py $v $r >> $L 2>&1; done
  echo "round $r done $(date +%T)" >> $L
done
cat $L
