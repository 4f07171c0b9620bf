"""Warp-state samples of an ncu source page (`ncu -i R --page source --csv --print-source sass`) summed over the
wgmma kernel's consumer main loop (the backward branch whose body holds the HGMMAs) and over the rest:
    python stalls.py w128_sass.csv"""
import csv
import re
import sys
from collections import Counter

rows = list(csv.reader(open(sys.argv[1])))
header = rows[1]
body = [dict(zip(header, r)) for r in rows[2:] if len(r) == len(header)]
addr = [int(r["Address"], 16) for r in body]
reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
loop = None
for i, r in enumerate(body):
    m = re.search(r"BRA (0x[0-9a-f]+)", r["Source"])
    if m and int(m.group(1), 16) < addr[i]:
        lo = addr.index(int(m.group(1), 16)) if int(m.group(1), 16) in addr else None
        if lo is not None and sum("HGMMA" in b["Source"] for b in body[lo:i + 1]) >= 4:
            loop = (lo, i)
            break
lo, hi = loop
inside = body[lo:hi + 1]
total = sum(int(r["Warp Stall Sampling (All Samples)"]) for r in body)
loop_samples = sum(int(r["Warp Stall Sampling (All Samples)"]) for r in inside)
by_reason = Counter()
for r in inside:
    for reason in reasons:
        by_reason[reason[6:]] += int(r[reason] or 0)
print(f"{sys.argv[1]}: {total} samples, consumer loop {hi - lo + 1} instructions per stage and warp, {loop_samples} samples")
print("  loop samples by reason: " + ", ".join(f"{k} {v}" for k, v in by_reason.most_common(10) if v))
top = sorted(inside, key=lambda r: -int(r["Warp Stall Sampling (All Samples)"]))[:8]
for r in top:
    parts = Counter({reason[6:]: int(r[reason] or 0) for reason in reasons})
    print(f"  {int(r['Warp Stall Sampling (All Samples)']):5d} {r['Source'].strip()[:60]:60s} {parts.most_common(2)}")
