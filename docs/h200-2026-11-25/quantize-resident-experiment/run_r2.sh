set -o pipefail
Q=csrc/include/nvfp4_gemm/quantize
use() { cp scratch/$1/quantize_common.cuh scratch/$1/nvfp4_quantize.cuh $Q/; }
M="dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum"
for v in new_r r512 rhint rdiag; do
  use $v
  source benchmarks/device_build.sh 90a > $OUT/build_$v.log 2>&1 || { tail -30 $OUT/build_$v.log; exit 1; }
  timeout 100 python3 scratch/mid_sizes.py $v > $OUT/mid_$v.log 2>&1; grep -E "M=(256|1024|4096|8192)|fp32" $OUT/mid_$v.log
  if [ $v != rdiag ]; then timeout 60 python3 -m pytest benchmarks/test_bench_quantize.py -q -s -p no:cacheprovider -k "large and dynamic and not mx" > $OUT/bench_large_$v.log 2>&1; grep -E "^quantize|failed" $OUT/bench_large_$v.log | sed "s/^/$v /" | cut -c1-120; fi
  if [ $v = new_r ] || [ $v = r512 ]; then timeout 120 ncu --cache-control none --clock-control none --metrics $M --section WarpStateStats python3 scratch/ncu_dyn.py > $OUT/ncu_$v.txt 2>&1; grep -E "dram__|gpu__time|lts__t_sector_hit|sm__throughput|inst_executed|Stall|stall" $OUT/ncu_$v.txt | head -30; fi
done
use new_r
