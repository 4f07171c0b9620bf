# The split-K reductions' loads issued together (working tree) against HEAD's one-at-a-time loop: both built,
# the W4A16 layer against cuBLAS bf16 at M = 1, 4, 16, 64, 128 in two interleaved rounds; the K sweep again.
set -u
L=$OUT/log.txt
echo "tree: $(cat scratch/head) + the reductions' loads (uncommitted)" > $L
NEED_GPU=H200 source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log; exit 1; }
( rm -rf /tmp/t_base && mkdir /tmp/t_base && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/t_base/ &&
  cp scratch/common_base.cuh /tmp/t_base/csrc/include/nvfp4_gemm/sm90/common.cuh && cd /tmp/t_base &&
  NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_base . > /tmp/build_base.log 2>&1; echo "base build rc=$?" ) >> $L 2>&1
for r in 1 2; do
  for v in base new; do
    if [ $v = new ]; then PP=/tmp/site; else PP=/tmp/pkg_$v:/tmp/site; fi
    PYTHONPATH=$PP timeout 200 python3 scratch/s49_time.py $v /tmp/${v}_$r.json 1,4,16,64,128 >> $L 2>&1
  done
done
grep geomean $L
for v in base new; do
  if [ $v = new ]; then PP=/tmp/site; else PP=/tmp/pkg_$v:/tmp/site; fi
  echo "== K sweep $v" >> $L; PYTHONPATH=$PP timeout 100 python3 scratch/s54_ksweep.py 2>&1 | grep -v Warn | grep "split\|resolver" >> $L
done
grep -A30 "== K sweep" $L | grep "split 6\|split 1 stages/CTA   1\|==" 
