"""MXFP4 x MXFP4 and MXFP8 x MXFP4 ("W4A8") on Hopper (issue 17): a prepass dequantizes the MX tokens
exactly to bf16, then the weight-only bf16 x MXFP4 kernels run. The table, predicate and resolver on the CPU;
every config against the exact reference, the exact range's ends, the NaN outside it, the op and CUDA-graph
replay on a Hopper GPU."""

import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import _C, families, resolver
from nvfp4_gemm.configs import load_table
from nvfp4_gemm.dtypes import MX
from nvfp4_gemm.formats import reference_gemm
from nvfp4_gemm.testing import Operands, random_operands

from conftest import check_exact, hopper_or_skip, poisoned

MX_FORMATS = ("mxfp4", "mxfp8xmxfp4")
# Scale exponents of the whole-range test (tokens, weights): every token value a normal bf16 (MXFP4 codes
# 2..252, MXFP8 10..246), every product a normal FP32 (exponent sums >= -124 resp. -116, docs/formats.md),
# and the sums of K = 1024 products far below FP32's largest (exponent sums <= 100).
WIDE_EXPONENTS = ((-58, 50), (-58, 50))
# ue8m0 token codes outside the exact range: the MX prepass makes their 32 tokens NaN
OUT_OF_RANGE_TOKEN_CODES = {"mxfp4": (0, 1, 253, 254), "mxfp8xmxfp4": (0, 9, 247, 254)}


# --- the table, the predicate and the resolver on the CPU ---------------------------------------------


@pytest.mark.parametrize("fmt", MX_FORMATS)
def test_sm90_runs_the_mx_formats_on_the_weight_only_tiles(fmt):
    """Each MX format has the bf16 x MXFP4 rows' kernels and tiles, named for its own format (but the GEMV's,
    which takes 16-bit tokens only)."""
    assert fmt in families.by_name("sm90").formats
    rows = nvfp4_gemm.candidates(9, fmt)
    weight_only = [c for c in nvfp4_gemm.candidates(9, "bf16xmxfp4") if c.mma != "gemv"]
    assert [(c.mma, c.tile) for c in rows] == [(c.mma, c.tile) for c in weight_only]
    assert [c.name for c in rows] == [c.name.replace("_bf16xmxfp4", f"_{fmt}") for c in weight_only]


@pytest.mark.parametrize("fmt", MX_FORMATS)
def test_the_predicate_takes_k_multiples_of_32(fmt):
    """The Hopper kernels take K % 32 (one ue8m0 block; the wgmma path's last 64-element TMA box is
    zero-filled past K), unlike sm100's W4A8 (K % 128); the shape rules are the op's own."""
    for config in nvfp4_gemm.candidates(9, fmt):
        for k in (32, 96, 352, 416, 4096):
            assert config.supports(7, 136, k, 3, "bfloat16") is None, (config.name, k)
        assert "multiple of 32" in config.supports(7, 136, 48, 1, "bfloat16")
        assert config.supports(7, 130, 64, 1, "float32") is not None  # N % 4
    if fmt == "mxfp8xmxfp4":
        assert "multiple of 128" in load_table().by_name("sm100_1sm_128x128x256_c1x1_mxfp8xmxfp4").supports(7, 136, 96, 1, "bfloat16")


@pytest.mark.parametrize("fmt", MX_FORMATS)
def test_the_resolver_picks_the_mx_rows(fmt):
    for m, mma in ((1, "direct"), (16, "direct"), (17, "wgmma"), (128, "wgmma"), (2048, "wgmma")):
        for k in (4096, 96):
            resolution = resolver._resolve(m, 4096, k, 3, "bfloat16", 9, 132, None, None, (), fmt)
            assert resolution.config.format == fmt and resolution.config.mma == mma, resolution
            assert resolution.split_k <= resolution.config.max_split_k(k)


