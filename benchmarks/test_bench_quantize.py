"""Quantize speed (needs a supported GPU; skipped elsewhere, see conftest.py). Device times from CUDA
events with the L2 flushed before each call (nvfp4_gemm.timing) are in `extra_info`, next to a torch
device-to-device copy of the same number of bytes timed in the same run:

- quantize bf16 (8192, 7168), static and dynamic global scale: bytes = read 2MK + write MK/2 + MK/16
  (the blocked scales); `pct_of_copy` = copy time / quantize time (targets: static >= 80 %, dynamic >= 60 %);
- decode, M = 1..128 at K = 7168, dynamic (target <= 5 us) and static;
- NVFP4Linear (dynamic input scale) at M = 16, N = K = 7168: quantize + gemm next to the gemm alone
  on pre-quantized input (target: within 1.3x).
Every timed quantize is first checked bit for bit against the CPU reference.
"""

import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import formats
from nvfp4_gemm.nn import NVFP4Linear
from nvfp4_gemm.timing import time_cuda

from test_bench_gemm import timed


def quantize_bytes(m: int, k: int) -> int:
    return 2 * m * k + m * k // 2 + formats.blocked_scale_numel(m, k)


def verified_quantize(x, global_scale):
    """The call to time, after checking its result against the reference once."""
    got = nvfp4_gemm.quantize(x, global_scale)
    want = formats.quantize_reference(x.cpu(), None if global_scale is None else global_scale.cpu())
    assert torch.equal(got.data.cpu(), want[0]) and torch.equal(got.scale.cpu().view(torch.uint8), want[1].view(torch.uint8))
    out = got
    return lambda: nvfp4_gemm.quantize(x, global_scale, out=out)


def random_bf16(m, k, seed=0):
    return torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=torch.Generator("cuda").manual_seed(seed))


@pytest.mark.parametrize("mode", ["static", "dynamic"])
def test_quantize_large(benchmark, mode):
    m, k = 8192, 7168
    x = random_bf16(m, k)
    global_scale = torch.tensor([2688.0 / 6.0], device="cuda") if mode == "static" else None
    fn = verified_quantize(x, global_scale)
    device_us = time_cuda(fn).median_us
    half = quantize_bytes(m, k) // 2  # a copy reads and writes this many bytes: the same total
    src = torch.empty(half, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    copy_us = time_cuda(lambda: dst.copy_(src)).median_us
    benchmark.extra_info.update(
        device_us=device_us,
        copy_us=copy_us,
        tb_per_s=quantize_bytes(m, k) / (device_us * 1e-6) / 1e12,
        pct_of_copy=100.0 * copy_us / device_us,
        gpu=torch.cuda.get_device_name(),
    )
    print(f"\nquantize {mode} bf16 {m}x{k}: {device_us:.1f} us, copy of the same bytes {copy_us:.1f} us "
          f"({100.0 * copy_us / device_us:.0f} % of copy bandwidth)")
    timed(benchmark, fn)


@pytest.mark.parametrize("mode", ["dynamic", "static"])
@pytest.mark.parametrize("m", [1, 2, 4, 8, 16, 32, 64, 128])
def test_quantize_decode(benchmark, m, mode):
    k = 7168
    x = random_bf16(m, k, seed=m)
    fn = verified_quantize(x, torch.tensor([100.0], device="cuda") if mode == "static" else None)
    device_us = time_cuda(fn).median_us
    benchmark.extra_info.update(device_us=device_us, gpu=torch.cuda.get_device_name())
    print(f"\nquantize {mode} bf16 {m}x{k}: {device_us:.2f} us")
    timed(benchmark, fn)


def test_nvfp4_linear_m16_against_gemm_alone(benchmark):
    m, n, k = 16, 7168, 7168
    linear = torch.nn.Linear(k, n, bias=False, device="cuda", dtype=torch.bfloat16)
    layer = NVFP4Linear.from_linear(linear)
    x = random_bf16(m, k, seed=1)
    q = nvfp4_gemm.quantize(x, partner_global_scale=layer.weight_global_scale)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)

    def gemm_alone():
        nvfp4_gemm.gemm(q.data, layer.weight, q.scale, layer.weight_scale, q.alpha, out=out)

    with torch.no_grad():
        layer_us = time_cuda(lambda: layer(x)).median_us
        gemm_us = time_cuda(gemm_alone).median_us
        benchmark.extra_info.update(layer_us=layer_us, gemm_us=gemm_us, ratio=layer_us / gemm_us,
                                    gpu=torch.cuda.get_device_name())
        print(f"\nNVFP4Linear {m}x{n}x{k}: layer {layer_us:.1f} us, gemm alone {gemm_us:.1f} us "
              f"({layer_us / gemm_us:.2f}x)")
        timed(benchmark, lambda: layer(x))
