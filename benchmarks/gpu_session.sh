#!/usr/bin/env bash
# One call on a GPU machine without network (the H200 lent to this project): install carried
# wheels, build, run the tests, the baselines comparison and compute-sanitizer; logs in $OUT.
#   usage: bash benchmarks/gpu_session.sh [WHEEL_DIR]   (default .carry; holds nvidia-cutlass)
set -uo pipefail
OUT=${OUT:-/tmp/nvfp4_gemm_out}
WHEELS=${1:-.carry}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1

python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$WHEELS"/*.whl || exit 1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
rc=0

build() {  # $1: NVFP4_GEMM_CUDA_ARCHS, $2: log name
  local start=$(date +%s)
  if ! NVFP4_GEMM_CUDA_ARCHS="$1" python3 -m pip install --no-build-isolation --no-deps -v . > "$OUT/$2.log" 2>&1; then
    tail -60 "$OUT/$2.log"; return 1
  fi
  echo "build $1: $(( $(date +%s) - start )) s on $(nproc) cores" | tee -a "$OUT/build_time.txt"
}

# 1. a Blackwell-only wheel on this Hopper GPU: the clear error, nothing launched
if build "100f" build_blackwell_only; then
  python3 -m pytest tests/test_gpu.py -q -rs -p no:cacheprovider -k "unsupported or mix" -s 2>&1 | tee "$OUT/pytest_unsupported.log" || rc=1
else
  rc=1
fi

# 2. the default wheel: the whole suite, then baselines and sanitizers
build "100f;90a" build_default || exit 1
python3 -m pytest tests -q -rs -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log" || rc=1
python3 benchmarks/compare_baselines.py --json "$OUT/baselines.json" 2>&1 | tee "$OUT/baselines.log" || rc=1
compute-sanitizer --tool memcheck --print-limit 20 python3 benchmarks/sanitize_cases.py > "$OUT/memcheck.log" 2>&1 || rc=1
tail -4 "$OUT/memcheck.log"
exit $rc
