# H100: the quantize block's cheaper maximum (max.NaN.xorsign.abs), its table address and e4m3 code
# (scratch/s43.diff, commit d16a408) against its base ff30c3d: mid2 A/B (two interleaved rounds, every shape checked bit
# for bit), the quantize/nn GPU tests (with the subnormal-input ones), decode spans (two rounds).
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L
case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H100*) ;; *) echo "not an H100"; exit 3 ;; esac
echo "tree: $(cat scratch/head) + scratch/s43.diff" >> $L
export PYTHONUNBUFFERED=1
R=$PWD
rm -rf /tmp/src_base /tmp/pkg_base && mkdir /tmp/src_base && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_base/
(cd /tmp/src_base && git apply -R $R/scratch/s43.diff && PYTHONPATH=/tmp/site NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_base . > /tmp/build_base.log 2>&1) &
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
wait
[ -d /tmp/pkg_base/nvfp4_gemm ] || { echo "base build failed" >> $L; tail -20 /tmp/build_base.log >> $L; exit 1; }
for r in 1 2; do
  PYTHONPATH=/tmp/pkg_base:/tmp/site timeout 60 python3 scratch/mid2.py base >> $L 2>&1
  timeout 60 python3 scratch/mid2.py new >> $L 2>&1
done
timeout 170 python3 -m pytest tests/test_quantize_gpu.py tests/test_mx_quantize_gpu.py tests/test_quantize.py tests/test_nn.py tests/test_mx_nn.py -q -p no:cacheprovider -x > $OUT/pytest.log 2>&1; echo "tests: $(tail -1 $OUT/pytest.log)" >> $L
for r in 1 2; do PYTHONPATH=/tmp/pkg_base:/tmp/site timeout 60 python3 scratch/decode43.py base 2>/dev/null >> $L; timeout 60 python3 scratch/decode43.py new 2>/dev/null >> $L; done
cat $L
