# A/B: the one-pass (decode) kernel's block preparation while warp 0 waits, the packed key, the partner's
# global scale read before the wait (working tree, v) against HEAD (base); tests and sanitizer on v.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $L
export PYTHONUNBUFFERED=1
[ -d /tmp/site/cutlass_library ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/*.whl
build() {  # $1 name, $2 reverse-diff or ""
  rm -rf /tmp/src_$1 /tmp/pkg_$1 && mkdir /tmp/src_$1 && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$1/
  [ -n "$2" ] && (cd /tmp/src_$1 && git apply -R $OLDPWD/$2)
  s=$(date +%s)
  (cd /tmp/src_$1 && NVFP4_GEMM_CUDA_ARCHS=90a PYTHONPATH=/tmp/site python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$1 . > $OUT/build_$1.log 2>&1) || { tail -30 $OUT/build_$1.log; exit 1; }
  echo "built $1 in $(( $(date +%s) - s )) s" | tee -a $L
}
build base scratch/decode_prep.diff &
build v ""
wait
bench() {  # $1 build, $2 round
  PYTHONPATH=/tmp/pkg_$1:/tmp/site:benchmarks timeout 200 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider \
    -k "test_quantize_decode or test_event_timing_floor or m16" > $OUT/bench_$1_$2.log 2>&1
  echo "-- $1 round $2" >> $L
  grep -E "^quantize (dynamic|floor)|^NVFP4Linear|passed|failed" $OUT/bench_$1_$2.log >> $L
}
for r in 1 2 3; do bench base $r; bench v $r; done
echo "== tests on v" | tee -a $L
PYTHONPATH=/tmp/pkg_v:/tmp/site timeout 300 python3 -m pytest -q tests/test_quantize_gpu.py tests/test_mx_quantize_gpu.py tests/test_quantize.py tests/test_nn.py -p no:cacheprovider > $OUT/pytest_v.log 2>&1; tail -2 $OUT/pytest_v.log | tee -a $L
echo "== sanitizer on v" | tee -a $L
PYTHONPATH=/tmp/pkg_v:/tmp/site timeout 200 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_quantize.py > $OUT/memcheck.txt 2>&1; tail -2 $OUT/memcheck.txt | tee -a $L
PYTHONPATH=/tmp/pkg_v:/tmp/site timeout 120 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_quantize.py --cases 0,2,4,5 > $OUT/racecheck.txt 2>&1; tail -2 $OUT/racecheck.txt | tee -a $L
PYTHONPATH=/tmp/pkg_v:/tmp/site timeout 120 compute-sanitizer --tool synccheck python3 benchmarks/sanitize_quantize.py --cases 0,2,4,5 > $OUT/synccheck.txt 2>&1; tail -2 $OUT/synccheck.txt | tee -a $L
echo "== large, v then base" | tee -a $L
for b in v base; do
  PYTHONPATH=/tmp/pkg_$b:/tmp/site:benchmarks timeout 120 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider -k "test_quantize_large" > $OUT/large_$b.log 2>&1
  echo "-- $b" >> $L; grep -E "^quantize" $OUT/large_$b.log >> $L
done
cat $L | tail -70
