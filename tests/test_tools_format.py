"""`--format` of the tools (the main job, tune, model, the benchmark suite) on the CPU: parsing, the one-line
refusal on a GPU whose kernel family lacks the format (a faked GPU), the CPU demo in every format, the baselines
of every format, and tuned table entries that apply to their own format only. At the end, on a GPU this wheel
has kernels for: the main job and tune in each format of its family.

The formats and which family takes which come from dtypes.GEMM_FORMATS and families.FAMILIES: a format or a
family added there is tested here without editing this file."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from nvfp4_gemm import compiled_architectures, families, resolver
from nvfp4_gemm.__main__ import main
from nvfp4_gemm.dtypes import GEMM_FORMATS, UNSCALED_ELEMENT_FORMATS, gemm_format
from nvfp4_gemm.formats import reference_gemm_float64
from nvfp4_gemm.ops import unsupported_reason
from nvfp4_gemm.tools import bench, cli
from nvfp4_gemm.tools import tune as tools_tune
from nvfp4_gemm.tools.testing import earned_tolerance, random_operands

FORMATS = [f.name for f in GEMM_FORMATS]
DEFAULT_FORMAT = FORMATS[0]
REPO = Path(__file__).resolve().parents[1]


def capability_of(family):
    """A compute capability the family's kernels run on (its first architecture's first)."""
    return next(iter(family.archs.values()))[0]


# Every (family, format) pair, split by whether the family's kernels take the format.
TAKEN = [pytest.param(f, format, id=f"{f.name}-{format}") for f in families.FAMILIES for format in FORMATS
         if format in f.formats]
REFUSED = [pytest.param(f, format, id=f"{f.name}-{format}") for f in families.FAMILIES for format in FORMATS
           if format not in f.formats]


def assert_one_line_refusal(err, format, where, family):
    """`err` is the tools' one line for a `family` (named `where`) without `format`: it names what the family's
    kernels take and every family that runs the format, then the CPU reference path."""
    lines = err.splitlines()
    assert err.endswith("\n") and len(lines) == 1, err
    line = lines[0]
    assert line.startswith(f"--format {format}: {where} has no {format} kernel (its {family.name} kernels take "
                           f"{', '.join(family.formats)}); {format} runs on "), line
    runs_on = line.split(f"; {format} runs on ", 1)[1]
    named = re.findall(r"(\w+) GPUs \(([^)]*)\)", runs_on)
    assert named == [(f.name, f.reference_gpu) for f in families.FAMILIES if format in f.formats], line
    assert runs_on.endswith("the CPU reference path (no GPU, or CPU tensors)"), line


def fake_gpu(monkeypatch, capability, name):
    """Make this process see one CUDA GPU of `capability` (nothing is launched: the commands under test
    must answer before any CUDA work)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *args: capability)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *args: name)
    if unsupported_reason() is not None:
        pytest.skip(f"this build has no kernels for compute capability {capability}: {unsupported_reason()}")


class Reached(Exception):
    """Raised by a stand-in for the first GPU measurement: the command got past its checks."""


def refuse_measuring(monkeypatch):
    def measure(*args, **kwargs):
        raise Reached()

    monkeypatch.setattr(bench, "measure_ceilings", measure)
    monkeypatch.setattr(tools_tune, "tune", measure)


# parsing ---------------------------------------------------------------------------------------------


def test_format_choices_are_the_gemm_formats():
    assert cli.FORMAT_NAMES == tuple(FORMATS)
    assert DEFAULT_FORMAT == "nvfp4"  # the default: the GPU MODE task's format, what gpumode and report run
    assert any(gemm_format(f).weight_only for f in cli.FORMAT_NAMES)  # the weight-only formats are choices too


@pytest.mark.parametrize("argv", [["--format", "fp9"], ["tune", "--format", "fp9"], ["model", "--format", "fp9"]])
def test_an_unknown_format_is_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --format: invalid choice: 'fp9' (choose from {', '.join(map(repr, FORMATS))})" in err


