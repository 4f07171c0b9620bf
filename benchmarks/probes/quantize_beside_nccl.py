"""Probe: the dynamic-scale quantize kernels whose CTAs wait for each other (the one-pass kernel at decode,
the resident kernel on one or two CTAs per SM) run on the compute stream while NCCL all-reduces run on
another stream of the same GPU, as under tensor parallelism; one rank starts its all-reduces late, so the
other rank's NCCL kernels sit on their SMs waiting for the peer while the quantize launches.

    torchrun --nproc-per-node 2 benchmarks/probes/quantize_beside_nccl.py [--rounds 40] [--sms N]

Every quantize is compared byte for byte with the same call made alone before the loop, every all-reduce
with its known sum; a hang would end in the process group's timeout (60 s) or the caller's. Per rank it
prints the rounds, the mismatches, and per shape the median quantize time beside the all-reduce against
alone (a cooperative grid that finds no room beside the NCCL kernels waits for them to leave).
Exit status 1 on a mismatch."""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys

import torch
import torch.distributed as dist

import nvfp4_gemm

# (rows, K) bf16: resident kernel on two CTAs per SM, on one, then the one-pass kernel (132 SMs)
SHAPES = [(8192, 7168), (2048, 7168), (1000, 4096), (128, 7168), (16, 7168)]


def same(a, b) -> bool:
    return all(torch.equal(s.reshape(-1).view(torch.uint8), t.reshape(-1).view(torch.uint8)) for s, t in zip(a, b))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--sms", type=int, default=None, help="nvfp4_gemm.set_quantize_sms (default: all SMs)")
    args = parser.parse_args()
    nvfp4_gemm.set_quantize_sms(args.sms)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(rank)
    device = torch.device("cuda", rank)
    gen = torch.Generator(device=device).manual_seed(1234 + rank)
    xs = [torch.randn(shape, device=device, dtype=torch.bfloat16, generator=gen) * 3 for shape in SHAPES]
    reference = [nvfp4_gemm.quantize(x) for x in xs]
    torch.cuda.synchronize(device)

    def timed_quantize(x):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = nvfp4_gemm.quantize(x)
        end.record()
        return out, start, end

    alone = [[] for _ in SHAPES]
    for _ in range(10):
        for i, x in enumerate(xs):
            _, start, end = timed_quantize(x)
            end.synchronize()
            alone[i].append(start.elapsed_time(end) * 1000)

    comm = torch.cuda.Stream(device)
    buf = torch.empty(64 << 20, device=device)  # 256 MB: each all-reduce holds its SMs for milliseconds
    mismatches, beside = 0, [[] for _ in SHAPES]
    for r in range(args.rounds):
        i = r % len(SHAPES)  # one shape per round: a call held up does not hold up the next shape's
        buf.fill_(1.0)
        comm.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(comm):
            if rank == world - 1:
                torch.cuda._sleep(2_000_000)  # this rank's all-reduce starts ~1 ms late
            work = dist.all_reduce(buf, async_op=True)
        out, start, end = timed_quantize(xs[i])
        work.wait()
        torch.cuda.synchronize(device)
        beside[i].append(start.elapsed_time(end) * 1000)
        mismatches += int(not same(out, reference[i]))
        mismatches += int(not bool((buf == world).all()))
    print(f"rank {rank} ({torch.cuda.get_device_name(device)}, quantize SMs {args.sms or 'all'}): {args.rounds} "
          f"rounds, {mismatches} mismatches", flush=True)
    for shape, a, b in zip(SHAPES, alone, beside):
        print(f"rank {rank} quantize bf16 {shape[0]}x{shape[1]}: alone {statistics.median(a):.1f} us, beside the "
              f"all-reduce {statistics.median(b):.1f} us (median of {len(b)}; max {max(b):.1f})", flush=True)
    dist.destroy_process_group()
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
