set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
echo "== tests" >> $L
timeout 240 python3 -m pytest tests/test_weight_only.py tests/test_gpu.py tests/test_mx_hopper.py tests/test_sass.py -q -x -p no:cacheprovider 2>&1 | tail -3 >> $L
timeout 150 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_cases.py --config sm90_wgmma_64x128x128_prepass_splitk_bf16xnvfp4 > /tmp/r.log 2>&1; echo "racecheck bf16 64x128: $(tail -1 /tmp/r.log)" >> $L
echo "== weight_only_bench bf16 M 64,128" >> $L
timeout 150 python3 benchmarks/weight_only_bench.py --m 64,128 --iters 30 --json $OUT/w4a16_h100.json >> $L 2>&1; tail -2 $L
