"""Issue 15: every way the public API gave a wrong answer or an unreadable error, one test (or more)
each. CPU tensors (the reference path) and the checks the CUDA path runs before a launch; the CUDA
launches themselves are covered in tests/test_gpu.py."""

import pytest
import torch

import nvfp4_gemm
from nvfp4_gemm import _checks, formats, ops
from nvfp4_gemm.__main__ import main
from nvfp4_gemm.testing import random_operands

from conftest import op_raises, poisoned

# The largest M, N and K the checks accept, written out here so the test does not trust the constant.
LARGEST_EXTENT = 2**31 - 256


def operands(m=16, n=32, k=64, l=None, seed=0, with_alpha=False):
    ops_ = random_operands(m, n, k, l, seed=seed, with_alpha=with_alpha)
    return ops_.a, ops_.b, ops_.a_scale, ops_.b_scale, ops_.alpha


# 1. requires_grad -------------------------------------------------------------------------------


def _operands_one_requiring_grad(argument: str, seed: int) -> tuple[dict, torch.Tensor]:
    a, b, sa, sb, alpha = operands(seed=seed, with_alpha=True)
    fp4 = torch.float4_e2m1fn_x2  # a float dtype: packed FP4 operands can require grad too
    named = {"a": a.view(fp4), "b": b.view(fp4), "a_scale": sa.clone(), "b_scale": sb.clone(), "alpha": alpha.clone()}
    named[argument].requires_grad_()
    return named, formats.reference_gemm(a, b, sa, sb, alpha)


@pytest.mark.parametrize("argument", ["a", "b", "a_scale", "b_scale", "alpha"])
def test_an_operand_that_requires_grad_is_an_error_naming_it(argument):
    named, want = _operands_one_requiring_grad(argument, seed=1)
    with pytest.raises(ValueError, match=rf"^{argument} requires grad, but nvfp4_gemm has no backward"):
        nvfp4_gemm.gemm(*named.values())
    with torch.no_grad():  # no gradient is asked for: the call runs
        got = nvfp4_gemm.gemm(*named.values())
    assert torch.equal(got, want)


@pytest.mark.parametrize("argument", ["a", "b", "a_scale", "b_scale", "alpha"])
def test_the_op_is_non_differentiable(argument):
    """The op's Autograd kernel falls through (a Python one would cost every CUDA call): an operand
    that requires grad is a constant to it, and its output never requires grad."""
    named, want = _operands_one_requiring_grad(argument, seed=1)
    got = torch.ops.nvfp4.gemm(*named.values())
    assert not got.requires_grad and got.grad_fn is None
    assert torch.equal(got, want)


def test_requires_grad_under_torch_compile_is_the_same_error():
    a, b, sa, sb, alpha = operands(seed=2, with_alpha=True)
    alpha.requires_grad_()
    compiled = torch.compile(lambda: nvfp4_gemm.gemm(a, b, sa, sb, alpha), fullgraph=True)
    with pytest.raises(Exception, match=r"alpha requires grad, but nvfp4_gemm has no backward"):
        compiled()


def test_an_out_that_requires_grad_is_an_error():
    a, b, sa, sb, _ = operands(seed=2)
    out = torch.zeros(16, 32, dtype=torch.float16, requires_grad=True)
    with pytest.raises(ValueError, match=r"^out requires grad"):
        nvfp4_gemm.gemm(a, b, sa, sb, out=out)


# 2. torch.compile(fullgraph=True) around the Python API ------------------------------------------


def test_torch_compile_fullgraph_of_the_python_api():
    a, b, sa, sb, alpha = operands(64, 32, 128, seed=3, with_alpha=True)

    def layer(a, b, sa, sb, alpha, out):
        nvfp4_gemm.gemm(a, b, sa, sb, alpha, out=out)
        return nvfp4_gemm.gemm(a, b, sa, sb, alpha, torch.bfloat16).float().relu() + out.float()

    out = poisoned((64, 32), torch.float16)
    got = torch.compile(layer, fullgraph=True)(a, b, sa, sb, alpha, out)
    assert torch.equal(out, formats.reference_gemm(a, b, sa, sb, alpha))
    want_out = poisoned((64, 32), torch.float16)
    assert torch.equal(got, layer(a, b, sa, sb, alpha, want_out))


