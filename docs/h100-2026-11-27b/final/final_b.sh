# Final tree: GPU tests of the quantize op and the layers that call it, compute-sanitizer on the quantize cases.
set -o pipefail
L=$OUT/log.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $L
source benchmarks/device_build.sh 90a >> $L 2>&1 || { tail -30 $OUT/build.log >> $L; exit 1; }
timeout 330 python3 -m pytest -q -p no:cacheprovider tests/test_quantize_gpu.py tests/test_quantize.py tests/test_mx_quantize_gpu.py tests/test_nn.py tests/test_mx_nn.py -rs > $OUT/pytest.log 2>&1; tail -4 $OUT/pytest.log >> $L
timeout 150 compute-sanitizer --tool memcheck python3 benchmarks/sanitize_quantize.py > $OUT/memcheck.txt 2>&1; tail -1 $OUT/memcheck.txt >> $L
timeout 100 compute-sanitizer --tool racecheck python3 benchmarks/sanitize_quantize.py --cases 6,7,8 > $OUT/racecheck.txt 2>&1; tail -1 $OUT/racecheck.txt >> $L
timeout 60 compute-sanitizer --tool synccheck python3 benchmarks/sanitize_quantize.py --cases 6,8 > $OUT/synccheck.txt 2>&1; tail -1 $OUT/synccheck.txt >> $L
cat $L
