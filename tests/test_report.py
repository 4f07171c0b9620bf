"""`python -m nvfp4_gemm report` on the CPU: the report assembled from given results (the parts'
own dataclasses, a JUnit file as pytest writes it), the B200 model next to measurements, the
markdown, and a run without a GPU that writes a report saying so."""

import json

import pytest

from nvfp4_gemm import report, sm100_model
from nvfp4_gemm.__main__ import main
from nvfp4_gemm.bench import Ceilings, Row
from nvfp4_gemm.configs import load_table
from nvfp4_gemm.harness import HarnessTiming
from nvfp4_gemm.hostcost import HostCost
from nvfp4_gemm.ops import unsupported_reason
from nvfp4_gemm.resolver import candidates

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" skipped="2" tests="6">
<testcase classname="tests.test_gpu" name="test_task_shapes_exact[128-256-256]" time="0.1"/>
<testcase classname="tests.test_gpu" name="test_every_config_is_exact[sm100_1sm_128x128x256_c1x1-1]" time="0.2"/>
<testcase classname="tests.test_gpu" name="test_every_config_is_exact[sm100_1sm_128x128x256_c1x1_streamk-3]" time="0.2">
  <failure message="AssertionError: max |err| / earned tolerance = 7.5">trace</failure></testcase>
<testcase classname="tests.test_gpu" name="test_every_config_is_exact[sm100_1sm_128x128x256_c1x1_streamk-1]" time="0.1">
  <error message="RuntimeError: CUTLASS kernel launch failed">trace</error></testcase>
<testcase classname="tests.test_gpu" name="test_every_config_is_exact[sm90_wgmma_64x128x128_prepass_splitk-1]" time="0">
  <skipped type="pytest.skip" message="NVIDIA B200 ((10, 0)) is not this family">skip</skipped></testcase>
<testcase classname="tests.test_gpu" name="test_unsupported_gpu_raises_before_launch[op]" time="0">
  <skipped type="pytest.skip" message="the GPU present is supported">skip</skipped></testcase>
