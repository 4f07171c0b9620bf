# The timeline probe on the base and on the three-poll variant (80 registers): which phase the variant's
# +0.75 us lands in.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $L
export PYTHONUNBUFFERED=1
[ -d /tmp/site/cutlass_library ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/*.whl
R=$PWD
build() {
  rm -rf /tmp/src_$1 /tmp/pkg_$1 && mkdir /tmp/src_$1 && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$1/
  (cd /tmp/src_$1 && eval "$2" && python3 $R/scratch/timeline/patch.py .) || exit 1
  (cd /tmp/src_$1 && NVFP4_GEMM_CUDA_ARCHS=90a PYTHONPATH=/tmp/site python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$1 . > $OUT/build_$1.log 2>&1) || { tail -30 $OUT/build_$1.log; exit 1; }
}
build pbase "true" &
build ps3 "git apply $R/scratch/stagger.diff && sed -i 's/kOnePassStaggeredPolls = 2;/kOnePassStaggeredPolls = 3;/' csrc/include/nvfp4_gemm/quantize/quantize_common.cuh" &
wait
for v in pbase ps3; do echo "== $v" | tee -a $L; PYTHONPATH=/tmp/pkg_$v:/tmp/site python3 scratch/timeline/timeline.py 2>&1 | grep "^M=" | tee -a $L; done
