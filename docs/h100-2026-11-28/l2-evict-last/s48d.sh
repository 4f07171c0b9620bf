# Stop 48, call 4 (any Hopper): the layer forwards' host time taken apart (scratch/s48_host.py), three runs.
set -u
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee $L
echo "tree: $(cat scratch/head)" >> $L
export PYTHONUNBUFFERED=1
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
for r in 1 2 3; do timeout 100 python3 scratch/s48_host.py >> $L 2>&1; done
cat $L
