# Stop 37, first call: on any GPU the quantize GPU tests and compute-sanitizer at HEAD (c66c649's kernel);
# on an H200 also the benchmark suite, the walk alone, and ncu (with issue and stall sections) of the
# resident kernel, its walk alone, and the static kernel at bf16 8192x7168.
set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L
GPU="$(nvidia-smi --query-gpu=name --format=csv,noheader)"
case "$GPU" in *H200*) ;; *) [ "${ALLOW_H100:-0}" = 1 ] || { echo "not an H200"; exit 3; } ;; esac
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
case "$GPU" in *H200*) H200=1 ;; *) H200=${PERF:-0} ;; esac
if [ $H200 = 1 ]; then
  rm -rf /tmp/walk && mkdir /tmp/walk && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/walk/ 2>/dev/null
  python3 - <<'PY'
p = "/tmp/walk/csrc/include/nvfp4_gemm/quantize/quantize_common.cuh"; s = open(p).read()
a = "  // The quantize walk, back to front: one cursor over the steps on chip"
assert s.count(a) == 1
s = s.replace(a, "  if (p.rows > 0) return;  // diagnostic: the walk and the wait alone\n" + a)
open(p, "w").write(s)
PY
  (cd /tmp/walk && NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_walk . > $OUT/build_walk.log 2>&1; echo "walk build rc=$?" >> $L) &
fi
echo "== GPU tests" >> $L
timeout 150 python3 -m pytest tests/test_quantize_gpu.py -q -p no:cacheprovider > $OUT/pytest.log 2>&1; tail -2 $OUT/pytest.log >> $L
[ $H200 = 1 ] || { cat $L; exit 0; }
wait
case "$GPU" in *H200*) ;; *) SKIPB=1 ;; esac
if [ -z "$SKIPB" ]; then
echo "== quantize benchmarks" >> $L
timeout 200 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider --benchmark-json=$OUT/bench_quantize.json \
  -k "test_quantize_large or test_event_timing_floor" > $OUT/bench.log 2>&1
grep -E "^quantize|passed|failed" $OUT/bench.log >> $L
fi
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
gs = torch.tensor([400.0], device="cuda") if sys.argv[1] == "static" else None
for _ in range(4):
    nvfp4_gemm.quantize(x, gs)
torch.cuda.synchronize()
PY
S="--section SourceCounters --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy"
M=--metrics=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second
echo "== ncu (8192x7168 bf16)" >> $L
for mode in dynamic static; do
  timeout 90 ncu --clock-control none --kernel-name regex:quantize --launch-skip 2 --launch-count 1 $S $M \
    python3 /tmp/q8192.py $mode > $OUT/ncu_$mode.txt 2>&1
done
timeout 90 env PYTHONPATH=/tmp/pkg_walk:/tmp/site ncu --clock-control none --kernel-name regex:quantize --launch-skip 2 --launch-count 1 $S $M \
  python3 /tmp/q8192.py dynamic > $OUT/ncu_walk.txt 2>&1
for f in dynamic static walk; do
  echo "-- $f" >> $L
  grep -E "Duration|dram__bytes|hit_rate|inst_executed.sum|issue_active|per_second|Issue Slots Busy|Eligible Warps|Active Warps Per|No Eligible|Registers Per|Achieved Occ|Memory Throughput|DRAM Throughput" $OUT/ncu_$f.txt | sed 's/^ *//' | cut -c1-150 >> $L
done
cat $L
