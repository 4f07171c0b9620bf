set -u
L=$OUT/log.txt
echo "tree: $(cat scratch/head) + working tree (warps claim the quantize walk's units; one 1024-thread CTA per SM)" | tee -a $L
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $OUT/pre.txt 2>&1 || { cat $OUT/pre.txt; exit 1; }
cat $OUT/pre.txt >> $L; cat $OUT/pre.txt
rm -rf /tmp/src_base /tmp/pkg_base && mkdir /tmp/src_base && tar -xf scratch/base.tar -C /tmp/src_base
s=$(date +%s)
(cd /tmp/src_base && NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_base . > $OUT/build_base.log 2>&1) || { tail -30 $OUT/build_base.log; exit 1; }
echo "built base in $(( $(date +%s) - s )) s" | tee -a $L
echo "== GPU tests (new)" | tee -a $L
timeout 200 python3 -m pytest -q -x tests/test_quantize_gpu.py tests/test_quantize.py -k "not e2m1_rounding_on_every_float" 2>&1 | tail -5 | tee -a $L
echo "== A/B" | tee -a $L
for r in 1 2 3; do
  PYTHONPATH=/tmp/pkg_base:/tmp/site python3 scratch/rtimeline/ab.py base 2>&1 | tee -a $L
  python3 scratch/rtimeline/ab.py claims 2>&1 | tee -a $L
done
