# Is the quantize math issue-bound? ncu instruction counts and issue activity of the static, resident and
# walk-only kernels at bf16 8192x7168.
set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
rm -rf /tmp/walk && mkdir /tmp/walk && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/walk/ 2>/dev/null
python3 - <<'PY'
p = "/tmp/walk/csrc/include/nvfp4_gemm/quantize/quantize_common.cuh"; s = open(p).read()
a = "  // The quantize walk, back to front: one cursor over the steps on chip"
assert s.count(a) == 1
s = s.replace(a, "  if (p.rows > 0) return;  // diagnostic: the walk and the wait alone\n" + a)
open(p, "w").write(s)
PY
(cd /tmp/walk && NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_walk . > $OUT/build_walk.log 2>&1; echo "walk build rc=$?" >> $L)
cat > /tmp/q8192.py <<'PY'
import sys, torch, nvfp4_gemm
m = int(sys.argv[2]) if len(sys.argv) > 2 else 8192
x = torch.randn(m, 7168, device="cuda", dtype=torch.bfloat16)
gs = torch.tensor([400.0], device="cuda") if sys.argv[1] == "static" else None
for _ in range(4):
    nvfp4_gemm.quantize(x, gs)
torch.cuda.synchronize()
PY
M=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warp_latency_issue_stalled_long_scoreboard,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_lsu.sum
run() {  # label, pythonpath, args
  timeout 120 env PYTHONPATH=$2 ncu --clock-control none --kernel-name regex:quantize --launch-skip 2 --launch-count 1 --metrics $M \
    python3 /tmp/q8192.py $3 $4 > $OUT/ncu_$1.txt 2>&1
  echo "-- $1" >> $L; grep -E "^ *(gpu__|smsp__|sm__|dram__)" $OUT/ncu_$1.txt | sed 's/^ *//' | cut -c1-150 >> $L
}
run static /tmp/site static 8192
run resident /tmp/site dynamic 8192
run walk /tmp/pkg_walk:/tmp/site dynamic 8192
cat $L
