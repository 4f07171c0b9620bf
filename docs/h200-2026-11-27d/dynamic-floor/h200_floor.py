"""Where the dynamic quantize's time goes against pure data movement, bf16 8192x7168 (H200): CUDA events, L2 flushed
(zero_ of a buffer, as the benchmark), median of 200: this tree's dynamic and static quantize, and (argv[2] ==
'events') torch reads and copies of x's bytes. With argv[2] == 'ncu' each op runs twice, for ncu to profile."""
import sys, torch, nvfp4_gemm
from nvfp4_gemm.tools.timing import time_cuda
label, mode = sys.argv[1], sys.argv[2]
M, K = 8192, 7168
x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=torch.Generator("cuda").manual_seed(0))
gs = torch.tensor([400.0], device="cuda")
out_d = nvfp4_gemm.quantize(x)
out_s = nvfp4_gemm.quantize(x, gs)
nbytes = 2 * M * K + M * K // 2 + M * K // 16
src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda"); dst = torch.empty_like(src)
x2 = torch.empty_like(x)
ops = {
    "quantize dynamic": lambda: nvfp4_gemm.quantize(x, out=out_d),
    "quantize static": lambda: nvfp4_gemm.quantize(x, gs, out=out_s),
}
if label == "main":
    ops.update({
        "copy, quantize's bytes": lambda: dst.copy_(src),
        "amax(x) (read x)": lambda: torch.amax(x),
        "x.view(int32).max() (read x)": lambda: x.view(torch.int32).max(),
        "copy of x (read + write x)": lambda: x2.copy_(x),
    })
for name, fn in ops.items():
    if mode == "ncu":
        fn(); fn(); torch.cuda.synchronize()
    else:
        t = [time_cuda(fn, iters=200).median_us for _ in range(2)]
        print(f"{label:5s} {name:32s} {t[0]:7.2f} {t[1]:7.2f} us", flush=True)
