# The direct kernel's token staging: base vs notok (no global token reads, the staging's barriers and
# stores kept), bare (no dequantization, no MMAs) vs bare_notok; M = 1, 16; two interleaved rounds.
case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H200*) ;; *) echo "not an H200"; exit 3 ;; esac
VARIANTS="notok bare bare_notok" MS=1,16 bash scratch/s49b.sh > /dev/null 2>&1
cat $OUT/log.txt | grep -v "^ *$" | tail -80
