set -o pipefail
mkdir -p /tmp/res; L=/tmp/res/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv > $L
use() { cp scratch/$1/direct_gemm.cuh scratch/$1/launcher.cuh csrc/include/nvfp4_gemm/sm90/; }
for v in base r2b; do
  use $v
  source benchmarks/device_build.sh 90a >> $L 2>&1 || { echo "build $v failed" >> $L; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  rm -rf /tmp/pkg_$v && mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
for v in base r2b; do for shape in 1x28672x8192 16x28672x8192; do
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 120 ncu --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --metrics smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio,smsp__average_warps_issue_stalled_misc_per_issue_active.ratio --clock-control none --kernel-name regex:direct_decode --launch-skip 2 --launch-count 1 \
    python3 benchmarks/profile_one.py $shape sm90_direct_16x128x128_splitk_bf16xnvfp4:1 --format=bf16xnvfp4 > /tmp/res/ncu_${v}_$shape.txt 2>&1
done; done
date >> $L
tar czf $OUT/ncu_ring.tgz -C /tmp/res .
