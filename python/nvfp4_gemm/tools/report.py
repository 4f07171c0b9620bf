"""`python -m nvfp4_gemm report`: one markdown + JSON report of this GPU, to paste into an issue.

In order, with progress on stdout: the GPU tests (pytest on tests/test_gpu.py of the source
checkout, in a subprocess: one outcome per test, summed per config), the main job (each ranked
shape verified, then timed next to the vendor baseline: torch._scaled_mm NVFP4 on Blackwell,
cuBLAS fp8 row-wise and bf16 on Hopper), the tuner (every valid config and split, each verified
first), the GPU MODE leaderboard's timing (nvfp4_gemm.harness), the host cost of one eager call
(nvfp4_gemm.hostcost), and on Blackwell the B200 model's predictions next to the tuner's
measurements. A part that raises is recorded with its error and the rest still runs.

Exit status: 0 when everything ran and passed, 1 when a test or a verification failed or a part
raised, 2 when there is no GPU this wheel has kernels for (the report then says so and why).
"""

from __future__ import annotations

import datetime
import json
import platform
import re
import subprocess
import sys
import traceback
import xml.etree.ElementTree as ElementTree
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Optional

import torch

from .. import __version__, compiled_architectures
from ..configs import load_table
from .task_shapes import RANKED_SHAPES

__all__ = ["PARTS", "environment_info", "parse_junit", "config_outcomes", "tests_part", "main_part", "tune_part",
           "gpumode_part", "hostcost_part", "model_comparison", "assemble", "render_markdown", "write_report", "run"]

REPORT_SCHEMA = 1
PARTS = ("tests", "main", "tune", "gpumode", "hostcost")
_RANKED = [s[:3] for s in RANKED_SHAPES]
_SOL_US = {s[:3]: s[3] for s in RANKED_SHAPES}


def _git_commit() -> Optional[str]:
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() or None


