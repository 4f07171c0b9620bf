"""`python -m nvfp4_gemm`: run one GEMM through torch.ops.nvfp4.gemm and check it.

On a GPU this wheel has kernels for, the CUDA path runs; anywhere else the CPU reference path runs
and the message says why. Exit status 1 if the result does not match the exact reference.
"""

from __future__ import annotations

import argparse
import sys

import torch

from . import compiled_architectures, supported_capabilities
from .formats import reference_gemm
from .testing import random_operands


def _pick_device() -> tuple[torch.device, str]:
    archs = ", ".join(compiled_architectures()) or "none"
    if not torch.cuda.is_available():
        return torch.device("cpu"), f"no CUDA GPU visible; CPU reference path (wheel carries: {archs})"
    capability = torch.cuda.get_device_capability()
    name = torch.cuda.get_device_name()
    if capability not in supported_capabilities():
        return torch.device("cpu"), (
            f"{name} (compute capability {capability[0]}.{capability[1]}) has no kernel in this wheel "
            f"(carries: {archs}); CPU reference path"
        )
    return torch.device("cuda"), f"{name} (compute capability {capability[0]}.{capability[1]}), kernels: {archs}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nvfp4_gemm", description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=128)
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--k", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    device, how = _pick_device()
    print(f"nvfp4_gemm: {how}")
    ops = random_operands(args.m, args.n, args.k, seed=args.seed, device=device, with_alpha=True)
    out = torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, torch.float16)
    if device.type == "cuda":
        torch.cuda.synchronize()
    expected = reference_gemm(ops.a.cpu(), ops.b.cpu(), ops.a_scale.cpu(), ops.b_scale.cpu(), ops.alpha.cpu())
    got = out.cpu()
    close = torch.isclose(got.float(), expected.float(), rtol=1e-3, atol=1e-3)
    exact = (got == expected).float().mean().item()
    ok = bool(close.all()) and bool(torch.isfinite(got).all())
    print(
        f"M={args.m} N={args.n} K={args.k} fp16 on {device}: "
        f"{'PASS' if ok else 'FAIL'} (rtol=atol=1e-3; {exact:.1%} of elements bitwise equal to the exact reference)"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
