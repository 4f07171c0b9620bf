"""Where a decode quantize call's time goes: per-CTA phase timestamps of the probe build (patch.py), one call
after an L2 flush and an idle device, 40 calls per M; medians over calls of the grid-wide quantities, ns."""
import statistics, torch, nvfp4_gemm
K = 7168
flush = torch.empty(64 * 1024 * 1024, dtype=torch.int32, device="cuda")
sms = torch.cuda.get_device_properties(0).multi_processor_count
names = ["start", "loaded", "cta max", "published", "gs seen", "context", "end"]
print(torch.cuda.get_device_name(), "SMs", sms)
for m in (1, 16, 64, 128):
    x = torch.randn(m, K, device="cuda", dtype=torch.bfloat16)
    out = nvfp4_gemm.quantize(x)
    blocks = m * (K // 16)
    threads = 256 if (blocks + 255) // 256 <= sms else 512
    ctas = (blocks + threads - 1) // threads
    rows = []
    for it in range(45):
        flush.zero_(); torch.cuda.synchronize()
        nvfp4_gemm.quantize(x, out=out); torch.cuda.synchronize()
        if it < 5:
            continue
        d = out[0].reshape(-1).view(torch.int64).cpu()
        rec = torch.stack([d[c * threads: c * threads + 16] for c in range(ctas)])  # (ctas, 16)
        g = rec[:, :7].double(); c = rec[:, 8:15].double()
        g0 = g[:, 0].min()
        gr = g - g0
        rows.append(dict(
            start_spread=gr[:, 0].max().item(),
            load=(gr[:, 1] - gr[:, 0]).median().item(),
            load_max=(gr[:, 1] - gr[:, 0]).max().item(),
            last_loaded=gr[:, 1].max().item(),
            first_pub=gr[:, 3].min().item(), last_pub=gr[:, 3].max().item(),
            first_seen=gr[:, 4].min().item(), last_seen=gr[:, 4].max().item(),
            seen_after_last_pub=(gr[:, 4].min() - gr[:, 3].max()).item(),
            context=(gr[:, 5] - gr[:, 4]).median().item(),
            quantize=(gr[:, 6] - gr[:, 5]).median().item(),
            quantize_cycles=(c[:, 6] - c[:, 5]).median().item(),
            pub_after_max_cycles=(c[:, 3] - c[:, 2]).median().item(),
            max_after_load_cycles=(c[:, 2] - c[:, 1]).median().item(),
            end=gr[:, 6].max().item(),
        ))
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print(f"M={m:4d} ctas={ctas:3d}x{threads}: " + ", ".join(f"{k} {v:.0f}" for k, v in med.items()), flush=True)
    if m == 128:
        gts = sorted(set(int(v) % 1000 for v in rec[:, :7].reshape(-1).tolist()))
        print("globaltimer ns mod 1000 (resolution check):", gts[:20])
        print("last call, per-CTA start (ns from first):", sorted(int(v) for v in gr[:, 0].tolist())[::8])
        print("last call, per-CTA published:", sorted(int(v) for v in gr[:, 3].tolist())[::8])
