# A/B: base (2a8ca23) / v: the partner's float64 conversion pinned to the publication (one-pass kernel), the
# partner read early in the static/two-pass kernel and before the exchange in the resident kernel. Tests, memcheck on v.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $L
export PYTHONUNBUFFERED=1
[ -d /tmp/site/cutlass_library ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/*.whl
build() {
  rm -rf /tmp/src_$1 /tmp/pkg_$1 && mkdir /tmp/src_$1 && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$1/
  (cd /tmp/src_$1 && eval "$2") || exit 1
  (cd /tmp/src_$1 && NVFP4_GEMM_CUDA_ARCHS=90a PYTHONPATH=/tmp/site python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$1 . > /tmp/build_$1.log 2>&1) || { tail -30 /tmp/build_$1.log; exit 1; }
  echo "built $1" >> $L
}
R=$PWD
build base "git apply -R $R/scratch/partner_pin.diff" &
build v "true" &
wait
bench() {
  PYTHONPATH=/tmp/pkg_$1:/tmp/site:benchmarks timeout 100 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider \
    -k "test_quantize_decode and dynamic" > /tmp/bench_$1_$2.log 2>&1
  echo "$1 r$2 $(grep -E '^quantize dynamic' /tmp/bench_$1_$2.log | sed -E 's/.*bf16 ([0-9]+)x7168.*span ([0-9.]+) us/\1:\2/' | tr '\n' ' ') $(tail -1 /tmp/bench_$1_$2.log | cut -c1-30)" >> $L
  PYTHONPATH=/tmp/pkg_$1:/tmp/site timeout 90 python3 scratch/partner_span2.py $1 2>&1 | tail -1 >> $L
}
for r in 1 2 3; do bench base $r; bench v $r; done
for v in base v; do PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 100 python3 scratch/mid2.py $v 2>&1 | tail -1 >> $L; done
PYTHONPATH=/tmp/pkg_v:/tmp/site timeout 150 python3 -m pytest -q tests/test_quantize_gpu.py tests/test_mx_quantize_gpu.py tests/test_nn.py -p no:cacheprovider > /tmp/pytest_v.log 2>&1; echo "v tests: $(tail -1 /tmp/pytest_v.log)" >> $L
PYTHONPATH=/tmp/pkg_v:/tmp/site timeout 100 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_quantize.py > /tmp/memcheck.txt 2>&1; echo "memcheck all: $(tail -1 /tmp/memcheck.txt)" >> $L
PYTHONPATH=/tmp/pkg_v:/tmp/site timeout 60 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_quantize.py --cases 0,4,6,8 > /tmp/racecheck.txt 2>&1; echo "racecheck 0,4,6,8: $(tail -1 /tmp/racecheck.txt)" >> $L
cat $L
