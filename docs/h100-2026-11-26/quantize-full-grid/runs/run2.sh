set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
date -u >> $L
for v in base full2 cs; do
  cp scratch/fg/$v/*.cuh csrc/include/nvfp4_gemm/quantize/
  source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  rm -rf /tmp/pkg_$v && mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
for r in 1 2 3; do for v in base full2 cs; do
  echo "== bench $v round $r" >> $L
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 120 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider -k "test_quantize_large" --benchmark-disable 2>&1 | grep "quantize dynamic bf16 8192" >> $L
done; done
for v in base full2 cs; do PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 150 python3 scratch/fg/mid.py $v >> $L 2>&1; done
for v in full2 cs; do
echo "== ncu $v 8192x7168" >> $L
PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 200 ncu --cache-control none --clock-control none -k regex:"resident" -s 1 -c 1 --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct python3 scratch/res/ncu1.py 2>&1 | grep -E "duration|bytes|hit_rate" >> $L
done
