# Where the direct kernel's W4A16 decode time goes: base (HEAD) vs nodeq (dequantization 4 LOP3 per word),
# bare (nodeq and each MMA a 2-LOP3 fold: loads, token staging, epilogue only), bare4 (bare, 4 chunks per
# register set); timing-only variants, wrong values; interleaved rounds, per-shape rows in log.txt.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L
echo "tree: $(cat scratch/head)" >> $L
export PYTHONUNBUFFERED=1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
for v in ${VARIANTS:-nodeq bare bare4}; do
  ( rm -rf /tmp/t_$v && mkdir /tmp/t_$v && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/t_$v/ &&
    python3 scratch/variant.py /tmp/t_$v $v && cd /tmp/t_$v &&
    NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$v . > /tmp/build_$v.log 2>&1; echo "$v build rc=$?"; grep -i "spill\|error" /tmp/build_$v.log | head -5 ) >> $L 2>&1
done
for r in 1 2; do
  for v in base ${VARIANTS:-nodeq bare bare4}; do
    if [ $v = base ]; then PP=/tmp/site; else PP=/tmp/pkg_$v:/tmp/site; fi
    PYTHONPATH=$PP timeout 150 python3 scratch/s49_time.py $v /tmp/${v}_$r.json ${MS:-1,4,16} >> $L 2>&1
  done
done
grep geomean $L
