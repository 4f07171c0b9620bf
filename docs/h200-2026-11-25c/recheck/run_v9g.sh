set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
nvcc -O3 -arch=sm_90a -Icsrc/include -o /tmp/cluster_occupancy benchmarks/probes/cluster_occupancy.cu && /tmp/cluster_occupancy >> $L 2>&1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
echo "== tests" >> $L
timeout 200 python3 -m pytest tests/test_weight_only.py tests/test_gpu.py tests/test_mx_hopper.py -q -p no:cacheprovider >> $L 2>&1; tail -1 $L
timeout 60 compute-sanitizer --tool memcheck --print-limit 5 python3 benchmarks/sanitize_cases.py --config sm90_wgmma_64x128x128_prepass_splitk_bf16xnvfp4 > /tmp/s.log 2>&1; echo "memcheck: $(tail -1 /tmp/s.log)" >> $L
echo "== sweep_hopper 64,128 (final model)" >> $L
timeout 150 python3 benchmarks/sweep_hopper.py --m 64,128 --iters 20 --json $OUT/sweep_final.json >> $L 2>&1; tail -4 $L
