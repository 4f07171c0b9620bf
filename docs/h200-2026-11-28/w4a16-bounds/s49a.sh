# Call 1. Upper bounds for W4A16 dequantization levers (timing-only variants, wrong values): base (HEAD) vs
# nodeq (4 LOP3 per word instead of 15 instructions) vs dq9 (the permuted layout's 13), interleaved rounds.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L
echo "tree: $(cat scratch/head)" >> $L
export PYTHONUNBUFFERED=1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
for v in nodeq dq9; do
  ( rm -rf /tmp/t_$v && mkdir /tmp/t_$v && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/t_$v/ &&
    python3 scratch/variant.py /tmp/t_$v $v && cd /tmp/t_$v &&
    NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$v . > $OUT/build_$v.log 2>&1; echo "$v build rc=$?" ) >> $L 2>&1
done
for r in 1 2; do
  for v in base nodeq dq9; do
    if [ $v = base ]; then PP=/tmp/site; else PP=/tmp/pkg_$v:/tmp/site; fi
    PYTHONPATH=$PP timeout 150 python3 scratch/s49_time.py $v $OUT/${v}_$r.json >> $OUT/time.txt 2>&1
    grep "^$v geomean" $OUT/time.txt | tail -1 >> $L
  done
done
cat $L
