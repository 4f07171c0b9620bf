"""Why a partner global scale adds ~0.45 us (H200) to the decode quantize's span at M = 128 and ~0 at M = 1: the same
x with and without the partner, interleaved; the kernels each call launches (profiler), and their spans."""
import torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_kernels
from torch.profiler import profile, ProfilerActivity
partner = torch.tensor([37.0], device="cuda")
one = torch.tensor([1.0], device="cuda")
for m in (1, 16, 64, 128):
    x = torch.randn(m, 7168, device="cuda", dtype=torch.bfloat16, generator=torch.Generator("cuda").manual_seed(m))
    out = nvfp4_gemm.quantize(x)
    calls = {
        "none": lambda: nvfp4_gemm.quantize(x, out=out),
        "partner37": lambda: nvfp4_gemm.quantize(x, partner_global_scale=partner, out=out),
        "partner1": lambda: nvfp4_gemm.quantize(x, partner_global_scale=one, out=out),
        "op_none": lambda: torch.ops.nvfp4.quantize(x, None, None, "nvfp4"),
        "op_partner37": lambda: torch.ops.nvfp4.quantize(x, None, partner, "nvfp4"),
    }
    row = []
    for r in range(3):
        for name, fn in calls.items():
            row.append(f"{name}:{time_kernels(fn).median_us:.2f}")
    print(f"M={m} " + " ".join(row), flush=True)
    for name in ("none", "partner37", "op_partner37"):
        for _ in range(3):
            calls[name]()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            calls[name]()
            torch.cuda.synchronize()
        kernels = [e.name[:60] for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        print(f"  M={m} {name}: {len(kernels)} device activities: {kernels}", flush=True)
