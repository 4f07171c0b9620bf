#!/usr/bin/env bash
# One call on a GPU machine without network (the H200 lent to this project): install carried
# wheels, build, run the tests, the main job, the benchmark suite, the tuner and compute-sanitizer;
# results in $OUT (at most 8 files come back from the device tool, so they are few).
# Switches: SKIP_BLACKWELL_ONLY=1, TUNE=0, SANITIZE=0, PROFILE_SHAPE=MxNxK, PYTEST_ARGS=...
#   usage: bash benchmarks/gpu_session.sh [WHEEL_DIR]   (default .carry; holds nvidia-cutlass)
set -uo pipefail
OUT=${OUT:-/tmp/nvfp4_gemm_out}
WHEELS=${1:-.carry}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1

python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$WHEELS"/*.whl || exit 1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/env.txt"
git log -1 --format='commit %H %cd' >> "$OUT/env.txt" 2>/dev/null
rc=0

build() {  # $1: NVFP4_GEMM_CUDA_ARCHS
  local start=$(date +%s)
  if ! NVFP4_GEMM_CUDA_ARCHS="$1" python3 -m pip install --no-build-isolation --no-deps -v . > /tmp/build.log 2>&1; then
    tail -60 /tmp/build.log | tee -a "$OUT/env.txt"; return 1
  fi
  grep -E "registers|spill" /tmp/build.log | sort | uniq -c >> "$OUT/env.txt"
  echo "build $1: $(( $(date +%s) - start )) s on $(nproc) cores" | tee -a "$OUT/env.txt"
}

if [ "${SKIP_BLACKWELL_ONLY:-0}" != 1 ]; then
  # 1. a Blackwell-only wheel on this Hopper GPU: the clear error, nothing launched
  if build "100f"; then
    python3 -m pytest tests/test_gpu.py -q -rs -p no:cacheprovider -k "unsupported or mix" -s 2>&1 | tee "$OUT/pytest_unsupported.log" || rc=1
  else
    rc=1
  fi
fi

# 2. the default wheel: the whole suite, the main job, the benchmark suite, the tuner
build "100f;90a" || exit 1
python3 -m pytest tests -q -rs -p no:cacheprovider ${PYTEST_ARGS:-} 2>&1 | tee "$OUT/pytest.log" || rc=1
python3 -m nvfp4_gemm --json "$OUT/main.json" --plot "$OUT/main.png" 2>&1 | tee "$OUT/main.log" || rc=1
python3 -m pytest benchmarks -q -p no:cacheprovider --benchmark-json "$OUT/bench.json" \
  --benchmark-columns=median,iqr,rounds 2>&1 | tail -45 | tee -a "$OUT/main.log" || rc=1
if [ "${TUNE:-1}" = 1 ]; then
  python3 -m nvfp4_gemm tune --out "$OUT/tuned.json" 2>&1 | grep -v "^  \[" | tee -a "$OUT/main.log" || rc=1
  echo "--- main job again, resolver reading the tuned table" | tee -a "$OUT/main.log"
  NVFP4_GEMM_TUNED_TABLE="$OUT/tuned.json" python3 -m nvfp4_gemm 2>&1 | tee -a "$OUT/main.log" || rc=1
fi
if [ "${SANITIZE:-1}" = 1 ]; then
  {
    compute-sanitizer --tool memcheck --print-limit 20 python3 benchmarks/sanitize_cases.py || rc=1
    compute-sanitizer --tool racecheck --print-limit 20 python3 benchmarks/sanitize_cases.py --first 2 || rc=1
    compute-sanitizer --tool memcheck --print-limit 20 python3 benchmarks/sanitize_quantize.py || rc=1
    compute-sanitizer --tool racecheck --print-limit 20 python3 benchmarks/sanitize_quantize.py --first 2 || rc=1
  } > "$OUT/sanitizer.log" 2>&1
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|split_k|^quantize" "$OUT/sanitizer.log"
fi
if [ -n "${PROFILE_SHAPE:-}" ]; then  # where the time goes, from the hardware counters
  ncu --clock-control none --kernel-name regex:"wgmma_gemm|direct_decode" --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy \
    python3 benchmarks/profile_one.py "$PROFILE_SHAPE" > "$OUT/ncu.txt" 2>&1 || rc=1
  grep -E "Duration|Throughput|Issued Ipc|No Eligible|Registers|Achieved Occupancy" "$OUT/ncu.txt" | head -30
fi
exit $rc
