# Pipe utilization of the resident kernel (whole), its walk alone, and the static kernel (bf16 8192x7168).
set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L
source benchmarks/device_build.sh 90a >> $L 2>&1 || exit 1
cat > /tmp/q8192.py <<'PY'
import sys, torch, nvfp4_gemm
x = torch.randn(8192, 7168, device="cuda", dtype=torch.bfloat16)
gs = torch.tensor([400.0], device="cuda") if sys.argv[1] == "static" else None
for _ in range(4):
    nvfp4_gemm.quantize(x, gs)
torch.cuda.synchronize()
PY
if [ ! -d /tmp/pkg_walk ]; then
  rm -rf /tmp/walk && mkdir /tmp/walk && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/walk/ 2>/dev/null
  python3 - <<'PY'
p = "/tmp/walk/csrc/include/nvfp4_gemm/quantize/quantize_common.cuh"; s = open(p).read()
a = "  // The quantize walk, back to front: one cursor over the steps on chip"
assert s.count(a) == 1
s = s.replace(a, "  if (p.rows > 0) return;  // diagnostic: the walk and the wait alone\n" + a)
open(p, "w").write(s)
PY
  (cd /tmp/walk && NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_walk . > $OUT/build_walk.log 2>&1; echo "walk build rc=$?" >> $L)
fi
M=sm__inst_executed.sum,gpu__time_duration.sum
for p in alu fma fmaheavy fp16 lsu xu adu cbu uniform; do
  M="$M,sm__inst_executed_pipe_${p}.sum,sm__pipe_${p}_cycles_active.avg.pct_of_peak_sustained_active"
done
M="$M,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.sum,sm__pipe_fma_cycles_active.sum,sm__cycles_active.avg"
for v in whole walk static; do
  if [ $v = walk ]; then PP=/tmp/pkg_walk:/tmp/site; else PP=/tmp/site; fi
  mode=dynamic; [ $v = static ] && mode=static
  PYTHONPATH=$PP timeout 120 ncu --clock-control none --kernel-name regex:quantize --launch-skip 2 --launch-count 1 --metrics $M \
    python3 /tmp/q8192.py $mode > $OUT/pipes_$v.txt 2>&1
  echo "-- $v" >> $L; grep -E "^\s+(sm__|gpu__)|ERR" $OUT/pipes_$v.txt | sed 's/^ *//' >> $L
done
cat $L
