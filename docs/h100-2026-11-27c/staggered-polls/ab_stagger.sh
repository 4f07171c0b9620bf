# A/B/C: base (HEAD) / s2 (the one-pass kernel's poll: two staggered polls in flight) / s3 (three).
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $L
export PYTHONUNBUFFERED=1
[ -d /tmp/site/cutlass_library ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/*.whl
build() {  # $1 name, $2 command run in the source copy
  rm -rf /tmp/src_$1 /tmp/pkg_$1 && mkdir /tmp/src_$1 && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$1/
  (cd /tmp/src_$1 && eval "$2") || exit 1
  (cd /tmp/src_$1 && NVFP4_GEMM_CUDA_ARCHS=90a PYTHONPATH=/tmp/site python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$1 . > $OUT/build_$1.log 2>&1) || { tail -30 $OUT/build_$1.log; exit 1; }
  echo "built $1" | tee -a $L
}
R=$PWD
build base "git apply -R $R/scratch/stagger.diff" &
build s2 "true" &
build s3 "sed -i 's/constexpr int kOnePassStaggeredPolls = 2;/constexpr int kOnePassStaggeredPolls = 3;/' csrc/include/nvfp4_gemm/quantize/quantize_common.cuh && grep -q 'StaggeredPolls = 3' csrc/include/nvfp4_gemm/quantize/quantize_common.cuh" &
wait
bench() {
  PYTHONPATH=/tmp/pkg_$1:/tmp/site:benchmarks timeout 100 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider \
    -k "test_quantize_decode and dynamic" > $OUT/bench_$1_$2.log 2>&1
  echo "$1 r$2 $(grep -E '^quantize dynamic' $OUT/bench_$1_$2.log | sed -E 's/.*bf16 ([0-9]+)x7168.*span ([0-9.]+) us/\1:\2/' | tr '\n' ' ') $(tail -1 $OUT/bench_$1_$2.log | cut -c1-40)" | tee -a $L
}
for r in 1 2 3 4; do bench base $r; bench s2 $r; bench s3 $r; done
PYTHONPATH=/tmp/pkg_s2:/tmp/site timeout 150 python3 -m pytest -q -x tests/test_quantize_gpu.py -p no:cacheprovider > $OUT/pytest_s2.log 2>&1; echo "s2 tests: $(tail -1 $OUT/pytest_s2.log)" | tee -a $L
