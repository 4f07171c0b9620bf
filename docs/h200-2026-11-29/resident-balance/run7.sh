set -u
L=$OUT/log.txt
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $L 2>&1 || { cat $L; tail -30 $OUT/build.log; exit 1; }
echo "tree: $(cat scratch/head)" >> $L
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_quantize_gpu.py -k "resident or kept_partly or one_pass_calls or random_data" >> $L 2>&1
cat $L | tail -8
