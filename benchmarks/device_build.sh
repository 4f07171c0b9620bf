#!/usr/bin/env bash
# Device-machine preamble (no network there): install the carried nvidia-cutlass wheel and build the
# Hopper-only extension unless this tree's build is already installed. Source it:
#   source benchmarks/device_build.sh [ARCHS]   (default 90a; logs in $OUT/build.log)
# It prints the GPU first; with NEED_GPU set (e.g. NEED_GPU=H200) it stops (status 3) on any other GPU.
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site
gpu="$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | head -1)"
echo "GPU: $gpu"
case "$gpu" in *"${NEED_GPU:-}"*) ;; *) echo "not an $NEED_GPU"; return 3 2>/dev/null || exit 3 ;; esac
[ -d /tmp/site/cutlass_library ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/*.whl
# the device copy's git metadata can be stale: the stamp hashes the sources themselves
stamp="$(find csrc python CMakeLists.txt pyproject.toml third_party -type f ! -name '*.so' | sort | xargs md5sum | md5sum | cut -c1-16)-${1:-90a}"
if [ "$(cat /tmp/nvfp4_gemm_built 2>/dev/null)" != "$stamp" ]; then
  start=$(date +%s)
  NVFP4_GEMM_CUDA_ARCHS="${1:-90a}" python3 -m pip install --no-build-isolation --no-deps . > "${OUT:-/tmp}/build.log" 2>&1 \
    || { tail -40 "${OUT:-/tmp}/build.log"; return 1 2>/dev/null || exit 1; }
  echo "$stamp" > /tmp/nvfp4_gemm_built
  echo "build (${1:-90a}): $(( $(date +%s) - start )) s on $(nproc) cores"
fi
