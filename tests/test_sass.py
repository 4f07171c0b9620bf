"""The built extension carries Blackwell cubins whose SASS holds the block-scaled MMA of each kernel's format.

`UTCOMMA.4X` is tcgen05.mma with block scaling at four scale factors per 64 K-elements, i.e. one
e4m3 scale per 16 FP4 values (NVFP4); an MXFP4 (32-element) kernel shows UTCOMMA without the .4X
(nvcc 13.0 prints no 2X), an MXFP8 x MXFP4 kernel (the mxf8f6f4 kind) UTCQMMA, a plain FP8 kernel no
UTCOMMA at all. cuobjdump comes from the test extras (nvidia-cuda-cuobjdump), because
the toolkit on a build box may not have it; its absence is a failure, not a skip.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nvfp4_gemm import _C

from conftest import sm100_kernels


def cuobjdump() -> str:
    try:
        import nvidia

        for root in nvidia.__path__:
            for candidate in Path(root).glob("cu*/bin/cuobjdump"):
                if os.access(candidate, os.X_OK):
                    return str(candidate)
    except ImportError:
        pass
    found = shutil.which("cuobjdump")
    if found is None:
        pytest.fail("cuobjdump not found: install the test extras (pip install .[test])")
    return found


def sass_functions(library) -> dict:
    """{(arch, function): SASS text} of every kernel in a library (test_sm120_sass.py reads its proof libraries)."""
    text = subprocess.run([cuobjdump(), "--dump-sass", str(library)], check=True, capture_output=True, text=True).stdout
    functions, arch, current = {}, None, None
    for line in text.splitlines():
        arch_match = re.match(r"\s*arch = (sm_\w+)", line)
        if arch_match:
            arch = arch_match.group(1)
        func_match = re.match(r"\s*Function : (\S+)", line)
        if func_match:
            current = (arch, func_match.group(1))
            functions[current] = []
        elif current is not None:
            functions[current].append(line)
    return {key: "\n".join(lines) for key, lines in functions.items()}


@pytest.fixture(scope="module")
def sass_by_function():
    return sass_functions(_C.__file__)


def test_every_compiled_architecture_has_gemm_kernels(sass_by_function):
    archs = {arch for arch, _ in sass_by_function}
    assert set(_C.compiled_architectures()) <= archs, (archs, _C.compiled_architectures())


def gemm_format_of(function_name: str) -> str:
    """The GEMM format a GemmUniversal instantiation's mangled name says: a mixed-input mainloop is weight-only
    (its converted operand's tuple names e2m1 and the scale type, which is the tokens' type); otherwise its scale
    type (ue4m3: NVFP4; ue8m0: MX) and, for MX, whether an e4m3 data type is in it (MXFP8 x MXFP4)."""
    weight_only = re.search(r"MixedInput.*float_e2m1_tENS_\d+(bfloat16_t|half_t)", function_name)
    if weight_only:
        return {"bfloat16_t": "bf16xnvfp4", "half_t": "fp16xnvfp4"}[weight_only.group(1)]
    if "float_ue4m3_t" in function_name:
        return "nvfp4"
    return "mxfp8xmxfp4" if "float_e4m3_t" in function_name else "mxfp4"


def test_gemm_kernels_use_nvfp4_block_scaled_mma(sass_by_function):
    sm100_kernels()
    sm100_count = len([k for k in _C.kernels() if k[2] == 10])
    for arch in [a for a in _C.compiled_architectures() if a.startswith("sm_10")]:
        gemms = {name: body for (a, name), body in sass_by_function.items() if a == arch and "GemmUniversal" in name}
        # one device kernel per registry entry (config x out dtype)
        assert len(gemms) == sm100_count, (arch, len(gemms), sm100_count)
        for name, body in gemms.items():
            fmt = gemm_format_of(name)
            if fmt == "nvfp4":
                # (2SM kernels carry a CTA-pair qualifier before .4X)
                assert re.search(r"\bUTCOMMA(\.\w+)*\.4X\b", body), f"{arch} {name[:80]}... lacks UTCOMMA.4X"
            elif fmt == "mxfp4":
                # the mxf4 kind at one scale per 32 values: UTCOMMA without the .4X of 16-value scale vectors
                assert re.search(r"\bUTCOMMA\b", body) and not re.search(r"\bUTCOMMA(\.\w+)*\.4X\b", body), (
                    f"{arch} {name[:80]}... lacks the MXFP4 UTCOMMA"
                )
            elif fmt == "mxfp8xmxfp4":
                # the mxf8f6f4 kind (MXFP8 x MXFP4) is UTCQMMA, block-scaled through tensor memory like the others
                assert re.search(r"\bUTCQMMA\b", body), f"{arch} {name[:80]}... lacks UTCQMMA"
            else:
                # weight-only: 16-bit MMAs (UTCHMMA) on the weights converted in registers, no block-scaled MMA
                assert re.search(r"\bUTCHMMA\b", body) and not re.search(r"\bUTC[OQ]MMA\b", body), (
                    f"{arch} {name[:80]}... lacks the weight-only UTCHMMA"
                )
            # operands arrive through TMA (UTMALDG); block scales through tensor memory (UTCCP), a weight-only
            # kernel's scales through TMA with its weights
            assert "UTMALDG" in body, f"{arch} {name[:80]}... lacks TMA loads"
            assert "UTCCP" in body or fmt.endswith("xnvfp4"), f"{arch} {name[:80]}... lacks scale copies"
            # programmatic dependent launch is compiled in: griddepcontrol.wait is ACQBULK in SASS
            # (and launch_dependents PREEXIT; checked on a one-line kernel with nvcc 13.0)
            assert "ACQBULK" in body and "PREEXIT" in body, f"{arch} {name[:80]}... lacks the PDL wait/trigger"


def test_every_sm100_format_row_has_its_kernels(sass_by_function):
    sm100_kernels()
    from nvfp4_gemm.configs import OUT_DTYPES, load_table

    rows = [load_table().by_name(name) for name in {k[0] for k in _C.kernels() if k[2] == 10}]
    for arch in [a for a in _C.compiled_architectures() if a.startswith("sm_10")]:
        gemms = [name for (a, name) in sass_by_function if a == arch and "GemmUniversal" in name]
        for fmt in {r.format for r in rows}:
            count = sum(gemm_format_of(name) == fmt for name in gemms)
            assert count == len(OUT_DTYPES) * sum(r.format == fmt for r in rows), (arch, fmt)


def test_sm100_variants_compile_to_what_their_rows_say(sass_by_function):
    sm100_kernels()
    from nvfp4_gemm.configs import OUT_DTYPES, load_table

    rows = [load_table().by_name(name) for name in {k[0] for k in _C.kernels() if k[2] == 10}]
    per_row = len(OUT_DTYPES)
    for arch in [a for a in _C.compiled_architectures() if a.startswith("sm_10")]:
        gemms = {name: body for (a, name), body in sass_by_function.items() if a == arch and "GemmUniversal" in name}
        # stream-K rows instantiate CUTLASS's stream-K scheduler; 2SM rows issue CTA-pair MMAs
        stream_k = [name for name in gemms if "StreamK" in name]
        assert len(stream_k) == per_row * sum(r.scheduler == "stream_k" for r in rows), arch
        pair_mma = [name for name, body in gemms.items() if re.search(r"\bUTC[OQ]MMA\.2CTA", body)]
        assert len(pair_mma) == per_row * sum(r.two_sm for r in rows), arch


def test_sm100_per_column_alpha_rows_scale_by_a_loaded_vector(sass_by_function):
    """The per_column_alpha rows instantiate CUTLASS's per-column alpha epilogue (per-row on swap-AB kernels,
    whose M is the user's N) and nothing else does; their alpha[n] * acc is an FFMA (a zero bias addend) on
    the broadcast vector, where the one-alpha kernels multiply by one value (FMUL, no FFMA); the per-column
    (row-broadcast) kernels load the vector (an LDG beyond the one-alpha data-parallel kernels' two scalars).
    Their block-scaled MMA: test_gemm_kernels_use_nvfp4_block_scaled_mma."""
    from nvfp4_gemm.configs import OUT_DTYPES, load_table

    rows = [load_table().by_name(name) for name in {k[0] for k in _C.kernels() if k[2] == 10}]
    for arch in [a for a in _C.compiled_architectures() if a.startswith("sm_10")]:
        gemms = {name: body for (a, name), body in sass_by_function.items() if a == arch and "GemmUniversal" in name}
        per_col = {n: b for n, b in gemms.items() if "PerColLinCombPerColBiasEltAct" in n}
        per_row = {n: b for n, b in gemms.items() if "PerRowLinCombPerRowBiasEltAct" in n}
        assert len(per_col) == len(OUT_DTYPES) * sum(r.per_column_alpha and not r.swap_ab for r in rows), arch
        assert len(per_row) == len(OUT_DTYPES) * sum(r.per_column_alpha and r.swap_ab for r in rows), arch
        for name, body in gemms.items():
            ffma = len(re.findall(r"\bFFMA\b", body))
            if name in per_col or name in per_row:
                assert ffma >= 64, f"{arch} {name[:80]}... lacks the alpha[n] * acc FFMAs"
            else:
                assert ffma == 0 and re.search(r"\bFMUL\b", body), f"{arch} {name[:80]}..."
        one_alpha_loads = {len(re.findall(r"\bLDG\b", b)) for n, b in gemms.items()
                           if n not in per_col and n not in per_row and "StreamK" not in n}
        for name, body in per_col.items():
            assert len(re.findall(r"\bLDG\b", body)) > max(one_alpha_loads), f"{arch} {name[:80]}... loads no vector"


def test_hopper_kernels_use_16bit_tensor_cores(sass_by_function):
    if "sm_90a" not in _C.compiled_architectures():
        pytest.skip("this build carries no sm_90a kernels")
    from nvfp4_gemm.configs import load_table
    from nvfp4_gemm.dtypes import MX, gemm_format

    table = load_table()
    entries = [(table.by_name(name), dtype) for name, dtype, major in _C.kernels() if major == 9]
    rows = [row for row, _ in entries]

    def mx_tokens(row):
        return gemm_format(row.format).a.block is MX

    def gemm_tokens(row):  # the GEMM kernel's tokens: MX tokens reach it as the MX prepass's bf16
        return "bf16" if mx_tokens(row) else gemm_format(row.format).a.element.name

    # every __global__ of namespace nvfp4_gemm::sm90: one per distinct GEMM kernel (the MX-token rows
    # instantiate the bf16 x MXFP4 rows' kernels), plus the token prepasses: the NVFP4 tokens' dequantizing
    # one, one permuting pass per 16-bit token type of the weight-only wgmma rows, and one MX pass per
    # (MX token type, kernel kind): bf16 in the wgmma K order, or as given for the direct kernel
    kernels = {name: body for (arch, name), body in sass_by_function.items() if arch == "sm_90a" and "nvfp4_gemm4sm90" in name}
    prepass = [name for name in kernels if "dequant_tokens_kernel" in name]
    permute = [name for name in kernels if "permute_tokens_kernel" in name]
    mx_prepass = [name for name in kernels if "mx_tokens_kernel" in name]
    wgmma_formats = {row.format for row in rows if row.mma == "wgmma"}
    assert len(prepass) == (1 if "nvfp4" in wgmma_formats else 0)
    assert len(permute) == len({gemm_format(f).a.element.name for f in wgmma_formats if gemm_format(f).weight_only})
    mx_rows = [row for row in rows if mx_tokens(row)]
    assert len(mx_prepass) == len({(gemm_format(row.format).a.element.name, row.mma) for row in mx_rows})
    assert mx_rows, "the table has MX-token rows for sm90 (tests/test_mx_hopper.py)"
    gemms = {name: body for name, body in kernels.items() if name not in prepass + permute + mx_prepass}
    distinct = {(row.tile, row.mma, dtype, gemm_tokens(row), gemm_format(row.format).b.name) for row, dtype in entries}
    assert len(gemms) == len(distinct)
    # wgmma kernels show HGMMA (16-bit in, FP32 accumulate), the direct decode kernel HMMA.16816.F32; the
    # kernels of bf16 activations (as given, or the MX prepass's) run the BF16 forms (their weights
    # dequantized to bf16), the others fp16
    hgmma = [name for name, body in gemms.items() if re.search(r"\bHGMMA\.64x\d+x16\.F32\b", body)]
    hmma = [name for name, body in gemms.items() if re.search(r"\bHMMA\.16816\.F32\b", body)]
    assert len(hgmma) == sum(kind == "wgmma" for _, kind, *_ in distinct)
    assert len(hmma) == sum(kind == "direct" for _, kind, *_ in distinct)
    assert not set(hgmma) & set(hmma)
    bf16 = [name for name, body in gemms.items() if re.search(r"\b(HGMMA\.64x\d+x16|HMMA\.16816)\.F32\.BF16\b", body)]
    assert len(bf16) == sum(tokens == "bf16" for _, kind, _, tokens, _ in distinct if kind != "gemv")
    gemv = [name for name in gemms if "gemv_kernel" in name]
    assert len(gemv) == sum(kind == "gemv" for _, kind, *_ in distinct)
    for name in gemv:  # the CUDA cores: FFMA on exact FP32 products, 16-byte weight loads, no tensor-core MMA
        body = gemms[name]
        assert not re.search(r"\b(HMMA|HGMMA)\.", body), name
        assert re.search(r"\bFFMA\b", body) and re.search(r"\bLDG\.E(\.\w+)*\.128\b", body), name
    for name in hmma:  # straight from global memory into registers (one 16-byte load per lane and weight row)
        body = gemms[name]
        assert re.search(r"\bLDG\.E(\.\w+)*\.128\b", body) and "LDGSTS" not in body, f"{name[:80]}... is not direct"
        # its consumers wait for the MX prepass when launched after it (griddepcontrol.wait: ACQBULK)
        assert "ACQBULK" in body, f"{name[:80]}... lacks the PDL wait"
    for name in hgmma:
        body = gemms[name]
        # raw weights by cp.async and ldmatrix, 16-bit tokens by TMA (UTMALDG), stages handed over through
        # mbarriers, the prepass waited for through griddepcontrol.wait (ACQBULK)
        for needle in ("LDGSTS", "LDSM", "UTMALDG", "SYNCS", "ACQBULK"):
            assert needle in body, f"{name[:80]}... lacks {needle}"
        # the wgmmas of a batch run back to back and two batches stay in flight: when ptxas serializes
        # them (C7512 / C7513) every HGMMA carries the group barrier gsb0 and is waited for at once
        hgmma_lines = re.findall(r"HGMMA\.[^;]*;", body)
        assert any("gsb0" not in line for line in hgmma_lines), f"{name[:80]}... serializes its wgmmas"
        assert "WARPGROUP.DEPBAR.LE gsb0, 0x2" in body, f"{name[:80]}... keeps fewer than two batches in flight"
    for name in prepass + mx_prepass:  # it lets the GEMM launch early: griddepcontrol.launch_dependents (PREEXIT)
        assert "PREEXIT" in kernels[name]
    for name in mx_prepass:  # no tensor-core MMA; MXFP8 tokens converted by the e4m3 unpack (cvt.rn.f16x2.e4m3x2)
        assert not re.search(r"\b(HMMA|HGMMA)\.", kernels[name]), name  # (HFMA2.MMA is the FMA pipe's form of HFMA2)
        assert ("F2FP.F16.E4M3.UNPACK_B" in kernels[name]) == ("fp8_e4m3" in name), name
