set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
cp scratch/fg/envgrid/*.cuh csrc/include/nvfp4_gemm/quantize/
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
for r in 1 2; do for less in 0 32 66 132; do
  NVFP4_RESIDENT_LESS=$less CUDA_VISIBLE_DEVICES=0 timeout 60 python3 scratch/fg/bench1.py "less=$less r$r" >> $L 2>&1
done; done
for less in 16 32 48 66; do
  echo "== less=$less beside NCCL" >> $L
  NVFP4_RESIDENT_LESS=$less timeout 120 torchrun --nproc-per-node 2 benchmarks/probes/quantize_beside_nccl.py --rounds 30 > $OUT/beside_$less.txt 2>&1
  grep -E "^rank .*(2048|8192)|mismatch" $OUT/beside_$less.txt | sort >> $L
done
cat $L