@pytest.mark.parametrize("fmt", MX_FORMATS)
def test_pinned_sm90_configs_take_only_their_format(fmt):
    """On the CPU a pinned sm90 MX row gives the reference (the format and shape checks run as on a GPU);
    another format's row, and this row for another format, are errors naming both."""
    ops = random_operands(7, 24, 96, 3, seed=1, format=fmt)
    own = f"sm90_direct_16x128x128_splitk_{fmt}"
    got = nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, config=own)
    assert torch.equal(got, reference_gemm(ops.a, ops.b, ops.a_scale, ops.b_scale))
    for other in ("sm90_direct_16x128x128_splitk", "sm90_wgmma_64x128x128_prepass_splitk_bf16xmxfp4"):
        other_format = load_table().by_name(other).format
        with pytest.raises(ValueError, match=rf"config '{other}' runs the {other_format} format; this call is {fmt}"):
            nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, config=other)
    weight_only = random_operands(7, 24, 96, seed=1, format="bf16xmxfp4")
    with pytest.raises(ValueError, match=rf"config '{own}' runs the {fmt} format; this call is bf16xmxfp4"):
        nvfp4_gemm.gemm(weight_only.a, weight_only.b, None, weight_only.b_scale, config=own)


def test_hopper_still_refuses_fp16_tokens_with_mx_weights():
    ops = random_operands(4, 16, 64, seed=2, format="fp16xmxfp4")
    shape = nvfp4_gemm._checks.check_gemm_args(ops.a, ops.b, None, ops.b_scale, None, torch.bfloat16)
    with pytest.raises(NotImplementedError, match=r"^weight-only MXFP4 \(fp16xmxfp4: .*\) has no sm90 kernel"):
        nvfp4_gemm._checks.check_format_supported(families.by_name("sm90"), shape)


# --- Hopper --------------------------------------------------------------------------------------


def mx_configs():
    return [(fmt, c.name) for fmt in MX_FORMATS for c in nvfp4_gemm.candidates(9, fmt)]


@pytest.mark.parametrize("split_k", [1, 3])
@pytest.mark.parametrize("fmt,config", mx_configs())
def test_every_mx_config_is_exact(fmt, config, split_k):
    """Each row, pinned: residues of every tile dimension (M 1/3/7/70/129, N 8/24/136/264, K % 64 = 32 and
    K % 128 != 0), L = 3, every output dtype, scalar alpha, padding scale bytes the prepass must never read
    (0x00 and 0xFF are NaN codes to it, 0x7F is 1.0)."""
    device = hopper_or_skip()
    row = load_table().by_name(config)
    cases = [(1, 8, 416, None, 0x00), (7, 136, 544, 3, 0xFF), (129, 264, 800, None, 0x7F), (70, 256, 4096, 3, 0x00),
             (3, 24, 352, 3, 0x7F), (16, 136, 32, None, 0xFF)]
    for seed, (m, n, k, l, padding) in enumerate(cases):
        kwargs = dict(format=fmt, with_alpha=True, padding_byte=padding)
        cpu = random_operands(m, n, k, l, seed=10 + seed, **kwargs)
        ops = random_operands(m, n, k, l, seed=10 + seed, device=device, **kwargs)
        shape = (m, n) if l is None else (l, m, n)
        split = min(split_k, row.max_split_k(k))
        for out_dtype in (torch.float16, torch.bfloat16, torch.float32):
            out = poisoned(shape, out_dtype, device)
            nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out, config=config, split_k=split)
            check_exact(out, cpu, f"{config} split {split} {(m, n, k, l)} {out_dtype}")


@pytest.mark.parametrize("fmt,config", mx_configs())
def test_mx_over_a_wide_exact_range(fmt, config):
    """Token and weight scales 2^-58 .. 2^50 (see WIDE_EXPONENTS), per-column alpha, L = 3."""
    device = hopper_or_skip()
    for seed, (m, n, k, l) in enumerate([(3, 64, 512, None), (100, 136, 1024, 3)]):
        kwargs = dict(format=fmt, with_alpha=True, alpha_per_column=True, exponent_ranges=WIDE_EXPONENTS)
        cpu = random_operands(m, n, k, l, seed=40 + seed, **kwargs)
        ops = random_operands(m, n, k, l, seed=40 + seed, device=device, **kwargs)
        for scales in (cpu.a_scale, cpu.b_scale):
            plain = nvfp4_gemm.from_blocked(scales, m if scales is cpu.a_scale else n, k, l or 1, fmt=MX).view(torch.uint8)
            assert plain.min() <= 127 - 50 and plain.max() >= 127 + 42, "the draw reaches both ends of the range"
        out = poisoned((m, n) if l is None else (l, m, n), torch.float32, device)
        nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out, config=config)
        check_exact(out, cpu, f"{config} {(m, n, k, l)}")


