"""Formats: blocked layout, FP4 packing, single rounding and the exact reference."""

import numpy as np
import pytest
import torch

from nvfp4_gemm import formats
from nvfp4_gemm.testing import random_operands, random_scales


def spec_offset(r, c, padded_cols):
    # shared/spec/nvfp4.md, written out independently of formats.to_blocked
    return ((r // 128) * (padded_cols // 4) + (c // 4)) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + (c % 4)


@pytest.mark.parametrize("rows,k,l", [(1, 64, 1), (100, 48, 1), (128, 256, 1), (129, 32 * 3, 3), (300, 160, 2)])
def test_to_blocked_matches_spec_formula(rows, k, l):
    gen = torch.Generator().manual_seed(rows * 7 + k)
    plain = torch.randint(1, 255, (l, rows, k // 16), dtype=torch.uint8, generator=gen)
    blocked = formats.to_blocked(plain)
    padded_rows, padded_cols = formats.blocked_scale_shape(rows, k)
    assert blocked.numel() == formats.blocked_scale_numel(rows, k, l) == l * padded_rows * padded_cols
    expected = torch.zeros(l * padded_rows * padded_cols, dtype=torch.uint8)
    for batch in range(l):
        for r in range(rows):
            for c in range(k // 16):
                expected[batch * padded_rows * padded_cols + spec_offset(r, c, padded_cols)] = plain[batch, r, c]
    assert torch.equal(blocked, expected)
    assert torch.equal(formats.from_blocked(blocked, rows, k, l), plain)
    assert torch.equal(formats.from_blocked(formats.to_blocked(plain[0]), rows, k), plain[0])


def test_to_blocked_keeps_float8_dtype():
    scales = random_scales(130, 64, 1, torch.Generator().manual_seed(0))[0]
    blocked = formats.to_blocked(scales)
    assert blocked.dtype == torch.float8_e4m3fn
    assert torch.equal(formats.from_blocked(blocked, 130, 64).view(torch.uint8), scales.view(torch.uint8))


def test_from_blocked_rejects_wrong_size():
    with pytest.raises(ValueError, match="hold 512 bytes"):
        formats.from_blocked(torch.zeros(100, dtype=torch.uint8), 128, 64)


def test_fp4_pack_unpack_and_values():
    codes = torch.arange(16, dtype=torch.uint8).repeat(4)
    packed = formats.pack_fp4(codes)
    assert packed[0].item() == 0x10  # element 0 in the low nibble, element 1 in the high one
    assert torch.equal(formats.unpack_fp4(packed), codes)
    values = formats.e2m1_to_float(codes[:16])
    assert values.tolist() == [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6]
    assert torch.signbit(values[8])


def test_dequantize_applies_each_scale_to_its_16_elements():
    gen = torch.Generator().manual_seed(1)
    packed = torch.randint(0, 256, (3, 64 // 2), dtype=torch.uint8, generator=gen)
    plain = random_scales(3, 64, 1, gen)[0]
    got = formats.dequantize(packed, formats.to_blocked(plain), torch.float64)
    codes = formats.unpack_fp4(packed)
    for r in range(3):
        for j in range(64):
            want = formats.E2M1_VALUES[codes[r, j]] * plain[r, j // 16].to(torch.float64).item()
            assert got[r, j].item() == want


def test_round_once_float16_matches_numpy_direct_rounding():
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(200_000, generator=gen, dtype=torch.float64) * torch.exp2(torch.randint(-30, 18, (200_000,), generator=gen).double())
    # include exact ties and overflow boundaries
    ties = torch.tensor([1 + 2.0**-11, 1 + 3 * 2.0**-11, 65504.0, 65519.99, 65520.0, -65520.0, 2.0**-25, 2.0**-24 * 1.5, 0.0, -0.0])
    x = torch.cat([x, ties])
    with np.errstate(over="ignore"):  # overflow to inf is part of what is compared
        expected = torch.from_numpy(x.numpy().astype(np.float16))
    got = formats.round_once(x, torch.float16)
    assert torch.equal(got.view(torch.int16), expected.view(torch.int16))


def test_round_once_bfloat16_and_float32_agree_with_single_casts():
    gen = torch.Generator().manual_seed(3)
    x32 = (torch.randn(100_000, generator=gen) * 1e3).to(torch.float32)
    # a float32 value cast to bf16 is one rounding, so it is the reference for float32-exact inputs
    got = formats.round_once(x32.double(), torch.bfloat16)
    assert torch.equal(got.view(torch.int16), x32.to(torch.bfloat16).view(torch.int16))
    x64 = torch.randn(100_000, generator=gen, dtype=torch.float64) * 1e3
    assert torch.equal(formats.round_once(x64, torch.float32), x64.to(torch.float32))
    # a value just above a bf16 tie: float32 first would land on the tie and round to even (down)
    tricky = torch.tensor([1.0 + 2.0**-8 + 2.0**-40], dtype=torch.float64)
    assert formats.round_once(tricky, torch.bfloat16).item() == 1.0 + 2.0**-7


def test_reference_gemm_matches_scalar_formula():
    ops = random_operands(3, 8, 64, seed=4, with_alpha=True)
    got = formats.reference_gemm_float64(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha)
    a_codes, b_codes = formats.unpack_fp4(ops.a), formats.unpack_fp4(ops.b)
    sa = formats.from_blocked(ops.a_scale, 3, 64).double()
    sb = formats.from_blocked(ops.b_scale, 8, 64).double()
    for m in range(3):
        for n in range(8):
            total = 0.0
            for k in range(64):
                total += (formats.E2M1_VALUES[a_codes[m, k]] * sa[m, k // 16].item()) * (
                    formats.E2M1_VALUES[b_codes[n, k]] * sb[n, k // 16].item()
                )
            assert got[m, n].item() == total * ops.alpha.double().item()


def test_random_operands_cover_all_codes_and_varied_scales():
    ops = random_operands(128, 128, 256, seed=5)
    codes = formats.unpack_fp4(ops.a)
    assert set(codes.unique().tolist()) == set(range(16))
    scales = formats.from_blocked(ops.b_scale, 128, 256).float()
    assert scales.unique().numel() > 20 and bool((scales > 0).all())


def test_earned_tolerance_accepts_fp32_accumulation_and_rejects_errors():
    from nvfp4_gemm.testing import check_against_reference

    m, n, k = 64, 48, 2048
    ops = random_operands(m, n, k, seed=6, with_alpha=True)
    a64 = formats.dequantize(ops.a, ops.a_scale, torch.float64)
    b64 = formats.dequantize(ops.b, ops.b_scale, torch.float64)
    # A model of the kernels' arithmetic: exact 16-element MMA steps accumulated in FP32, then alpha.
    steps = torch.einsum("mjc,njc->mnj", a64.view(m, k // 16, 16), b64.view(n, k // 16, 16))
    acc = torch.zeros(m, n, dtype=torch.float32)
    for j in range(k // 16):
        acc = (acc.double() + steps[:, :, j]).float()
    fp32_sum = acc * ops.alpha
    roundings = k // 16 + 2
    exact = formats.reference_gemm_float64(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha)
    largest = tuple(int(i) for i in divmod(int(exact.abs().argmax()), n))
    for out_dtype, corruption in ((torch.float16, 2 * 2.0**-10), (torch.bfloat16, 2 * 2.0**-7), (torch.float32, 1e-2)):
        out = fp32_sum.to(out_dtype)
        passed, summary = check_against_reference(out, ops, roundings=roundings)
        assert passed, summary
        bad = out.clone()
        bad[largest] = (bad[largest].double() * (1 + corruption)).to(out_dtype)  # two output ulps (fp32: 1%)
        assert not check_against_reference(bad, ops, roundings=roundings)[0], out_dtype
    # a layout mistake (scales of the wrong rows) fails by far
    swapped = formats.to_blocked(formats.from_blocked(ops.b_scale, n, k).flip(0))
    wrong = formats.reference_gemm(ops.a, ops.b, ops.a_scale, swapped, ops.alpha)
    assert not check_against_reference(wrong, ops, roundings=roundings)[0]
    # NaN never passes
    nan = fp32_sum.to(torch.float16)
    nan[0, 0] = float("nan")
    assert not check_against_reference(nan, ops, roundings=roundings)[0]
