"""Instruction counts of the loops (backward branches over 60+ instructions) of one kernel in a SASS dump.

    cuobjdump -sass kernels.cubin > k.sass
    python sass_loops.py k.sass FIRST_LINE LAST_LINE   # the kernel's lines ("Function :" to the next)
"""
import collections
import re
import sys

lines = open(sys.argv[1]).read().splitlines()[int(sys.argv[2]):int(sys.argv[3])]
instructions = []  # (address, text)
for line in lines:
    m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
    if m:
        instructions.append((int(m.group(1), 16), m.group(2)))
index = {address: i for i, (address, _) in enumerate(instructions)}
for i, (address, text) in enumerate(instructions):
    target = re.search(r"0x([0-9a-f]+)", text) if "BRA" in text else None
    if not target or int(target.group(1), 16) >= address or int(target.group(1), 16) not in index:
        continue
    body = instructions[index[int(target.group(1), 16)]:i + 1]
    if len(body) < 60:
        continue
    opcodes = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", t).split()[0].split(".")[0] for _, t in body)
    print(f"loop {int(target.group(1), 16):x}-{address:x}: {len(body)} instr;",
          ", ".join(f"{k} {v}" for k, v in opcodes.most_common(18)))
