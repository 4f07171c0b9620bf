set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
date -u >> $L
for v in final base; do
  cp scratch/fg/$v/*.cuh csrc/include/nvfp4_gemm/quantize/
  source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
  echo "== $v: quantize beside NCCL all-reduces (2 ranks)" >> $L
  timeout 240 torchrun --nproc-per-node 2 benchmarks/probes/quantize_beside_nccl.py --rounds 50 > $OUT/beside_nccl_$v.txt 2>&1; echo "rc $?" >> $OUT/beside_nccl_$v.txt
  grep -E "^rank|rc |Error|error" $OUT/beside_nccl_$v.txt | sort | head -20 >> $L
done
cat $L
