# Where the wgmma kernel's fixed cost goes on the 2112-row layer: a K sweep at pinned configs (device time per
# kernel), then ncu --set full with the SASS source page on the resolver's pick at 128x2112x7168.
set -u
L=$OUT/log.txt
echo "tree: $(cat scratch/head)" > $L
NEED_GPU=H200 source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log; exit 1; }
timeout 200 python3 scratch/s54_ksweep.py >> $L 2>&1
timeout 150 ncu --set full --import-source no --clock-control none --kernel-name regex:"wgmma_gemm|permute" --launch-skip 4 --launch-count 2 -o /tmp/p_small \
   python3 benchmarks/profile_one.py 128x2112x7168 --format=bf16xnvfp4 >> $OUT/ncu.log 2>&1
ncu -i /tmp/p_small.ncu-rep --page details > $OUT/ncu_small.txt 2>&1
ncu -i /tmp/p_small.ncu-rep --page source --csv --print-source sass --kernel-name regex:wgmma_gemm > $OUT/small_sass.csv 2>&1
ls -la $OUT
cat $L