@pytest.mark.parametrize("fmt,config", mx_configs())
def test_token_scales_outside_the_exact_range_give_nan(fmt, config):
    """ue8m0 token codes bf16 cannot hold with every element value (docs/formats.md) make the rows they
    scale NaN; the other rows stay exact."""
    device = hopper_or_skip()
    m, n, k = 37, 136, 256
    cpu = random_operands(m, n, k, seed=90, format=fmt)
    plain = nvfp4_gemm.from_blocked(cpu.a_scale, m, k, fmt=MX).view(torch.uint8).clone()
    bad_rows = [0, 5, 20, 36]
    for row, code in zip(bad_rows, OUT_OF_RANGE_TOKEN_CODES[fmt]):
        plain[row, 3] = code
    a_scale = nvfp4_gemm.to_blocked(plain.view(torch.float8_e8m0fnu), fmt=MX)
    out = poisoned((m, n), torch.float32, device)
    nvfp4_gemm.gemm(cpu.a.to(device), cpu.b.to(device), a_scale.to(device), cpu.b_scale.to(device), out=out, config=config)
    out = out.cpu()
    assert torch.isnan(out[bad_rows]).all(), config
    good = [r for r in range(m) if r not in bad_rows]
    ops = Operands(a=cpu.a[good], b=cpu.b, a_scale=nvfp4_gemm.to_blocked(plain[good].view(torch.float8_e8m0fnu), fmt=MX),
                   b_scale=cpu.b_scale, alpha=None)
    check_exact(out[good].contiguous(), ops, f"{config}: the in-range rows")


@pytest.mark.parametrize("fmt,config", mx_configs())
def test_workspace_holds_the_bf16_tokens(fmt, config):
    """2 L M K bytes of bf16 tokens (256-byte aligned), then the split-K partials (L x split x M x N FP32)."""
    device = hopper_or_skip()
    for dtype in ("float16", "bfloat16", "float32"):
        kernel = _C.lookup(config, dtype)
        for m, n, k, l, split in ((5, 136, 416, 3, 1), (70, 264, 1024, 1, 3)):
            tokens = -(-2 * l * m * k // 256) * 256
            partials = 0 if split == 1 else l * split * m * n * 4
            assert kernel.workspace_bytes(m, n, k, l, split, device.index or 0) == tokens + partials


@pytest.mark.parametrize("fmt", MX_FORMATS)
def test_the_op_resolves_plans_and_serves_mx(fmt, float8_bitwise_allclose):
    """torch.ops.nvfp4.gemm: first call (Python plan), later calls (the C++ memo where built), opcheck,
    CUDA-graph replay, L = 3."""
    device = hopper_or_skip()
    for seed, (m, l) in enumerate(((1, None), (16, 3), (40, None), (256, 3))):
        cpu = random_operands(m, 1024, 2080, l, seed=70 + seed, format=fmt, with_alpha=True)
        ops = random_operands(m, 1024, 2080, l, seed=70 + seed, format=fmt, with_alpha=True, device=device)
        for _ in range(2):
            got = torch.ops.nvfp4.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, torch.bfloat16)
            check_exact(got, cpu, f"op M={m} L={l}")
    torch.library.opcheck(torch.ops.nvfp4.gemm, (ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, torch.float16))
    out = poisoned((3, 256, 1024), torch.float16, device)
    stream = torch.cuda.Stream(device)
    with torch.cuda.stream(stream):
        nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out)
    stream.synchronize()
    eager = out.clone()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        nvfp4_gemm.gemm(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha, out=out)
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, eager)
