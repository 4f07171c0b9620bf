L=$OUT/log.txt
use() { cp scratch/v9/$1/common.cuh scratch/v9/$1/direct_gemm.cuh scratch/v9/$1/wgmma_gemm.cuh scratch/v9/$1/launcher.cuh csrc/include/nvfp4_gemm/sm90/; cp scratch/v9/$1/configs.toml csrc/; cp scratch/v9/$1/sm90_model.py python/nvfp4_gemm/; }
for v in new newb; do
  use $v
  source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
  pkg=$(python3 -c "import nvfp4_gemm,os;print(os.path.dirname(nvfp4_gemm.__file__))")
  rm -rf /tmp/pkg_$v && mkdir -p /tmp/pkg_$v && cp -r $pkg /tmp/pkg_$v/
done
echo "== split-route tests (newb)" >> $L
timeout 100 python3 -m pytest tests/test_weight_only.py tests/test_gpu.py -q -x -p no:cacheprovider -k "splits_reduce or split" >> $L 2>&1; tail -1 $L
for r in 1 2; do for v in new newb; do
  echo "== splits $v round $r" >> $L
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 60 python3 scratch/splits_v9.py >> $L 2>&1
done; done
for v in newb new; do
  echo "== weight_only_bench decode $v" >> $L
  PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 120 python3 benchmarks/weight_only_bench.py --m 1,4,16 --json $OUT/w4a16_dec_$v.json >> $L 2>&1; tail -3 $L
done
