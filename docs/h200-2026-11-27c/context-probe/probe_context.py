"""The decode quantize's span at M = 128 (and 16) by call context on the same data: through the op (its own scratch,
fresh outputs) or nvfp4_gemm.quantize with out= (the Python path's scratch), and with x copied to offsets 0..7 MiB
inside one large buffer (x's placement); kernel spans, L2 flushed, median of 50."""
import torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_kernels
print(torch.cuda.get_device_name(), flush=True)
for m in (16, 128):
    x0 = torch.randn(m, 7168, device="cuda", dtype=torch.bfloat16, generator=torch.Generator("cuda").manual_seed(m))
    big = torch.empty(16 << 20, dtype=torch.uint8, device="cuda")
    rows = []
    for r in range(2):
        cells = []
        for off_mib in range(8):
            x = big[off_mib << 20:(off_mib << 20) + x0.numel() * 2].view(torch.bfloat16).view(m, 7168)
            x.copy_(x0)
            out = nvfp4_gemm.quantize(x)
            a = time_kernels(lambda: torch.ops.nvfp4.quantize(x, None, None, "nvfp4")).median_us
            b = time_kernels(lambda: nvfp4_gemm.quantize(x, out=out)).median_us
            cells.append(f"{off_mib}MiB op {a:.2f} out= {b:.2f}")
        print(f"M={m} round {r}: " + " | ".join(cells), flush=True)
