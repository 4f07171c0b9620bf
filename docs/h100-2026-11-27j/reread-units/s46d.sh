# The resident kernel's re-reads by strip (a warp per 8 rows x 32 columns over 8 re-reads, the scale bytes
# staged per warp and stored as 8 whole sectors; the tree) against HEAD's kernel (scratch/q_head.cuh):
# exactness first (s44_time checked round), timings, mid2, quantize GPU tests, sanitizers.
set -u
L=$OUT/log.txt
echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee $L
echo "tree: $(cat scratch/head) + re-reads by strip, pairs of rounds in turn, fp32 as before (uncommitted)" >> $L
export PYTHONUNBUFFERED=1
source benchmarks/device_build.sh 90a >> $L 2>&1 &
rm -rf /tmp/src_head /tmp/pkg_head && mkdir /tmp/src_head && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_head/
cp scratch/q_head.cuh /tmp/src_head/csrc/include/nvfp4_gemm/quantize/quantize_common.cuh
(cd /tmp/src_head && PYTHONPATH=/tmp/site NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_head . > /tmp/build_head.log 2>&1) &
wait
export PYTHONPATH=/tmp/site
[ -f /tmp/nvfp4_gemm_built ] || { echo "tree build failed" >> $L; tail -30 $OUT/build.log >> $L; cat $L; exit 1; }
[ -d /tmp/pkg_head/nvfp4_gemm ] || { echo "head build failed" >> $L; tail -20 /tmp/build_head.log >> $L; }
for r in checked timed timed; do
  PYTHONPATH=/tmp/pkg_head:/tmp/site timeout 90 python3 scratch/s44_time.py base $r >> $L 2>&1
  timeout 90 python3 scratch/s44_time.py strips $r >> $L 2>&1
done
PYTHONPATH=/tmp/pkg_head:/tmp/site timeout 60 python3 scratch/mid2.py base >> $L 2>&1
timeout 60 python3 scratch/mid2.py strips >> $L 2>&1
timeout 100 python3 -m pytest tests/test_quantize_gpu.py -q -p no:cacheprovider -x > $OUT/pytest.log 2>&1; echo "tests: $(tail -1 $OUT/pytest.log)" >> $L
timeout 90 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_quantize.py > $OUT/memcheck.txt 2>&1; echo "memcheck: $(tail -1 $OUT/memcheck.txt)" >> $L
timeout 100 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_quantize.py --cases 8,13 > $OUT/racecheck.txt 2>&1; echo "racecheck: $(tail -1 $OUT/racecheck.txt)" >> $L
cat $L
