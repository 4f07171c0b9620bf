set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv > $L
use() {
  cp scratch/$1/*.cuh csrc/include/nvfp4_gemm/sm90/
  cp scratch/$1/py/configs.toml csrc/; cp scratch/$1/py/families.py scratch/$1/py/configs.py scratch/$1/py/sm90_model.py python/nvfp4_gemm/
}
for v in sk_old sk_new sk_nocoop; do
  use $v
  source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  rm -rf /tmp/pkg_$v && mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
for r in 1 2; do for v in sk_new sk_old sk_nocoop; do
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 120 python3 scratch/sk_time.py $v >> $L 2>&1
done; done
