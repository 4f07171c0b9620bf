"""Proof without a Blackwell GPU: the launcher's own argument builder, evaluated on the CPU.

For every sm100 registry entry (every format its row names: NVFP4, MXFP4, MXFP8 x MXFP4), `scale_offsets` reads the scale layouts (CUTLASS's
Sm1xxBlkScaledConfig) out of the very arguments the launch builds, and `host_reference` runs
CUTLASS's host GEMM (cutlass/util/reference/host/gett.hpp) over host copies of the operands with
those arguments' strides and layouts. The weight-only rows (CUTLASS's mixed-input kernel) compose the launch's
own scale conversion with the kernel's scale layout, and sum over their arguments' operands in float64. A wrong scale layout, operand stride, batch stride or B
orientation in the launcher makes these tests fail.
"""

import pytest
import torch

from nvfp4_gemm import _C, formats
from nvfp4_gemm.configs import load_table
from nvfp4_gemm.dtypes import gemm_format
from nvfp4_gemm.testing import random_operands

from conftest import sm100_kernels

KERNELS = [(name, dtype) for name, dtype, major in _C.kernels() if major == 10]
# the rows compiled with the per-column-alpha epilogue (alpha an (N,) vector), and the others
COLUMN_ALPHA = [(name, dtype) for name, dtype in KERNELS if _C.lookup(name, dtype).column_alpha]
ONE_ALPHA = [entry for entry in KERNELS if entry not in COLUMN_ALPHA]


@pytest.fixture(autouse=True)
def _needs_sm100():
    sm100_kernels()


def config_of(name):
    return load_table().by_name(name)


def expected_offsets(rows, k, l, block):
    """Where formats.to_blocked puts logical scale (l, row, k_block), by tagging each with its index."""
    cols = k // block.values_per_scale
    ids = torch.arange(1, l * rows * cols + 1, dtype=torch.int64).reshape(l, rows, cols)
    blocked = formats.to_blocked(ids, fmt=block)
    positions = torch.nonzero(blocked, as_tuple=True)[0]
    offsets = torch.empty(ids.numel(), dtype=torch.int64)
    offsets[blocked[positions] - 1] = positions
    return offsets


