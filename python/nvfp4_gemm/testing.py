"""Random NVFP4 operands for tests, benchmarks and the demo.

FP4 bytes are uniform over all 256 values (so every one of the 16 codes appears in both nibbles);
scales are drawn from a spread of positive e4m3 values so that blocks differ. Nothing is ever
all-zero or all-equal (shared/spec/nvfp4.md, "Correctness bar").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from .formats import blocked_scale_numel, to_blocked

__all__ = ["Operands", "random_operands", "random_scales"]


@dataclass
class Operands:
    a: torch.Tensor  # (m, k/2) or (l, m, k/2) uint8
    b: torch.Tensor  # (n, k/2) or (l, n, k/2) uint8
    a_scale: torch.Tensor  # blocked, flat, float8_e4m3fn
    b_scale: torch.Tensor
    alpha: Optional[torch.Tensor]  # fp32 scalar tensor or None


def random_scales(
    rows: int, k: int, l: int, generator: torch.Generator, exponent_range: tuple[int, int] = (-4, 4)
) -> torch.Tensor:
    """Plain (l, rows, k/16) e4m3 scales: 2**e * (1 + f/8), e in exponent_range, f in 0..7.

    These are exact e4m3 values (3 mantissa bits), positive, as quantizers produce them; the
    default spread of 2**-4..2**4 keeps fp16 outputs of K up to 16384 finite.
    """
    shape = (l, rows, k // 16)
    exponent = torch.randint(exponent_range[0], exponent_range[1] + 1, shape, generator=generator)
    fraction = torch.randint(0, 8, shape, generator=generator)
    values = torch.ldexp(1.0 + fraction.to(torch.float32) / 8.0, exponent.to(torch.float32))
    return values.to(torch.float8_e4m3fn)


def random_operands(
    m: int,
    n: int,
    k: int,
    l: Optional[int] = None,
    *,
    seed: int,
    device: torch.device | str = "cpu",
    with_alpha: bool = False,
    padding_byte: int = 0,
) -> Operands:
    """Fresh random operands. `l=None` gives 2-D operands; an int gives (l, rows, k/2) ones.

    `padding_byte` fills the blocked layout's padding (the contract says kernels must ignore it:
    use a nonzero finite e4m3 byte such as 0x38 (= 1.0) to test that).
    """
    generator = torch.Generator().manual_seed(seed)
    batches = 1 if l is None else l
    a = torch.randint(0, 256, (batches, m, k // 2), dtype=torch.uint8, generator=generator)
    b = torch.randint(0, 256, (batches, n, k // 2), dtype=torch.uint8, generator=generator)
    a_scale = _blocked_with_padding(random_scales(m, k, batches, generator), padding_byte)
    b_scale = _blocked_with_padding(random_scales(n, k, batches, generator), padding_byte)
    assert a_scale.numel() == blocked_scale_numel(m, k, batches)
    alpha = None
    if with_alpha:
        alpha = torch.ldexp(torch.tensor(1.0 + torch.rand((), generator=generator).item()), torch.tensor(-3.0))
        alpha = alpha.to(torch.float32).reshape(())
    if l is None:
        a, b = a[0], b[0]
    return Operands(
        a=a.to(device),
        b=b.to(device),
        a_scale=a_scale.to(device),
        b_scale=b_scale.to(device),
        alpha=None if alpha is None else alpha.to(device),
    )


def _blocked_with_padding(plain: torch.Tensor, padding_byte: int) -> torch.Tensor:
    blocked = to_blocked(plain)
    if padding_byte:
        marker = to_blocked(torch.ones_like(plain.view(torch.uint8))).bool()
        blocked.view(torch.uint8)[~marker] = padding_byte
    return blocked
