"""Proof without an sm120 GPU: the sm120 launcher's own argument builder, evaluated on the CPU.

Every row of python/nvfp4_gemm/sm120_rules.py is compiled for sm_120f into a proof library
(tests/sm120_proof_build.py: the row's three registry entries as the generator would emit them).
Through those entries' hooks:
  - the scale offsets CUTLASS's Sm120 collective reads the scales at (Sm1xxBlockScaledConfig<16>,
    taken from the arguments the launch builds) equal formats.to_blocked's;
  - CUTLASS's host GEMM (cutlass/util/reference/host/gett.hpp) run over the launcher's arguments
    (pointers, strides, scale layouts, output stride, and the alpha its epilogue arguments apply)
    equals the exact float64 reference, bit for bit;
  - CUTLASS's can_implement (and the prepared launch's checks) accept exactly what the Python
    predicate accepts;
  - the compiled kernels are the rows: tile, pipeline depth and shared memory as the rules model them.
"""

import ctypes

import pytest
import torch

from nvfp4_gemm import configs, formats, sm120_rules
from nvfp4_gemm.configs import OUT_DTYPES
from nvfp4_gemm.testing import random_operands

from sm120_proof_build import ProofLibrary, build

ROWS = sm120_rules.load_configs()
ROW_NAMES = [row.name for row in ROWS]
ENTRIES = [(name, dtype) for name in ROW_NAMES for dtype in OUT_DTYPES]

_libraries: dict = {}


def proof_library(name: str) -> ProofLibrary:
    """The row's proof library (compiled on first use; skips where nvcc or CUTLASS is missing)."""
    if name not in _libraries:
        _libraries[name] = ProofLibrary(build(sm120_rules.by_name(name)))
    return _libraries[name]


def entry(name: str, dtype: str):
    lib = proof_library(name)
    return lib, lib.entries[dtype]


@pytest.mark.parametrize("name", ROW_NAMES)
def test_compiled_entries_are_the_row(name):
    row = sm120_rules.by_name(name)
    lib = proof_library(name)
    assert sorted(lib.entries) == sorted(OUT_DTYPES)
    for dtype, i in lib.entries.items():
        assert lib.proof_entry_name(i).decode() == name
        assert lib.proof_entry_sm_major(i) == 12
        tile = (ctypes.c_int * 3)()
        lib.proof_tile(i, tile)
        assert tuple(tile) == row.tile, (dtype, tuple(tile))
        # the resolver's shared-memory model is the compiled kernel's: same pipeline depth and
        # epilogue carve-out, and the whole kernel fits the family's 99 KB
        assert lib.proof_entry_pipeline_stages(i) == sm120_rules.pipeline_stages(row.tile, dtype), dtype
        assert lib.proof_epilogue_bytes(i) == sm120_rules.epilogue_bytes(row.tile, dtype), dtype
        assert lib.proof_shared_memory_bytes(i) <= sm120_rules.SMEM_CAPACITY_BYTES
        assert lib.proof_shared_memory_bytes(i) >= sm120_rules.pipeline_stages(row.tile, dtype) * sm120_rules.stage_bytes(row.tile)


