L=$OUT/log.txt
source benchmarks/device_build.sh 90a > /dev/null 2>&1
timeout 100 compute-sanitizer --tool racecheck --racecheck-report all --print-limit 30 python3 benchmarks/sanitize_cases.py --config sm90_wgmma_64x128x128_prepass_splitk_bf16xnvfp4 > $OUT/race_new.log 2>&1
tail -2 $OUT/race_new.log
use() { cp scratch/v9/$1/common.cuh scratch/v9/$1/direct_gemm.cuh scratch/v9/$1/wgmma_gemm.cuh scratch/v9/$1/launcher.cuh csrc/include/nvfp4_gemm/sm90/; cp scratch/v9/$1/configs.toml csrc/; cp scratch/v9/$1/sm90_model.py python/nvfp4_gemm/; }
use base
source benchmarks/device_build.sh 90a > /dev/null 2>&1
timeout 100 compute-sanitizer --tool racecheck --racecheck-report all --print-limit 30 python3 benchmarks/sanitize_cases.py --config sm90_wgmma_64x128x128_prepass_splitk_bf16xnvfp4 > $OUT/race_base.log 2>&1
tail -2 $OUT/race_base.log
