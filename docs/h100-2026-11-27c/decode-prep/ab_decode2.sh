# A/B/C: base (HEAD) / v2 (the one-pass kernel's gs-free block work while warp 0 waits: other warps after
# warp 0 publishes, warp 0 during its first poll) / v3 (v2 + the packed 16-bit key before the publication).
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
build base "git apply -R $R/scratch/decode_v2.diff" &
build v2 "true" &
build v3 "python3 $R/scratch/v3_patch.py ." &
wait
bench() {
  PYTHONPATH=/tmp/pkg_$1:/tmp/site:benchmarks timeout 200 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider \
    -k "test_quantize_decode and dynamic" > $OUT/bench_$1_$2.log 2>&1
  echo "$1 r$2 $(grep -E '^quantize dynamic' $OUT/bench_$1_$2.log | sed -E 's/.*bf16 ([0-9]+)x7168.*span ([0-9.]+) us/\1:\2/' | tr '\n' ' ')" | tee -a $L
}
for r in 1 2 3 4; do bench base $r; bench v2 $r; bench v3 $r; done
for v in v2 v3; do
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 150 python3 -m pytest -q tests/test_quantize_gpu.py -p no:cacheprovider > $OUT/pytest_$v.log 2>&1; echo "$v tests: $(tail -1 $OUT/pytest_$v.log)" | tee -a $L
done
