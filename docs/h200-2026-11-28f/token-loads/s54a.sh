# The wgmma kernel's token loads at M = 64, 128: base vs notok (no token TMA) vs halftok (half the boxes);
# timing-only variants (wrong values); two interleaved rounds; then ncu --set full of the base kernel on two shapes.
set -u
L=$OUT/log.txt
echo "tree: $(cat scratch/head)" > $L
NEED_GPU=H200 source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log; exit 1; }
for v in notok halftok; do
  ( rm -rf /tmp/t_$v && mkdir /tmp/t_$v && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/t_$v/ &&
    python3 scratch/v54.py /tmp/t_$v $v && cd /tmp/t_$v &&
    NVFP4_GEMM_CUDA_ARCHS=90a python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$v . > /tmp/build_$v.log 2>&1; echo "$v build rc=$?" ) >> $L 2>&1
done
for r in 1 2; do
  for v in base notok halftok; do
    if [ $v = base ]; then PP=/tmp/site; else PP=/tmp/pkg_$v:/tmp/site; fi
    PYTHONPATH=$PP timeout 150 python3 scratch/s49_time.py $v /tmp/${v}_$r.json 64,128 >> $L 2>&1
  done
done
grep geomean $L
for shape in 128x28672x8192 128x14336x4096; do
  timeout 150 ncu --set full --import-source no --clock-control none --kernel-name regex:wgmma_gemm --launch-skip 2 --launch-count 1 -o /tmp/p_$shape \
     python3 benchmarks/profile_one.py $shape --format=bf16xnvfp4 >> $OUT/ncu.log 2>&1
  ncu -i /tmp/p_$shape.ncu-rep --page details > $OUT/ncu_$shape.txt 2>&1
done
grep -E "Duration|Memory Throughput|L2 Cache Throughput|DRAM Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Tensor|L1/TEX Cache Throughput|No Eligible|Grid Size|Registers|Achieved Occupancy|Theoretical Occ" $OUT/ncu_*.txt | head -80
