#!/usr/bin/env bash
# One call on a GPU machine without network (the H200 lent to this project): install carried
# wheels, build the extension, run the whole test suite and the demo, leave logs in $OUT.
#   usage: bash benchmarks/gpu_session.sh [WHEEL_DIR]   (default .carry; holds nvidia-cutlass)
set -uo pipefail
OUT=${OUT:-/tmp/nvfp4_gemm_out}
WHEELS=${1:-.carry}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1

python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$WHEELS"/*.whl || exit 1
export PYTHONPATH=/tmp/site
nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"

start=$(date +%s)
if ! python3 -m pip install --no-build-isolation --no-deps -v . > "$OUT/build.log" 2>&1; then
  tail -60 "$OUT/build.log"; exit 1
fi
echo "build: $(( $(date +%s) - start )) s on $(nproc) cores" | tee "$OUT/build_time.txt"

rc=0
python3 -m pytest tests -q -rs -p no:cacheprovider 2>&1 | tee "$OUT/pytest.log" || rc=1
python3 -m nvfp4_gemm 2>&1 | tee "$OUT/demo.log" || rc=1
exit $rc
