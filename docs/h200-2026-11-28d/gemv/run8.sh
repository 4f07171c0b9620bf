#!/usr/bin/env bash
# Stop 52 call 8: the whole suite with -x as in call 4, its first failure's message and the tests before it.
set -u
L=$OUT/log.txt
NEED_GPU=H200 source benchmarks/device_build.sh 90a > $L 2>&1 || { cat $L; exit 1; }
timeout 200 python3 -m pytest -x -v -p no:cacheprovider --tb=short tests > $OUT/suite.log 2>&1
echo "rc=$?: $(tail -1 $OUT/suite.log)" >> $L
grep -E "(PASSED|FAILED|SKIPPED|ERROR)" $OUT/suite.log | grep -B6 -m1 -E "FAILED|ERROR" >> $L
grep -E "^E  " $OUT/suite.log | head -25 >> $L
cat $L
