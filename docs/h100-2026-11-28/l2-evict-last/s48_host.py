"""Host time per eager call (us, 200-call bursts, median of 9), the layer forwards taken apart: each op as the
forward calls it, on the forward's own tensors (hostcost.TINY shape, bf16 x)."""
import torch, nvfp4_gemm
from nvfp4_gemm.tools import hostcost
from nvfp4_gemm.nn import NVFP4Linear, _EAGER_OPS
m, n, k = hostcost.TINY
x = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
lin = torch.nn.Linear(k, n, bias=False, dtype=torch.bfloat16, device="cuda")
w4 = NVFP4Linear.from_linear(lin, activations="nvfp4")
w16 = NVFP4Linear.from_linear(lin, activations="bf16")
quantize_call, gemm_call = _EAGER_OPS
data, scale, gs, alpha = quantize_call(x, None, w4.weight_global_scale)
alpha16 = w16._weight_only_scale()
tiny = torch.zeros(16, device="cuda")
rows = [
    ("floor tiny.add_(1)", lambda: tiny.add_(1)),
    ("quantize C++ callable (x, None, wgs)", lambda: quantize_call(x, None, w4.weight_global_scale)),
    ("gemm C++ callable, NVFP4 x NVFP4", lambda: gemm_call(data, w4.weight, scale, w4.weight_scale, alpha, x.dtype)),
    ("W4A4 forward", lambda: w4(x)),
    ("gemm op, bf16 x NVFP4 (as the W4A16 forward calls it)", lambda: torch.ops.nvfp4.gemm(x, w16.weight, None, w16.weight_scale, alpha16, x.dtype)),
    ("gemm C++ callable, bf16 x NVFP4", lambda: gemm_call(x, w16.weight, None, w16.weight_scale, alpha16, x.dtype)),
    ("W4A16 forward", lambda: w16(x)),
    ("W4A16 _weight_only_scale()", lambda: w16._weight_only_scale()),
    ("nn.Linear bf16 forward (cuBLAS)", lambda: lin(x)),
]
print(f"{torch.cuda.get_device_name()}, shape {m}x{n}x{k}")
for name, fn in rows:
    print(f"{name:58s} {hostcost.burst_us(fn):6.1f} us", flush=True)
