"""Host cost of one eager call next to the floor (`tiny.add_(1)`), in one run, and the host cost
of preparing an sm100 launch (`_C.Kernel.prepare_only`) with unchanged and changing addresses.
Method and rows: nvfp4_gemm.hostcost.

    python benchmarks/host_overhead.py [--calls 200] [--bursts 9] [--json FILE]

The eager rows need a GPU this wheel has kernels for; the sm100 rows a Blackwell GPU and a build that
carries the sm100 family (the default build does). Without a GPU it says so and exits 2.
"""

import argparse
import json
import sys
from dataclasses import asdict

import torch

from nvfp4_gemm import _C, hostcost
from nvfp4_gemm.ops import unsupported_reason


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per burst")
    parser.add_argument("--bursts", type=int, default=9, help="timed bursts (median reported)")
    parser.add_argument("--json", help="write the rows as JSON")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("host_overhead needs a CUDA GPU; none is visible", file=sys.stderr)
        return 2
    rows = [hostcost.floor_call(calls=args.calls, bursts=args.bursts)]
    reason = unsupported_reason()
    if reason is None:
        rows += hostcost.eager_calls(calls=args.calls, bursts=args.bursts)
    else:
        print(f"eager rows skipped: {reason}")
    if any(major == 10 for _, _, major in _C.kernels()):
        rows += hostcost.sm100_prepare(calls=args.calls, bursts=args.bursts)
    else:
        print("sm100 rows skipped: this build carries no sm100 kernels")
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, {args.bursts} bursts of {args.calls} calls")
    print(hostcost.format_table(rows, rows[0].us))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "floor_us": rows[0].us, "rows": [asdict(r) for r in rows]}, f,
                      indent=1)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
