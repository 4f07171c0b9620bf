set -o pipefail
source benchmarks/device_build.sh 90a > $OUT/log.txt 2>&1 || { tail -30 $OUT/build.log; exit 1; }
name=$(python3 -c "import torch;print(torch.cuda.get_device_name().lower().replace(' ','_'))")
timeout 400 python3 -m nvfp4_gemm tune --out $OUT/$name.json >> $OUT/log.txt 2>&1; echo "rc $?" >> $OUT/log.txt
tail -15 $OUT/log.txt
