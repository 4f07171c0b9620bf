# A/B: quantize code arithmetic with the subtraction on the FMA pipe (working tree, v1) vs HEAD (base).
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $L
export PYTHONUNBUFFERED=1
[ -d /tmp/site/cutlass_library ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/*.whl
build() {  # $1 name, $2 reverse-diff or ""
  [ -f /tmp/pkg_$1/nvfp4_gemm/__init__.py ] && [ "$(cat /tmp/pkg_$1/.stamp 2>/dev/null)" = "$(md5sum scratch/quant_v1.diff | cut -c1-8)" ] && return
  rm -rf /tmp/src_$1 /tmp/pkg_$1 && mkdir /tmp/src_$1 && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$1/
  [ -n "$2" ] && (cd /tmp/src_$1 && git apply -R $OLDPWD/$2)
  s=$(date +%s)
  (cd /tmp/src_$1 && NVFP4_GEMM_CUDA_ARCHS=90a PYTHONPATH=/tmp/site python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$1 . > $OUT/build_$1.log 2>&1) || { tail -30 $OUT/build_$1.log; exit 1; }
  md5sum scratch/quant_v1.diff | cut -c1-8 > /tmp/pkg_$1/.stamp
  echo "built $1 in $(( $(date +%s) - s )) s" | tee -a $L
}
build base scratch/quant_v1.diff &
build v1 ""
wait
if [ "${TESTS:-1}" = 1 ]; then
  echo "== tests on v1" | tee -a $L
  PYTHONPATH=/tmp/pkg_v1:/tmp/site timeout 150 python3 -m pytest -q tests/test_quantize_gpu.py -p no:cacheprovider 2>&1 | tail -2 | tee -a $L
fi
for r in $(seq 1 ${ROUNDS:-3}); do
  for v in base v1; do
    PYTHONPATH=/tmp/pkg_$v:/tmp/site python3 scratch/mid.py $v 2>&1 | tail -2 | tee -a $L
  done
done
