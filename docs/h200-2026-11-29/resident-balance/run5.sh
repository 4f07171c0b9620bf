set -u
L=$OUT/log.txt
echo "tree: $(cat scratch/head) + working tree (resident kernel: one 1024-thread CTA per SM for 16-bit x beyond the half-SM grid)" | tee -a $L
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $OUT/pre.txt 2>&1 || { cat $OUT/pre.txt; exit 1; }
cat $OUT/pre.txt >> $L; cat $OUT/pre.txt
rm -rf /tmp/src_base /tmp/pkg_base && mkdir /tmp/src_base && tar -xf scratch/base.tar -C /tmp/src_base
(cd /tmp/src_base && NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_base . > $OUT/build_base.log 2>&1) || { tail -30 $OUT/build_base.log; exit 1; }
echo "== GPU tests (new)" | tee -a $L
timeout 240 python3 -m pytest -q tests/test_quantize_gpu.py tests/test_quantize.py tests/test_mx_quantize_gpu.py -k "not e2m1_rounding_on_every_float" 2>&1 | tail -4 | tee -a $L
echo "== compute-sanitizer (new)" | tee -a $L
for tool in memcheck racecheck synccheck; do
  cases=0,1,2,3,4,5,6,7,8,9,10,11,12; [ $tool = memcheck ] || cases=6,7,8
  timeout 150 compute-sanitizer --tool $tool --print-limit 5 python3 benchmarks/sanitize_quantize.py --cases $cases > $OUT/${tool}.log 2>&1; echo "$tool cases $cases rc=$?: $(tail -1 $OUT/${tool}.log)" | tee -a $L
done
echo "== A/B" | tee -a $L
for r in 1 2 3; do
  PYTHONPATH=/tmp/pkg_base:/tmp/site python3 scratch/rtimeline/ab.py base 2>&1 | tee -a $L
  python3 scratch/rtimeline/ab.py new 2>&1 | tee -a $L
done
