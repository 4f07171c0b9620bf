# Scale-store probes of the resident kernel (scratch/s46_variants.py): flat, flatrr (timing only) and word (exact)
# against HEAD; three interleaved rounds of s44_time.py (the first checks the exact builds bit for bit).
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L
echo "tree: $(cat scratch/head)" >> $L
export PYTHONUNBUFFERED=1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
Q=csrc/include/nvfp4_gemm/quantize/quantize_common.cuh
cp $Q /tmp/q_head.cuh
for v in flat flatrr word; do
  cp /tmp/q_head.cuh $Q && python3 scratch/s46_variants.py $v && s=$(date +%s) && \
    NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$v . > /tmp/build_$v.log 2>&1
  echo "$v build: $(( $(date +%s) - s )) s" >> $L
  [ -d /tmp/pkg_$v/nvfp4_gemm ] || { echo "$v build failed" >> $L; tail -20 /tmp/build_$v.log >> $L; }
done
cp /tmp/q_head.cuh $Q
for r in checked timed timed; do
  timeout 90 python3 scratch/s44_time.py base $r >> $L 2>&1
  for v in flat flatrr; do PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 90 python3 scratch/s44_time.py l2$v $r >> $L 2>&1; done
  PYTHONPATH=/tmp/pkg_word:/tmp/site timeout 90 python3 scratch/s44_time.py word $r >> $L 2>&1
  echo "round $r done $(date +%T)" >> $L
done
PYTHONPATH=/tmp/pkg_word:/tmp/site timeout 100 python3 -m pytest tests/test_quantize_gpu.py -q -p no:cacheprovider -x > $OUT/pytest_word.log 2>&1; echo "tests word: $(tail -1 $OUT/pytest_word.log)" >> $L
cat $L
