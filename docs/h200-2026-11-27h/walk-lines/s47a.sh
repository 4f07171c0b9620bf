# H200: the walk-line probe (benchmarks/probes/walk_line_probe.cu), then HEAD's quantize numbers (mid2.py, two rounds)
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L
echo "tree: $(cat scratch/head) + the probe" >> $L
export PYTHONUNBUFFERED=1
nvcc -O3 -std=c++17 -arch=sm_90a benchmarks/probes/walk_line_probe.cu -o /tmp/wlp >> $L 2>&1
for r in 1 2; do echo "-- probe run $r" >> $L; timeout 60 /tmp/wlp >> $L 2>&1; done
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
for r in 1 2; do timeout 90 python3 scratch/mid2.py head >> $L 2>&1; done
cat $L
