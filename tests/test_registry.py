"""One config table, many consumers: the table, the generated registry and the Python list agree."""

import json

import pytest

import torch

from nvfp4_gemm import _C, candidates, configs, dtypes, families
from nvfp4_gemm.configs import OUT_DTYPES, load_table


def test_registry_matches_table():
    table = load_table()
    families_built = {entry[2] for entry in _C.kernels()}
    expected = {
        (c.name, dtype, c.sm_major) for c in table.configs if c.sm_major in families_built for dtype in OUT_DTYPES
    }
    assert set(_C.kernels()) == expected
    assert len(_C.kernels()) == len(expected)  # no duplicates
    # the build carries every family it compiled an architecture of (the default wheel: all three)
    compiled = set(_C.compiled_architectures())
    assert families_built == {f.sm_major for f in families.FAMILIES if any(f"sm_{a}" in compiled for a in f.archs)}


def test_python_candidates_are_the_table_rows():
    table = load_table()
    nvfp4 = [c for c in table.configs if c.family == "sm100" and c.format == "nvfp4"]
    assert candidates(10) == tuple(c for c in nvfp4 if not c.per_column_alpha)
    assert candidates(10, "mxfp4") == tuple(c for c in table.configs if c.family == "sm100" and c.format == "mxfp4")
    # an (N,) alpha: sm100's rows marked per_column_alpha (and no others), every sm90 row, no sm120 row
    assert candidates(10, alpha_per_column=True) == tuple(c for c in nvfp4 if c.per_column_alpha)
    assert {c.swap_ab for c in candidates(10, alpha_per_column=True)} == {False, True}  # both orientations
    assert candidates(10, "mxfp4", alpha_per_column=True) == ()
    assert candidates(9, alpha_per_column=True) == candidates(9)
    assert candidates(12, alpha_per_column=True) == () and candidates(12)


def test_lookup_is_by_name_and_unknown_names_fail():
    name = _C.kernels()[0][0]  # a config this build carries (an NVFP4_GEMM_CUDA_ARCHS=120f build has no sm100)
    kernel = _C.lookup(name, "bfloat16")
    assert (kernel.config_name, kernel.out_dtype) == (name, "bfloat16")
    with pytest.raises(KeyError, match="carries no kernel sm100_nope for float16"):
        _C.lookup("sm100_nope", "float16")
    with pytest.raises(ValueError, match="out_dtype must be one of float16, bfloat16, float32, got float64"):
        _C.lookup(name, "float64")


@pytest.mark.parametrize(
    "row,message",
    [
        ({"tile": [64, 128, 256]}, r"the sm100 tcgen05 kernel's tile must be one of \[\[128, 64, 256\]"),
        ({"tile": [256, 128, 256], "cluster": [1, 1], "name": "sm100_2sm_256x128x256_c1x1"}, "needs an even cluster M"),
        ({"cluster": [8, 1]}, "cluster dims must be 1..4"),
        ({"name": "fast_kernel"}, "name must say what the config is"),
        ({"family": "sm75"}, "family must be one of"),
        ({"scheduler": "round_robin"}, "scheduler must be one of"),
        ({"swap_ab": "yes"}, "swap_ab must be true or false"),
        ({"swap_ab": True}, "name must say what the config is"),  # the name lacks _swapab
        (
            {"tile": [128, 192, 256], "scheduler": "stream_k", "name": "sm100_1sm_128x192x256_c1x1_streamk"},
            "runs stream-K data-parallel for tile N = 192",
        ),
        (
            {"family": "sm90", "tile": [16, 128, 128], "mma": "direct", "swap_ab": True, "name": "sm90_direct_16x128x128_splitk"},
            "the sm90 family has no swap_ab option",
        ),
        (
            {"family": "sm90", "tile": [16, 128, 64], "mma": "direct", "name": "sm90_direct_16x128x64_splitk"},
            r"the sm90 direct kernel's tile must be one of \[\[16, 128, 128\]\]",
        ),
        (
            {"family": "sm90", "tile": [256, 256, 128], "mma": "wgmma", "name": "sm90_wgmma_256x256x128_prepass_splitk"},
            "the sm90 wgmma kernel's tile must be one of",
        ),
        (
            {"family": "sm90", "tile": [64, 128, 128], "name": "sm90_wgmma_64x128x128_prepass_splitk"},
            "sm90 mma must be one of",
        ),
        (
            {"family": "sm90", "tile": [64, 128, 128], "mma": "wgmma", "name": "sm90_wgmma_64x128x128_splitk"},
            "name must say what the config is",
        ),
        ({"per_column_alpha": "yes"}, "per_column_alpha must be true or false"),
        ({"per_column_alpha": True}, "name must say what the config is"),  # the name lacks _pcalpha
        (
            {"family": "sm90", "tile": [64, 128, 128], "mma": "wgmma", "per_column_alpha": True,
             "name": "sm90_wgmma_64x128x128_prepass_splitk_pcalpha"},
            r"the sm90 family has no per_column_alpha rows \(every one of its kernels takes an \(N,\) alpha\)",
        ),
        (
            {"family": "sm120", "tile": [128, 128, 128], "per_column_alpha": True, "name": "sm120_coop_128x128x128_pcalpha"},
            r"the sm120 family has no per_column_alpha rows$",
        ),
    ],
)
def test_table_loader_rejects_bad_rows(tmp_path, row, message):
    base = {"name": "sm100_1sm_128x128x256_c1x1", "family": "sm100", "tile": [128, 128, 256], "cluster": [1, 1]}
    base.update(row)
    lines = ["schema = 1", "kernels_per_translation_unit = 3", "[[config]]"]
    for key, value in base.items():
        lines.append(f"{key} = {json.dumps(value)}")
    path = tmp_path / "configs.toml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=message):
        configs.load_table(path)


