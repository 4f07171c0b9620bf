# Tensor parallel with weight-only layers on two GPUs (NCCL): parallel_check (all three configurations) and
# tests/test_parallel.py (gloo CPU tests and the torchrun GPU test).
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L
echo "tree: $(cat scratch/head) + TP weight-only (uncommitted)" >> $L
export PYTHONUNBUFFERED=1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
timeout 300 torchrun --nproc-per-node 2 -m nvfp4_gemm.parallel_check --device cuda > $OUT/parallel_check.log 2>&1; echo "parallel_check rc=$?" >> $L
grep -v "^W1\|^\*\*\*\*" $OUT/parallel_check.log | tail -12 >> $L
timeout 280 python3 -m pytest tests/test_parallel.py -q -p no:cacheprovider -rs > $OUT/pytest_parallel.log 2>&1; echo "tests: $(tail -1 $OUT/pytest_parallel.log)" >> $L
cat $L
