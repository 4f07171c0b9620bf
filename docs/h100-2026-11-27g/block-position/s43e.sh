# H100: three builds, interleaved mid2 rounds: base (the tree minus s43e.diff and s43d.diff: 2148313's quantize),
# mid (minus s43e.diff: the block position by products, 1e6ac31) and new (the kept slots read through a 32-bit shared
# address in the 16-bit resident kernels, s43e.diff); then the quantize/nn GPU tests and compute-sanitizer on new.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L
case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H100*) ;; *) echo "not an H100"; exit 3 ;; esac
echo "tree: $(cat scratch/head) + scratch/s43e.diff" >> $L
export PYTHONUNBUFFERED=1
R=$PWD
for v in base mid; do
  rm -rf /tmp/src_$v /tmp/pkg_$v && mkdir /tmp/src_$v && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$v/
done
(cd /tmp/src_base && git apply -R $R/scratch/s43e.diff && git apply -R $R/scratch/s43d.diff && PYTHONPATH=/tmp/site NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_base . > /tmp/build_base.log 2>&1) &
(cd /tmp/src_mid && git apply -R $R/scratch/s43e.diff && PYTHONPATH=/tmp/site NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_mid . > /tmp/build_mid.log 2>&1) &
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
wait
[ -d /tmp/pkg_base/nvfp4_gemm ] || { echo "base build failed" >> $L; tail -20 /tmp/build_base.log >> $L; exit 1; }
[ -d /tmp/pkg_mid/nvfp4_gemm ] || { echo "mid build failed" >> $L; tail -20 /tmp/build_mid.log >> $L; exit 1; }
for r in 1 2; do
  PYTHONPATH=/tmp/pkg_base:/tmp/site timeout 60 python3 scratch/mid2.py base >> $L 2>&1
  PYTHONPATH=/tmp/pkg_mid:/tmp/site timeout 60 python3 scratch/mid2.py mid >> $L 2>&1
  timeout 60 python3 scratch/mid2.py new >> $L 2>&1
done
timeout 170 python3 -m pytest tests/test_quantize_gpu.py tests/test_mx_quantize_gpu.py tests/test_quantize.py tests/test_nn.py tests/test_mx_nn.py -q -p no:cacheprovider -x > $OUT/pytest.log 2>&1; echo "tests: $(tail -1 $OUT/pytest.log)" >> $L
timeout 110 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_quantize.py > $OUT/memcheck.txt 2>&1; echo "memcheck all: $(tail -1 $OUT/memcheck.txt)" >> $L
timeout 80 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_quantize.py --cases 0,4,6,7,8 > $OUT/racecheck.txt 2>&1; echo "racecheck 0,4,6,7,8: $(tail -1 $OUT/racecheck.txt)" >> $L
cat $L
