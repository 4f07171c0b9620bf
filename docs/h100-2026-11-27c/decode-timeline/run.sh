set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $L
export PYTHONUNBUFFERED=1
[ -d /tmp/site/cutlass_library ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/*.whl
rm -rf /tmp/src_p /tmp/pkg_p && mkdir /tmp/src_p && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_p/
python3 scratch/timeline/patch.py /tmp/src_p || exit 1
(cd /tmp/src_p && NVFP4_GEMM_CUDA_ARCHS=90a PYTHONPATH=/tmp/site python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_p . > $OUT/build_p.log 2>&1) || { tail -30 $OUT/build_p.log; exit 1; }
PYTHONPATH=/tmp/pkg_p:/tmp/site python3 scratch/timeline/timeline.py 2>&1 | tee -a $L