@pytest.mark.parametrize(
    "argv,command,expected",
    [
        ([], "main", "nvfp4"),
        (["--format", "mxfp4"], "main", "mxfp4"),
        (["tune"], "tune", "nvfp4"),
        (["tune", "--format", "mxfp8xmxfp4"], "tune", "mxfp8xmxfp4"),
        (["--format", "mxfp4", "tune"], "tune", "mxfp4"),  # before the subcommand: not overwritten by its default
        (["--format", "mxfp4", "tune", "--format", "mxfp8xmxfp4"], "tune", "mxfp8xmxfp4"),
        (["--format", "bf16xnvfp4"], "main", "bf16xnvfp4"),
        (["tune", "--format", "fp16xnvfp4"], "tune", "fp16xnvfp4"),
    ],
)
def test_the_format_reaches_the_command(argv, command, expected, monkeypatch):
    seen = []
    monkeypatch.setattr(cli, "_supported_gpu", lambda: (True, "a faked GPU"))
    monkeypatch.setattr(cli, "_gpu_without_format", lambda format: None)
    monkeypatch.setattr(cli, "_main_job", lambda args: seen.append(("main", args.format)) or 0)
    monkeypatch.setattr(cli, "_tune", lambda args: seen.append(("tune", args.format)) or 0)
    assert main(argv) == 0
    assert seen == [(command, expected)]


@pytest.mark.parametrize("format", FORMATS[1:])
@pytest.mark.parametrize("command", ["gpumode", "report"])
def test_commands_of_the_nvfp4_task_refuse_another_format(command, format, capsys):
    with pytest.raises(SystemExit) as info:
        main(["--format", format, command])
    assert info.value.code == 2
    assert f"--format {format}: {command} runs the GPU MODE task's nvfp4 GEMM only" in capsys.readouterr().err


# model -----------------------------------------------------------------------------------------------


def model_rows(out):
    return {line.split("|")[1].strip() for line in out.splitlines() if line.startswith("| sm")}


MODELED = cli._model_families()


def test_model_archs_are_the_families_with_a_report():
    assert families.DEFAULT_FAMILY in {f.name for f in MODELED}  # `model`'s default --arch
    for family in families.FAMILIES:
        assert (family in MODELED) == callable(getattr(family.model_module(), "report", None))


@pytest.mark.parametrize("family,format", [p for p in TAKEN if p.values[0] in MODELED])
def test_model_predicts_the_configs_of_the_format(family, format, capsys):
    assert main(["model", "--arch", family.name, "--format", format]) == 0
    rows = model_rows(capsys.readouterr().out)
    assert rows == {c.name for c in resolver.candidates(family.sm_major, format)}
    assert rows and all(resolver.pinned_config(name).format == format for name in rows)