def test_torch_compile_refuses_a_pinned_kernel_instead_of_ignoring_it():
    a, b, sa, sb, _ = operands(seed=4)
    compiled = torch.compile(lambda *t: nvfp4_gemm.gemm(*t, split_k=1), fullgraph=True)
    with pytest.raises(Exception, match="config= and split_k= pin a kernel in eager calls"):
        compiled(a, b, sa, sb)


# 3. empty problems --------------------------------------------------------------------------------

EMPTY = [(0, 32, 64, None), (16, 0, 64, None), (16, 32, 64, 0), (0, 0, 64, 2), (16, 32, 0, None), (5, 8, 0, 3)]


@pytest.mark.parametrize("m,n,k,l", EMPTY)
@pytest.mark.parametrize("how", ["op", "gemm", "gemm_out"])
def test_empty_problems_give_the_empty_or_zero_result_without_computing(m, n, k, l, how, monkeypatch):
    a, b, sa, sb, alpha = operands(m, n, k, l, seed=5, with_alpha=True)
    out_shape = (m, n) if l is None else (l, m, n)

    def no_reference(*args, **kwargs):
        raise AssertionError("an empty problem must not run the GEMM")

    monkeypatch.setattr(ops, "reference_gemm", no_reference)
    if how == "op":
        got = torch.ops.nvfp4.gemm(a, b, sa, sb, alpha, torch.bfloat16)
    elif how == "gemm":
        got = nvfp4_gemm.gemm(a, b, sa, sb, alpha, torch.bfloat16)
    else:
        out = poisoned(out_shape, torch.bfloat16)
        got = nvfp4_gemm.gemm(a, b, sa, sb, alpha, out=out)
        assert got is out
    assert got.shape == out_shape and got.dtype == torch.bfloat16
    # as torch.matmul: an empty sum is zero (K = 0), and there is nothing else to write
    exact = torch.matmul(formats.dequantize(a, sa, torch.float64), formats.dequantize(b, sb, torch.float64).mT)
    assert torch.equal(got, formats.round_once(exact * alpha.double(), torch.bfloat16))


def test_k_zero_is_alpha_times_an_empty_sum():
    a, b, sa, sb, _ = operands(4, 8, 0, seed=6)
    got = nvfp4_gemm.gemm(a, b, sa, sb, torch.tensor(float("inf")), torch.float32)
    assert torch.isnan(got).all()  # inf * 0, as the float64 reference and torch.matmul give it


# 4. sizes past the kernels' 32-bit ints, checked on meta tensors (nothing allocated) ---------------