</testsuite></testsuites>
"""

B200_ENV = {
    "date": "2026-12-01", "python": "3.11.7", "platform": "Linux", "torch": "2.13.0+cu130", "torch_cuda": "13.0",
    "package": "0.1.0", "kernels": ["sm_100f", "sm_90a"], "checkout_commit": "abc1234", "gpu": "NVIDIA B200",
    "capability": [10, 0], "sm_count": 148, "driver": "580.1", "cuda": "13.0",
}


def test_junit_outcomes_and_per_config_counts():
    tests = report.parse_junit(JUNIT)
    assert [t["outcome"] for t in tests] == ["passed", "passed", "failed", "failed", "skipped", "skipped"]
    assert tests[3]["message"] == "RuntimeError: CUTLASS kernel launch failed"
    configs = report.config_outcomes(tests, [c.name for c in load_table().configs])
    # a config whose name is a prefix of another's is counted for its own tests only
    assert configs == {
        "sm100_1sm_128x128x256_c1x1": {"passed": 1, "failed": 0, "skipped": 0},
        "sm100_1sm_128x128x256_c1x1_streamk": {"passed": 0, "failed": 2, "skipped": 0},
        "sm90_wgmma_64x128x128_prepass_splitk": {"passed": 0, "failed": 0, "skipped": 1},
    }


def tuner_table():
    candidates = [{"config": "sm100_2sm_256x128x256_c2x1", "split_k": 1, "us": 14.0},
                  {"config": "sm100_1sm_128x128x256_c1x1_streamk", "split_k": 2, "us": 12.5}]
    return {"entries": [{"m_bucket": 128, "measured_m": 128, "n": 7168, "k": 16384, "l": 1, "out_dtype": "float16",
                         "best": candidates[1], "candidates": candidates}]}


def resolved(m, n, k):
    return {"config": "sm100_2sm_256x128x256_c2x1", "split_k": 1, "why": "the B200 model"}


def parts():
    ceilings = Ceilings(device="NVIDIA B200", copy_tb_per_s=6.9, bf16_tflop_per_s=1900.0)
    good = Row(shape=(128, 7168, 16384, 1), verified=True, check="ok", config="sm100_2sm_256x128x256_c2x1", split_k=1,
               us=14.0, baselines_us={"cublaslt_nvfp4": 22.6}, memory_floor_us=9.0, tensor_floor_us=1.0)
    bad = Row(shape=(128, 4096, 7168, 1), verified=False, check="max |err| / earned tolerance = 9.000",
              config="sm100_2sm_256x128x256_c2x1", split_k=1, us=8.0, baselines_us={},
              baseline_errors={"cublaslt_nvfp4": "CUBLAS_STATUS_NOT_SUPPORTED"}, memory_floor_us=2.0)
    timing = HarnessTiming(shape=(128, 7168, 16384, 1), inputs=50, verified=True, check="all 50 inputs passed",
                           runs=40, mean_us=15.1, std_us=0.2, err_us=0.03, best_us=14.8, worst_us=15.6)
    return {
        "tests": report.tests_part(["python", "-m", "pytest", "tests/test_gpu.py"], 1, JUNIT),
        "main": report.main_part(ceilings, [good, bad]),
        "tune": report.tune_part(tuner_table(), "out/tuned.json", resolved),
        "gpumode": report.gpumode_part([timing], resolved),
        "hostcost": report.hostcost_part([HostCost("tiny.add_(1) (floor)", 6.7), HostCost("nvfp4_gemm.gemm(...)", 9.0)]),
    }


def test_model_comparison_puts_the_b200_models_prediction_next_to_each_measurement():
    comparison = report.model_comparison(report.tune_part(tuner_table(), "t.json", resolved)["entries"], 148)
    table = load_table()
    by_config = {(r["config"], r["split_k"]): r for r in comparison["rows"]}
    for (name, split), row in by_config.items():
        want = sm100_model.predict(table.by_name(name), 128, 7168, 16384, 1, "float16", split).us
        assert row["predicted_us"] == want and row["ratio"] == row["measured_us"] / want
    pick = sm100_model.rank(candidates(10), 128, 7168, 16384, 1, "float16")[0]
    assert comparison["picks"][0]["model_config"] == pick.config.name
    assert comparison["picks"][0]["best_us"] == 12.5


def test_report_assembled_from_results_says_what_failed():
    assembled = report.assemble(B200_ENV, None, parts())
    assert assembled["exit_status"] == 1  # a failed test and an unverified shape
    assert assembled["model"]["sm_count"] == 148
    assert assembled["tune"]["entries"][0]["resolver"] == dict(resolved(0, 0, 0), us=14.0)
    json.dumps(assembled)  # the JSON half of the report
    md = report.render_markdown(assembled)
    for text in [
        "# nvfp4_gemm report: NVIDIA B200, 2026-12-01",
        "| GPU | NVIDIA B200 (compute capability 10.0, 148 SMs) |",
        "exited 1: 2 passed, 2 failed, 2 skipped",
        "| sm100_1sm_128x128x256_c1x1_streamk | 0 | 2 | 0 |",
        "RuntimeError: CUTLASS kernel launch failed",
        "1 x the GPU present is supported",
        "| 128x7168x16384 | yes | 14.00 |",
        "22.60 | 1.61x",
        "| 128x4096x7168 | **NO** |",
        "verification of 128x4096x7168 failed: max |err| / earned tolerance = 9.000",
        "cublaslt_nvfp4 unavailable for 128x4096x7168: CUBLAS_STATUS_NOT_SUPPORTED",
        "| 128x7168x16384 | sm100_1sm_128x128x256_c1x1_streamk (2) | 12.50 | sm100_2sm_256x128x256_c2x1 (1) | 14.00 |",
        "| 128x7168x16384 | yes | 15.10 | 0.030 | 14.80 | 15.60 | 40 | 8.994 |",
        "| nvfp4_gemm.gemm(...) | 9.0 | +2.3 |",
        "## B200 model: predicted vs measured",
    ]:
        assert text in md, text


def test_hopper_report_skips_the_model_and_passes_when_everything_passed():
    hopper = dict(B200_ENV, gpu="NVIDIA H200", capability=[9, 0], sm_count=132)
    passing = {name: part for name, part in parts().items() if name in ("tune", "gpumode", "hostcost")}
    passing["tests"] = report.tests_part(["pytest"], 0, JUNIT.replace("<failure", "<skipped").replace(
        "</failure>", "</skipped>").replace("<error", "<skipped").replace("</error>", "</skipped>"))
    passing["main"] = {"skipped": "--skip"}
    assembled = report.assemble(hopper, None, passing)
    assert assembled["exit_status"] == 0
    md = report.render_markdown(assembled)
    assert "the B200 model predicts sm100 kernels; this GPU is compute capability 9.x" in md
    assert "Not run: --skip" in md
    broken = report.assemble(hopper, None, dict(passing, gpumode={"error": "RuntimeError: boom"}))
    assert broken["exit_status"] == 1
    assert "**Failed to run**: `RuntimeError: boom`" in report.render_markdown(broken)


def test_report_command_without_a_gpu_writes_a_report_that_says_so(tmp_path, capsys):
    if unsupported_reason() is None:
        pytest.skip("a supported GPU is present: the command would run everything on it")
    out = tmp_path / "report"
    assert main(["report", "--out-dir", str(out)]) == 2
    assert f"wrote {out / 'report.md'}" in capsys.readouterr().out
    md = (out / "report.md").read_text()
    assert "# nvfp4_gemm report: no GPU" in md
    assert "**No GPU this wheel has kernels for**: " in md and "Nothing was run on a GPU." in md
    assert "Exit status 2 (no GPU this wheel has kernels for)." in md
    written = json.loads((out / "report.json").read_text())
    assert written["exit_status"] == 2 and written["unsupported"] == unsupported_reason()
    assert written["environment"]["kernels"] and written["environment"]["gpu"] is None


def test_report_command_rejects_unknown_parts(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--skip", "everything"])
    assert "invalid choice: 'everything'" in capsys.readouterr().err
