"""Fused projections: one alpha per output column (each partition its own global scale) against one
shared global scale (the largest amax's, as serving stacks that fuse with a single alpha do), as the
partitions' amax ratio grows. Relative error of the small partition's output against bf16 x @ W.T in
float64 (x quantized the same way in both). CPU reference path; deterministic.

    python benchmarks/fused_alpha_accuracy.py
"""

import torch

import nvfp4_gemm


def small_partition_error(x: torch.Tensor, weights: list, shared: bool) -> float:
    xq = nvfp4_gemm.quantize(x)
    if shared:
        scale = torch.stack([nvfp4_gemm.quantize(w).global_scale for w in weights]).min()
        parts = [nvfp4_gemm.quantize(w, scale, partner_global_scale=xq.global_scale) for w in weights]
    else:
        parts = [nvfp4_gemm.quantize(w, partner_global_scale=xq.global_scale) for w in weights]
    small = parts[-1]
    out = nvfp4_gemm.gemm(xq.data, small.data, xq.scale, small.scale, small.alpha, torch.float32).double()
    reference = x.double() @ weights[-1].double().T
    return float((out - reference).norm() / reference.norm())


def main() -> None:
    gen = torch.Generator().manual_seed(52)
    x = torch.randn(16, 512, generator=gen).to(torch.bfloat16)
    print("| amax ratio | alpha per column | one shared global scale |")
    print("| --- | --- | --- |")
    for ratio in (1, 10, 1e2, 1e3, 1e4, 1e5, 1e6):
        weights = [torch.randn(128, 512, generator=gen).to(torch.bfloat16),
                   (torch.randn(128, 512, generator=gen) / ratio).to(torch.bfloat16)]
        own, shared = small_partition_error(x, weights, False), small_partition_error(x, weights, True)
        print(f"| {ratio:g} | {own:.4f} | {shared:.4f} |")


if __name__ == "__main__":
    main()
