"""The resident kernel's CTAs by SM: which of an SM's two CTAs finishes its walks first, how far apart, and the
warps of a CTA (probe build, patch.py); bf16 8192x7168 dynamic, one call after a 256 MB memset, 20 calls."""
import statistics, torch, nvfp4_gemm
K, M = 7168, 8192
flush = torch.empty(64 * 1024 * 1024, dtype=torch.int32, device="cuda")
x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16) * torch.rand(M, 1, device="cuda", dtype=torch.bfloat16)
out = nvfp4_gemm.quantize(x)
T = int(__import__("sys").argv[1]) if len(__import__("sys").argv) > 1 else 512
W = T // 32
stats = {k: [] for k in ("low_first_walk", "low_first_q", "pair_walk_gap", "pair_q_gap", "sm_end_min", "sm_end_med",
                         "sm_end_max", "cta_end_med", "warp_spread_med", "warp_spread_max", "end")}
for it in range(25):
    flush.zero_(); torch.cuda.synchronize()
    nvfp4_gemm.quantize(x, out=out); torch.cuda.synchronize()
    if it < 5:
        continue
    d = out[0].reshape(-1).view(torch.int64).cpu()
    ctas = 264 if T == 512 else 132
    rec = torch.stack([d[c * T: c * T + 9 + W] for c in range(ctas)])
    t0 = rec[:, 0].min()
    g = (rec[:, :8] - t0).double(); smid = rec[:, 8]; warps = (rec[:, 9:] - t0).double()
    by_sm = {}
    for c in range(ctas):
        by_sm.setdefault(int(smid[c]), []).append(c)
    pairs = [v for v in by_sm.values() if len(v) == 2] or [[c, c] for c in range(ctas)]
    lf_w = sum(g[min(p), 1] < g[max(p), 1] for p in pairs) / len(pairs)
    lf_q = sum(g[min(p), 6] < g[max(p), 6] for p in pairs) / len(pairs)
    sm_end = torch.tensor([max(g[c, 6] for c in v) for v in by_sm.values()])
    spread = warps.max(1).values - warps.min(1).values
    stats["low_first_walk"].append(float(lf_w)); stats["low_first_q"].append(float(lf_q))
    stats["pair_walk_gap"].append(statistics.median(abs(g[p[0], 1] - g[p[1], 1]).item() for p in pairs))
    stats["pair_q_gap"].append(statistics.median(abs(g[p[0], 6] - g[p[1], 6]).item() for p in pairs))
    stats["sm_end_min"].append(sm_end.min().item()); stats["sm_end_med"].append(sm_end.median().item())
    stats["sm_end_max"].append(sm_end.max().item()); stats["cta_end_med"].append(g[:, 6].median().item())
    stats["warp_spread_med"].append(spread.median().item()); stats["warp_spread_max"].append(spread.max().item())
    stats["end"].append(g[:, 7].max().item())
print(torch.cuda.get_device_name(), f"SMs with two CTAs: {len(pairs)} of {len(by_sm)}")
print("medians over 20 calls (ns; low_first = share of SMs whose lower blockIdx finishes first):")
for k, v in stats.items():
    print(f"  {k}: {statistics.median(v):.3f}" if k.startswith("low") else f"  {k}: {statistics.median(v):.0f}")
print("last call: per SM (sorted by smid, first 24): [blockIdx walk_end q_end] pairs")
for s_ in sorted(by_sm)[:24]:
    print("  sm", s_, [(c, int(g[c, 1]), int(g[c, 6])) for c in sorted(by_sm[s_])])
print("last call, sorted SM ends (every 8th):", [int(v) for v in sorted(sm_end.tolist())[::8]])
c = int(g[:, 6].argmax())
print(f"last call, slowest CTA {c} (sm {int(smid[c])}): warp ends", [int(v) for v in warps[c].tolist()])
