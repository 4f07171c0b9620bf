set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
timeout 200 python3 -m pytest tests/test_weight_only.py -q -p no:cacheprovider 2>&1 | tail -2 >> $L
timeout 150 python3 benchmarks/weight_only_bench.py --m 1,16 --iters 30 --json $OUT/w4a16.json > $OUT/w4a16.txt 2>&1; tail -3 $OUT/w4a16.txt >> $L
date >> $L
cat $L
