"""The sm120 kernels' SASS holds the NVFP4 block-scaled MMA (proof libraries of tests/sm120_proof_build.py).

`OMMA.SF.16864.F32.E2M1.E2M1.UE4M3.4X` is the sm_120 family's block-scaled mma.sync: m16n8k64,
e2m1 x e2m1 operands, FP32 accumulation, ue4m3 scale factors, four per 64 K elements, i.e. one per
16 FP4 values (NVFP4). An MXFP4 kernel (ue8m0, one scale per 32) would show .UE8M0.2X, a plain FP4
one no .SF. cuobjdump comes from the test extras (nvidia-cuda-cuobjdump); its absence is a failure.
"""

import re

import pytest

from nvfp4_gemm import sm120_rules

from sm120_proof_build import build, gemm_instructions, kernel_cubin
from test_sass import sass_functions

ROWS = sm120_rules.load_configs()

NVFP4_MMA = re.compile(r"\bOMMA\.SF\.16864\.F32\.E2M1\.E2M1\.UE4M3\.4X\b")


def instructions(body: str) -> list[str]:
    """The instructions of a SASS listing without addresses and encodings, one per line."""
    out = []
    for line in body.splitlines():
        match = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", line)
        if match:
            out.append(match.group(1))
    return out


_sass: dict = {}


def sass_of(row) -> dict:
    """The SASS of a row's proof library (compiled on first use)."""
    if row.name not in _sass:
        _sass[row.name] = sass_functions(build(row))
    return _sass[row.name]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_every_kernel_issues_the_nvfp4_block_scaled_mma(row):
    functions = sass_of(row)
    gemms = {name: body for (arch, name), body in functions.items() if "GemmUniversal" in name}
    # one device kernel per registry entry (row x out dtype), all for the family target
    assert len(gemms) == len(sm120_rules.OUT_DTYPES), list(gemms)
    assert {arch for arch, name in functions if "GemmUniversal" in name} == {"sm_120f"}
    for name, body in gemms.items():
        assert NVFP4_MMA.search(body), f"{name[:80]}... lacks the NVFP4 block-scaled MMA"
        # no other MMA flavour sneaks in (an MX or unscaled path)
        other = {m for m in re.findall(r"\b[A-Z]*MMA[\w.]*", body) if not NVFP4_MMA.fullmatch(m)}
        assert not other, (name[:80], other)
        # operands and scales by TMA into shared memory, then ldmatrix into registers; output by TMA
        for needle in ("UTMALDG", "LDSM", "UTMASTG"):
            assert needle in body, f"{name[:80]}... lacks {needle}"
        # programmatic dependent launch: griddepcontrol.wait (ACQBULK) before the first global
        # access (no early launch_dependents: CUTLASS 4.2 cannot compile it for sm120, see the launcher)
        assert "ACQBULK" in body, f"{name[:80]}... lacks the PDL wait"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_kernels_are_what_their_rows_say(row):
    gemms = [name for (arch, name) in sass_of(row) if "GemmUniversal" in name]
    schedule = "Pingpong" if row.schedule == "pingpong" else "Cooperative"
    assert all(f"KernelTmaWarpSpecialized{schedule}BlockScaledSm120" in name for name in gemms), gemms
    assert all(("StreamK" in name) == (row.scheduler == "stream_k") for name in gemms)
    # (the tile is not readable from the compressed mangled name; test_sm120_host_proofs.py checks
    # the compiled TileShape of every entry against its row)


def test_int_scale_atoms_leave_the_device_code_unchanged():
    """The launcher rebuilds the builder's two shared-memory scale atoms with int leaves, so that
    GCC 12 accepts the kernel's host stub (see the launcher). The device code must be the builder's,
    instruction for instruction (a cubin has no host stub, so the builder's own types compile)."""
    ours = gemm_instructions(kernel_cubin("sm120_coop_128x128x128", "bfloat16", "120f"))
    builders = gemm_instructions(
        kernel_cubin("sm120_coop_128x128x128", "bfloat16", "120f", defines=("NVFP4_GEMM_SM120_BUILDER_SCALE_ATOMS",))
    )
    assert len(ours) > 1000 and any(NVFP4_MMA.search(line) for line in ours)
    assert ours == builders
