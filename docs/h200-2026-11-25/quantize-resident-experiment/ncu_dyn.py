import torch, nvfp4_gemm
x = torch.randn(8192, 7168, device="cuda", dtype=torch.bfloat16)
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
for _ in range(3):
    nvfp4_gemm.quantize(x, None)
flush.zero_()
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
nvfp4_gemm.quantize(x, None)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
