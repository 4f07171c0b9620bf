# H200: the dynamic quantize (bf16 8192x7168) against pure reads and copies of its bytes, by events (L2 flushed)
# and by ncu (clean caches, DRAM bytes and throughput), the resident kernel whole and its walk alone.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L
echo "tree: $(cat scratch/head)" >> $L
export PYTHONUNBUFFERED=1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
cat > /tmp/walk_edit.py <<'EOF'
p = "csrc/include/nvfp4_gemm/quantize/quantize_common.cuh"; s = open(p).read()
a = "  // The quantize walk, back to front: one cursor over the steps on chip"
assert s.count(a) == 1
s = s.replace(a, "  if (p.rows > 0) return;  // diagnostic: the walk and the wait alone\n" + a)
open(p, "w").write(s)
EOF
rm -rf /tmp/src_walk /tmp/pkg_walk && mkdir /tmp/src_walk && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_walk/
(cd /tmp/src_walk && python3 /tmp/walk_edit.py && NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_walk . > /tmp/build_walk.log 2>&1) || { tail -20 /tmp/build_walk.log >> $L; exit 1; }
echo "== events" >> $L
python3 scratch/h200_floor.py main events >> $L 2>&1
PYTHONPATH=/tmp/pkg_walk:/tmp/site python3 scratch/h200_floor.py walk events >> $L 2>&1
python3 scratch/h200_floor.py main events >> $L 2>&1
echo "== ncu (clean caches, --clock-control none)" >> $L
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
timeout 200 ncu --clock-control none --metrics $M --csv python3 scratch/h200_floor.py main ncu > $OUT/ncu_main.csv 2> $OUT/ncu_main.err
PYTHONPATH=/tmp/pkg_walk:/tmp/site timeout 100 ncu --clock-control none --metrics $M --csv python3 scratch/h200_floor.py walk ncu > $OUT/ncu_walk.csv 2> $OUT/ncu_walk.err
python3 - "$OUT" >> $L <<'EOF'
import csv, sys, io
for f in ("ncu_main.csv", "ncu_walk.csv"):
    text = open(f"{sys.argv[1]}/{f}").read()
    rows = list(csv.reader(io.StringIO(text[text.index('"ID"'):])))
    head = rows[0]; ki, mi, vi, ii = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value"), head.index("ID")
    by = {}
    for r in rows[1:]:
        by.setdefault((r[ii], r[ki][:60]), {})[r[mi]] = r[vi]
    for (i, k), m in by.items():
        print(f, i, k, " ".join(f"{n.split('__')[1][:22]}={v}" for n, v in m.items()))
EOF
cat $L
