# Stop 48 on a Hopper GPU (H200 asked for): (1) the resident kernel's walk order / L2 priority variants
# (scratch/s48_variants.py) against HEAD, four interleaved rounds of s44_time.py (the first checks every shape
# bit for bit); (2) host cost per eager call (benchmarks/host_overhead.py) twice; (3) NVFP4Linear at M = 16,
# eager and graphed, three rounds; (4) the quantize GPU tests on each variant.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L
# any Hopper (the tool may give an H100 for an H200 call): every number is read against the same run's base
echo "tree: $(cat scratch/head)" >> $L
export PYTHONUNBUFFERED=1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
Q=csrc/include/nvfp4_gemm/quantize/quantize_common.cuh
cp $Q /tmp/q_head.cuh
for v in kfirst elast both; do
  cp /tmp/q_head.cuh $Q && python3 scratch/s48_variants.py $v && s=$(date +%s) && \
    NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$v . > /tmp/build_$v.log 2>&1
  echo "$v build: $(( $(date +%s) - s )) s" >> $L
  [ -d /tmp/pkg_$v/nvfp4_gemm ] || { echo "$v build failed" >> $L; tail -20 /tmp/build_$v.log >> $L; }
done
cp /tmp/q_head.cuh $Q
for r in checked timed timed timed; do
  timeout 90 python3 scratch/s44_time.py base $r >> $L 2>&1
  for v in kfirst elast both; do PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 90 python3 scratch/s44_time.py $v $r >> $L 2>&1; done
  echo "round $r done $(date +%T)" >> $L
done
for r in 1 2; do
  echo "== host_overhead, run $r" >> $L
  timeout 120 python3 benchmarks/host_overhead.py --json $OUT/host_$r.json >> $L 2>&1
done
for r in 1 2 3; do
  echo "== NVFP4Linear M=16, round $r" >> $L
  timeout 120 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider -k m16 > /tmp/m16_$r.log 2>&1
  grep -E "^NVFP4Linear|passed|failed" /tmp/m16_$r.log >> $L
done
for v in kfirst elast both; do
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 120 python3 -m pytest tests/test_quantize_gpu.py -q -p no:cacheprovider -x > $OUT/pytest_$v.log 2>&1
  echo "quantize GPU tests $v: $(tail -1 $OUT/pytest_$v.log)" >> $L
done
cat $L
