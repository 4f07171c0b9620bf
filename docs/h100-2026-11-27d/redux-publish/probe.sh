# Stop 40, third call: on an H200 the bar suite at HEAD and decode A/B (s40b.sh), then the M = 1024 probe; elsewhere
# the probe alone (base 289fcb1 / HEAD, interleaved).
set -u
L=$OUT/log.txt
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  timeout 480 bash scratch/s40b.sh > /dev/null 2>&1
  for r in 1 2; do for v in base head; do PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 30 python3 scratch/probe1024.py $v 4 >> $L 2>&1; done; done
  cat $L; exit 0
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a $L
export PYTHONUNBUFFERED=1
[ -d /tmp/site/cutlass_library ] || python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .carry/*.whl
build() {
  rm -rf /tmp/src_$1 /tmp/pkg_$1 && mkdir /tmp/src_$1 && cp -r CMakeLists.txt pyproject.toml csrc python third_party README.md /tmp/src_$1/
  (cd /tmp/src_$1 && eval "$2") || exit 1
  (cd /tmp/src_$1 && NVFP4_GEMM_CUDA_ARCHS=90a PYTHONPATH=/tmp/site python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/pkg_$1 . > /tmp/build_$1.log 2>&1) || { tail -30 /tmp/build_$1.log; exit 1; }
  echo "built $1" >> $L
}
R=$PWD
build base "git apply -R $R/scratch/redux_publish.diff" &
build head "true" &
wait
for r in 1 2 3; do for v in base head; do PYTHONPATH=/tmp/pkg_$v:/tmp/site timeout 60 python3 scratch/probe1024.py $v 8 >> $L 2>&1; done; done
cat $L
