"""Is the decode span at M = 128 set by where the dynamic scale's scratch (the tagged partial slots every CTA polls)
lies? The Python path's scratch replaced by zeroed slices of one buffer at several byte offsets; the same x; kernel
spans (L2 flushed, median of 50), two rounds; the op path beside as a reference."""
import torch, nvfp4_gemm
from nvfp4_gemm import quantization, _C
from nvfp4_gemm.tools.timing import time_kernels
print(torch.cuda.get_device_name(), "scratch bytes", _C.QUANTIZE_AMAX_SCRATCH_BYTES, flush=True)
index = torch.cuda.current_device()
stream = torch.cuda.current_stream().cuda_stream
big = torch.zeros(8 << 20, dtype=torch.uint8, device="cuda")
n = _C.QUANTIZE_AMAX_SCRATCH_BYTES
offsets = [0, 256, 512, 1024, 2048, 4096, 8192, 16384, 65536, 1 << 20, (3 << 20) + 4096, (5 << 20) + 12288]
for m in (128, 64):
    x = torch.randn(m, 7168, device="cuda", dtype=torch.bfloat16, generator=torch.Generator("cuda").manual_seed(m))
    for r in range(2):
        cells = [f"op {time_kernels(lambda: torch.ops.nvfp4.quantize(x, None, None, 'nvfp4')).median_us:.2f}"]
        for off in offsets:
            scratch = big[off:off + n]
            scratch.zero_()
            quantization._amax_scratch[(index, stream)] = scratch
            out = nvfp4_gemm.quantize(x)
            cells.append(f"+{off}:{time_kernels(lambda: nvfp4_gemm.quantize(x, out=out)).median_us:.2f}")
        print(f"M={m} r{r}: " + " ".join(cells), flush=True)
