# Call 2 of the slot-layout A/B: GPU tests and compute-sanitizer on v (rebuilt if this machine lacks it).
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $L
export PYTHONUNBUFFERED=1
R=$PWD
[ -d /tmp/site/cutlass_library ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/*.whl
if [ ! -d /tmp/pkg_v/nvfp4_gemm ]; then
  rm -rf /tmp/src_v && mkdir /tmp/src_v && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_v/
  (cd /tmp/src_v && git apply --exclude=tests/* $R/docs/h200-2026-11-27c/scratch-placement/slot_line_per_kib_unmeasured.diff) || exit 1
  (cd /tmp/src_v && NVFP4_GEMM_CUDA_ARCHS=90a PYTHONPATH=/tmp/site python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_v . > /tmp/build_v.log 2>&1) || { tail -30 /tmp/build_v.log | tee -a $L; exit 1; }
  echo "rebuilt v" >> $L
fi
cp tests/test_quantize_gpu.py /tmp/tq.py
git apply --include='tests/*' docs/h200-2026-11-27c/scratch-placement/slot_line_per_kib_unmeasured.diff || exit 1
export PYTHONPATH=/tmp/pkg_v:/tmp/site
timeout 200 python3 -m pytest -q tests/test_quantize_gpu.py tests/test_mx_quantize_gpu.py tests/test_quantize.py tests/test_nn.py tests/test_mx_nn.py -p no:cacheprovider > $OUT/pytest.log 2>&1; echo "v tests: $(tail -1 $OUT/pytest.log)" >> $L
timeout 110 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_quantize.py > /tmp/memcheck.txt 2>&1; echo "memcheck all: $(tail -1 /tmp/memcheck.txt)" >> $L
timeout 80 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_quantize.py --cases 0,4,6,7,8 > /tmp/racecheck.txt 2>&1; echo "racecheck 0,4,6,7,8: $(tail -1 /tmp/racecheck.txt)" >> $L
timeout 60 compute-sanitizer --tool synccheck python3 benchmarks/sanitize_quantize.py --cases 0,4,6,8 > /tmp/synccheck.txt 2>&1; echo "synccheck 0,4,6,8: $(tail -1 /tmp/synccheck.txt)" >> $L
cat $L
