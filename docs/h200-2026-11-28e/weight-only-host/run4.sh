#!/usr/bin/env bash
# Stop 53 call 4: the weight-only layer's eager host cost before / after (ABAB in one call: the installed
# nn.py swapped for the one before this change), then the layer's GPU tests.
set -u
L=$OUT/log.txt
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $L 2>&1 || { cat $L; exit 1; }
echo "tree: $(cat scratch/head)" >> $L
PKG=$(cd /tmp && python3 -c "import nvfp4_gemm, os; print(os.path.dirname(nvfp4_gemm.__file__))")
cp $PKG/nn.py /tmp/nn_after.py
cp scratch/nn_before.py /tmp/nn_before.py
for round in 1 2 3; do
  for variant in after before; do
    cp /tmp/nn_$variant.py $PKG/nn.py; rm -f $PKG/__pycache__/nn.*.pyc
    echo "== round $round, $variant" >> $L
    python3 benchmarks/host_overhead.py --calls 200 --bursts 9 2>&1 | grep -E "floor|Linear|gemm\(\.\.\.\)|H200" >> $L
  done
done
cp /tmp/nn_after.py $PKG/nn.py; rm -f $PKG/__pycache__/nn.*.pyc
timeout 300 python3 -m pytest -q -p no:cacheprovider --tb=short -rfE tests/test_weight_only.py tests/test_nn.py tests/test_gemv.py > $OUT/tests.log 2>&1
echo "tests (weight_only, nn, gemv): rc=$? $(tail -1 $OUT/tests.log)" >> $L
cat $L
