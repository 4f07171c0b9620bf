"""The W4A16 layer against the bf16 nn.Linear with no artificial flush: the five model layers run back to back as
in a model (all bf16, or all W4A16), cycled, so that before each layer the L2 holds what the layers before it
read (every other layer's weights exceed the L2). A GPU sleep first lets the host queue the whole run, so no
launch gap is timed. Per layer: CUDA events around it (median over cycles); per cycle: events around the five
layers with none between them. Beside it, the same layers timed alone after each flush (nvfp4_gemm.timing).

    python chain.py [M list]"""

import os
import statistics
import sys

import torch

sys.path.insert(0, "benchmarks")
from sweep_hopper import MODEL_LAYERS  # noqa: E402

from nvfp4_gemm.nn import NVFP4Linear  # noqa: E402
from nvfp4_gemm.timing import geomean, time_cuda  # noqa: E402

CYCLES = 30


def run_chain(calls, instrumented: bool):
    """Median us per layer (instrumented) or per cycle of all layers."""
    for _ in range(3):
        for call in calls:
            call()
    torch.cuda.synchronize()
    torch.cuda._sleep(40_000_000)  # ~20 ms at 2 GHz: the host queues every call below before the GPU reaches them
    if instrumented:
        events = [[torch.cuda.Event(enable_timing=True) for _ in range(len(calls) + 1)] for _ in range(CYCLES)]
        for cycle in events:
            for i, call in enumerate(calls):
                cycle[i].record()
                call()
            cycle[-1].record()
        torch.cuda.synchronize()
        return [statistics.median(c[i].elapsed_time(c[i + 1]) * 1000 for c in events) for i in range(len(calls))]
    events = [torch.cuda.Event(enable_timing=True) for _ in range(CYCLES + 1)]
    events[0].record()
    for e in events[1:]:
        for call in calls:
            call()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(events[i].elapsed_time(events[i + 1]) * 1000 for i in range(CYCLES))


def main():
    ms = [int(v) for v in (sys.argv[1] if len(sys.argv) > 1 else "1,4,16").split(",")]
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}")
    with torch.no_grad():
        for m in ms:
            bf16, w4a16, xs = [], [], []
            for n, k in MODEL_LAYERS:
                torch.manual_seed(m + n + k)
                linear = torch.nn.Linear(k, n, bias=False, dtype=torch.bfloat16, device="cuda")
                bf16.append(linear)
                w4a16.append(NVFP4Linear.from_linear(linear, activations="bf16"))
                xs.append(torch.randn(m, k, dtype=torch.bfloat16, device="cuda"))
            calls = {name: [lambda lay=lay, x=x: lay(x) for lay, x in zip(layers, xs)]
                     for name, layers in (("bf16", bf16), ("w4a16", w4a16))}
            for rnd in (1, 2):
                per_layer = {name: run_chain(c, True) for name, c in calls.items()}
                per_cycle = {name: run_chain(c, False) for name, c in calls.items()}
                alone = {}
                for kind in ("dirty", "clean"):
                    os.environ["NVFP4_GEMM_L2_FLUSH"] = kind
                    alone[kind] = {name: [time_cuda(call).median_us for call in c] for name, c in calls.items()}
                for i, (n, k) in enumerate(MODEL_LAYERS):
                    b, w = per_layer["bf16"][i], per_layer["w4a16"][i]
                    print(f"M={m:>3} round {rnd} {n:>5}x{k:<5} in chain: bf16 {b:6.1f} W4A16 {w:6.1f} x{b / w:5.2f} | alone "
                          + " ".join(f"{kind}: bf16 {alone[kind]['bf16'][i]:6.1f} W4A16 {alone[kind]['w4a16'][i]:6.1f} "
                                     f"x{alone[kind]['bf16'][i] / alone[kind]['w4a16'][i]:5.2f}" for kind in alone), flush=True)
                chain_g = geomean(b / w for b, w in zip(per_layer["bf16"], per_layer["w4a16"]))
                alone_g = {kind: geomean(b / w for b, w in zip(v["bf16"], v["w4a16"])) for kind, v in alone.items()}
                print(f"M={m:>3} round {rnd} geomean x bf16: in chain {chain_g:.3f}, alone dirty {alone_g['dirty']:.3f}, "
                      f"alone clean {alone_g['clean']:.3f}; cycle of five layers (no events between) bf16 "
                      f"{per_cycle['bf16']:.1f} us, W4A16 {per_cycle['w4a16']:.1f} us, x{per_cycle['bf16'] / per_cycle['w4a16']:.3f}",
                      flush=True)


if __name__ == "__main__":
    main()
