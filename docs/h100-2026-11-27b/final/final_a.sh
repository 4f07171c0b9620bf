# Final tree on the device: the quantize benchmark suite (bar numbers), then the resident kernel's walk alone vs
# whole (a scratch build that returns after the exchange), then ncu pipes of the resident kernel.
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
(cd /tmp/walk && NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_walk . > $OUT/build_walk.log 2>&1; echo "walk build rc=$?" >> $L) &
echo "== quantize benchmarks" >> $L
timeout 330 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider --benchmark-json=$OUT/bench_quantize.json \
  -k "test_quantize_large or test_quantize_decode or test_event_timing_floor or m16" > $OUT/bench.log 2>&1
grep -E "^quantize|^NVFP4Linear|passed|failed" $OUT/bench.log >> $L
wait
cat > /tmp/walk.py <<'PY'
import sys, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_cuda
x = torch.randn(8192, 7168, device="cuda", dtype=torch.bfloat16)
out = nvfp4_gemm.quantize(x)
print(sys.argv[1], f"{time_cuda(lambda: nvfp4_gemm.quantize(x, out=out), iters=200).median_us:.2f} us", flush=True)
PY
echo "== walk alone vs whole (8192x7168 bf16 dynamic, events, L2 flushed)" >> $L
for r in 1 2; do
  python3 /tmp/walk.py whole >> $L 2>&1
  PYTHONPATH=/tmp/pkg_walk:/tmp/site python3 /tmp/walk.py walk-and-wait-only >> $L 2>&1
done
cat > /tmp/q8192.py <<'PY'
import sys, torch, nvfp4_gemm
x = torch.randn(8192, 7168, device="cuda", dtype=torch.bfloat16)
for _ in range(4):
    nvfp4_gemm.quantize(x)
torch.cuda.synchronize()
PY
M=gpu__time_duration.sum,sm__cycles_active.avg,sm__inst_executed.sum,sm__inst_executed_pipe_alu.sum,sm__inst_executed_pipe_fma.sum,sm__inst_executed_pipe_fmaheavy.sum,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_fmaheavy_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_issued.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum
for v in whole walk; do
  if [ $v = walk ]; then PP=/tmp/pkg_walk:/tmp/site; else PP=/tmp/site; fi
  PYTHONPATH=$PP timeout 100 ncu --clock-control none --kernel-name regex:quantize_ --launch-skip 2 --launch-count 1 --metrics $M python3 /tmp/q8192.py > $OUT/ncu_$v.txt 2>&1
  echo "-- ncu $v" >> $L; grep -E "duration|cycles_active.avg |inst_|pipe_|throughput|bytes" $OUT/ncu_$v.txt | sed 's/^ *//' | cut -c1-120 >> $L
done
cat $L
