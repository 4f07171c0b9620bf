# Per-instruction warp-stall samples of the resident quantize kernel (bf16 8192x7168 dynamic), SASS view, CSV.
set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L
source benchmarks/device_build.sh 90a >> $L 2>&1 || exit 1
cat > /tmp/q8192.py <<'PY'
import sys, torch, nvfp4_gemm
x = torch.randn(8192, 7168, device="cuda", dtype=torch.bfloat16)
gs = torch.tensor([400.0], device="cuda") if sys.argv[1] == "static" else None
for _ in range(4):
    nvfp4_gemm.quantize(x, gs)
torch.cuda.synchronize()
PY
timeout 200 ncu --clock-control none --kernel-name regex:quantize_resident --launch-skip 2 --launch-count 1 \
  --section SourceCounters --section WarpStateStats --import-source no -o /tmp/res python3 /tmp/q8192.py dynamic > $OUT/ncu_run.txt 2>&1
tail -3 $OUT/ncu_run.txt >> $L
timeout 120 ncu --import /tmp/res.ncu-rep --page source --csv --print-source sass > $OUT/source_sass.csv 2> $OUT/source_err.txt
ls -la $OUT >> $L; head -c 600 $OUT/source_sass.csv >> $L; tail -3 $OUT/source_err.txt >> $L
gzip -k $OUT/source_sass.csv
cat $L
