# ncu of the kept wgmma kernel (k32 batches, cf24795) at 64 and 128 tokens, as "Hopper v10" profiled the base
set -o pipefail
source benchmarks/device_build.sh 90a > $OUT/log.txt 2>&1 || exit 1
for spec in "64x14336x4096 sm90_wgmma_64x128x128_prepass_splitk_bf16xnvfp4:1 w64" "128x14336x4096 sm90_wgmma_128x128x128_prepass_splitk_bf16xnvfp4:1 w128"; do
  set -- $spec
  timeout 240 ncu --set full --import-source no --clock-control none --kernel-name regex:wgmma_gemm --launch-skip 2 --launch-count 1 -o /tmp/$3 \
     python3 benchmarks/profile_one.py $1 $2 --format=bf16xnvfp4 >> $OUT/log.txt 2>&1
  ncu -i /tmp/$3.ncu-rep --page details > $OUT/$3_details.txt 2>&1
  ncu -i /tmp/$3.ncu-rep --page source --csv --print-source sass > $OUT/$3_sass.csv 2>&1
done
ls -la $OUT >> $OUT/log.txt
tail -5 $OUT/log.txt
