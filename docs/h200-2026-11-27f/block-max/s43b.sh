# H200: decode quantize, base (HEAD) vs new (s43.diff) vs C (s43 + the one-pass kernel's block maximum by integers,
# s43c.diff): four interleaved rounds of events and spans; then the new tree's large shapes once more (mid2).
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L
case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H200*) ;; *) echo "not an H200"; exit 3 ;; esac
echo "tree: $(cat scratch/head) + scratch/s43.diff (C: + scratch/s43c.diff)" >> $L
export PYTHONUNBUFFERED=1
R=$PWD
for v in base c; do
  rm -rf /tmp/src_$v /tmp/pkg_$v && mkdir /tmp/src_$v && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$v/
done
(cd /tmp/src_base && git apply -R $R/scratch/s43.diff && PYTHONPATH=/tmp/site NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_base . > /tmp/build_base.log 2>&1) &
(cd /tmp/src_c && git apply $R/scratch/s43c.diff && PYTHONPATH=/tmp/site NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_c . > /tmp/build_c.log 2>&1) &
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
wait
[ -d /tmp/pkg_base/nvfp4_gemm ] || { echo "base build failed" >> $L; tail -20 /tmp/build_base.log >> $L; exit 1; }
[ -d /tmp/pkg_c/nvfp4_gemm ] || { echo "C build failed" >> $L; tail -20 /tmp/build_c.log >> $L; exit 1; }
for r in 1 2 3 4; do
  PYTHONPATH=/tmp/pkg_base:/tmp/site timeout 60 python3 scratch/decode43.py base >> $L 2>&1
  timeout 60 python3 scratch/decode43.py new >> $L 2>&1
  PYTHONPATH=/tmp/pkg_c:/tmp/site timeout 60 python3 scratch/decode43.py C >> $L 2>&1
done
PYTHONPATH=/tmp/pkg_base:/tmp/site timeout 60 python3 scratch/mid2.py base >> $L 2>&1
timeout 60 python3 scratch/mid2.py new >> $L 2>&1
PYTHONPATH=/tmp/pkg_c:/tmp/site timeout 60 python3 scratch/mid2.py C >> $L 2>&1
cat $L
