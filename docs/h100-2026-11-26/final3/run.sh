set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
git log --oneline -1 >> $L
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
echo "== new test" >> $L
timeout 200 python3 -m pytest tests/test_weight_only.py -q -p no:cacheprovider -k every_cta_slot --durations=5 2>&1 | tail -9 >> $L
echo "== GPU tests" >> $L
timeout 240 python3 -m pytest tests/test_weight_only.py tests/test_gpu.py tests/test_mx_hopper.py tests/test_sass.py -q -p no:cacheprovider 2>&1 | tail -3 >> $L
echo "== weight_only_bench" >> $L
timeout 150 python3 benchmarks/weight_only_bench.py --m 1,4,16 --iters 30 --json $OUT/w4a16.json > $OUT/w4a16.txt 2>&1; tail -4 $OUT/w4a16.txt >> $L
date >> $L