@pytest.mark.parametrize("family,format", [p for p in REFUSED if p.values[0] in MODELED])
def test_model_of_a_family_without_the_format_is_one_line(family, format, capsys):
    assert main(["model", "--arch", family.name, "--format", format]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert_one_line_refusal(captured.err, format, f"the {family.name} family ({family.reference_gpu})", family)


def test_the_model_refusal_names_where_a_weight_only_format_runs(capsys):
    """One instance spelled out (the parametrized tests above derive theirs from families.FAMILIES)."""
    sm90 = families.by_name("sm90")
    assert "bf16xmxfp4" in sm90.formats and "bf16xmxfp4" not in families.by_name(families.DEFAULT_FAMILY).formats
    assert main(["model", "--format", "bf16xmxfp4"]) == 2
    err = capsys.readouterr().err
    assert f"; bf16xmxfp4 runs on sm90 GPUs ({sm90.reference_gpu}) and the CPU reference path" in err


# a GPU whose family lacks the format -------------------------------------------------------------------


@pytest.mark.parametrize("command", [[], ["tune"]], ids=["main", "tune"])
@pytest.mark.parametrize("family,format", REFUSED)
def test_a_gpu_refuses_a_format_of_other_families_in_one_line_before_measuring(family, format, command, monkeypatch,
                                                                                 capsys):
    fake_gpu(monkeypatch, capability_of(family), f"NVIDIA {family.reference_gpu}")
    refuse_measuring(monkeypatch)
    assert main(command + ["--format", format]) == 2
    assert_one_line_refusal(capsys.readouterr().err, format, f"NVIDIA {family.reference_gpu}", family)


@pytest.mark.parametrize("command", [[], ["tune"]], ids=["main", "tune"])
@pytest.mark.parametrize("family,format", TAKEN)
def test_a_gpu_goes_on_to_measure_its_formats(family, format, command, monkeypatch):
    """Past the format check and the shapes' (every default shape runs in every format its family takes)."""
    fake_gpu(monkeypatch, capability_of(family), f"NVIDIA {family.reference_gpu}")
    refuse_measuring(monkeypatch)
    with pytest.raises(Reached):
        main(command + ["--format", format])


# (family, format, K multiple) of every format whose kernels need more than the op's K % 32
K_ALIGNED = [pytest.param(f, format, multiple, id=f"{f.name}-{format}") for f in families.FAMILIES
             for format, multiple in (f.format_k_alignment or {}).items()]


@pytest.mark.parametrize("command", [[], ["tune"]], ids=["main", "tune"])
@pytest.mark.parametrize("family,format,multiple", K_ALIGNED)
def test_a_shape_the_formats_kernels_cannot_run_is_one_line(family, format, multiple, command, monkeypatch, capsys):
    fake_gpu(monkeypatch, capability_of(family), f"NVIDIA {family.reference_gpu}")
    refuse_measuring(monkeypatch)
    k = 4 * multiple + 32  # a multiple of 32 (every format's rule), not of the format's kernels' multiple
    assert main(command + ["--format", format, "--shapes", f"128x256x{k}"]) == 2
    assert capsys.readouterr().err == (
        f"--shapes 128x256x{k}: no {format} config of this GPU runs it: K must be a multiple of {multiple} for the "
        f"{family.name} {format} kernels, got K={k}\n"
    )
    unaligned = [other for other in family.formats if other not in family.format_k_alignment]
    assert unaligned  # the shape itself is fine: another format of the family runs it
    with pytest.raises(Reached):
        main(command + ["--format", unaligned[0], "--shapes", f"128x256x{k}"])


def run_benchmark_suite(capability, gpu_name, *options):
    """`pytest benchmarks <options>` in a fresh interpreter that sees one faked GPU."""
    script = (
        "import sys, torch, pytest\n"
        "torch.cuda.is_available = lambda: True\n"
        "torch.cuda.current_device = lambda: 0\n"
        f"torch.cuda.get_device_capability = lambda *a: {tuple(capability)!r}\n"
        f"torch.cuda.get_device_name = lambda *a: {gpu_name!r}\n"
        "sys.exit(pytest.main([sys.argv[1], '-q', '-p', 'no:cacheprovider', *sys.argv[2:]]))\n"
    )
    return subprocess.run([sys.executable, "-c", script, str(REPO / "benchmarks"), *options],
                          capture_output=True, text=True, cwd=REPO)


def compiled_family(family):
    if not any(f"sm_{arch}" in compiled_architectures() for arch in family.archs):
        pytest.skip(f"this build has no {family.name} kernels ({compiled_architectures()}): its GPU is not supported")


# Per family, the first format it does not take (one subprocess each).
FIRST_REFUSED = [pytest.param(f, next(x for x in FORMATS if x not in f.formats), id=f.name) for f in families.FAMILIES
                 if any(x not in f.formats for x in FORMATS)]


@pytest.mark.parametrize("family,format", FIRST_REFUSED)
def test_benchmark_suite_refuses_a_format_of_other_families_in_one_line(family, format):
    """`pytest benchmarks --format F` on a faked GPU without F: a usage error before collection, one line."""
    compiled_family(family)
    name = f"NVIDIA {family.reference_gpu}"
    done = run_benchmark_suite(capability_of(family), name, "--format", format)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    [line] = [line for line in done.stderr.splitlines() if line.startswith("ERROR: ")]
    assert_one_line_refusal(line[len("ERROR: "):] + "\n", format, name, family)
    assert "Traceback" not in done.stdout + done.stderr


# Per family, its formats other than the default one (the default's benchmarks keep their names).
OTHER_TAKEN = [p for p in TAKEN if p.values[1] != DEFAULT_FORMAT]


@pytest.mark.parametrize("family,format", OTHER_TAKEN)
def test_benchmark_suite_collects_a_format_of_the_gpu(family, format):
    """`pytest benchmarks --format F --collect-only` on a faked GPU that takes F: every GEMM benchmark and
    every baseline carries F in its name (--benchmark-compare never pairs it with a run of another format)."""
    compiled_family(family)
    done = run_benchmark_suite(capability_of(family), f"NVIDIA {family.reference_gpu}", "--format", format,
                               "--collect-only")
    assert done.returncode == pytest.ExitCode.OK, done.stdout + done.stderr
    # (test, the parts of its parameter id): "...::test_baseline[mxfp4-ranked-128x7168x2048-cublas_bf16]" ->
    # ("test_baseline", ["mxfp4", "ranked", "128x7168x2048", "cublas_bf16"])
    collected = [(line.split("::")[1].split("[")[0], line[line.index("[") + 1:-1].split("-"))
                 for line in done.stdout.splitlines() if "test_bench_gemm.py::" in line and "[" in line]
    assert collected and all(format in parts for _, parts in collected), done.stdout
    baselines = {name for test, parts in collected if test == "test_baseline" for name in parts}
    assert set(bench.BASELINE_NAMES) <= baselines, done.stdout


# the CPU demo ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("format", FORMATS)
def test_cpu_demo_runs_the_format(format, monkeypatch, capsys):
    if unsupported_reason() is None:
        pytest.skip("a supported GPU is present: the main job times it instead")
    made = []
    random_operands = cli.random_operands

    def recording(*args, **kwargs):
        ops = random_operands(*args, **kwargs)
        made.append((ops.a.dtype, ops.a.shape, None if ops.a_scale is None else ops.a_scale.dtype))
        return ops

    monkeypatch.setattr(cli, "random_operands", recording)
    assert main(["--format", format]) == 0
    activations = gemm_format(format).a
    # packed FP4 as bytes (the first storage dtype), other values in their own; 16-bit activations used as
    # given have no scales
    a_dtype = getattr(torch, activations.element.storage_dtypes[0])
    a_scale_dtype = None if activations.block is None else getattr(torch, activations.block.scale_dtype)
    assert made == [(a_dtype, (128, 512 // activations.element.per_element), a_scale_dtype)]
    assert f"M=128 N=256 K=512 {format} -> fp16 on cpu: PASS" in capsys.readouterr().out


# tuned tables ------------------------------------------------------------------------------------------

NVFP4_CONFIG = "sm100_1sm_128x64x256_c1x1_swapab_streamk"
MXFP4_CONFIG = "sm100_1sm_128x128x256_c1x1_mxfp4"


def table_with(path, *entries):
    table = {"schema": resolver.TUNED_TABLE_SCHEMA, "gpu": "NVIDIA B200", "date": "2026-11-23", "package": "test",
             "entries": []}
    for config, split_k, format in entries:
        entry = {"m_bucket": 128, "measured_m": 128, "n": 7168, "k": 16384, "l": 1, "out_dtype": "float16",
                 "best": {"config": config, "split_k": split_k, "us": 12.5}, "candidates": []}
        if format is not None:  # None: an entry of a table written before --format (NVFP4)
            entry["format"] = format
        table["entries"].append(entry)
    path.write_text(json.dumps(table))
    return (path,)


def resolve_b200(tables, format):
    return resolver._resolve(128, 7168, 16384, 1, "float16", 10, 148, None, "NVIDIA B200", tables, format)


def test_tuned_entries_apply_to_their_own_format_only(tmp_path):
    assert resolve_b200((), "nvfp4").config.name != NVFP4_CONFIG  # the model alone picks another config
    # an old entry (no format: NVFP4) and an MXFP4 entry of the same shape: neither replaces the other
    tables = table_with(tmp_path / "b200.json", (NVFP4_CONFIG, 4, None), (MXFP4_CONFIG, 1, "mxfp4"))
    nvfp4 = resolve_b200(tables, "nvfp4")
    assert (nvfp4.config.name, nvfp4.split_k) == (NVFP4_CONFIG, 4) and "tuned table b200.json" in nvfp4.reason
    mxfp4 = resolve_b200(tables, "mxfp4")
    assert mxfp4.config.name == MXFP4_CONFIG and "tuned table b200.json" in mxfp4.reason
    assert "tuned" not in resolve_b200(tables, "mxfp8xmxfp4").reason
    # the same entries in the other order
    tables = table_with(tmp_path / "b200r.json", (MXFP4_CONFIG, 1, "mxfp4"), (NVFP4_CONFIG, 4, "nvfp4"))
    assert resolve_b200(tables, "nvfp4").config.name == NVFP4_CONFIG
    assert "tuned" in resolve_b200(tables, "mxfp4").reason


def test_a_tuned_config_of_another_format_is_never_applied(tmp_path):
    # entries whose config runs another format than the entry says: the model decides
    for name, entry in (("old.json", (MXFP4_CONFIG, 1, None)), ("mislabeled.json", (NVFP4_CONFIG, 4, "mxfp4"))):
        tables = table_with(tmp_path / name, entry)
        for format in resolver.pinned_config(NVFP4_CONFIG).family_info.formats:  # the formats a B200 resolves
            resolution = resolve_b200(tables, format)
            assert "tuned" not in resolution.reason
            assert resolution.config.format == format


@pytest.mark.parametrize("family,format", TAKEN)
def test_tune_measures_the_format_and_its_table_applies_to_it(family, format, monkeypatch, tmp_path):
    """`tune(format=...)` on the CPU path (operands stay on the CPU, the timer is a stand-in, the GPU one of the
    family's): it measures the format's configs on operands of the format, its entries say the format, and the
    resolver reads them for calls of that format only."""
    from nvfp4_gemm import tune
    from nvfp4_gemm.timing import Timing

    gpu = f"NVIDIA {family.reference_gpu}"
    environment = {"gpu": gpu, "capability": list(capability_of(family)), "sm_count": family.reference_sm_count,
                   "driver": "test", "cuda": "test", "torch": "test", "package": "test", "date": "2026-11-23"}
    monkeypatch.setattr(tune, "environment", lambda: environment)
    random_operands = tune.random_operands
    made = []

    def cpu_operands(*args, **kwargs):
        ops = random_operands(*args, **{**kwargs, "device": "cpu"})
        made.append((ops.a.dtype, None if ops.a_scale is None else ops.a_scale.dtype, ops.b_scale.dtype))
        return ops

    monkeypatch.setattr(tune, "random_operands", cpu_operands)
    def time_once(fn, iters):
        fn()  # the timed call itself runs too
        return Timing(median_us=3.0, min_us=3.0, samples=1)

    monkeypatch.setattr(tune, "time_cuda", time_once)
    m, n, k = 128, 256, 1024  # small: every candidate that takes it runs on the CPU reference path
    configs = [c for c in resolver.candidates(family.sm_major, format) if c.supports(m, n, k, 1, "float16") is None]
    assert configs
    table = tune.tune([(m, n, k)], progress=lambda line: None, format=format)
    described = gemm_format(format)
    scale = getattr(torch, described.block.scale_dtype)
    assert made == [(getattr(torch, described.a.element.storage_dtypes[0]), None if described.weight_only else scale,
                     scale)]
    [entry] = table["entries"]
    assert entry["format"] == format
    assert {c["config"] for c in entry["candidates"]} == {c.name for c in configs}
    monkeypatch.chdir(tmp_path)
    path = tune.write_table(table, None, format)  # the default name: next to an NVFP4 table, never over it
    stem = tune.default_table_name(gpu)
    assert path.name == (stem if format == DEFAULT_FORMAT else stem.replace(".json", f"_{format}.json"))
    path = tmp_path / path

    def resolve_on_the_gpu(format):
        return resolver._resolve(m, n, k, 1, "float16", family.sm_major, family.reference_sm_count, None, gpu, (path,),
                                 format)

    tuned = resolve_on_the_gpu(format)
    assert "tuned table" in tuned.reason and tuned.config.format == format
    assert (tuned.config.name, tuned.split_k) == (entry["best"]["config"], entry["best"]["split_k"])
    for other in family.formats:
        if other != format:
            assert "tuned" not in resolve_on_the_gpu(other).reason


# the main job's numbers --------------------------------------------------------------------------------


def test_gemm_bytes_count_each_formats_values_and_scales():
    m, n, k = 128, 7168, 2048  # no padding in the blocked scale layout: rows a multiple of 128, K/32 of 4
    out = 2 * m * n  # fp16
    assert bench.gemm_bytes(m, n, k) == (m + n) * k // 2 + (m + n) * k // 16 + out
    assert bench.gemm_bytes(m, n, k, 1, "mxfp4") == (m + n) * k // 2 + (m + n) * k // 32 + out
    assert bench.gemm_bytes(m, n, k, 1, "mxfp8xmxfp4") == m * k + n * k // 2 + (m + n) * k // 32 + out
    assert bench.gemm_bytes(m, n, k, 3, "mxfp8xmxfp4") == 3 * bench.gemm_bytes(m, n, k, 1, "mxfp8xmxfp4")


@pytest.mark.parametrize("format", [f.name for f in GEMM_FORMATS if f.weight_only])
def test_gemm_bytes_of_a_weight_only_format_count_no_activation_scales(format):
    m, n, k = 128, 7168, 2048
    described = gemm_format(format)
    b_scales = n * k // described.block.values_per_scale  # no padding at these sizes
    a_bytes = m * k * described.a.element.bits // 8
    assert bench.gemm_bytes(m, n, k, 1, format) == a_bytes + n * k // 2 + b_scales + 2 * m * n


@pytest.mark.parametrize("format", FORMATS)
def test_the_baselines_of_every_format_compute_its_gemm(format, monkeypatch):
    """The baselines of `format` run on the operands bench.baseline_format names (the same 16-bit activations
    for a weight-only format); on a (faked) Hopper each computes the GEMM of those operands: the 16-bit matmul
    within the earned tolerance of its one rounding, FP8 row-wise in the activations' place."""
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *args: (9, 0))  # the baselines run on the CPU
    m, n, k = 64, 128, 1024
    theirs = gemm_format(bench.baseline_format(format))
    if gemm_format(format).weight_only:
        assert theirs.name == format  # the activations the weight-only kernel would take
    ops = random_operands(m, n, k, seed=7, format=theirs.name)
    available = bench.baselines(ops)
    sixteen_bit = ops.a.dtype if theirs.weight_only else torch.bfloat16
    [sixteen_name] = [f"cublas_{e.name}" for e in UNSCALED_ELEMENT_FORMATS
                      if getattr(torch, e.storage_dtypes[0]) == sixteen_bit]
    assert set(available) == {"cublas_fp8_rowwise", sixteen_name} and set(available) <= set(bench.BASELINE_NAMES)
    exact = reference_gemm_float64(ops.a, ops.b, ops.a_scale, ops.b_scale)
    magnitude = reference_gemm_float64(ops.a, ops.b, ops.a_scale, ops.b_scale, magnitude=True)
    out = available[sixteen_name]()
    assert out.dtype == sixteen_bit
    # an FP32 sum of k products: at most k roundings, then one to the output
    assert bool(((out.double() - exact).abs() <= earned_tolerance(exact, magnitude, out.dtype, k)).all())
    try:
        fp8 = available["cublas_fp8_rowwise"]()
    except RuntimeError as error:  # torch 2.11's CPU _scaled_mm takes per-tensor scales only (2.13's takes rows)
        if "only supports per-tensor scaling for CPU" not in str(error):
            raise
        pytest.skip(f"the 16-bit baseline checked; this torch's CPU _scaled_mm cannot run row-wise fp8: {error}")
    assert fp8.shape == (m, n) and fp8.dtype == sixteen_bit


@pytest.mark.parametrize("format", FORMATS)
def test_a_row_says_its_format_and_counts_its_bytes(format):
    row = bench.Row(shape=(128, 7168, 2048, 1), verified=True, check="", config="c", split_k=1, us=10.0, format=format)
    assert row.tb_per_s == pytest.approx(bench.gemm_bytes(128, 7168, 2048, 1, format) / 10e-6 / 1e12)
    table = bench.format_table([row], bench.Ceilings(device="a GPU", copy_tb_per_s=4.0, bf16_tflop_per_s=800.0))
    assert f"nvfp4_gemm on {format} operands" in table.splitlines()[0]


# on a GPU this wheel has kernels for -------------------------------------------------------------------


def family_of_this_gpu_or_skip(format):
    """The kernel family of the GPU present, which must take `format`; else skip, saying why."""
    reason = unsupported_reason()
    if reason is not None:
        pytest.skip(f"needs a GPU this wheel has kernels for: {reason}")
    family = families.for_sm_major(torch.cuda.get_device_capability()[0])
    if format not in family.formats:
        pytest.skip(f"{torch.cuda.get_device_name()}'s {family.name} kernels do not take {format} (the refusal is "
                    f"tested above)")
    return family


@pytest.mark.parametrize("format", FORMATS)
def test_main_job_verifies_and_times_the_format_next_to_its_baselines(format, tmp_path, capsys):
    """`python -m nvfp4_gemm --format F --shapes ... --json` on the GPU: verified, timed, and every baseline of
    the format's baseline operands timed (or its error recorded) in the same row."""
    family_of_this_gpu_or_skip(format)
    m, n, k = 16, 7168, 2048
    path = tmp_path / "main.json"
    assert main(["--format", format, "--shapes", f"{m}x{n}x{k}", "--json", str(path)]) == 0
    assert f"nvfp4_gemm on {format} operands" in capsys.readouterr().out
    [row] = json.loads(path.read_text())["rows"]
    assert row["verified"] and row["format"] == format and row["us"] > 0, row
    assert resolver.pinned_config(row["config"]).format == format
    theirs = random_operands(m, n, k, seed=0, device="cuda", format=bench.baseline_format(format))
    expected = set(bench.baselines(theirs))
    assert expected and set(row["baselines_us"]) | set(row["baseline_errors"]) == expected, row
    if gemm_format(format).weight_only:  # cuBLAS 16-bit and FP8 row-wise run on every GPU with kernels here
        assert set(row["baselines_us"]) == expected and all(us > 0 for us in row["baselines_us"].values()), row


@pytest.mark.parametrize("format", FORMATS)
def test_tune_on_the_gpu_writes_a_table_of_the_format(format, tmp_path):
    family_of_this_gpu_or_skip(format)
    path = tmp_path / "tuned.json"
    assert main(["tune", "--format", format, "--shapes", "16x7168x2048", "--iters", "3", "--out", str(path)]) == 0
    [entry] = json.loads(path.read_text())["entries"]
    assert entry["format"] == format and entry["candidates"]
    assert all(resolver.pinned_config(c["config"]).format == format for c in entry["candidates"])
