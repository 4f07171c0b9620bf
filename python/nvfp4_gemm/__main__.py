"""`python -m nvfp4_gemm` (also `nvfp4-gemm`): the command line, nvfp4_gemm.tools.cli."""

import sys

from .tools.cli import DECODE_SWEEP, main

__all__ = ["DECODE_SWEEP", "main"]

if __name__ == "__main__":
    sys.exit(main())
