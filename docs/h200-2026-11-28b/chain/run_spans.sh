# Stop 50 on an H200: chain_spans.py (the chain's layers by kernel spans, no events; W4A4 beside) at M = 1, 4, 16, 64, 128.
set -u
L=$OUT/log.txt
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $L 2>&1 || { cat $L; exit 1; }
echo "tree: $(cat scratch/head)" >> $L
timeout 450 python3 docs/h200-2026-11-28b/chain/chain_spans.py 1,4,16,64,128 >> $L 2>&1
cat $L
