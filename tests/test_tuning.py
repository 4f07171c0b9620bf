"""The tuned table overrides the analytic model where measurement disagrees; the main job on the CPU."""

import json
import subprocess
import sys

import pytest

from nvfp4_gemm import resolver
from nvfp4_gemm.configs import load_table


def write_table(path, gpu="NVIDIA H200", schema=1, config="sm90_wgmma_64x256x128_prepass_splitk", split_k=8):
    table = {
        "schema": schema, "gpu": gpu, "capability": [9, 0], "sm_count": 132, "driver": "test", "cuda": "13.0",
        "torch": "test", "package": "test", "date": "2026-11-21",
        "entries": [
            {"m_bucket": 128, "measured_m": 128, "n": 7168, "k": 16384, "l": 1, "out_dtype": "float16",
             "best": {"config": config, "split_k": split_k, "us": 12.5}, "candidates": []},
        ],
    }
    path.write_text(json.dumps(table))
    return (path,)


def resolve_h200(m, tables, gpu="NVIDIA H200"):
    return resolver._resolve(m, 7168, 16384, 1, "float16", 9, 132, None, gpu, tables)


def test_tuned_table_changes_the_choice_and_says_so(tmp_path):
    model = resolve_h200(128, ())
    assert (model.config.name, model.split_k) != ("sm90_wgmma_64x256x128_prepass_splitk", 8)
    tuned = resolve_h200(128, write_table(tmp_path / "h200.json"))
    assert (tuned.config.name, tuned.split_k) == ("sm90_wgmma_64x256x128_prepass_splitk", 8)
    assert "tuned table h200.json" in tuned.reason and "12.50 us" in tuned.reason
    # M = 100 falls in the same M bucket (128); M = 129 does not
    assert resolve_h200(100, write_table(tmp_path / "h200.json")).config.name == "sm90_wgmma_64x256x128_prepass_splitk"
    assert resolve_h200(129, write_table(tmp_path / "h200.json")).reason.find("tuned") == -1


def test_tables_of_other_gpus_and_stale_configs_are_ignored(tmp_path):
    other = write_table(tmp_path / "h100.json", gpu="NVIDIA H100 80GB HBM3")
    assert "tuned" not in resolve_h200(128, other).reason
    stale = write_table(tmp_path / "stale.json", config="sm90_wgmma_999x128x128_prepass_splitk")
    assert "tuned" not in resolve_h200(128, stale).reason
    too_many_splits = write_table(tmp_path / "splits.json", split_k=1000)
    assert "tuned" not in resolve_h200(128, too_many_splits).reason


def test_wrong_schema_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="schema 7, expected 1"):
        resolve_h200(128, write_table(tmp_path / "bad.json", schema=7))


def test_m_bucket():
    assert [resolver.m_bucket(m) for m in (1, 2, 3, 16, 17, 128, 129)] == [1, 2, 4, 16, 32, 128, 256]


@pytest.mark.parametrize("capability", [(9, 0), (10, 0)])
@pytest.mark.parametrize("k", [1024, 2048])
def test_tune_runs_every_offered_split(monkeypatch, capability, k):
    """`tune` walks every config's split_options; each pinned (config, split_k) must be accepted by gemm
    (the config's own bound: the direct sm90 config offers 16 splits at K = 1024, ceil(K / 128) = 8) and
    verified. On the CPU path: the operands stay on the CPU (exact reference), the timer is a stand-in."""
    from nvfp4_gemm import tune
    from nvfp4_gemm.timing import Timing

    environment = {"gpu": "test", "capability": list(capability), "sm_count": 132, "driver": "test", "cuda": "test",
                   "torch": "test", "package": "test", "date": "2026-11-23"}
    cpu_operands = tune.random_operands
    monkeypatch.setattr(tune, "environment", lambda: environment)
    monkeypatch.setattr(tune, "random_operands", lambda *args, **kwargs: cpu_operands(*args, **{**kwargs, "device": "cpu"}))
    timed = []

    def time_once(fn, iters):
        timed.append(fn())  # the timed call itself runs too (same config and split)
        return Timing(median_us=1.0, min_us=1.0, samples=1)

    monkeypatch.setattr(tune, "time_cuda", time_once)
    shapes = [(16, 128, k), (32, 256, k)]
    table = tune.tune(shapes, progress=lambda line: None)
    for (m, n, _), entry in zip(shapes, table["entries"]):
        offered = {
            (c.name, s) for c in resolver.candidates(capability[0]) if c.supports(m, n, k, 1, "float16") is None
            for s in c.split_options(k)
        }
        measured = {(c["config"], c["split_k"]) for c in entry["candidates"]}
        assert measured == offered  # every offered split ran and passed verification
    assert len(timed) == sum(len(entry["candidates"]) for entry in table["entries"])


def test_split_options():
    table = load_table()
    sm90 = table.by_name("sm90_wgmma_128x128x128_prepass_splitk")
    sm100 = table.by_name("sm100_1sm_128x128x256_c1x1")
    stream_k = table.by_name("sm100_1sm_128x128x256_c1x1_streamk")
    assert sm90.split_options(512) == (1, 2, 3, 4)  # 4 K stages of 128
    assert sm90.split_options(16384)[-1] == 16
    assert sm100.split_options(16384) == (1,)  # data-parallel: no split-K
    assert stream_k.split_options(512) == (1, 2)  # 2 K tiles of 256
    assert stream_k.max_split_k(16384) == 64


def test_main_job_without_a_gpu_runs_the_cpu_path():
    done = subprocess.run([sys.executable, "-m", "nvfp4_gemm"], capture_output=True, text=True)
    if "CPU reference path" not in done.stdout:
        pytest.skip("a supported GPU is present: the main job times it instead (see benchmarks/)")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "this wheel carries: sm_" in done.stdout and "PASS" in done.stdout
    tune = subprocess.run([sys.executable, "-m", "nvfp4_gemm", "tune"], capture_output=True, text=True)
    assert tune.returncode == 2 and "tune needs a GPU" in tune.stderr


def test_tuned_tables_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("NVFP4_GEMM_TUNED_TABLE", "off")
    assert resolver.tuned_tables() == []
    monkeypatch.delenv("NVFP4_GEMM_TUNED_TABLE")
    assert any(p.name == "nvidia_h200.json" for p in resolver.tuned_tables())


def test_tuned_table_overrides_the_b200_model(tmp_path):
    def resolve_b200(tables):
        return resolver._resolve(128, 7168, 16384, 1, "float16", 10, 148, None, "NVIDIA B200", tables)

    model = resolve_b200(())
    assert "B200 model" in model.reason
    measured = "sm100_1sm_128x64x256_c1x1_swapab_streamk"
    assert model.config.name != measured
    table = write_table(tmp_path / "b200.json", gpu="NVIDIA B200", config=measured, split_k=4)
    tuned = resolve_b200(table)
    assert (tuned.config.name, tuned.split_k) == (measured, 4)
    assert "tuned table b200.json" in tuned.reason
    # a split count the config cannot run (K = 16384 has 64 K tiles of 256) leaves the model in charge
    assert "tuned" not in resolve_b200(write_table(tmp_path / "bad.json", gpu="NVIDIA B200", config=measured, split_k=65)).reason
