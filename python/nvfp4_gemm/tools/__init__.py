"""The tooling around the library: verification and timing helpers (testing, timing), the benchmark and
tuner (bench, tune), GPU MODE's entry point and leaderboard timing (gpumode, harness, task_shapes), the
host-cost measurement (hostcost), the report and the command line (report, cli: `python -m nvfp4_gemm`).

The library core (ops, _checks, resolver, configs, families, dtypes, formats, the models, quantization, nn)
imports nothing from here. The old names (`nvfp4_gemm.bench`, `nvfp4_gemm.tune`, ...) stay importable:
each is this package's module under its old name.
"""