def expected_offsets(rows, k, l):
    """Where formats.to_blocked puts logical scale (l, row, k_block), by tagging each with its index."""
    ids = torch.arange(1, l * rows * (k // 16) + 1, dtype=torch.int64).reshape(l, rows, k // 16)
    blocked = formats.to_blocked(ids)
    positions = torch.nonzero(blocked, as_tuple=True)[0]
    offsets = torch.empty(ids.numel(), dtype=torch.int64)
    offsets[blocked[positions] - 1] = positions
    return offsets


@pytest.mark.parametrize("name,dtype", ENTRIES)
@pytest.mark.parametrize("operand", [0, 1], ids=["a_scale", "b_scale"])
@pytest.mark.parametrize("rows", [1, 100, 128, 129, 300])
@pytest.mark.parametrize("k,l", [(32, 1), (96, 3), (160, 1), (448, 3)])  # K/16 = 2, 6, 10, 28: not multiples of 4
def test_scale_offsets_match_blocked_layout(name, dtype, operand, rows, k, l):
    lib, i = entry(name, dtype)
    got = torch.full((l * rows * (k // 16),), -1, dtype=torch.int64)
    lib.proof_scale_offsets(i, operand, rows, k, l, got.data_ptr())
    assert torch.equal(got, expected_offsets(rows, k, l))


SHAPES = [
    # (m, n, k, l): M = 1 and 129 (one row past a 128-row tile), N = 8 x odd, K = 32 x odd, L = 3
    (1, 8, 32, 1),
    # batched with A's and B's padded row counts different (256 vs 128 and 128 vs 256): the batch
    # stride of each scale tensor depends on its own rows, so a launcher that built one operand's
    # scale layout from the other's row count fails here (a single batch does not show it)
    (129, 24, 96, 3),
    (1, 136, 160, 3),
    (129, 136, 288, 3),  # N = 8 * 17 past a 128-column tile, K = 32 * 9 past a 256-element K tile
    (64, 8, 544, 2),  # K = 32 * 17
    (200, 264, 32, 1),  # N = 8 * 33 past two 128-column tiles
]


@pytest.mark.parametrize("name,dtype", ENTRIES)
@pytest.mark.parametrize("m,n,k,l", SHAPES)
def test_cutlass_host_reference_equals_exact_reference(name, dtype, m, n, k, l):
    lib, i = entry(name, dtype)
    # nonzero padding bytes (0x38 = 1.0 in e4m3) in the blocked scales: the kernel must ignore them
    ops = random_operands(m, n, k, l, seed=m * 1000 + n + k + l, with_alpha=True, padding_byte=0x38)
    # the alpha the launcher's epilogue arguments apply for this alpha pointer (NaN if they would add
    # a source tensor), not the test's own value
    alpha = lib.proof_applied_alpha(i, ops.alpha.data_ptr())
    got = torch.full((l, m, n), float("nan"), dtype=torch.float64)
    lib.proof_host_reference(
        i, ops.a.data_ptr(), ops.b.data_ptr(), ops.a_scale.data_ptr(), ops.b_scale.data_ptr(), got.data_ptr(),
        m, n, k, l, alpha,
    )
    want = formats.reference_gemm_float64(ops.a, ops.b, ops.a_scale, ops.b_scale, ops.alpha)
    # Both sums are exact in float64 for this data (12-bit products, scales 0.125..3.75), so the
    # CUTLASS host GEMM over the launcher's layouts must agree bit for bit, before and after the
    # single rounding to the kernel's output dtype.
    assert torch.equal(got, want)
    out_dtype = getattr(torch, dtype)
    assert torch.equal(formats.round_once(got, out_dtype), formats.round_once(want, out_dtype))
    assert want.abs().max() > 0


def random_problems(count, seed):
    gen = torch.Generator().manual_seed(seed)
    for _ in range(count):
        m = int(torch.randint(1, 600, (), generator=gen))
        n = int(torch.randint(1, 600, (), generator=gen))
        k = 16 * int(torch.randint(1, 40, (), generator=gen))
        l = int(torch.randint(1, 4, (), generator=gen))
        yield m, n, k, l
    # the edges the random draw may miss
    yield from [(1, 8, 32, 1), (1, 4, 32, 1), (1, 8, 16, 1), (1, 12, 32, 1), (3, 2, 64, 2), (5000, 8, 32, 1)]


@pytest.mark.parametrize("name,dtype", ENTRIES)
def test_cutlass_can_implement_equals_python_predicate(name, dtype):
    row = sm120_rules.by_name(name)
    lib, i = entry(name, dtype)
    for m, n, k, l in random_problems(300, seed=7):
        python_ok = row.supports(m, n, k, l, dtype) is None
        cutlass_ok = lib.proof_can_implement(i, m, n, k, l) is None
        # equality, both ways: the predicate neither refuses what the kernel runs nor accepts what
        # it would reject at launch
        assert cutlass_ok == python_ok, (m, n, k, l, row.supports(m, n, k, l, dtype))
        # the prepared launch checks the same, and refuses a split on data-parallel kernels
        assert (lib.proof_prepare(i, m, n, k, l, 1) is None) == python_ok, (m, n, k, l)
        if python_ok:
            split_ok = lib.proof_prepare(i, m, n, k, l, 2) is None
            assert split_ok == row.takes_split_k, (m, n, k, l)


@pytest.mark.parametrize(
    "change,rule",
    [
        (dict(schedule="pingpong", scheduler="stream_k", name="sm120_pingpong_128x128x128_streamk"), "no stream-K"),
        (dict(tile=[128, 64, 128], name="sm120_coop_128x64x128"), "tile must be one of"),
        (dict(tile=[256, 128, 128], schedule="pingpong", name="sm120_pingpong_256x128x128"), "tile has M in"),
        (dict(tile=[256, 256, 256], name="sm120_coop_256x256x256"), "fewer than 2 pipeline stages"),
        (dict(schedule="warp_specialized"), "schedule must be one of"),
        (dict(cluster=[2, 1]), "use no clusters"),
        (dict(swap_ab=True), "no swap_ab option"),
        (dict(name="sm120_coop_128x128x128_fast"), "name must say"),
    ],
)
def test_rows_breaking_the_rules_are_refused(change, rule):
    """A table row (csrc/configs.toml) breaking the family's vocabulary (families.py) or its own rules
    (sm120_rules.check_config) is refused when the table is read, naming the rule."""
    row = dict(name="sm120_coop_128x128x128", family="sm120", tile=[128, 128, 128], cluster=[1, 1])
    assert configs._check_row(row, 0).name == row["name"]
    with pytest.raises(ValueError, match=rule):
        configs._check_row({**row, **change}, 0)


def test_every_row_fits_and_is_named_for_what_it_is():
    for row in ROWS:
        assert sm120_rules.check_config(row) is row
        for dtype in OUT_DTYPES:
            assert sm120_rules.pipeline_stages(row.tile, dtype) >= 2
