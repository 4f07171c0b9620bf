"""Warp-state samples of the wgmma kernel's SASS source page (ncu --page source --csv --print-source sass, one
profiled call of 128x2112x7168, gzipped beside this file) summed by phase of the kernel; the phase boundaries are
instruction indices read off this build's SASS (barrier init, setmaxnreg, the consumers' first full-barrier wait,
their main loop, the epilogue's cluster barriers and reduction, the producer).
    python sass_phases.py sass_128x2112x7168.csv.gz"""
import csv
import gzip
import io
import sys

rows = list(csv.reader(io.TextIOWrapper(gzip.open(sys.argv[1]), encoding="utf-8")))
head = next(i for i, r in enumerate(rows) if "Address" in r and "Source" in r)
header = rows[head]
SAMPLES = "Warp Stall Sampling (All Samples)"
body = [dict(zip(header, r)) for r in rows[head + 1:] if len(r) == len(header) and r[header.index("Address")].startswith("0x")]
body = body[:len(body) // 2]  # the page lists the kernel twice (two launches profiled)


def samples(i):
    try:
        return int(body[i][SAMPLES])
    except ValueError:
        return 0


phases = {
    "prologue (barrier init, setmaxnreg)": (0, 126),
    "consumers: set-up": (126, 208),
    "consumers: waiting for a full slot (every stage)": (208, 211),
    "consumers: main loop": (211, 442),
    "consumers: FP32 tile to shared memory": (442, 1397),
    "consumers: first cluster barrier": (1397, 1405),
    "consumers: cluster reduction and stores": (1405, 1934),
    "consumers: last cluster barrier": (1934, 1944),
    "producers: loads": (1944, 2368),
    "producers: the epilogue's cluster barriers": (2368, 2395),
}
total = sum(samples(i) for i in range(len(body)))
for name, (lo, hi) in phases.items():
    s = sum(samples(i) for i in range(lo, hi))
    print(f"{name:45s} {s:5d} {100 * s / total:5.1f} %")
print(f"{'all':45s} {total:5d}")