def test_generator_writes_only_changed_files(tmp_path):
    import importlib.util
    from pathlib import Path

    # The generator lives in the source tree beside tests/ (the installed package ships only the table).
    script = Path(__file__).resolve().parents[1] / "csrc" / "generate_kernels.py"
    if not script.is_file():
        pytest.skip("source tree not present (installed wheel only)")
    spec = importlib.util.spec_from_file_location("generate_kernels", script)
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    every_family = [next(iter(f.archs)) for f in families.FAMILIES]
    sources = generator.generate(configs.table_path(), tmp_path, every_family)
    stamps = {p: p.stat().st_mtime_ns for p in sources}
    generator.generate(configs.table_path(), tmp_path, every_family)
    assert {p: p.stat().st_mtime_ns for p in sources} == stamps
    text = "".join(p.read_text() for p in sources if p.suffix == ".cu")
    for config in load_table().configs:
        for dtype in OUT_DTYPES:
            assert f'"{config.name}", OutDtype::k' in text
    assert "nullptr" in (tmp_path / "kernel_table.cpp").read_text()
    # every entry carries its family's sm major (families.py), and the C++ dtypes are dtypes.py's
    for config in load_table().configs:
        assert f'"{config.name}", OutDtype::kFloat16, /*sm_major=*/{config.sm_major});' in text
    header = (tmp_path / "include" / "nvfp4_gemm" / "dtypes.h").read_text()
    for position, described in enumerate(dtypes.OUT_DTYPE_TABLE):
        assert f"{described.enum} = {position}" in header and f'"{described.name}"' in header
    assert f"kValuesPerScale = {dtypes.NVFP4.values_per_scale};" in header


def test_generator_emits_the_sm120_rows_only_for_120f(tmp_path):
    """The generated sm120 entries are exactly the kernel types the sm120 proofs compile
    (sm120_rules.kernel_type, tests/sm120_proof_build.py), in TUs compiled for sm_120f only."""
    import importlib.util
    from pathlib import Path

    from nvfp4_gemm import sm120_rules

    script = Path(__file__).resolve().parents[1] / "csrc" / "generate_kernels.py"
    if not script.is_file():
        pytest.skip("source tree not present (installed wheel only)")
    spec = importlib.util.spec_from_file_location("generate_kernels", script)
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    rows = sm120_rules.load_configs()
    assert rows
    sources = generator.generate(configs.table_path(), tmp_path / "with", ["100f", "90a", "120f"])
    sm120_sources = [p for p in sources if p.name.startswith("sm120_")]
    text = "".join(p.read_text() for p in sm120_sources)
    for row in rows:
        for dtype in OUT_DTYPES:
            assert (
                f"sm120::make_entry<{sm120_rules.kernel_type(row, dtype)}>(\"{row.name}\", "
                f"OutDtype::{dtypes.out_dtype(dtype).enum}, /*sm_major=*/12);"
            ) in text
    assert text.count("make_entry<") == len(rows) * len(OUT_DTYPES)
    listing = (tmp_path / "with" / "sources.txt").read_text().splitlines()
    assert sorted(line.split()[1] for line in listing if "/sm120_" in line) == ["120f"] * len(sm120_sources)
    without = generator.generate(configs.table_path(), tmp_path / "without", ["100f", "90a"])
    assert not [p for p in without if p.name.startswith("sm120_")]
    assert "sm120_" not in (tmp_path / "without" / "kernel_table.cpp").read_text()


def test_output_dtypes_are_described_as_torch_has_them():
    for described in dtypes.OUT_DTYPE_TABLE:
        info = torch.finfo(getattr(torch, described.name))
        assert described.bytes == info.bits // 8
        assert info.eps == 2.0 ** -described.mantissa_bits
        assert info.tiny == 2.0 ** described.min_exponent
        assert info.max == described.max_finite
        assert described.alignment * described.bytes == 16


def test_every_compiled_architecture_belongs_to_a_family():
    capabilities = families.arch_capabilities()
    assert set(_C.compiled_architectures()) <= set(capabilities)
    for family in families.FAMILIES:
        for arch, runs_on in family.archs.items():
            assert f"sm_{arch}" in capabilities and all(major == family.sm_major for major, _ in runs_on)
    assert {f.name for f in families.FAMILIES} == {c.family for c in load_table().configs}


def test_a_plan_is_one_call_and_a_rejection_touches_no_device():
    """`Kernel.plan` answers (rejection, workspace, counters) in one binding call; a problem the kernel
    rejects is answered on the host, before any device query (this box has no GPU)."""
    table = load_table()
    built = {entry[0] for entry in _C.kernels()}
    for config in (c for c in table.configs if c.name in built):
        kernel = _C.lookup(config.name, "float16")
        for m, n, k in ((16, 130, 256), (16, 128, 48)):  # N not a multiple of 4 or 8; K not of 32
            rejection = kernel.can_implement(m, n, k, 1)
            assert rejection is not None, config.name
            assert kernel.plan(m, n, k, 1, 1, 0) == (rejection, 0, 0)
