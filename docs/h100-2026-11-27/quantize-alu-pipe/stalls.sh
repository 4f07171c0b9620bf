# Stall reasons per issued instruction of the resident kernel (whole) and of its walk alone (bf16 8192x7168 dynamic):
# the difference, weighted by instructions, is the quantize walk's.
set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name --format=csv,noheader | tee $L
source benchmarks/device_build.sh 90a >> $L 2>&1 || exit 1
[ -d /tmp/pkg_walk ] || { echo "no walk build"; exit 1; }
R=""
for r in long_scoreboard short_scoreboard wait math_pipe_throttle lg_throttle mio_throttle drain barrier membar not_selected selected dispatch_stall no_instruction branch_resolving sleeping tex_throttle imc_miss misc; do
  R="$R,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
M="sm__inst_executed.sum,gpu__time_duration.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_read.sum$R"
for v in whole walk; do
  if [ $v = walk ]; then PP=/tmp/pkg_walk:/tmp/site; else PP=/tmp/site; fi
  PYTHONPATH=$PP timeout 120 ncu --clock-control none --kernel-name regex:quantize --launch-skip 2 --launch-count 1 --metrics $M \
    python3 /tmp/q8192.py dynamic > $OUT/stalls_$v.txt 2>&1
  echo "-- $v" >> $L; grep -E "^\s+(sm__|gpu__|smsp__|l1tex__|lts__)" $OUT/stalls_$v.txt | sed 's/^ *//' | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' >> $L
done
cat $L
