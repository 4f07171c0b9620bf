# Stop 48, call 2 (any Hopper; the GPU is named in the log): the resident kernel's walked steps loaded L2 evict-last.
# (1) sweep of the evict-last step count R by shape (override build, scratch/s48_override.py), two rounds, the first
# checking every shape bit for bit; (2) the tree's rule against the base kernel (3e536f0's header), three
# interleaved rounds of s44_time.py; (3) quantize GPU tests and memcheck/racecheck of the resident cases on the tree.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L
echo "tree: $(cat scratch/head) + working-tree change" >> $L
export PYTHONUNBUFFERED=1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
Q=csrc/include/nvfp4_gemm/quantize/quantize_common.cuh
cp $Q /tmp/q_tree.cuh
for v in base ovr; do
  if [ $v = base ]; then cp scratch/q_base.cuh $Q; else cp /tmp/q_tree.cuh $Q && python3 scratch/s48_override.py; fi
  s=$(date +%s); NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$v . > /tmp/build_$v.log 2>&1
  echo "$v build: $(( $(date +%s) - s )) s" >> $L
  [ -d /tmp/pkg_$v/nvfp4_gemm ] || { echo "$v build failed" >> $L; tail -20 /tmp/build_$v.log >> $L; }
done
cp /tmp/q_tree.cuh $Q
echo "== sweep" >> $L
PYTHONPATH=/tmp/pkg_ovr:/tmp/site timeout 200 python3 scratch/s48_sweep.py s1 checked >> $L 2>&1
PYTHONPATH=/tmp/pkg_ovr:/tmp/site timeout 150 python3 scratch/s48_sweep.py s2 >> $L 2>&1
echo "== A/B: base (3e536f0) against the tree's rule" >> $L
for r in checked timed timed; do
  PYTHONPATH=/tmp/pkg_base:/tmp/site timeout 90 python3 scratch/s44_time.py base $r >> $L 2>&1
  timeout 90 python3 scratch/s44_time.py rule $r >> $L 2>&1
done
timeout 150 python3 -m pytest tests/test_quantize_gpu.py tests/test_quantize.py -q -p no:cacheprovider > $OUT/pytest.log 2>&1; echo "quantize tests (tree): $(tail -1 $OUT/pytest.log)" >> $L
s=$(date +%s); timeout 120 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_quantize.py --cases 6,7,8,13 > $OUT/memcheck.txt 2>&1; echo "memcheck 6,7,8,13 ($(( $(date +%s) - s )) s): $(tail -1 $OUT/memcheck.txt)" >> $L
s=$(date +%s); timeout 120 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_quantize.py --cases 6,7,8 > $OUT/racecheck.txt 2>&1; echo "racecheck 6,7,8 ($(( $(date +%s) - s )) s): $(tail -1 $OUT/racecheck.txt)" >> $L
cat $L
