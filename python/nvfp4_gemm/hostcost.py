"""`nvfp4_gemm.hostcost`: the same module as nvfp4_gemm.tools.hostcost (the tooling's home; this name stays importable)."""

import sys

from .tools import hostcost

sys.modules[__name__] = hostcost
