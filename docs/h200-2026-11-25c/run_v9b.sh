set -o pipefail
L=$OUT/log.txt
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
echo "== sweep_hopper 64..2048" >> $L
timeout 280 python3 benchmarks/sweep_hopper.py --m 64,128,512,2048 --iters 20 --json $OUT/sweep_full.json >> $L 2>&1; tail -5 $L
echo "== weight_only_bench 64..2048" >> $L
timeout 250 python3 benchmarks/weight_only_bench.py --m 64,128,512,2048 --iters 20 --json $OUT/w4a16_full.json >> $L 2>&1; tail -4 $L
