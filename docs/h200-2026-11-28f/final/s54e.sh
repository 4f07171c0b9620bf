# The GPU tests of every file that moves, casts or quantizes layers, at HEAD (after the dtype-cast guard and
# quantize_model(progress=...)).
set -u
L=$OUT/log.txt
echo "tree: $(cat scratch/head)" > $L
NEED_GPU=H200 source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log; exit 1; }
timeout 540 python3 -m pytest tests/test_nn.py tests/test_mx_nn.py tests/test_quantize_gpu.py tests/test_weight_only.py \
  tests/test_checkpoints.py tests/test_parallel.py tests/test_mx_quantize_gpu.py tests/test_gemv.py tests/test_ops.py \
  -q -rs -p no:cacheprovider > $OUT/tests.txt 2>&1; echo "tests rc=$?" >> $L
tail -8 $OUT/tests.txt >> $L
cat $L
