"""chain.py without events: the five model layers back to back (all bf16 nn.Linear, all W4A16, or all W4A4 =
quantize + NVFP4 gemm), cycled after a GPU sleep, under the CUDA profiler; each layer's span = its first
kernel's start to its last kernel's end (the kernels each layer launches are counted from one call of it
alone). No flush, no event between layers: each layer finds the L2 as the layers before it left it.

    python chain_spans.py [M list]"""

import statistics
import sys

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, "benchmarks")
from sweep_hopper import MODEL_LAYERS  # noqa: E402

from nvfp4_gemm.nn import NVFP4Linear  # noqa: E402
from nvfp4_gemm.timing import geomean  # noqa: E402

CYCLES = 30


def device_events(fn):
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    found = [e for e in prof.events() if e.device_type == DeviceType.CUDA]
    return sorted(found, key=lambda e: e.time_range.start)


def chain_spans(calls):
    """Median span (us) of each call over CYCLES cycles of the chain."""
    for _ in range(3):
        for call in calls:
            call()
    torch.cuda.synchronize()
    counts = [len(device_events(call)) for call in calls]
    sleep_events = len(device_events(lambda: torch.cuda._sleep(1000)))

    def run():
        torch.cuda._sleep(40_000_000)  # the host queues the whole run before the GPU reaches it
        for _ in range(CYCLES):
            for call in calls:
                call()

    events = device_events(run)[sleep_events:]
    if len(events) != CYCLES * sum(counts):
        raise RuntimeError(f"expected {CYCLES * sum(counts)} device activities, found {len(events)}")
    spans = [[] for _ in calls]
    at = 0
    for _ in range(CYCLES):
        for i, count in enumerate(counts):
            mine = events[at:at + count]
            spans[i].append(max(e.time_range.end for e in mine) - mine[0].time_range.start)
            at += count
    return [statistics.median(s) for s in spans], counts


def main():
    ms = [int(v) for v in (sys.argv[1] if len(sys.argv) > 1 else "1,4,16").split(",")]
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    ratios = {}
    with torch.no_grad():
        for m in ms:
            layers = {"bf16": [], "w4a16": [], "w4a4": []}
            xs = []
            for n, k in MODEL_LAYERS:
                torch.manual_seed(m + n + k)
                linear = torch.nn.Linear(k, n, bias=False, dtype=torch.bfloat16, device="cuda")
                layers["bf16"].append(linear)
                layers["w4a16"].append(NVFP4Linear.from_linear(linear, activations="bf16"))
                layers["w4a4"].append(NVFP4Linear.from_linear(linear, activations="nvfp4"))
                xs.append(torch.randn(m, k, dtype=torch.bfloat16, device="cuda"))
            for rnd in (1, 2):
                spans = {}
                for name, chain in layers.items():
                    spans[name], counts = chain_spans([lambda lay=lay, x=x: lay(x) for lay, x in zip(chain, xs)])
                    if rnd == 1:
                        print(f"M={m:>3} {name}: kernels per layer {counts}")
                for i, (n, k) in enumerate(MODEL_LAYERS):
                    b = spans["bf16"][i]
                    print(f"M={m:>3} round {rnd} {n:>5}x{k:<5} span in chain: bf16 {b:6.1f}  W4A16 {spans['w4a16'][i]:6.1f} "
                          f"x{b / spans['w4a16'][i]:5.2f}  W4A4 {spans['w4a4'][i]:6.1f} x{b / spans['w4a4'][i]:5.2f}", flush=True)
                for name in ("w4a16", "w4a4"):
                    g = geomean(b / w for b, w in zip(spans["bf16"], spans[name]))
                    ratios.setdefault((name, rnd), []).append((m, g))
                    print(f"M={m:>3} round {rnd} {name} geomean x bf16 {g:.3f}", flush=True)
    for (name, rnd), rows in sorted(ratios.items()):
        for label, group in (("M 1-16", (1, 16)), ("M 64-128", (64, 128))):
            vals = [g for m, g in rows if group[0] <= m <= group[1]]
            if vals:
                print(f"{name} round {rnd} {label}: geomean over M of the per-M geomeans x bf16 {geomean(vals):.3f}")


if __name__ == "__main__":
    main()
