set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
date -u >> $L
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
echo "== GPU tests (GPU 0)" >> $L
CUDA_VISIBLE_DEVICES=0 timeout 300 python3 -m pytest tests/test_quantize_gpu.py tests/test_quantize.py -q -p no:cacheprovider 2>&1 | tail -4 >> $L
for r in 1 2; do for s in all 108 120; do CUDA_VISIBLE_DEVICES=0 timeout 60 python3 scratch/fg/bench_sms.py $s >> $L 2>&1; done; done
for s in 108 120; do
  echo "== beside NCCL, --sms $s" >> $L
  timeout 150 torchrun --nproc-per-node 2 benchmarks/probes/quantize_beside_nccl.py --rounds 50 --sms $s > $OUT/beside_nccl_sms$s.txt 2>&1; echo "rc $?" >> $OUT/beside_nccl_sms$s.txt
  grep -E "^rank|rc " $OUT/beside_nccl_sms$s.txt | sort >> $L
done
echo "== beside NCCL, all SMs" >> $L
timeout 150 torchrun --nproc-per-node 2 benchmarks/probes/quantize_beside_nccl.py --rounds 50 > $OUT/beside_nccl_all.txt 2>&1; echo "rc $?" >> $OUT/beside_nccl_all.txt
grep -E "^rank|rc " $OUT/beside_nccl_all.txt | sort >> $L
cat $L