@pytest.mark.parametrize("name,dtype", KERNELS or [("none", "none")])
@pytest.mark.parametrize("operand", [0, 1], ids=["a_scale", "b_scale"])
@pytest.mark.parametrize("rows", [1, 100, 128, 129, 300])
@pytest.mark.parametrize("k,l", [(32, 1), (96, 3), (160, 1), (448, 3)])  # K/16 = 2, 6, 10, 28; K/32 = 1, 3, 5, 14
def test_scale_offsets_match_blocked_layout(name, dtype, operand, rows, k, l):
    kernel = _C.lookup(name, dtype)
    described = gemm_format(config_of(name).format)
    block = described.block
    if described.weight_only and operand == 0:
        with pytest.raises(ValueError, match="reads no a scales"):
            kernel.scale_offsets(operand, rows, k, l, torch.empty(1, dtype=torch.int64).data_ptr())
        return
    got = torch.full((l * rows * (k // block.values_per_scale),), -1, dtype=torch.int64)
    kernel.scale_offsets(operand, rows, k, l, got.data_ptr())
    assert torch.equal(got, expected_offsets(rows, k, l, block))


SHAPES = [
    # (m, n, k, l)
    (1, 8, 32, 1),
    (129, 24, 96, 1),  # M residue past one 128-row tile, N = 8 * 3, K = 32 * 3
    (64, 40, 160, 1),  # N = 8 * 5, K = 32 * 5
    (200, 136, 288, 1),  # N = 8 * 17 (past a 128-column tile), K = 32 * 9
    (33, 16, 64, 3),  # batched: per-matrix operand and scale strides
    (130, 8, 544, 2),
]


@pytest.mark.parametrize("name,dtype", ONE_ALPHA or [("none", "none")])
@pytest.mark.parametrize("m,n,k,l", SHAPES)
def test_cutlass_host_reference_equals_exact_reference(name, dtype, m, n, k, l):
    kernel = _C.lookup(name, dtype)
    config = config_of(name)
    multiple = (config.family_info.format_k_alignment or {}).get(config.format, 32)
    k = -(-k // multiple) * multiple  # MXFP8 x MXFP4 kernels take K % 128
    ops = random_operands(
        m, n, k, l, seed=m * 1000 + n + k + l, with_alpha=True, padding_byte=0x38, format=config.format
    )
    got = torch.full((l, m, n), float("nan"), dtype=torch.float64)
    alpha = ops.alpha.item()
    a_scale = 0 if ops.a_scale is None else ops.a_scale.data_ptr()  # weight-only: tokens as given
    kernel.host_reference(
        ops.a.data_ptr(), ops.b.data_ptr(), a_scale, ops.b_scale.data_ptr(), got.data_ptr(), m, n, k, l, alpha,
    )
    want = formats.reference_gemm_float64(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha)
    # Both sums are exact in float64 for this data (12-bit products, scales 0.125..3.75; MX: 6-bit
    # products times powers of two within 2^-9 .. 2^1; weight-only: a 16-bit token times 6 bits), so the
    # CUTLASS host GEMM over the launcher's layouts must agree bit for bit, before and after the
    # single rounding to the kernel's output dtype.
    assert torch.equal(got, want)
    out_dtype = getattr(torch, dtype)
    assert torch.equal(formats.round_once(got, out_dtype), formats.round_once(want, out_dtype))
    assert want.abs().max() > 0


def column_alpha(n, seed):
    """An (N,) alpha of partitions quantized apart: mantissas that are not powers of two over exponents -6..3,
    negative values, and zeros (a partition whose weights were all zero)."""
    gen = torch.Generator().manual_seed(seed)
    alpha = torch.ldexp(1.0 + torch.rand(n, generator=gen), torch.randint(-6, 4, (n,), generator=gen).float())
    alpha = torch.where(torch.rand(n, generator=gen) < 0.2, -alpha, alpha)
    alpha[torch.randperm(n, generator=gen)[: max(1, n // 8)]] = 0.0
    return alpha.to(torch.float32)


@pytest.mark.parametrize("name,dtype", COLUMN_ALPHA or [("none", "none")])
@pytest.mark.parametrize("m,n,k,l", SHAPES)
def test_cutlass_host_reference_with_column_alpha_equals_exact_reference(name, dtype, m, n, k, l):
    """The per-column-alpha rows: CUTLASS's host GEMM over the launcher's own arguments, each element then
    scaled by the alpha the launcher's epilogue arguments route to it (pointer and broadcast strides; the
    swap-AB kernel's per-row vector is the user's per-column one), equals the exact reference with alpha[n]
    bit for bit, batches sharing one vector."""
    kernel = _C.lookup(name, dtype)
    ops = random_operands(m, n, k, l, seed=m * 1000 + n + k + l + 5, padding_byte=0x38)
    alpha = column_alpha(n, seed=n + l)
    # NaN past the n values: a launcher whose stride walks off the vector (e.g. along the kernel's other
    # dimension) reads NaN, never a plausible number
    padded = torch.cat([alpha, torch.full((4 * (m + n),), float("nan"))])
    got = torch.full((l, m, n), float("nan"), dtype=torch.float64)
    kernel.host_reference(
        ops.a.data_ptr(), ops.b.data_ptr(), ops.a_scale.data_ptr(), ops.b_scale.data_ptr(), got.data_ptr(),
        m, n, k, l, 0.0, alpha_column=padded.data_ptr(),
    )
    want = formats.reference_gemm_float64(ops.a, ops.b, ops.a_scale, ops.b_scale, alpha)
    assert torch.equal(got, want)
    out_dtype = getattr(torch, dtype)
    assert torch.equal(formats.round_once(got, out_dtype), formats.round_once(want, out_dtype))
    assert (want != 0).any() and (alpha == 0).any()


@pytest.mark.parametrize("name,dtype", (COLUMN_ALPHA[:1] + ONE_ALPHA[:1]) or [("none", "none")])
def test_host_reference_takes_the_alpha_its_kernel_takes(name, dtype):
    kernel = _C.lookup(name, dtype)
    ops = random_operands(8, 8, 32, 1, seed=3)
    out = torch.empty((1, 8, 8), dtype=torch.float64)
    vector = torch.ones(8)
    pointers = (ops.a.data_ptr(), ops.b.data_ptr(), ops.a_scale.data_ptr(), ops.b_scale.data_ptr(), out.data_ptr())
    if kernel.column_alpha:
        with pytest.raises(ValueError, match="reads alpha per output column: pass alpha_column"):
            kernel.host_reference(*pointers, 8, 8, 32, 1, 1.0)
    else:
        with pytest.raises(ValueError, match="takes one alpha: pass alpha, not alpha_column"):
            kernel.host_reference(*pointers, 8, 8, 32, 1, 1.0, alpha_column=vector.data_ptr())


def test_the_table_and_the_registry_agree_on_column_alpha():
    assert COLUMN_ALPHA, "the build carries no per-column-alpha sm100 kernel"
    for name, dtype in KERNELS:
        assert _C.lookup(name, dtype).column_alpha == config_of(name).per_column_alpha, name


@pytest.mark.parametrize("name,dtype", KERNELS or [("none", "none")])
def test_cutlass_can_implement_agrees_with_python_predicate(name, dtype):
    from nvfp4_gemm.configs import load_table

    config = load_table().by_name(name)
    gen = torch.Generator().manual_seed(7)
    for _ in range(300):
        m = int(torch.randint(1, 600, (), generator=gen))
        n = int(torch.randint(1, 600, (), generator=gen))
        k = 16 * int(torch.randint(1, 40, (), generator=gen))
        l = int(torch.randint(1, 4, (), generator=gen))
        python_ok = config.supports(m, n, k, l, dtype, alpha_per_column=config.per_column_alpha) is None
        cutlass_ok = _C.lookup(name, dtype).can_implement(m, n, k, l) is None
        # CUTLASS's can_implement checks alignment; the Python predicate must never accept what
        # CUTLASS rejects (that would turn into a launch error instead of a clear Python one).
        assert cutlass_ok or not python_ok, (m, n, k, l)
