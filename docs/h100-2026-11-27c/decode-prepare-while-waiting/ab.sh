# A/B: base (HEAD) / v4: the one-pass kernel's sign bits and block max while warp 0 waits (warps 1.. after
# warp 0 has published, warp 0 while its first poll is in flight), the kernel held to 64 registers (its
# co-residency rule), the poll's batches the same in every lane; tests and sanitizer on v4.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $L
export PYTHONUNBUFFERED=1
[ -d /tmp/site/cutlass_library ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/*.whl
build() {
  rm -rf /tmp/src_$1 /tmp/pkg_$1 && mkdir /tmp/src_$1 && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$1/
  (cd /tmp/src_$1 && eval "$2") || exit 1
  (cd /tmp/src_$1 && NVFP4_GEMM_CUDA_ARCHS=90a PYTHONPATH=/tmp/site python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$1 . > $OUT/build_$1.log 2>&1) || { tail -30 $OUT/build_$1.log; exit 1; }
  echo "built $1" | tee -a $L
}
R=$PWD
build base "git apply -R $R/scratch/decode_v4.diff" &
build v4 "true" &
wait
bench() {
  PYTHONPATH=/tmp/pkg_$1:/tmp/site:benchmarks timeout 100 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider \
    -k "test_quantize_decode and dynamic" > $OUT/bench_$1_$2.log 2>&1
  echo "$1 r$2 $(grep -E '^quantize dynamic' $OUT/bench_$1_$2.log | sed -E 's/.*bf16 ([0-9]+)x7168.*span ([0-9.]+) us/\1:\2/' | tr '\n' ' ') $(tail -1 $OUT/bench_$1_$2.log | cut -c1-30)" | tee -a $L
}
for r in 1 2 3; do bench base $r; bench v4 $r; done
PYTHONPATH=/tmp/pkg_v4:/tmp/site timeout 120 python3 -m pytest -q -x tests/test_quantize_gpu.py tests/test_nn.py -p no:cacheprovider > $OUT/pytest_v4.log 2>&1; echo "v4 tests: $(tail -1 $OUT/pytest_v4.log)" | tee -a $L
PYTHONPATH=/tmp/pkg_v4:/tmp/site timeout 60 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_quantize.py --cases 0,1,2,4 > $OUT/racecheck.txt 2>&1; echo "racecheck: $(tail -1 $OUT/racecheck.txt)" | tee -a $L
PYTHONPATH=/tmp/pkg_v4:/tmp/site timeout 60 compute-sanitizer --tool synccheck python3 benchmarks/sanitize_quantize.py --cases 0,1,2,4 > $OUT/synccheck.txt 2>&1; echo "synccheck: $(tail -1 $OUT/synccheck.txt)" | tee -a $L
