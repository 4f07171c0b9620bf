# The transformers-route tests (the tiny Llama on the CPU and on the H200's kernels) and the GPU tests of the
# files the configs review (1d761ef) touched, at the working tree.
set -u
L=$OUT/log.txt
echo "tree: $(cat scratch/head) + the transformers tests (uncommitted)" > $L
NEED_GPU=H200 source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log; exit 1; }
python3 -c "import transformers; print('transformers', transformers.__version__)" >> $L 2>&1
timeout 420 python3 -m pytest tests/test_nn.py tests/test_quantize_gpu.py tests/test_resolver.py tests/test_gemv.py tests/test_weight_only.py \
  -q -rs -x -p no:cacheprovider > $OUT/tests.txt 2>&1; echo "tests rc=$?" >> $L
timeout 60 python3 -m pytest tests/test_quantize_gpu.py -q -k transformers -s -p no:cacheprovider 2>&1 | grep -E "max \|err\||passed|failed" | sort | uniq -c | sort -rn | head -8 >> $L
tail -5 $OUT/tests.txt >> $L
cat $L
