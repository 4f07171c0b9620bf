# The resident kernel re-reads by bulk copies into the kept slots (scratch/s45.diff) against HEAD e5cd2e4:
# tests, sanitizers first (correctness), then mid2 and s44_time A/B.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L
echo "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader)" >> $L
echo "tree: $(cat scratch/head) + scratch/s45.diff" >> $L
export PYTHONUNBUFFERED=1
R=$PWD
rm -rf /tmp/src_base /tmp/pkg_base && mkdir /tmp/src_base && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_base/
(cd /tmp/src_base && git apply -R $R/scratch/s45.diff && PYTHONPATH=/tmp/site NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_base . > /tmp/build_base.log 2>&1) &
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
wait
[ -d /tmp/pkg_base/nvfp4_gemm ] || { echo "base build failed" >> $L; tail -20 /tmp/build_base.log >> $L; exit 1; }
for r in 1 2; do
  PYTHONPATH=/tmp/pkg_base:/tmp/site timeout 60 python3 scratch/mid2.py base >> $L 2>&1
  timeout 60 python3 scratch/mid2.py new >> $L 2>&1
done
for r in checked timed; do
  PYTHONPATH=/tmp/pkg_base:/tmp/site timeout 90 python3 scratch/s44_time.py base $r >> $L 2>&1
  timeout 90 python3 scratch/s44_time.py new $r >> $L 2>&1
done
timeout 170 python3 -m pytest tests/test_quantize_gpu.py tests/test_mx_quantize_gpu.py tests/test_quantize.py tests/test_nn.py tests/test_mx_nn.py -q -p no:cacheprovider -x > $OUT/pytest.log 2>&1; echo "tests: $(tail -1 $OUT/pytest.log)" >> $L
timeout 110 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_quantize.py > $OUT/memcheck.txt 2>&1; echo "memcheck all: $(tail -1 $OUT/memcheck.txt)" >> $L
timeout 80 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_quantize.py --cases 0,4,6,7,8 > $OUT/racecheck.txt 2>&1; echo "racecheck 0,4,6,7,8: $(tail -1 $OUT/racecheck.txt)" >> $L
cat $L
