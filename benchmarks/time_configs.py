"""Time chosen (config, split_k) pairs on one shape, each verified against the exact reference first
(the same method as the tuner: CUDA events, L2 flushed, warm-up, median). For A/B runs of kernel
variants inside one device lease, where the tuner's full sweep would take too long:

    python benchmarks/time_configs.py 128x7168x16384 sm90_wgmma_128x128x128_prepass_splitk:2 \\
        sm90_wgmma_128x256x128_prepass_splitk:2
"""

import sys

import torch

from nvfp4_gemm.testing import random_operands
from nvfp4_gemm.tune import verify_and_time


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    m, n, k = (int(x) for x in argv[0].split("x"))
    ops = random_operands(m, n, k, seed=7, device="cuda")
    out = torch.empty((m, n), dtype=torch.float16, device="cuda")
    failed = 0
    for pair in argv[1:]:
        name, _, split = pair.partition(":")
        split_k = int(split or 1)
        us, summary = verify_and_time(ops, out, name, split_k)
        if us is None:
            print(f"{m}x{n}x{k} {name} split_k={split_k}: FAILED verification ({summary})")
            failed += 1
        else:
            print(f"{m}x{n}x{k} {name} split_k={split_k}: {us:.2f} us")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
