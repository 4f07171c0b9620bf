set -u
L=$OUT/log.txt
echo "tree: $(cat scratch/head)" | tee -a $L
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $OUT/pre.txt 2>&1 || { cat $OUT/pre.txt; exit 1; }
cat $OUT/pre.txt >> $L; cat $OUT/pre.txt
for v in cta1024+probe cta1024; do
  d=${v/+/_}
  rm -rf /tmp/src_$d /tmp/pkg_$d && mkdir /tmp/src_$d && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$d/
  python3 scratch/rtimeline/patch.py /tmp/src_$d $v || exit 1
  s=$(date +%s)
  (cd /tmp/src_$d && NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$d . > $OUT/build_$d.log 2>&1) || { tail -30 $OUT/build_$d.log; exit 1; }
  echo "built $v in $(( $(date +%s) - s )) s" | tee -a $L
done
echo "== one 1024-thread CTA per SM: CTAs by SM, warps (probe build)" | tee -a $L
PYTHONPATH=/tmp/pkg_cta1024_probe:/tmp/site python3 scratch/rtimeline/timeline2.py 1024 2>&1 | tee -a $L
echo "== A/B: HEAD, one 1024-thread CTA per SM (grid: every SM)" | tee -a $L
for r in 1 2 3; do
  python3 scratch/rtimeline/ab.py base 2>&1 | tee -a $L
  PYTHONPATH=/tmp/pkg_cta1024:/tmp/site python3 scratch/rtimeline/ab.py cta1024 2>&1 | tee -a $L
done
