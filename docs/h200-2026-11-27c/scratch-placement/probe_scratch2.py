"""Finer sweep of the dynamic scale's scratch placement (see probe_scratch.py): offsets 0..8 KiB in 128-byte steps
inside one buffer, M = 128, the same x; kernel spans (L2 flushed, median of 30); then the fast and slow offsets
again in a second buffer, to see whether the pattern is the offset's or the page's."""
import torch, nvfp4_gemm
from nvfp4_gemm import quantization, _C
from nvfp4_gemm.tools.timing import time_kernels
print(torch.cuda.get_device_name(), flush=True)
index = torch.cuda.current_device()
stream = torch.cuda.current_stream().cuda_stream
n = _C.QUANTIZE_AMAX_SCRATCH_BYTES
x = torch.randn(128, 7168, device="cuda", dtype=torch.bfloat16, generator=torch.Generator("cuda").manual_seed(128))
def span(buf, off):
    scratch = buf[off:off + n]
    scratch.zero_()
    quantization._amax_scratch[(index, stream)] = scratch
    out = nvfp4_gemm.quantize(x)
    return time_kernels(lambda: nvfp4_gemm.quantize(x, out=out), iters=30).median_us
for b in range(3):
    buf = torch.zeros(4 << 20, dtype=torch.uint8, device="cuda")
    print(f"buffer {b} at {buf.data_ptr():#x}", flush=True)
    offsets = range(0, 8192 + 1, 128) if b == 0 else range(0, 8192 + 1, 512)
    cells = [f"{off}:{span(buf, off):.2f}" for off in offsets]
    print(" ".join(cells), flush=True)
