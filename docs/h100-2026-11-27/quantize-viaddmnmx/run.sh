#!/usr/bin/env bash
# A/B of the resident quantize kernel's variants: build each into /tmp/pkg_<v>, test the new ones, time all interleaved.
set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/log.txt
case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H200*) ;; *) [ "${ALLOW_H100:-0}" = 1 ] || { echo "not an H200"; exit 3; } ;; esac
export PYTHONUNBUFFERED=1
[ -d /tmp/site/cutlass_library ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/*.whl
H=csrc/include/nvfp4_gemm/quantize
VARIANTS="${VARIANTS:-base new coop relax plain}"
for v in $VARIANTS; do
  [ -f /tmp/pkg_$v/nvfp4_gemm/__init__.py ] && continue
  cp scratch/ab/$v/* $H/
  s=$(date +%s)
  NVFP4_GEMM_CUDA_ARCHS=90a PYTHONPATH=/tmp/site python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$v . > $OUT/build_$v.log 2>&1 || { tail -30 $OUT/build_$v.log; exit 1; }
  echo "built $v in $(( $(date +%s) - s )) s" | tee -a $OUT/log.txt
done
cp scratch/ab/mm/* $H/
for v in ${TESTS:-}; do
  echo "== tests on $v" | tee -a $OUT/log.txt
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 300 python3 -m pytest -q -x tests/test_quantize_gpu.py tests/test_mx_quantize_gpu.py tests/test_quantize.py -p no:cacheprovider 2>&1 | tail -5 | tee -a $OUT/log.txt
done
for r in 1 2 3; do
  for v in $VARIANTS; do
    PYTHONPATH=/tmp/pkg_$v:/tmp/site python3 scratch/ab/mid.py $v 2>&1 | tail -3 | tee -a $OUT/log.txt
  done
done
