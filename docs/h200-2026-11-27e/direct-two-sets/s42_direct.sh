# H200: the direct kernel's first two register sets before the token staging (scratch/direct.diff), A/B against HEAD
# (which also lacks the quantize changes: irrelevant to the GEMM); weight-only GPU tests; memcheck on the direct rows.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L
case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H200*) ;; *) echo "not an H200"; exit 3 ;; esac
echo "tree: $(cat scratch/head) + scratch/s42b.diff (the direct kernel change)" >> $L
export PYTHONUNBUFFERED=1
R=$PWD
rm -rf /tmp/src_base /tmp/pkg_base && mkdir /tmp/src_base && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_base/
(cd /tmp/src_base && git apply -R $R/scratch/s42b.diff && PYTHONPATH=/tmp/site NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_base . > /tmp/build_base.log 2>&1) &
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
wait
[ -d /tmp/pkg_base/nvfp4_gemm ] || { echo "base build failed" >> $L; tail -20 /tmp/build_base.log >> $L; exit 1; }
for r in 1 2; do
  PYTHONPATH=/tmp/pkg_base:/tmp/site timeout 90 python3 scratch/direct_ab.py base >> $L 2>&1
  timeout 90 python3 scratch/direct_ab.py new >> $L 2>&1
done
timeout 150 python3 -m pytest tests/test_weight_only.py tests/test_gpu.py tests/test_mx_hopper.py -q -p no:cacheprovider -x > $OUT/pytest.log 2>&1; echo "tests: $(tail -1 $OUT/pytest.log)" >> $L
timeout 70 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_cases.py --config sm90_direct_16x128x128_splitk_bf16xnvfp4 > $OUT/memcheck_direct.txt 2>&1; echo "memcheck direct bf16xnvfp4: $(tail -1 $OUT/memcheck_direct.txt)" >> $L
timeout 70 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_cases.py --config sm90_direct_16x128x128_splitk_bf16xnvfp4 > $OUT/racecheck_direct.txt 2>&1; echo "racecheck direct bf16xnvfp4: $(tail -1 $OUT/racecheck_direct.txt)" >> $L
cat $L
