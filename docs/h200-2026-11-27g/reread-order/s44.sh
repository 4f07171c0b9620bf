# H200: the scale bytes stored without the evict-first hint (wb, altu + wb) or with evict-last (el) against HEAD and
# altu (scratch/s44_variants.py); three interleaved rounds of s44_time.py (the first checks every build bit for bit).
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L
case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H200*) ;; *) echo "not an H200"; exit 3 ;; esac
echo "tree: $(cat scratch/head)" >> $L
export PYTHONUNBUFFERED=1
R=$PWD
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
# each variant: the tree's quantize header patched, an incremental build into its own target (same build dir)
Q=csrc/include/nvfp4_gemm/quantize/quantize_common.cuh
cp $Q /tmp/q_head.cuh
for v in altu wb altuwb el; do
  cp /tmp/q_head.cuh $Q && python3 scratch/s44_variants.py $v && s=$(date +%s) && \
    NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$v . > /tmp/build_$v.log 2>&1
  echo "$v build: $(( $(date +%s) - s )) s" >> $L
  [ -d /tmp/pkg_$v/nvfp4_gemm ] || { echo "$v build failed" >> $L; tail -20 /tmp/build_$v.log >> $L; }
done
cp /tmp/q_head.cuh $Q
echo "builds done $(date +%T)" >> $L
for r in checked timed timed; do
  timeout 90 python3 scratch/s44_time.py base $r >> $L 2>&1
  for v in altu wb altuwb el; do PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 90 python3 scratch/s44_time.py $v $r >> $L 2>&1; done
  echo "round $r done $(date +%T)" >> $L
done
cat $L
