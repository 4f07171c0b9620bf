set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
nvcc -O3 -arch=sm_90a -o /tmp/cluster_occupancy benchmarks/probes/cluster_occupancy.cu && /tmp/cluster_occupancy >> $L 2>&1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
echo "== split-route and weight-only config tests" >> $L
timeout 150 python3 -m pytest tests/test_weight_only.py -q -p no:cacheprovider -k "splits_reduce or every_weight_only_config" >> $L 2>&1; tail -1 $L
echo "== sweep_hopper 64,128" >> $L
timeout 150 python3 benchmarks/sweep_hopper.py --m 64,128 --iters 20 --json $OUT/sweep_h100.json >> $L 2>&1; tail -4 $L
echo "== weight_only_bench 64,128" >> $L
timeout 150 python3 benchmarks/weight_only_bench.py --m 64,128 --iters 20 --json $OUT/w4a16_h100.json >> $L 2>&1; tail -3 $L
