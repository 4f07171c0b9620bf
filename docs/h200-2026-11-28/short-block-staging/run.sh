# The direct kernel staging only its own chunks of a short block (working tree) vs HEAD's (scratch/direct_gemm_base.cuh):
# GPU tests of the new kernel, its sanitizers, then W4A16 layer and NVFP4 gemm at M = 1, 4, 16, interleaved rounds.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L
case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H200*) ;; *) echo "not an H200"; exit 3 ;; esac
export PYTHONUNBUFFERED=1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
( rm -rf /tmp/t_base && mkdir /tmp/t_base && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/t_base/ &&
  cp scratch/direct_gemm_base.cuh /tmp/t_base/csrc/include/nvfp4_gemm/sm90/direct_gemm.cuh && cd /tmp/t_base &&
  NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_base . > /tmp/build_base.log 2>&1; echo "base build rc=$?" ) >> $L 2>&1 &
timeout 240 python3 -m pytest tests/test_weight_only.py tests/test_gpu.py tests/test_mx_hopper.py tests/test_nn.py -q -p no:cacheprovider > $OUT/pytest.log 2>&1
echo "tests (new): $(tail -1 $OUT/pytest.log)" >> $L
wait
for cfg in sm90_direct_16x128x128_splitk_bf16xnvfp4 sm90_direct_16x128x128_splitk; do
  timeout 60 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_cases.py --config $cfg > /tmp/m.log 2>&1; echo "memcheck $cfg: $(tail -1 /tmp/m.log)" >> $L
  timeout 90 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_cases.py --config $cfg > /tmp/r.log 2>&1; echo "racecheck $cfg: $(tail -1 /tmp/r.log)" >> $L
done
timeout 60 compute-sanitizer --tool synccheck python3 benchmarks/sanitize_cases.py --config sm90_direct_16x128x128_splitk_bf16xnvfp4 > /tmp/s.log 2>&1; echo "synccheck: $(tail -1 /tmp/s.log)" >> $L
for r in 1 2; do
  for v in base new; do
    if [ $v = base ]; then PP=/tmp/pkg_base:/tmp/site; else PP=/tmp/site; fi
    NVFP4=1 PYTHONPATH=$PP timeout 150 python3 scratch/s49_time.py $v /tmp/${v}_$r.json 1,4,16 >> $OUT/time.log 2>&1
    grep "^$v geomean" $OUT/time.log | tail -1 >> $L
  done
done
cat $L