def meta_operands(m, n, k, l=None):
    lead = () if l is None else (l,)
    batches = 1 if l is None else l
    return (
        torch.empty(*lead, m, k // 2, dtype=torch.uint8, device="meta"),
        torch.empty(*lead, n, k // 2, dtype=torch.uint8, device="meta"),
        torch.empty(formats.blocked_scale_numel(m, k, batches), dtype=torch.float8_e4m3fn, device="meta"),
        torch.empty(formats.blocked_scale_numel(n, k, batches), dtype=torch.float8_e4m3fn, device="meta"),
    )


@pytest.mark.parametrize(
    "name,largest,past",
    [
        ("M", dict(m=LARGEST_EXTENT, n=8, k=32), dict(m=LARGEST_EXTENT + 1, n=8, k=32)),
        ("N", dict(m=1, n=LARGEST_EXTENT, k=32), dict(m=1, n=LARGEST_EXTENT + 8, k=32)),
        ("K", dict(m=1, n=8, k=LARGEST_EXTENT), dict(m=1, n=8, k=LARGEST_EXTENT + 32)),
        ("L", dict(m=1, n=8, k=32, l=2**31 - 1), dict(m=1, n=8, k=32, l=2**31)),
    ],
)
def test_sizes_past_32_bit_ints_are_rejected_up_front(name, largest, past):
    fits = meta_operands(**largest)
    shape = _checks.check_gemm_args(*fits, None, torch.float16)
    assert (shape.m, shape.n, shape.k, shape.l) == (largest["m"], largest["n"], largest["k"], largest.get("l", 1))
    out = torch.ops.nvfp4.gemm(*fits)  # the op's fake/meta kernel
    assert out.device.type == "meta" and out.shape[-2:] == (largest["m"], largest["n"])
    with pytest.raises(ValueError, match=rf"{name}={past.get(name.lower())} exceeds the largest {name} the kernels index"):
        _checks.check_gemm_args(*meta_operands(**past), None, torch.float16)
    with pytest.raises(ValueError, match=rf"{name}=\d+ exceeds"):
        torch.ops.nvfp4.gemm(*meta_operands(**past))


# 5. grid limits, checked before a launch ----------------------------------------------------------


def config(name):
    return nvfp4_gemm.resolver.pinned_config(name)


def shape(m, n, k, l):
    return _checks.GemmShape(m=m, n=n, k=k, l=l, batched=l > 1)


def test_sm90_grid_is_what_the_launcher_launches():
    direct = config("sm90_direct_16x128x128_splitk")
    assert _checks.launch_grid(direct, m=17, n=136, l=3, split_k=4) == (2, 2, 12)


@pytest.mark.parametrize(
    "name", ["sm90_direct_16x128x128_splitk", "sm90_wgmma_64x256x128_prepass_splitk", "sm90_wgmma_256x128x128_prepass_splitk"]
)
def test_sm90_grid_limits(name):
    cfg = config(name)
    tile_m = cfg.tile[0]
    _checks.check_kernel_limits(cfg, shape(1, 8, 256, 65535), 1)
    with pytest.raises(ValueError, match=r"gridDim.z = L \* split_k exceeds CUDA's limit of 65535.*at most L=65535"):
        _checks.check_kernel_limits(cfg, shape(1, 8, 256, 65536), 1)
    with pytest.raises(ValueError, match=r"at split_k=2 a call runs at most L=32767"):
        _checks.check_kernel_limits(cfg, shape(1, 8, 256, 32768), 2)
    _checks.check_kernel_limits(cfg, shape(65535 * tile_m, 8, 256, 1), 1)
    with pytest.raises(ValueError, match=rf"gridDim.y = ceil\(M / {tile_m}\) exceeds.*at most {65535 * tile_m} rows of M"):
        _checks.check_kernel_limits(cfg, shape(65535 * tile_m + 1, 8, 256, 1), 1)


@pytest.mark.parametrize(
    "name,rows",
    [
        ("sm100_1sm_128x64x256_c1x1_streamk", "N"),
        ("sm100_1sm_128x128x256_c1x1", "N"),
        ("sm100_2sm_256x256x256_c2x1", "N"),
        ("sm100_1sm_128x64x256_c1x1_swapab_streamk", "M"),
        ("sm100_2sm_256x128x256_c4x1_swapab", "M"),
    ],
)
def test_sm100_grid_limits(name, rows):
    cfg = config(name)
    tile_n = cfg.tile[1]
    largest = 65535 * tile_n
    sizes = lambda r: dict(m=r, n=8) if rows == "M" else dict(m=1, n=r)  # noqa: E731
    _checks.check_kernel_limits(cfg, shape(k=256, l=1, **sizes(largest)), 1)
    with pytest.raises(ValueError, match=rf"gridDim.y = ceil\({rows} / {tile_n}\) exceeds.*at most {largest} rows of {rows}"):
        _checks.check_kernel_limits(cfg, shape(k=256, l=1, **sizes(largest + 8)), 1)
    with pytest.raises(ValueError, match=r"gridDim.z = L \* split_k exceeds"):
        _checks.check_kernel_limits(cfg, shape(1, 8, 256, 65536), 1)


def test_sm100_data_parallel_grid_follows_cutlass_rasterization():
    # CUTLASS 4.2 (PersistentTileSchedulerSm100Params): along N (x and y swapped, in clusters) when
    # the N side has no more clusters than the M side and the swap keeps y <= 65535, else along M.
    cfg = config("sm100_1sm_128x128x256_c1x1")
    assert _checks.launch_grid(cfg, m=128, n=5 * 128, l=3, split_k=1) == (1, 5, 3)  # along M
    assert _checks.launch_grid(cfg, m=1000 * 128, n=10 * 128, l=3, split_k=1) == (10, 1000, 3)  # along N
    # 100000 M tiles: swapping would put them on y, so CUTLASS keeps them on x (limit 2^31 - 1)
    assert _checks.launch_grid(cfg, m=100000 * 128, n=128, l=1, split_k=1) == (100000, 1, 1)
    _checks.check_kernel_limits(cfg, shape(100000 * 128, 128, 256, 1), 1)
    pair = config("sm100_2sm_256x128x256_c2x1")  # 2 CTAs per 256-row tile, clusters of 2 along M
    assert _checks.launch_grid(pair, m=3 * 256, n=128, l=1, split_k=1) == (2, 3, 1)


def test_sm100_scale_bytes_limit():
    cfg = config("sm100_1sm_128x128x256_c1x1")
    k = 8192  # 512 scale bytes per row: 2^22 rows fill 2^31 bytes
    _checks.check_kernel_limits(cfg, shape(2**22 - 128, 8, k, 1), 1)
    with pytest.raises(ValueError, match=r"a_scale holds 2147483648 bytes of blocked scales per matrix.*at most 2147483647"):
        _checks.check_kernel_limits(cfg, shape(2**22, 8, k, 1), 1)


def test_a_grid_past_the_limit_is_an_error_on_the_cpu_path_too():
    a, b, sa, sb, _ = operands(1, 8, 32, 70000, seed=7)
    with pytest.raises(ValueError, match=r"gridDim.z = L \* split_k exceeds CUDA's limit of 65535"):
        nvfp4_gemm.gemm(a, b, sa, sb, config="sm90_direct_16x128x128_splitk")


# 6. config= and split_k= are validated on every device ---------------------------------------------


def test_unknown_config_is_an_error_on_the_cpu():
    a, b, sa, sb, _ = operands(seed=8)
    with pytest.raises(ValueError, match=r"^config='nope' is not in the config table; it has: sm100_"):
        nvfp4_gemm.gemm(a, b, sa, sb, config="nope")
    with pytest.raises(TypeError, match=r"^config must be None or a config name"):
        nvfp4_gemm.gemm(a, b, sa, sb, config=3)


def test_split_k_is_checked_against_the_pinned_config_on_the_cpu():
    a, b, sa, sb, _ = operands(16, 32, 512, seed=9)
    with pytest.raises(ValueError, match=r"^split_k=2: config 'sm100_1sm_128x128x256_c1x1' has no split-K"):
        nvfp4_gemm.gemm(a, b, sa, sb, config="sm100_1sm_128x128x256_c1x1", split_k=2)
    with pytest.raises(ValueError, match=r"^split_k=3: config 'sm100_1sm_128x64x256_c1x1_streamk' splits K=512 into at most 2"):
        nvfp4_gemm.gemm(a, b, sa, sb, config="sm100_1sm_128x64x256_c1x1_streamk", split_k=3)
    for bad in (0, -3):
        with pytest.raises(ValueError, match=r"^split_k must be at least 1, got"):
            nvfp4_gemm.gemm(a, b, sa, sb, split_k=bad)
    for bad in (True, 2.0, "2"):
        with pytest.raises(TypeError, match=r"^split_k must be None or an int, got"):
            nvfp4_gemm.gemm(a, b, sa, sb, split_k=bad)
    got = nvfp4_gemm.gemm(a, b, sa, sb, config="sm100_1sm_128x64x256_c1x1_streamk", split_k=2)
    assert torch.equal(got, formats.reference_gemm(a, b, sa, sb))


def test_the_config_alone_bounds_split_k():
    """The bound is the config's (one split per K tile): a stream-K sm100 config (K tile 256) splits K = 1024
    into at most 4, below ceil(K / 128) = 8, the bound gemm once applied to every config."""
    a, b, sa, sb, _ = operands(16, 32, 1024, seed=10)
    streamk = "sm100_1sm_128x64x256_c1x1_streamk"
    assert nvfp4_gemm.resolver._table().by_name(streamk).max_split_k(1024) == 4
    got = nvfp4_gemm.gemm(a, b, sa, sb, config=streamk, split_k=4)
    assert torch.equal(got, formats.reference_gemm(a, b, sa, sb))
    with pytest.raises(ValueError, match=rf"^split_k=5: config '{streamk}' splits K=1024 into at most 4 parts"):
        nvfp4_gemm.gemm(a, b, sa, sb, config=streamk, split_k=5)
    # without config= the CPU checks the type only: which kernel would split is the GPU's choice
    assert torch.equal(nvfp4_gemm.gemm(a, b, sa, sb, split_k=16), got)


def test_a_config_of_another_architecture_says_which():
    with pytest.raises(ValueError, match=r"is a sm100 kernel \(compute capability 10.x\) and this GPU has compute capability 9.x"):
        nvfp4_gemm.resolver.pinned_config("sm100_1sm_128x128x256_c1x1", sm_major=9)
    assert nvfp4_gemm.resolver.pinned_config("sm90_direct_16x128x128_splitk", sm_major=9).family == "sm90"


# 7. and 8. the command line ---------------------------------------------------------------------------


@pytest.mark.skipif(ops.unsupported_reason() is None, reason="on a supported GPU these flags run the main job")
@pytest.mark.parametrize("flags", [["--shapes", "128x256x512"], ["--json", "x.json"], ["--plot", "x.png"]])
def test_main_job_flags_without_a_gpu_exit_nonzero_saying_why(flags, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(flags) == 2
    assert f"{flags[0]}: the main job verifies and times the GPU kernels" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "argv,message",
    [
        (["model", "--sm-count", "0"], "--sm-count: must be a positive integer, got 0"),
        (["model", "--sm-count", "-3"], "--sm-count: must be a positive integer, got -3"),
        (["model", "--sm-count", "many"], "--sm-count: must be a positive integer, got 'many'"),
        (["tune", "--iters", "0"], "--iters: must be a positive integer, got 0"),
        (["--shapes", "0x256x512"], "M, N, K and L must be positive"),
        (["--shapes", "128x256x100"], "K (= 2 * a.shape[-1]) must be a multiple of 32, got K=100"),
        (["tune", "--shapes", "128x12x512"], "N must be a multiple of 8 for float16 output, got N=12"),
    ],
)
def test_command_line_numbers_are_validated(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


# 9. the GPU MODE adapter names the tuple member ----------------------------------------------------


def competition_tuple(m=128, n=64, k=256, l=2, seed=10):
    from test_ops import competition_tuple as build

    return list(build(m, n, k, l, seed)[0])


@pytest.mark.parametrize(
    "index,replace,error,message",
    [
        (0, lambda t: t[:, :, 0], ValueError, r"^a \(tuple member\) must be 3-D \(M, K/2, L\), got shape \(128, 128\)"),
        (1, lambda t: t.view(torch.int8), TypeError, r"^b \(tuple member\) \(N, K/2, L\) must hold torch.uint8 or torch.float4_e2m1fn_x2, got torch.int8"),
        (4, lambda t: t[..., 0], ValueError, r"^sfa_permuted \(tuple member\) must be 6-D \(32, 4, ceil\(M/128\), 4, ceil\(K/64\), L\)"),
        (5, lambda t: t.view(torch.uint8), TypeError, r"^sfb_permuted \(tuple member\) .* must hold torch.float8_e4m3fn, got torch.uint8"),
        (6, lambda t: t.to(torch.float64), TypeError, r"^c \(tuple member\) \(M, N, L\) must hold torch.float16 or torch.bfloat16 or torch.float32"),
        (6, lambda t: t[:, :32], ValueError, r"^c \(tuple member\) must be \(M, N, L\) = \(128, 64, 2\)"),
        (0, lambda t: 3, TypeError, r"^a \(tuple member\) must be a torch.Tensor"),
    ],
)
@pytest.mark.parametrize("adapter", ["_gemm_python", "gemm"], ids=["python", "entry"])
def test_gpumode_adapter_names_the_tuple_member(index, replace, error, message, adapter):
    data = competition_tuple()
    data[index] = replace(data[index])
    with pytest.raises(error, match=message):
        getattr(nvfp4_gemm.gpumode, adapter)(data)


@pytest.mark.parametrize("adapter", ["_gemm_python", "gemm"], ids=["python", "entry"])
def test_gpumode_adapter_refuses_a_short_tuple_and_a_c_over_a(adapter):
    data = competition_tuple()
    with pytest.raises(ValueError, match=r"^expected \(a, b, sfa, sfb, sfa_permuted, sfb_permuted, c\), got 6 items"):
        getattr(nvfp4_gemm.gpumode, adapter)(data[:6])
    # c in the harness's layout, inside a's buffer: the out= rule names the operand it would overwrite
    a, c = data[0], data[-1]
    arena = a.permute(2, 0, 1).contiguous().view(torch.uint8)  # (L, M, K/2) bytes, 2 * 128 * 128
    data[0] = arena.view(a.dtype).permute(1, 2, 0)
    data[-1] = arena.reshape(-1)[: c.numel() * 2].view(torch.float16).view(c.permute(2, 0, 1).shape).permute(1, 2, 0)
    with pytest.raises(ValueError, match=r"^out overlaps a in memory"):
        getattr(nvfp4_gemm.gpumode, adapter)(data)


# 10. out= sharing memory with an input ----------------------------------------------------------------


@pytest.mark.parametrize("victim", ["a", "b", "a_scale", "alpha"])
def test_out_overlapping_an_input_is_an_error(victim):
    m, n, k = 16, 32, 64
    a, b, sa, sb, alpha = operands(m, n, k, seed=11, with_alpha=True)
    arena = torch.zeros(1 << 16, dtype=torch.uint8)
    out = arena[: m * n * 2].view(torch.float16).view(m, n)
    named = {"a": a, "b": b, "a_scale": sa, "alpha": alpha}
    source = named[victim]
    start = 32 * 16  # inside out's 1024 bytes, 16-byte aligned
    shared = arena[start : start + source.numel() * source.element_size()].view(source.dtype).view(source.shape)
    shared.copy_(source)
    named[victim] = shared
    with pytest.raises(ValueError, match=rf"^out overlaps {victim} in memory"):
        nvfp4_gemm.gemm(named["a"], named["b"], named["a_scale"], sb, named["alpha"], out=out)
    # next to each other, not overlapping: fine
    beside = arena[m * n * 2 : m * n * 2 + a.numel()].view(m, k // 2)
    beside.copy_(a)
    got = nvfp4_gemm.gemm(beside, b, sa, sb, alpha, out=out)
    assert torch.equal(got, formats.reference_gemm(a, b, sa, sb, alpha))


def test_out_that_is_a_non_contiguous_view_is_an_error():
    a, b, sa, sb, _ = operands(seed=12)
    with pytest.raises(ValueError, match=r"^out must be contiguous"):
        nvfp4_gemm.gemm(a, b, sa, sb, out=torch.empty(32, 16, dtype=torch.float16).t())
    with pytest.raises(ValueError, match=r"^out must be contiguous"):
        nvfp4_gemm.gemm(a, b, sa, sb, out=torch.empty(1, 32, dtype=torch.float16).expand(16, 32))


# 12. plain (not blocked) scales ---------------------------------------------------------------------


def test_assert_blocked_like_names_plain_scales():
    from nvfp4_gemm.testing import assert_blocked_like, random_scales

    plain = random_scales(256, 128, 2, torch.Generator().manual_seed(13))  # (2, 256, 8): sizes match
    blocked = nvfp4_gemm.to_blocked(plain)
    assert_blocked_like(plain, blocked)
    assert_blocked_like(plain[0], nvfp4_gemm.to_blocked(plain[0]))
    with pytest.raises(AssertionError, match=r"^blocked holds the scales in plain row-major order.*to_blocked"):
        assert_blocked_like(plain, plain.reshape(-1))
    with pytest.raises(AssertionError, match=r"^blocked holds 100 scales; the blocked layout .* holds .* = 4096"):
        assert_blocked_like(plain, blocked[:100])
    broken = blocked.clone()
    broken.view(torch.uint8)[0] ^= 1
    with pytest.raises(AssertionError, match=r"differs from the blocked layout of reference_plain at 1 of 4096 scales; first at \(l, row, k/16\) = \(0, 0, 0\)"):
        assert_blocked_like(plain, broken)


def test_plain_scales_of_the_right_size_are_a_wrong_answer_assert_blocked_like_catches():
    # what gemm cannot see from the bytes: the same scales in plain order give another result
    a, b, sa, sb, _ = operands(128, 64, 128, seed=14)
    plain_a = formats.from_blocked(sa, 128, 128)
    wrong = nvfp4_gemm.gemm(a, b, plain_a.reshape(-1), sb)
    assert not torch.equal(wrong, nvfp4_gemm.gemm(a, b, sa, sb))
    with pytest.raises(AssertionError, match="plain row-major order"):
        nvfp4_gemm.testing.assert_blocked_like(plain_a, plain_a.reshape(-1))


# On a GPU with kernels (the H200 for the sm90 cases): the same rules on the launch path ---------------


def hopper_or_skip():
    from test_gpu import supported_gpu_or_skip

    device = supported_gpu_or_skip()
    if torch.cuda.get_device_capability(device)[0] != 9:
        pytest.skip("pins sm90 configs")
    return device


@pytest.mark.parametrize("m,n,k,l", EMPTY)
def test_empty_problems_on_the_gpu_launch_nothing(m, n, k, l, monkeypatch):
    from test_gpu import supported_gpu_or_skip

    device = supported_gpu_or_skip()
    a, b, sa, sb, alpha = (t.to(device) for t in operands(m, n, k, l, seed=20, with_alpha=True))

    def no_launch(*args, **kwargs):
        raise AssertionError("an empty problem must not launch a kernel")

    monkeypatch.setattr(ops, "_launch_cuda", no_launch)
    out_shape = (m, n) if l is None else (l, m, n)
    out = poisoned(out_shape, torch.float16, device)
    results = [torch.ops.nvfp4.gemm(a, b, sa, sb, alpha), nvfp4_gemm.gemm(a, b, sa, sb, alpha, out=out)]
    for got in results:
        assert got.shape == out_shape and got.device.type == "cuda"
        assert torch.equal(got.cpu(), torch.zeros(out_shape, dtype=torch.float16))
    with pytest.raises(ValueError, match=r"^config='nope' is not in the config table"):
        nvfp4_gemm.gemm(a, b, sa, sb, config="nope")


def test_gpu_batch_past_the_grid_is_an_error_before_the_launch_and_the_boundary_runs():
    device = hopper_or_skip()
    direct = "sm90_direct_16x128x128_splitk"
    a, b, sa, sb, _ = (t.to(device) if t is not None else None for t in operands(1, 8, 32, 65536, seed=21))
    with pytest.raises(ValueError, match=r"gridDim.z = L \* split_k exceeds CUDA's limit of 65535"):
        nvfp4_gemm.gemm(a, b, sa, sb)  # the resolver's config, whichever: every sm90 grid has z = L * split_k
    with op_raises(ValueError, r".*gridDim.z = L \* split_k exceeds CUDA's limit of 65535"):
        torch.ops.nvfp4.gemm(a, b, sa, sb)
    # the largest batch launches and is exact (no sticky error from the refused call)
    a, b, sa, sb = a[:65535], b[:65535], sa[: sa.numel() * 65535 // 65536], sb[: sb.numel() * 65535 // 65536]
    got = nvfp4_gemm.gemm(a, b, sa, sb, config=direct, split_k=1)
    want = formats.reference_gemm(a.cpu(), b.cpu(), sa.cpu(), sb.cpu())
    assert torch.equal(got.cpu(), want)


def test_gpu_rows_past_the_grid_is_an_error_and_the_boundary_runs():
    device = hopper_or_skip()
    direct = "sm90_direct_16x128x128_splitk"  # 16 token rows per CTA along gridDim.y
    largest = 65535 * 16
    a, b, sa, sb, _ = operands(largest + 1, 8, 32, seed=22)
    a, b, sb = a.to(device), b.to(device), sb.to(device)
    with pytest.raises(ValueError, match=r"gridDim.y = ceil\(M / 16\) exceeds CUDA's limit of 65535"):
        nvfp4_gemm.gemm(a, b, sa.to(device), sb, config=direct)
    fits = formats.to_blocked(formats.from_blocked(sa, largest + 1, 32)[:largest]).to(device)
    got = nvfp4_gemm.gemm(a[:largest], b, fits, sb, config=direct, split_k=1)
    want = formats.reference_gemm(a[:largest].cpu(), b.cpu(), fits.cpu(), sb.cpu())
    assert torch.equal(got.cpu(), want)


def test_gpu_out_overlapping_an_input_and_requires_grad_are_errors():
    from test_gpu import supported_gpu_or_skip

    device = supported_gpu_or_skip()
    a, b, sa, sb, alpha = (t.to(device) for t in operands(16, 32, 64, seed=23, with_alpha=True))
    arena = torch.zeros(4096, dtype=torch.uint8, device=device)
    out = arena[:1024].view(torch.float16).view(16, 32)
    shared_a = arena[512 : 512 + a.numel()].view(16, 32)
    shared_a.copy_(a)
    with pytest.raises(ValueError, match=r"^out overlaps a in memory"):
        nvfp4_gemm.gemm(shared_a, b, sa, sb, out=out)
    with pytest.raises(ValueError, match=r"^alpha requires grad"):
        nvfp4_gemm.gemm(a, b, sa, sb, alpha.clone().requires_grad_())
    assert not torch.ops.nvfp4.gemm(a, b, sa, sb, alpha.clone().requires_grad_()).requires_grad
