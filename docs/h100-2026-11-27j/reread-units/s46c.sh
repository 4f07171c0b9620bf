# Where the re-reads' store cost lives: timing-only builds (scratch/q_*.cuh) against HEAD (q_head) and the tree
# (re-reads by scale tile): p1nocodes (tiles, re-reads' codes not stored), p2codesflat (tiles, re-reads' codes at
# flat addresses: a warp's 256 bytes contiguous), p3noscale (HEAD, no scale byte stored), flatrr (HEAD, re-reads'
# scale bytes one sector per warp). Two rounds of s44_time.py.
set -u
L=$OUT/log.txt
echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" | tee $L
echo "tree: $(cat scratch/head) + re-reads by scale tile (uncommitted)" >> $L
export PYTHONUNBUFFERED=1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
V="head flatrr p1nocodes p2codesflat p3noscale"
for v in $V; do
  rm -rf /tmp/src_$v /tmp/pkg_$v && mkdir /tmp/src_$v && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$v/
  cp scratch/q_$v.cuh /tmp/src_$v/csrc/include/nvfp4_gemm/quantize/quantize_common.cuh
  (cd /tmp/src_$v && PYTHONPATH=/tmp/site NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$v . > /tmp/build_$v.log 2>&1) &
done
wait
for v in $V; do [ -d /tmp/pkg_$v/nvfp4_gemm ] || { echo "build $v failed" >> $L; tail -20 /tmp/build_$v.log >> $L; }; done
for r in timed timed; do
  PYTHONPATH=/tmp/pkg_head:/tmp/site timeout 90 python3 scratch/s44_time.py base $r >> $L 2>&1
  timeout 90 python3 scratch/s44_time.py tiles $r >> $L 2>&1
  for v in flatrr p1nocodes p2codesflat p3noscale; do PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 90 python3 scratch/s44_time.py l2$v $r >> $L 2>&1; done
done
cat $L
