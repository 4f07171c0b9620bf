set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
cp scratch/r2/direct_gemm.cuh scratch/r2/launcher.cuh csrc/include/nvfp4_gemm/sm90/
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
for r in 1 2 3; do
  echo "== racy ring (r2), round $r" >> $L
  timeout 120 python3 -m pytest tests/test_weight_only.py -q -p no:cacheprovider -k "every_cta_slot" 2>&1 | grep -E "passed|failed|max \|err\|" | cut -c1-300 >> $L
done
cat $L
