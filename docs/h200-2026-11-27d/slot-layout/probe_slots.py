"""Decode dynamic quantize's kernel span (us, median of 30, L2 flushed) with the dynamic-scale scratch placed at
byte offsets 0..4 KiB (128-byte steps) of one buffer, M = 128 and 64, the same x; each offset's codes checked bit
for bit against the CPU op. Prints each offset and the spread."""
import statistics, sys, torch, nvfp4_gemm
from nvfp4_gemm import quantization, _C
from nvfp4_gemm.tools.timing import time_kernels
label = sys.argv[1]
index = torch.cuda.current_device()
stream = torch.cuda.current_stream().cuda_stream
n = _C.QUANTIZE_AMAX_SCRATCH_BYTES
buf = torch.zeros(4 << 20, dtype=torch.uint8, device="cuda")
for m in (128, 64):
    x = torch.randn(m, 7168, device="cuda", dtype=torch.bfloat16, generator=torch.Generator("cuda").manual_seed(m))
    want = nvfp4_gemm.quantize(x.cpu())
    cells, spans = [], []
    for off in range(0, 4096 + 1, 128):
        scratch = buf[off:off + n]
        scratch.zero_()
        quantization._amax_scratch[(index, stream)] = scratch
        out = nvfp4_gemm.quantize(x)
        assert all(torch.equal(a.cpu().view(torch.uint8), b.view(torch.uint8)) for a, b in zip(out[:2], want[:2])) and torch.equal(out[2].cpu(), want[2]), (label, m, off)
        s = time_kernels(lambda: nvfp4_gemm.quantize(x, out=out), iters=30).median_us
        spans.append(s); cells.append(f"{off}:{s:.2f}")
    print(f"{label} M={m} " + " ".join(cells), flush=True)
    print(f"{label} M={m} summary min {min(spans):.2f} median {statistics.median(spans):.2f} max {max(spans):.2f}", flush=True)
