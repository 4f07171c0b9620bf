# H200: where the resident kernel's quantize walk waits (bf16 8192x7168 dynamic): ncu stall samples, pipes and issue
# for the whole kernel and for the walk alone (scratch build returning after the exchange); the phase = difference.
# Then the quantize/nn GPU tests at HEAD.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L
echo "tree: $(cat scratch/head)" >> $L
export PYTHONUNBUFFERED=1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
rm -rf /tmp/src_walk /tmp/pkg_walk && mkdir /tmp/src_walk && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_walk/
cat > /tmp/walk_edit.py <<'EOF'
p = "csrc/include/nvfp4_gemm/quantize/quantize_common.cuh"; s = open(p).read()
a = "  // The quantize walk, back to front: one cursor over the steps on chip"
assert s.count(a) == 1
s = s.replace(a, "  if (p.rows > 0) return;  // diagnostic: the walk and the wait alone\n" + a)
open(p, "w").write(s)
EOF
(cd /tmp/src_walk && python3 /tmp/walk_edit.py && NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_walk . > /tmp/build_walk.log 2>&1) || { tail -20 /tmp/build_walk.log >> $L; exit 1; }
cat > /tmp/q8192.py <<'EOF'
import torch, nvfp4_gemm
x = torch.randn(8192, 7168, device="cuda", dtype=torch.bfloat16)
for _ in range(4):
    nvfp4_gemm.quantize(x)
torch.cuda.synchronize()
EOF
S="--section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section InstructionStats --section SpeedOfLight"
for v in whole walk; do
  P=""; [ $v = walk ] && P=/tmp/pkg_walk:/tmp/site
  timeout 150 env ${P:+PYTHONPATH=$P} ncu --clock-control none --kernel-name regex:resident --launch-skip 2 --launch-count 1 $S --page raw --csv python3 /tmp/q8192.py > $OUT/ncu_$v.csv 2> $OUT/ncu_$v.err
  echo "ncu $v rc=$?" >> $L
done
python3 - "$OUT" >> $L <<'EOF'
import csv, io, sys
vals = {}
for v in ("whole", "walk"):
    text = open(f"{sys.argv[1]}/ncu_{v}.csv").read()
    rows = list(csv.reader(io.StringIO(text[text.index('"ID"'):])))
    h = rows[0]
    vals[v] = {}
    if "Metric Name" in h:
        pairs = [(r[h.index("Metric Name")], r[h.index("Metric Value")]) for r in rows[1:]]
    else:  # --page raw: metric names across, units, then one row per kernel
        pairs = list(zip(h, rows[2]))
    for name, value in pairs:
        try:
            vals[v][name] = float(value.replace(",", ""))
        except ValueError:
            pass
keep = ("stalled", "pipe", "inst_executed", "issue_active", "warps_", "duration", "dram__bytes", "cycles_elapsed")
for k in sorted(vals["whole"]):
    if not any(t in k for t in keep):
        continue
    w, a = vals["whole"][k], vals["walk"].get(k, float("nan"))
    print(f"{k:62s} whole {w:14.2f} walk {a:14.2f} phase {w - a:14.2f}")
EOF
echo "== GPU tests" >> $L
timeout 170 python3 -m pytest tests/test_quantize_gpu.py tests/test_mx_quantize_gpu.py tests/test_quantize.py tests/test_nn.py tests/test_mx_nn.py -q -p no:cacheprovider > $OUT/pytest.log 2>&1; tail -1 $OUT/pytest.log >> $L
cat $L
