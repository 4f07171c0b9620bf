# The resident kernel's re-reads by bulk copies into the kept slots, released by the last warp to read them:
# A (scratch/s45a.diff: kept steps first) and B (scratch/s45b.diff: two kept steps, then the rest spread among
# the re-reads) against HEAD (the tree): exactness first (s44_time checked round), then timings, tests, sanitizers.
set -u
L=$OUT/log.txt
echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee $L
echo "tree: $(git log -1 --format=%h 2>/dev/null || cat scratch/head) (HEAD) ; variants scratch/s45a.diff, s45b.diff" >> $L
export PYTHONUNBUFFERED=1
R=$PWD
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
for v in a b; do
  rm -rf /tmp/src_$v /tmp/pkg_$v && mkdir /tmp/src_$v && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$v/
  (cd /tmp/src_$v && git apply $R/scratch/s45$v.diff && PYTHONPATH=/tmp/site NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$v . > /tmp/build_$v.log 2>&1) &
done
wait
for v in a b; do [ -d /tmp/pkg_$v/nvfp4_gemm ] || { echo "build $v failed" >> $L; tail -20 /tmp/build_$v.log >> $L; }; done
for r in checked timed timed; do
  timeout 90 python3 scratch/s44_time.py base $r >> $L 2>&1
  for v in a b; do PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 90 python3 scratch/s44_time.py new_$v $r >> $L 2>&1; done
done
timeout 60 python3 scratch/mid2.py base >> $L 2>&1
for v in a b; do PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 60 python3 scratch/mid2.py new_$v >> $L 2>&1; done
for v in a b; do
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 100 python3 -m pytest tests/test_quantize_gpu.py tests/test_mx_quantize_gpu.py -q -p no:cacheprovider -x > $OUT/pytest_$v.log 2>&1; echo "tests $v: $(tail -1 $OUT/pytest_$v.log)" >> $L
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 70 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_quantize.py > $OUT/memcheck_$v.txt 2>&1; echo "memcheck $v: $(tail -1 $OUT/memcheck_$v.txt)" >> $L
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 50 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_quantize.py --cases 0,4,6,7,8 > $OUT/racecheck_$v.txt 2>&1; echo "racecheck $v: $(tail -1 $OUT/racecheck_$v.txt)" >> $L
done
cat $L