def environment_info() -> dict:
    """Versions and, where there is one, the GPU (name, capability, SMs, driver)."""
    env = {
        "date": datetime.date.today().isoformat(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "package": __version__,
        "kernels": compiled_architectures(),
        "checkout_commit": _git_commit(),
        "gpu": None,
    }
    if torch.cuda.is_available():
        from .tune import environment

        env.update(environment())
    return env


def parse_junit(xml_text: str) -> list[dict]:
    """pytest's JUnit XML as [{"name", "outcome" (passed/failed/skipped), "message"}], in run order."""
    tests = []
    for case in ElementTree.fromstring(xml_text).iter("testcase"):
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome, message = "failed", child.get("message", "")
                break
            if child.tag == "skipped":
                outcome, message = "skipped", child.get("message", "")
        tests.append({"name": case.get("name", ""), "outcome": outcome, "message": message})
    return tests


def config_outcomes(tests: list[dict], config_names) -> dict[str, dict[str, int]]:
    """Per config: how many of the tests parametrized with it passed, failed, were skipped."""
    names = set(config_names)
    outcomes: dict[str, dict[str, int]] = {}
    for test in tests:
        params = re.search(r"\[(.*)\]$", test["name"])
        for token in params.group(1).split("-") if params else ():
            if token in names:
                counts = outcomes.setdefault(token, {"passed": 0, "failed": 0, "skipped": 0})
                counts[test["outcome"]] += 1
    return dict(sorted(outcomes.items()))


def tests_part(command: list[str], returncode: int, junit_xml: Optional[str]) -> dict:
    """The GPU tests' part of the report from the pytest run's command, exit code and JUnit XML."""
    tests = parse_junit(junit_xml) if junit_xml else []
    counts = {outcome: sum(t["outcome"] == outcome for t in tests) for outcome in ("passed", "failed", "skipped")}
    return {
        "command": " ".join(command),
        "returncode": returncode,
        "counts": counts,
        "configs": config_outcomes(tests, [c.name for c in load_table().configs]),
        "tests": tests,
    }


def _run_gpu_tests(tests_path: Path, out_dir: Path, progress: Callable[[str], None]) -> dict:
    if not tests_path.is_file():
        return {"skipped": f"{tests_path} not found: run the report from the repository root (the wheel has no tests)"}
    junit = out_dir / "gpu_tests.xml"
    junit.unlink(missing_ok=True)
    command = [sys.executable, "-m", "pytest", str(tests_path), "-v", "-rs", "-p", "no:cacheprovider",
               f"--junitxml={junit}"]
    progress(f"  $ {' '.join(command)}")
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as child:
        for line in child.stdout:
            progress("    " + line.rstrip())
    return tests_part(command, child.returncode, junit.read_text() if junit.is_file() else None)


def main_part(ceilings, rows) -> dict:
    """The main job's part from `bench.measure_ceilings()` and `bench.run_shape` rows."""
    return {"ceilings": asdict(ceilings),
            "rows": [dict(asdict(row), tb_per_s=row.tb_per_s, tflop_per_s=row.tflop_per_s) for row in rows]}


def _run_main_job(progress: Callable[[str], None]) -> dict:
    from . import bench

    ceilings = bench.measure_ceilings()
    rows = []
    for i, (m, n, k) in enumerate(_RANKED):
        rows.append(bench.run_shape(m, n, k, ceilings=ceilings, seed=i))
        progress(f"  {m}x{n}x{k}: {rows[-1].us:.2f} us, {rows[-1].config} split_k={rows[-1].split_k}; {rows[-1].check}")
    return main_part(ceilings, rows)


def _resolved(m: int, n: int, k: int) -> dict:
    from ..resolver import resolve

    picked = resolve(m, n, k, 1, torch.float16, "cuda", explain=True)
    return {"config": picked.config.name, "split_k": picked.split_k, "why": picked.reason}


def tune_part(table: dict, table_path: str, resolved: Callable[[int, int, int], dict] = _resolved) -> dict:
    """The tuner's part from its table and, per shape, what the resolver picks without the table."""
    entries = []
    for entry in table["entries"]:
        m, n, k = entry["measured_m"], entry["n"], entry["k"]
        pick = resolved(m, n, k)
        measured = next((c["us"] for c in entry["candidates"]
                         if (c["config"], c["split_k"]) == (pick["config"], pick["split_k"])), None)
        entries.append({"m": m, "n": n, "k": k, "best": entry["best"], "candidates": entry["candidates"],
                        "resolver": dict(pick, us=measured)})
    return {"table": table_path, "entries": entries}


def _run_tuner(out_dir: Path, iters: int, progress: Callable[[str], None]) -> dict:
    from .cli import DECODE_SWEEP
    from .tune import tune, write_table

    table = tune(_RANKED + list(DECODE_SWEEP), iters=iters, progress=progress)
    return tune_part(table, str(write_table(table, str(out_dir / "tuned.json"))))


def gpumode_part(timings, resolved: Callable[[int, int, int], dict] = _resolved) -> dict:
    """The GPU MODE timing's part from `harness.time_like_harness` results."""
    rows = []
    for timing in timings:
        m, n, k, _ = timing.shape
        pick = resolved(m, n, k)
        rows.append(dict(asdict(timing), config=pick["config"], split_k=pick["split_k"],
                         sol_b200_us=_SOL_US.get((m, n, k))))
    return {"rows": rows}


def _run_gpumode(progress: Callable[[str], None]) -> dict:
    from .harness import time_like_harness

    timings = []
    for m, n, k in _RANKED:
        timings.append(time_like_harness(m, n, k, progress=progress))
        progress(f"  {m}x{n}x{k}: mean {timings[-1].mean_us:.2f} us over {timings[-1].runs} runs")
    return gpumode_part(timings)


def hostcost_part(rows) -> dict:
    """The host-cost part from `hostcost` rows, the floor first."""
    return {"floor_us": rows[0].us, "rows": [asdict(r) for r in rows]}


def _run_hostcost(progress: Callable[[str], None]) -> dict:
    from .. import _C
    from . import hostcost

    rows = [hostcost.floor_call()] + hostcost.eager_calls()
    if any(major == 10 for _, _, major in _C.kernels()):
        rows += hostcost.sm100_prepare()
    for row in rows:
        progress(f"  {row.name}: {row.us:.1f} us")
    return hostcost_part(rows)


def model_comparison(entries: list[dict], sm_count: int) -> dict:
    """The B200 model's prediction next to each measured (config, split_k) of each shape, and per
    shape how the model's own pick measured against the fastest measured candidate."""
    from .. import sm100_model
    from ..resolver import candidates

    machine = sm100_model.for_device(sm_count)
    table = load_table()
    rows, picks = [], []
    for entry in entries:
        m, n, k = entry["m"], entry["n"], entry["k"]
        measured = {(c["config"], c["split_k"]): c["us"] for c in entry["candidates"]}
        for (name, split), us in sorted(measured.items(), key=lambda item: item[1]):
            predicted = sm100_model.predict(table.by_name(name), m, n, k, 1, "float16", split, machine).us
            rows.append({"m": m, "n": n, "k": k, "config": name, "split_k": split, "predicted_us": predicted,
                         "measured_us": us, "ratio": us / predicted})
        pick = sm100_model.rank(candidates(10), m, n, k, 1, "float16", machine)[0]
        best = min(entry["candidates"], key=lambda c: c["us"])
        picks.append({"m": m, "n": n, "k": k, "model_config": pick.config.name, "model_split_k": pick.split_k,
                      "model_predicted_us": pick.us, "model_measured_us": measured.get((pick.config.name, pick.split_k)),
                      "best_config": best["config"], "best_split_k": best["split_k"], "best_us": best["us"]})
    return {"sm_count": sm_count, "rows": rows, "picks": picks}


# --- markdown ------------------------------------------------------------------------------------


def _fmt(value, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _shape(m: int, n: int, k: int) -> str:
    return f"{m}x{n}x{k}"


def _not_run(part: dict) -> Optional[str]:
    if "skipped" in part:
        return f"Not run: {part['skipped']}"
    if "error" in part:
        return f"**Failed to run**: `{part['error']}`"
    return None


def _environment_md(env: dict) -> list[str]:
    gpu = "none" if env.get("gpu") is None else (
        f"{env['gpu']} (compute capability {env['capability'][0]}.{env['capability'][1]}, {env['sm_count']} SMs)")
    rows = [
        ("GPU", gpu),
        ("driver", env.get("driver", "n/a")),
        ("CUDA (torch's)", env.get("torch_cuda") or "none (CPU build of torch)"),
        ("torch", env["torch"]),
        ("nvfp4_gemm", f"{env['package']}, kernels: {', '.join(env['kernels']) or 'none'}"),
        ("checkout commit", env.get("checkout_commit") or "unknown"),
        ("python / platform", f"{env['python']} / {env['platform']}"),
        ("date", env["date"]),
    ]
    return ["| | |", "| --- | --- |"] + [f"| {name} | {value} |" for name, value in rows]


def _tests_md(part: dict) -> list[str]:
    counts = part["counts"]
    lines = [f"`{part['command']}` exited {part['returncode']}: {counts['passed']} passed, {counts['failed']} failed, "
             f"{counts['skipped']} skipped.", ""]
    if part["configs"]:
        lines += ["| config | passed | failed | skipped |", "| --- | --- | --- | --- |"]
        lines += [f"| {name} | {c['passed']} | {c['failed']} | {c['skipped']} |" for name, c in part["configs"].items()]
        lines.append("")
    failed = [t for t in part["tests"] if t["outcome"] == "failed"]
    if failed:
        lines += ["Failures:", ""] + [f"- `{t['name']}`: {t['message'][:300]}" for t in failed] + [""]
    reasons: dict[str, int] = {}
    for t in part["tests"]:
        if t["outcome"] == "skipped":
            reasons[t["message"]] = reasons.get(t["message"], 0) + 1
    if reasons:
        lines += ["Skip reasons:", ""] + [f"- {count} x {reason}" for reason, count in reasons.items()] + [""]
    return lines


def _main_md(part: dict) -> list[str]:
    from .timing import geomean

    ceilings, rows = part["ceilings"], part["rows"]
    names = sorted({name for r in rows for name in r["baselines_us"]})
    header = ["shape", "verified", "nvfp4_gemm us", "TB/s", "% memory floor"]
    header += [cell for name in names for cell in (f"{name} us", "speedup")] + ["config"]
    lines = [f"Ceilings measured in this run: copy {ceilings['copy_tb_per_s']:.2f} TB/s, bf16 matmul "
             f"{ceilings['bf16_tflop_per_s']:.0f} TFLOP/s. Times: CUDA events, L2 flushed, median of 100.", "",
             "| " + " | ".join(header) + " |", "| --- " * len(header) + "|"]
    for r in rows:
        m, n, k, _ = r["shape"]
        cells = [_shape(m, n, k), "yes" if r["verified"] else "**NO**", f"{r['us']:.2f}", f"{r['tb_per_s']:.2f}",
                 f"{100 * r['memory_floor_us'] / r['us']:.1f}"]
        for name in names:
            base = r["baselines_us"].get(name)
            cells += [_fmt(base), f"{base / r['us']:.2f}x" if base else "n/a"]
        lines.append("| " + " | ".join(cells + [f"{r['config']} split {r['split_k']}"]) + " |")
    ours = geomean(r["us"] for r in rows)
    cells = ["geomean", "", f"{ours:.2f}", "", ""]
    for name in names:
        if all(name in r["baselines_us"] for r in rows):
            base = geomean(r["baselines_us"][name] for r in rows)
            cells += [f"{base:.2f}", f"{base / ours:.2f}x"]
        else:
            cells += ["n/a", ""]
    lines += ["| " + " | ".join(cells + [""]) + " |", ""]
    lines += [f"- verification of {_shape(*r['shape'][:3])} failed: {r['check']}" for r in rows if not r["verified"]]
    lines += [f"- {name} unavailable for {_shape(*r['shape'][:3])}: {error}"
              for r in rows for name, error in r["baseline_errors"].items()]
    return lines


def _tune_md(part: dict) -> list[str]:
    lines = [f"Tuned table written to `{part['table']}` (point `NVFP4_GEMM_TUNED_TABLE` at it).", "",
             "| shape | fastest (split) | us | resolver's pick without this table (split) | its us | candidates |",
             "| --- | --- | --- | --- | --- | --- |"]
    for e in part["entries"]:
        pick = e["resolver"]
        lines.append(f"| {_shape(e['m'], e['n'], e['k'])} | {e['best']['config']} ({e['best']['split_k']}) | "
                     f"{e['best']['us']:.2f} | {pick['config']} ({pick['split_k']}) | {_fmt(pick['us'])} | "
                     f"{len(e['candidates'])} |")
    return lines


def _gpumode_md(part: dict) -> list[str]:
    from .timing import geomean

    rows = part["rows"]
    lines = ["Each shape: 50 distinct inputs checked first (exact reference, earned tolerance), then the L2 "
             "flushed and all 50 called back to back between two CUDA events; time / 50 per run, runs until "
             "the leaderboard's stopping rule. The score is the mean.", "",
             "| shape | verified | mean us | std err | best | worst | runs | B200 speed of light | config |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        m, n, k, _ = r["shape"]
        sol = _fmt(r["sol_b200_us"], 3)
        if not r["verified"]:
            lines.append(f"| {_shape(m, n, k)} | **NO**: {r['check']} | | | | | | {sol} | {r['config']} |")
            continue
        lines.append(f"| {_shape(m, n, k)} | yes | {r['mean_us']:.2f} | {r['err_us']:.3f} | {r['best_us']:.2f} | "
                     f"{r['worst_us']:.2f} | {r['runs']} | {sol} | {r['config']} split {r['split_k']} |")
    if rows and all(r["verified"] and r["sol_b200_us"] for r in rows):
        lines.append(f"| geomean | | {geomean(r['mean_us'] for r in rows):.2f} | | | | | "
                     f"{geomean(r['sol_b200_us'] for r in rows):.3f} | |")
    return lines


def _hostcost_md(part: dict) -> list[str]:
    from .hostcost import HostCost, format_table

    rows = [HostCost(**r) for r in part["rows"]]
    return ["Host time per call: 200 back-to-back calls per burst, median of 9 bursts (nvfp4_gemm.hostcost).", "",
            format_table(rows, part["floor_us"])]


def _model_md(part: dict) -> list[str]:
    lines = [f"`sm100_model` with this GPU's {part['sm_count']} SMs, fp16 out; measured = the tuner's median.", "",
             "| shape | model's pick (split) | predicted us | measured us | fastest measured (split) | us |",
             "| --- | --- | --- | --- | --- | --- |"]
    for p in part["picks"]:
        lines.append(f"| {_shape(p['m'], p['n'], p['k'])} | {p['model_config']} ({p['model_split_k']}) | "
                     f"{p['model_predicted_us']:.2f} | {_fmt(p['model_measured_us'])} | {p['best_config']} "
                     f"({p['best_split_k']}) | {p['best_us']:.2f} |")
    lines += ["", "| shape | config | split | predicted us | measured us | measured / predicted |",
              "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {_shape(r['m'], r['n'], r['k'])} | {r['config']} | {r['split_k']} | {r['predicted_us']:.2f} | "
              f"{r['measured_us']:.2f} | {r['ratio']:.2f} |" for r in part["rows"]]
    return lines


_SECTIONS = (
    ("tests", "GPU tests (tests/test_gpu.py)", _tests_md),
    ("main", "Main job: ranked shapes next to the vendor baseline", _main_md),
    ("tune", "Tuner", _tune_md),
    ("gpumode", "GPU MODE timing (the leaderboard's method)", _gpumode_md),
    ("hostcost", "Host cost per eager call", _hostcost_md),
    ("model", "B200 model: predicted vs measured", _model_md),
)
_HEADINGS = {key: heading for key, heading, _ in _SECTIONS}


def render_markdown(report: dict) -> str:
    """The report as markdown, from its JSON-able dict alone."""
    env = report["environment"]
    title = env["gpu"] or "no GPU"
    lines = [f"# nvfp4_gemm report: {title}, {env['date']}", ""] + _environment_md(env) + [""]
    if report.get("unsupported"):
        lines += [f"**No GPU this wheel has kernels for**: {report['unsupported']}. Nothing was run on a GPU.", ""]
    lines.append(f"Exit status {report['exit_status']} ({_EXIT_MEANING[report['exit_status']]}).")
    for key, heading, body in _SECTIONS:
        part = report.get(key)
        if part is None:
            continue
        lines += ["", f"## {heading}", ""]
        reason = _not_run(part)
        lines += [reason] if reason else body(part)
    return "\n".join(lines) + "\n"


_EXIT_MEANING = {0: "everything ran and passed", 1: "a test or a verification failed, or a part failed to run",
                 2: "no GPU this wheel has kernels for"}


def write_report(report: dict, out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    md, js = out_dir / "report.md", out_dir / "report.json"
    md.write_text(render_markdown(report))
    js.write_text(json.dumps(report, indent=1) + "\n")
    return md, js


def _failed(part: dict) -> bool:
    if "error" in part:
        return True
    if "counts" in part:
        return part["returncode"] != 0 or part["counts"]["failed"] > 0
    return any(not r.get("verified", True) for r in part.get("rows", ()))


def assemble(environment: dict, unsupported: Optional[str], parts: dict[str, dict]) -> dict:
    """The report from its parts (keys of PARTS; each a part, {"skipped": why} or {"error": what}):
    adds the B200 model's comparison where it applies, and the exit status."""
    report = {"schema": REPORT_SCHEMA, "environment": environment, "unsupported": unsupported, **parts}
    if unsupported:
        report["exit_status"] = 2
        return report
    major = environment["capability"][0]
    tuned = parts.get("tune", {})
    if major != 10:
        report["model"] = {"skipped": f"the B200 model predicts sm100 kernels; this GPU is compute capability {major}.x"}
    elif "entries" not in tuned:
        report["model"] = {"skipped": "needs the tuner's measurements"}
    else:
        report["model"] = model_comparison(tuned["entries"], environment["sm_count"])
    report["exit_status"] = 1 if any(_failed(part) for part in parts.values()) else 0
    return report


def run(
    out_dir: Path,
    *,
    tests_path: Path = Path("tests/test_gpu.py"),
    skip: frozenset = frozenset(),
    tune_iters: int = 50,
    progress: Callable[[str], None] = print,
) -> int:
    """Run every part not in `skip` on the present GPU, write report.md and report.json to `out_dir`,
    return the exit status."""
    from ..ops import unsupported_reason

    out_dir.mkdir(parents=True, exist_ok=True)
    environment, unsupported = environment_info(), unsupported_reason()
    parts: dict[str, dict] = {}
    if unsupported:
        progress(f"nvfp4_gemm report: {unsupported}; nothing to run on a GPU")
    else:
        steps = {
            "tests": lambda: _run_gpu_tests(tests_path, out_dir, progress),
            "main": lambda: _run_main_job(progress),
            "tune": lambda: _run_tuner(out_dir, tune_iters, progress),
            "gpumode": lambda: _run_gpumode(progress),
            "hostcost": lambda: _run_hostcost(progress),
        }
        chosen = [name for name in PARTS if name not in skip]
        for number, name in enumerate(chosen, start=1):
            progress(f"[{number}/{len(chosen)}] {_HEADINGS[name]}")
            try:
                parts[name] = steps[name]()
            except Exception as error:  # record it and go on: a partial report still helps
                progress(traceback.format_exc())
                parts[name] = {"error": f"{type(error).__name__}: {error}"}
        parts.update({name: {"skipped": "--skip"} for name in PARTS if name in skip})
    report = assemble(environment, unsupported, parts)
    md, js = write_report(report, out_dir)
    progress(f"wrote {md} and {js}")
    return report["exit_status"]
