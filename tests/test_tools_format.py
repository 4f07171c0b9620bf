"""`--format` of the tools (the main job, tune, model, the benchmark suite) on the CPU: parsing, the one-line
refusal on a GPU whose kernel family lacks the format (a faked GPU), the CPU demo in every format, and tuned
table entries that apply to their own format only."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from nvfp4_gemm import compiled_architectures, families, resolver
from nvfp4_gemm.__main__ import main
from nvfp4_gemm.dtypes import GEMM_FORMATS, gemm_format
from nvfp4_gemm.ops import unsupported_reason
from nvfp4_gemm.tools import bench, cli
from nvfp4_gemm.tools import tune as tools_tune

FORMATS = [f.name for f in GEMM_FORMATS]
REPO = Path(__file__).resolve().parents[1]


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
    assert cli.FORMAT_NAMES[:3] == ("nvfp4", "mxfp4", "mxfp8xmxfp4")
    assert cli.FORMAT_NAMES == tuple(FORMATS) and "bf16xnvfp4" in FORMATS


@pytest.mark.parametrize("argv", [["--format", "fp9"], ["tune", "--format", "fp9"], ["model", "--format", "fp9"]])
def test_an_unknown_format_is_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --format: invalid choice: 'fp9' (choose from 'nvfp4', 'mxfp4', 'mxfp8xmxfp4')" in err


@pytest.mark.parametrize(
    "argv,command,expected",
    [
        ([], "main", "nvfp4"),
        (["--format", "mxfp4"], "main", "mxfp4"),
        (["tune"], "tune", "nvfp4"),
        (["tune", "--format", "mxfp8xmxfp4"], "tune", "mxfp8xmxfp4"),
        (["--format", "mxfp4", "tune"], "tune", "mxfp4"),  # before the subcommand: not overwritten by its default
        (["--format", "mxfp4", "tune", "--format", "mxfp8xmxfp4"], "tune", "mxfp8xmxfp4"),
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


@pytest.mark.parametrize("command", ["gpumode", "report"])
def test_commands_of_the_nvfp4_task_refuse_another_format(command, capsys):
    with pytest.raises(SystemExit) as info:
        main(["--format", "mxfp4", command])
    assert info.value.code == 2
    assert f"--format mxfp4: {command} runs the GPU MODE task's nvfp4 GEMM only" in capsys.readouterr().err


# model -----------------------------------------------------------------------------------------------


def model_rows(out):
    return {line.split("|")[1].strip() for line in out.splitlines() if line.startswith("| sm")}


@pytest.mark.parametrize("format", FORMATS)
def test_model_predicts_the_configs_of_the_format(format, capsys):
    assert main(["model", "--format", format]) == 0
    rows = model_rows(capsys.readouterr().out)
    assert rows == {c.name for c in resolver.candidates(10, format)}
    assert rows and all(resolver.pinned_config(name).format == format for name in rows)


def test_model_of_a_family_without_the_format_is_one_line(capsys):
    sm120 = families.by_name("sm120")
    assert "mxfp4" not in sm120.formats  # if sm120 gains MX kernels, this test needs another family/format
    assert main(["model", "--arch", "sm120", "--format", "mxfp4"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "--format mxfp4: the sm120 family (RTX 5090) has no mxfp4 kernel (its sm120 kernels take nvfp4); mxfp4 runs on "
        "sm100 GPUs (B200) and the CPU reference path (no GPU, or CPU tensors)\n"
    )


# a GPU whose family lacks the format -------------------------------------------------------------------


@pytest.mark.parametrize("format", ["mxfp4", "mxfp8xmxfp4"])
@pytest.mark.parametrize("command", [[], ["tune"]])
def test_hopper_refuses_mx_in_one_line_before_measuring(format, command, monkeypatch, capsys):
    assert format not in families.by_name("sm90").formats
    fake_gpu(monkeypatch, (9, 0), "NVIDIA H200")
    refuse_measuring(monkeypatch)
    assert main(command + ["--format", format]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"--format {format}: NVIDIA H200 has no {format} kernel (its sm90 kernels take nvfp4); {format} runs on "
        f"sm100 GPUs (B200) and the CPU reference path (no GPU, or CPU tensors)\n"
    )


@pytest.mark.parametrize("command", [[], ["tune"]])
def test_hopper_goes_on_to_measure_nvfp4(command, monkeypatch):
    fake_gpu(monkeypatch, (9, 0), "NVIDIA H200")
    refuse_measuring(monkeypatch)
    with pytest.raises(Reached):
        main(command + ["--format", "nvfp4"])


@pytest.mark.parametrize("format", FORMATS)
def test_blackwell_takes_every_format(format, monkeypatch):
    fake_gpu(monkeypatch, (10, 0), "NVIDIA B200")
    refuse_measuring(monkeypatch)
    with pytest.raises(Reached):
        main(["--format", format])


@pytest.mark.parametrize("command", [[], ["tune"]])
def test_a_shape_the_formats_kernels_cannot_run_is_one_line(command, monkeypatch, capsys):
    fake_gpu(monkeypatch, (10, 0), "NVIDIA B200")
    refuse_measuring(monkeypatch)
    # K = 544: a multiple of 32 (every format's rule), not of 128 (sm100's MXFP8 x MXFP4 kernels)
    assert main(command + ["--format", "mxfp8xmxfp4", "--shapes", "128x256x544"]) == 2
    assert capsys.readouterr().err == (
        "--shapes 128x256x544: no mxfp8xmxfp4 config of this GPU runs it: K must be a multiple of 128 for the sm100 "
        "mxfp8xmxfp4 kernels, got K=544\n"
    )
    with pytest.raises(Reached):
        main(command + ["--format", "mxfp4", "--shapes", "128x256x544"])


def test_benchmark_suite_refuses_mx_on_hopper_in_one_line():
    """`pytest benchmarks --format mxfp4` on a (faked) H200: a usage error before collection, one line."""
    if "sm_90a" not in compiled_architectures():
        pytest.skip(f"this build has no sm_90a kernels ({compiled_architectures()}): an H200 would not be supported")
    script = (
        "import sys, torch, pytest\n"
        "torch.cuda.is_available = lambda: True\n"
        "torch.cuda.current_device = lambda: 0\n"
        "torch.cuda.get_device_capability = lambda *a: (9, 0)\n"
        "torch.cuda.get_device_name = lambda *a: 'NVIDIA H200'\n"
        "sys.exit(pytest.main([sys.argv[1], '-q', '-p', 'no:cacheprovider', '--format', sys.argv[2]]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(REPO / "benchmarks"), "mxfp4"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert (
        "ERROR: --format mxfp4: NVIDIA H200 has no mxfp4 kernel (its sm90 kernels take nvfp4); mxfp4 runs on sm100 "
        "GPUs (B200)" in done.stderr
    ), done.stderr
    assert "Traceback" not in done.stdout + done.stderr


# the CPU demo ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("format", FORMATS)
def test_cpu_demo_runs_the_format(format, monkeypatch, capsys):
    if unsupported_reason() is None:
        pytest.skip("a supported GPU is present: the main job times it instead")
    made = []
    random_operands = cli.random_operands

    def recording(*args, **kwargs):
        ops = random_operands(*args, **kwargs)
        made.append((ops.a.dtype, ops.a.shape, ops.a_scale.dtype))
        return ops

    monkeypatch.setattr(cli, "random_operands", recording)
    assert main(["--format", format]) == 0
    described = gemm_format(format)
    a_dtype = torch.uint8 if described.a.element.per_byte == 2 else torch.float8_e4m3fn
    assert made == [(a_dtype, (128, 512 // described.a.element.per_byte), getattr(torch, described.block.scale_dtype))]
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
        for format in FORMATS:
            resolution = resolve_b200(tables, format)
            assert "tuned" not in resolution.reason
            assert resolution.config.format == format


@pytest.mark.parametrize("format", ["mxfp4", "mxfp8xmxfp4"])
def test_tune_measures_the_format_and_its_table_applies_to_it(format, monkeypatch, tmp_path):
    """`tune(format=...)` on the CPU path (operands stay on the CPU, the timer is a stand-in): it measures the
    format's configs on operands of the format, its entries say the format, and the resolver reads them for
    calls of that format only."""
    from nvfp4_gemm import tune
    from nvfp4_gemm.timing import Timing

    environment = {"gpu": "NVIDIA B200", "capability": [10, 0], "sm_count": 148, "driver": "test", "cuda": "test",
                   "torch": "test", "package": "test", "date": "2026-11-23"}
    monkeypatch.setattr(tune, "environment", lambda: environment)
    random_operands = tune.random_operands
    scale_dtypes = []

    def cpu_operands(*args, **kwargs):
        ops = random_operands(*args, **{**kwargs, "device": "cpu"})
        scale_dtypes.append(ops.a_scale.dtype)
        return ops

    monkeypatch.setattr(tune, "random_operands", cpu_operands)
    def time_once(fn, iters):
        fn()  # the timed call itself runs too
        return Timing(median_us=3.0, min_us=3.0, samples=1)

    monkeypatch.setattr(tune, "time_cuda", time_once)
    m, n, k = 128, 7168, 16384
    table = tune.tune([(m, n, k)], progress=lambda line: None, format=format)
    assert scale_dtypes == [torch.float8_e8m0fnu]
    [entry] = table["entries"]
    assert entry["format"] == format
    assert {c["config"] for c in entry["candidates"]} == {c.name for c in resolver.candidates(10, format)}
    monkeypatch.chdir(tmp_path)
    path = tune.write_table(table, None, format)  # the default name: next to an NVFP4 table, never over it
    assert path.name == f"nvidia_b200_{format}.json"
    assert tune.default_table_name("NVIDIA B200") == "nvidia_b200.json"
    path = tmp_path / path
    tuned = resolve_b200((path,), format)
    assert "tuned table" in tuned.reason and tuned.config.format == format
    assert "tuned" not in resolve_b200((path,), "nvfp4").reason


# the main job's numbers --------------------------------------------------------------------------------


def test_gemm_bytes_count_each_formats_values_and_scales():
    m, n, k = 128, 7168, 2048  # no padding in the blocked scale layout: rows a multiple of 128, K/32 of 4
    out = 2 * m * n  # fp16
    assert bench.gemm_bytes(m, n, k) == (m + n) * k // 2 + (m + n) * k // 16 + out
    assert bench.gemm_bytes(m, n, k, 1, "mxfp4") == (m + n) * k // 2 + (m + n) * k // 32 + out
    assert bench.gemm_bytes(m, n, k, 1, "mxfp8xmxfp4") == m * k + n * k // 2 + (m + n) * k // 32 + out
    assert bench.gemm_bytes(m, n, k, 3, "mxfp8xmxfp4") == 3 * bench.gemm_bytes(m, n, k, 1, "mxfp8xmxfp4")


@pytest.mark.parametrize("format", FORMATS)
def test_a_row_says_its_format_and_counts_its_bytes(format):
    row = bench.Row(shape=(128, 7168, 2048, 1), verified=True, check="", config="c", split_k=1, us=10.0, format=format)
    assert row.tb_per_s == pytest.approx(bench.gemm_bytes(128, 7168, 2048, 1, format) / 10e-6 / 1e12)
    table = bench.format_table([row], bench.Ceilings(device="a GPU", copy_tb_per_s=4.0, bf16_tflop_per_s=800.0))
    assert f"nvfp4_gemm on {format} operands" in table.splitlines()[0]
