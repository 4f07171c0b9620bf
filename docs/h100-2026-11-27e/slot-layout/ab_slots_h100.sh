# A/B on an H100: base = HEAD less the slot layout (885d9d3 code) / v = HEAD (6fdeea2: tagged slots one line per 1 KiB).
# Builds, placement sweep (probe_slots.py), decode rows, partner spans, mid2.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $L
echo "tree: $(cat scratch/head)" >> $L
export PYTHONUNBUFFERED=1
[ -d /tmp/site/cutlass_library ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/*.whl
build() {
  rm -rf /tmp/src_$1 /tmp/pkg_$1 && mkdir /tmp/src_$1 && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$1/
  (cd /tmp/src_$1 && eval "$2") || exit 1
  (cd /tmp/src_$1 && NVFP4_GEMM_CUDA_ARCHS=90a PYTHONPATH=/tmp/site python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$1 . > /tmp/build_$1.log 2>&1) || { tail -30 /tmp/build_$1.log | tee -a $L; exit 1; }
  echo "built $1" | tee -a $L
}
R=$PWD
build base "git apply $R/scratch/slots_to_base.diff" &
build v "true" &
wait
[ -d /tmp/pkg_v/nvfp4_gemm ] && [ -d /tmp/pkg_base/nvfp4_gemm ] || { echo "build failed" | tee -a $L; exit 1; }
echo "== placement sweep" >> $L
for v in base v; do PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 100 python3 scratch/probe_slots.py "$v r1" 2>&1 | grep -v Warn >> $L; done
for v in base v; do PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 100 python3 scratch/probe_slots.py "$v r2" 2>&1 | grep -v Warn >> $L; done
echo "== decode rows (op path's own scratch)" >> $L
bench() {
  PYTHONPATH=/tmp/pkg_$1:/tmp/site:benchmarks timeout 100 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider \
    -k "test_quantize_decode and dynamic" > /tmp/bench_$1_$2.log 2>&1
  echo "$1 r$2 $(grep -E '^quantize dynamic' /tmp/bench_$1_$2.log | sed -E 's/.*bf16 ([0-9]+)x7168.*span ([0-9.]+) us/\1:\2/' | tr '\n' ' ') $(tail -1 /tmp/bench_$1_$2.log | cut -c1-30)" >> $L
  PYTHONPATH=/tmp/pkg_$1:/tmp/site timeout 60 python3 scratch/partner_span.py $1 2>&1 | tail -1 >> $L
}
for r in 1 2; do bench base $r; bench v $r; done
echo "== mid2 (events, L2 flushed, median of 200)" >> $L
for r in 1 2; do for v in base v; do PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 100 python3 scratch/mid2.py $v 2>&1 | tail -1 >> $L; done; done
cat $L
