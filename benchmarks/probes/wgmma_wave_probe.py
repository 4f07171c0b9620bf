"""How the wgmma kernel's time grows with its CTA count around one wave (132 SMs on the H100/H200, one CTA
per SM): a pinned config at split 1 on weight counts N that give 56 .. 264 tiles, the same K and tokens.
If 132 tiles take about as long as 112, the SMs a 112-CTA grid leaves idle are lost time that a schedule
covering every SM (stream-K) would recover; if time grows with the tiles, a shared resource binds instead.
Each point is verified against the exact reference first (nvfp4_gemm.tools.tune.verify_and_time: CUDA
events, L2 flushed, median).

    python benchmarks/probes/wgmma_wave_probe.py
"""

import torch

from nvfp4_gemm.configs import load_table
from nvfp4_gemm.tools.testing import random_operands
from nvfp4_gemm.tools.tune import verify_and_time

# (config, tokens M, K)
CASES = [
    ("sm90_wgmma_128x128x128_prepass_splitk_bf16xnvfp4", 128, 4096),
    ("sm90_wgmma_64x128x128_prepass_splitk_bf16xnvfp4", 64, 4096),
    ("sm90_wgmma_128x256x128_prepass_splitk_bf16xnvfp4", 128, 4096),
]
TILES = [56, 84, 112, 120, 132, 144, 176, 264]


def main() -> None:
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"{torch.cuda.get_device_name(0)}, {sms} SMs")
    table = load_table()
    for config, m, k in CASES:
        row = table.by_name(config)
        rows_per_tile = int(config.split("_")[2].split("x")[1])
        for tiles in TILES:
            n = tiles * rows_per_tile
            ops = random_operands(m, n, k, seed=tiles, device="cuda", format=row.format)
            out = torch.empty((m, n), dtype=torch.bfloat16, device="cuda")
            us, summary = verify_and_time(ops, out, config, 1, iters=50)
            if us is None:
                print(f"{config} {m}x{n}x{k}: FAILED ({summary})")
                continue
            print(f"{config} {m}x{n}x{k}: {tiles:4d} tiles {us:8.2f} us  {us / tiles:6.3f} us per tile")


if __name__ == "__main__":
    main()
