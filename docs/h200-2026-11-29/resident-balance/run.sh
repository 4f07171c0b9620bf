set -u
L=$OUT/log.txt
echo "tree: $(cat scratch/head)" | tee -a $L
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $OUT/pre.txt 2>&1 || { cat $OUT/pre.txt; exit 1; }
cat $OUT/pre.txt >> $L; cat $OUT/pre.txt
for v in probe sleep200 sleep1000; do
  rm -rf /tmp/src_$v /tmp/pkg_$v && mkdir /tmp/src_$v && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$v/
  python3 scratch/rtimeline/patch.py /tmp/src_$v $v || exit 1
  s=$(date +%s)
  (cd /tmp/src_$v && NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$v . > $OUT/build_$v.log 2>&1) || { tail -30 $OUT/build_$v.log; exit 1; }
  echo "built $v in $(( $(date +%s) - s )) s" | tee -a $L
done
echo "== timeline (probe build)" | tee -a $L
PYTHONPATH=/tmp/pkg_probe:/tmp/site python3 scratch/rtimeline/timeline.py 2>&1 | tee -a $L
echo "== A/B: HEAD, nanosleep 200 / 1000 ns between the resident poll's rounds" | tee -a $L
for r in 1 2 3; do
  python3 scratch/rtimeline/ab.py base 2>&1 | tee -a $L
  PYTHONPATH=/tmp/pkg_sleep200:/tmp/site python3 scratch/rtimeline/ab.py sleep200 2>&1 | tee -a $L
  PYTHONPATH=/tmp/pkg_sleep1000:/tmp/site python3 scratch/rtimeline/ab.py sleep1000 2>&1 | tee -a $L
done
