#!/usr/bin/env bash
# The one binary built against CI's torch, loaded and run under the oldest and the newest torch the
# wheel claims (TORCH_TARGET_VERSION 2.10, the stable ABI) that PyPI has: each in a venv of its own,
# the wheel installed without rebuilding, and the tests of the op's registration and CPU path run
# there. PyPI's x86_64 builds of these versions are CUDA builds; on a GPU-less box they load and run
# their CPU path like a CPU build.
#   usage: bash .ci/torch_range.sh WHEEL VERSION...
set -euo pipefail
wheel=$1; shift
for version in "$@"; do
  venv=$(mktemp -d)/venv
  python3 -m venv "$venv"
  # PIP_CONFIG_FILE=/dev/null: no machine-wide pip configuration (some CI images cap torch at the releases
  # they keep on disk, below the newest this range names)
  PIP_CONFIG_FILE=/dev/null "$venv/bin/python" -m pip install -q --disable-pip-version-check "torch==$version" \
    numpy pytest safetensors
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps "$wheel"
  echo "--- torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)') with the wheel built against $(python3 -c 'import torch; print(torch.__version__)')"
  # the op's C++ kernels must be registered (HAS_TORCH_OP) under this torch too, not only load
  "$venv/bin/python" -c 'from nvfp4_gemm import _C; import sys; sys.exit(0 if _C.HAS_TORCH_OP else "the C++ op is not registered")'
  # from outside the checkout, so that the installed package is the one imported
  (cd "$(dirname "$venv")" && "$venv/bin/python" -m pytest -q -p no:cacheprovider \
     "$OLDPWD/tests/test_ops.py" "$OLDPWD/tests/test_checks.py" "$OLDPWD/tests/test_quantize.py" \
     "$OLDPWD/tests/test_weight_only.py" "$OLDPWD/tests/test_mx_formats.py" | tail -n 3)
  rm -rf "$(dirname "$venv")"
done
