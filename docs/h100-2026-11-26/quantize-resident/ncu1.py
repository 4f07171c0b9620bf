import torch, nvfp4_gemm
x = torch.randn(8192, 7168, device="cuda", dtype=torch.bfloat16)
out = nvfp4_gemm.quantize(x)
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize(); flush.zero_(); torch.cuda.synchronize()
nvfp4_gemm.quantize(x, out=out); torch.cuda.synchronize()
