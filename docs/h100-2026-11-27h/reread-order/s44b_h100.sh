# H100: the resident kernel re-reads newest and oldest in turn with the kept steps spread among them
# (scratch/s44b.diff, commit 1555030) against its base f6c35e7: mid2 and s44_time A/B (every exact shape checked bit for
# bit first), the quantize/nn GPU tests.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L
case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H100*) ;; *) echo "not an H100"; exit 3 ;; esac
echo "tree: $(cat scratch/head) + scratch/s44b.diff" >> $L
export PYTHONUNBUFFERED=1
R=$PWD
rm -rf /tmp/src_base /tmp/pkg_base && mkdir /tmp/src_base && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_base/
(cd /tmp/src_base && git apply -R $R/scratch/s44b.diff && PYTHONPATH=/tmp/site NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_base . > /tmp/build_base.log 2>&1) &
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
wait
[ -d /tmp/pkg_base/nvfp4_gemm ] || { echo "base build failed" >> $L; tail -20 /tmp/build_base.log >> $L; exit 1; }
for r in 1 2; do
  PYTHONPATH=/tmp/pkg_base:/tmp/site timeout 60 python3 scratch/mid2.py base >> $L 2>&1
  timeout 60 python3 scratch/mid2.py new >> $L 2>&1
done
for r in checked timed; do
  PYTHONPATH=/tmp/pkg_base:/tmp/site timeout 90 python3 scratch/s44_time.py base $r >> $L 2>&1
  timeout 90 python3 scratch/s44_time.py new $r >> $L 2>&1
done
timeout 170 python3 -m pytest tests/test_quantize_gpu.py tests/test_mx_quantize_gpu.py tests/test_quantize.py tests/test_nn.py tests/test_mx_nn.py -q -p no:cacheprovider -x > $OUT/pytest.log 2>&1; echo "tests: $(tail -1 $OUT/pytest.log)" >> $L
cat $L
