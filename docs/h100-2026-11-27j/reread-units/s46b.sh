# The resident kernel's re-reads by scale tile (the tree) against HEAD's kernel (scratch/q_head.cuh) and the
# timing-only probe flatrr (scratch/q_flatrr.cuh: HEAD with the re-reads' scale bytes one sector per warp):
# exactness first (s44_time checked round), timings, mid2, GPU tests, sanitizers.
set -u
L=$OUT/log.txt
echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee $L
echo "tree: $(cat scratch/head) + re-reads by 8x64 unit, scales staged (uncommitted)" >> $L
export PYTHONUNBUFFERED=1
R=$PWD
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
for v in head flatrr; do
  rm -rf /tmp/src_$v /tmp/pkg_$v && mkdir /tmp/src_$v && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$v/
  cp scratch/q_$v.cuh /tmp/src_$v/csrc/include/nvfp4_gemm/quantize/quantize_common.cuh
  (cd /tmp/src_$v && PYTHONPATH=/tmp/site NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$v . > /tmp/build_$v.log 2>&1) &
done
wait
for v in head flatrr; do [ -d /tmp/pkg_$v/nvfp4_gemm ] || { echo "build $v failed" >> $L; tail -20 /tmp/build_$v.log >> $L; }; done
for r in checked timed timed; do
  PYTHONPATH=/tmp/pkg_head:/tmp/site timeout 90 python3 scratch/s44_time.py base $r >> $L 2>&1
  timeout 90 python3 scratch/s44_time.py units $r >> $L 2>&1
  PYTHONPATH=/tmp/pkg_flatrr:/tmp/site timeout 90 python3 scratch/s44_time.py l2flatrr $r >> $L 2>&1
done
PYTHONPATH=/tmp/pkg_head:/tmp/site timeout 60 python3 scratch/mid2.py base >> $L 2>&1
timeout 60 python3 scratch/mid2.py units >> $L 2>&1
timeout 150 python3 -m pytest tests/test_quantize_gpu.py tests/test_mx_quantize_gpu.py tests/test_nn.py -q -p no:cacheprovider -x > $OUT/pytest.log 2>&1; echo "tests: $(tail -1 $OUT/pytest.log)" >> $L
timeout 70 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_quantize.py > $OUT/memcheck.txt 2>&1; echo "memcheck: $(tail -1 $OUT/memcheck.txt)" >> $L
timeout 50 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_quantize.py --cases 0,4,6,7,8 > $OUT/racecheck.txt 2>&1; echo "racecheck: $(tail -1 $OUT/racecheck.txt)" >> $L
cat $L
