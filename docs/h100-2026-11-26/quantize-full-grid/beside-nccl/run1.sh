set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
date -u >> $L
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
echo "== quantize beside NCCL all-reduces (2 ranks)" >> $L
timeout 240 torchrun --nproc-per-node 2 benchmarks/probes/quantize_beside_nccl.py --rounds 50 > $OUT/beside_nccl.txt 2>&1; echo "rc $?" >> $OUT/beside_nccl.txt
grep -E "^rank|rc |Error|error" $OUT/beside_nccl.txt | head -20 >> $L
echo "== parallel_check (2 ranks, NCCL)" >> $L
timeout 240 torchrun --nproc-per-node 2 -m nvfp4_gemm.parallel_check > $OUT/parallel_check.txt 2>&1; echo "rc $?" >> $L
tail -4 $OUT/parallel_check.txt >> $L
cat $L
grep -q H200 $L && CUDA_VISIBLE_DEVICES=0 bash scratch/fg/h200.sh_body
exit 0
