# A/B: dequant8 (bf16) shifts as IMAD / IMAD.HI by __constant__ multipliers (FMA pipe) vs HEAD (SHF on the ALU pipe).
# Working tree = variant (installed by device_build.sh); base = the tree with scratch/dequant_imad.diff reversed.
set -o pipefail
L=$OUT/log.txt
ROUNDS="${ROUNDS:-1}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee -a $L
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
if [ ! -f /tmp/pkg_base/.done ]; then
  rm -rf /tmp/base && mkdir /tmp/base && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/base/ 2>/dev/null
  (cd /tmp/base && git apply -R $OLDPWD/scratch/dequant_imad.diff && grep -c kShiftMultipliers csrc/include/nvfp4_gemm/sm90/common.cuh; \
   NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_base . > $OUT/build_base.log 2>&1 && touch /tmp/pkg_base/.done; echo "base build rc=$?" >> $L) &
fi
timeout 200 python3 -m pytest tests/test_weight_only.py tests/test_gpu.py tests/test_mx_hopper.py -q -x -p no:cacheprovider > $OUT/pytest_var.log 2>&1; tail -1 $OUT/pytest_var.log | sed 's/^/variant tests: /' >> $L
wait
for r in $(seq 1 $ROUNDS); do
  for v in base var; do
    if [ $v = base ]; then PP=/tmp/pkg_base:/tmp/site; else PP=/tmp/site; fi
    echo "== $v round $r $(date +%T)" >> $L
    PYTHONPATH=$PP timeout 280 python3 benchmarks/weight_only_bench.py --m ${MS:-1,16,64,128} --iters 50 --json $OUT/w4a16_${v}_${TAG:-a}$r.json > $OUT/bench_${v}_${TAG:-a}$r.txt 2>&1
    grep -E "decode|batch" $OUT/bench_${v}_${TAG:-a}$r.txt >> $L
  done
done
cat $L
