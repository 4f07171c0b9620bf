"""Where the resident dynamic quantize's time goes: per-CTA phase timestamps of the probe build (patch.py), one
call after a 256 MB memset flush, 40 calls per shape; medians over calls, ns from the first CTA's start."""
import statistics, torch, nvfp4_gemm
K = 7168
flush = torch.empty(64 * 1024 * 1024, dtype=torch.int32, device="cuda")
print(torch.cuda.get_device_name(), "SMs", torch.cuda.get_device_properties(0).multi_processor_count)
for m in (8192, 4096):
    x = torch.randn(m, K, device="cuda", dtype=torch.bfloat16) * torch.rand(m, 1, device="cuda", dtype=torch.bfloat16)
    out = nvfp4_gemm.quantize(x)
    blocks = m * (K // 16)
    rows = []
    for it in range(45):
        flush.zero_(); torch.cuda.synchronize()
        nvfp4_gemm.quantize(x, out=out); torch.cuda.synchronize()
        if it < 5:
            continue
        d = out[0].reshape(-1).view(torch.int64).cpu()
        ctas = 0
        recs = []
        while (ctas + 1) * 512 * 8 <= d.numel() * 8:
            r = d[ctas * 512: ctas * 512 + 8]
            if r[0].item() <= 0 or r[7].item() < r[0].item() or r[7].item() - r[0].item() > 10**7:
                break
            recs.append(r)
            ctas += 1
        rec = torch.stack(recs).double()
        g = rec - rec[:, 0].min()
        q = lambda v, f: float(torch.quantile(v, f))
        rows.append(dict(
            ctas=ctas, start_spread=g[:, 0].max().item(),
            walk_end_min=g[:, 1].min().item(), walk_end_med=g[:, 1].median().item(), walk_end_max=g[:, 1].max().item(),
            pub_min=g[:, 3].min().item(), pub_max=g[:, 3].max().item(),
            seen_min=g[:, 4].min().item(), seen_max=g[:, 4].max().item(),
            seen_after_last_pub=(g[:, 4].min() - g[:, 3].max()).item(),
            ctx_after_seen=(g[:, 5] - g[:, 4]).median().item(),
            qwalk_med=(g[:, 6] - g[:, 5]).median().item(), qwalk_min=(g[:, 6] - g[:, 5]).min().item(),
            qwalk_max=(g[:, 6] - g[:, 5]).max().item(),
            qend_min=g[:, 6].min().item(), qend_p50=g[:, 6].median().item(), qend_p90=q(g[:, 6], 0.9),
            qend_max=g[:, 6].max().item(), end=g[:, 7].max().item(),
        ))
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print(f"M={m}: " + ", ".join(f"{k} {v:.0f}" for k, v in med.items()), flush=True)
    last = g
    print("  last call, walk end per CTA (sorted, every 16th):", [int(v) for v in sorted(last[:, 1].tolist())[::16]])
    print("  last call, quantize walk end per CTA (sorted, every 16th):", [int(v) for v in sorted(last[:, 6].tolist())[::16]])
