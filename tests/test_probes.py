"""The probes that patch a copy of a committed kernel find their anchors in today's kernel (on the CPU: the
patching only; running them needs the GPU). A probe whose anchors went stale fails here, not on a lent GPU."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_direct_phase_trace_instruments_the_committed_direct_kernel(tmp_path):
    kernel = REPO / "csrc/include/nvfp4_gemm/sm90/direct_gemm.cuh"
    instrumented = tmp_path / "direct_gemm.cuh"
    done = subprocess.run([sys.executable, str(REPO / "benchmarks/probes/direct_phase_trace.py"), "instrument",
                           str(kernel), str(instrumented)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    text = instrumented.read_text()
    # every stamp the parser reads: start, first token block staged, loop end, CTA end, and the printed line
    for stamp in ("const unsigned long long tr0 = trace_now();", "tr1 = trace_now();", "tr2 = trace_now();",
                  "const unsigned long long tr3 = trace_now();", 'printf("TRACE'):
        assert text.count(stamp) == 1, stamp
