# A/B: e2m1 codes through the e4m3 conversion (working tree, v1) vs HEAD (base); tests on v1; ncu pipes of both.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $L
export PYTHONUNBUFFERED=1
[ -d /tmp/site/cutlass_library ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/*.whl
D=scratch/f2fp.diff
build() {  # $1 name, $2 reverse-diff or ""
  rm -rf /tmp/src_$1 /tmp/pkg_$1 && mkdir /tmp/src_$1 && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$1/
  [ -n "$2" ] && (cd /tmp/src_$1 && git apply -R $OLDPWD/$2)
  s=$(date +%s)
  (cd /tmp/src_$1 && NVFP4_GEMM_CUDA_ARCHS=90a PYTHONPATH=/tmp/site python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$1 . > $OUT/build_$1.log 2>&1) || { tail -30 $OUT/build_$1.log; exit 1; }
  echo "built $1 in $(( $(date +%s) - s )) s" | tee -a $L
}
build base $D &
build v1 ""
wait
echo "== tests on v1" | tee -a $L
PYTHONPATH=/tmp/pkg_v1:/tmp/site timeout 240 python3 -m pytest -q tests/test_quantize_gpu.py tests/test_mx_quantize_gpu.py tests/test_quantize.py -p no:cacheprovider > $OUT/pytest_v1.log 2>&1; tail -2 $OUT/pytest_v1.log | tee -a $L
echo "== memcheck (resident cases) and racecheck on v1" | tee -a $L
PYTHONPATH=/tmp/pkg_v1:/tmp/site timeout 200 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_quantize.py --cases 5,6,7,8 > $OUT/memcheck.txt 2>&1; tail -2 $OUT/memcheck.txt | tee -a $L
PYTHONPATH=/tmp/pkg_v1:/tmp/site timeout 200 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_quantize.py --cases 6,8 > $OUT/racecheck.txt 2>&1; tail -2 $OUT/racecheck.txt | tee -a $L
for r in 1 2 3 4; do
  for v in base v1; do
    PYTHONPATH=/tmp/pkg_$v:/tmp/site python3 scratch/mid2.py $v 2>&1 | tail -2 | tee -a $L
  done
done
cat > /tmp/q8192.py <<'PY'
import sys, torch, nvfp4_gemm
x = torch.randn(8192, 7168, device="cuda", dtype=torch.bfloat16)
gs = torch.tensor([400.0], device="cuda") if sys.argv[1] == "static" else None
for _ in range(4):
    nvfp4_gemm.quantize(x, gs)
torch.cuda.synchronize()
PY
M=gpu__time_duration.sum,sm__inst_executed.sum,sm__inst_executed_pipe_alu.sum,sm__inst_executed_pipe_fma.sum,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.sum
for v in base v1; do for mode in dynamic static; do
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 100 ncu --clock-control none --kernel-name regex:quantize_ --launch-skip 2 --launch-count 1 --metrics $M python3 /tmp/q8192.py $mode > $OUT/ncu_${v}_$mode.txt 2>&1
  echo "-- ncu $v $mode" >> $L; grep -E "quantize_|duration|inst_executed|pipe_" $OUT/ncu_${v}_$mode.txt | sed 's/^ *//' | cut -c1-120 >> $L
done; done
cat $L | tail -40
