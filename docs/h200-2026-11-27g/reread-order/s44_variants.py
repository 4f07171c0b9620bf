"""Re-read order variants of the resident kernel's quantize walk (argv[1]):
fwd     - the re-read steps front to back (the oldest walked first: DRAM first, the L2-resident ones last)
alt     - newest, oldest, next newest, next oldest, ...: the DRAM re-reads spread over the whole walk
l2probe - (timing only, wrong codes) every re-read loads the thread's step-0 block (hoisted: no re-read loads)
a3      - back to front (as HEAD), three re-read steps in flight instead of two (16-bit x; fp32 stays at one)
alt3    - alt with three in flight
altu    - alt, the kept steps spread evenly over the re-reads (not one per re-read from the start)
altp    - alt, the two oldest re-read steps prefetched into L2 before the exchange of partials
altu3   - altu with three in flight
l2scale - (timing only, wrong scales) altu whose scale bytes go to one byte per thread (one sector per warp store)
wb      - HEAD, the scale bytes stored without the evict-first hint (st.global)
altuwb  - altu, the scale bytes stored without the evict-first hint
el      - HEAD, the scale bytes stored with an L2 evict-last policy
l2hot   - (timing only, wrong codes) every re-read loads one of the two steps walked last (L2 hits, no DRAM)"""
import sys
p = "csrc/include/nvfp4_gemm/quantize/quantize_common.cuh"; s = open(p).read()
kind = sys.argv[1]
def rep(a, b):
    global s
    assert s.count(a) == 1, a
    s = s.replace(a, b)
if kind in ("wb", "altuwb"):
    rep("    store_vector<kStreaming>(scale, static_cast<std::uint8_t>(scale_byte));",
        "    store_vector<false>(scale, static_cast<std::uint8_t>(scale_byte));")
    if kind == "wb":
        open(p, "w").write(s)
        sys.exit(0)
    kind = "altu"
if kind == "el":
    rep("    store_vector<kStreaming>(scale, static_cast<std::uint8_t>(scale_byte));",
        """#ifdef __CUDA_ARCH__
    if constexpr (kStreaming) {
      std::uint64_t policy;
      asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\\n" : "=l"(policy));
      asm volatile("st.global.L2::cache_hint.u8 [%0], %1, %2;\\n" :: "l"(scale), "r"(scale_byte), "l"(policy) : "memory");
    } else {
      store_vector<false>(scale, static_cast<std::uint8_t>(scale_byte));
    }
#else
    store_vector<false>(scale, static_cast<std::uint8_t>(scale_byte));
#endif""")
    open(p, "w").write(s)
    sys.exit(0)
if kind.endswith("3"):
    rep("constexpr int kResidentAheadBytes = 64;", "constexpr int kResidentAheadBytes = 96;")
    kind = kind[:-1]
    if kind == "a":
        open(p, "w").write(s)
        sys.exit(0)
ALT = "(n & 1) ? (n >> 1) : first_kept - 1 - (n >> 1)"
order = {"fwd": "n", "alt": ALT, "altu": ALT, "l2scale": ALT, "altp": ALT, "l2probe": "first_kept - 1 - n", "l2hot": "first_kept - 1 - n"}[kind]
rep("""  auto issue_ahead = [&]() {
#pragma unroll
    for (int a = 0; a < kAhead; ++a) {
      if (first_kept - 1 - a >= 0) load_last_use(first_kept - 1 - a, rereads[a]);
    }
  };""", """  auto reread_step = [&](int n) { return %s; };
  auto load_reread = [&](int n, uint4 (&raw)[kV]) { load_last_use(%s, raw); };
  auto issue_ahead = [&]() {
#pragma unroll
    for (int a = 0; a < kAhead; ++a) {
      if (a < first_kept) load_reread(a, rereads[a]);
    }
  };""" % (order, {"l2probe": "0", "l2hot": "first_kept - 1 - (n & 1)"}.get(kind, "reread_step(n)")))
rep("""  Cursor reread = cursor_at(first_kept);
  while (reread.at > 0 || on_chip.at > first_kept) {
#pragma unroll
    for (int j = 0; j < kBuffers; ++j) {
      if (reread.at > 0) {
        step_back(reread);
        // into the buffer consumed one step ago: kAhead re-reads in flight while this one is quantized
        if (reread.at - kAhead >= 0) {
          load_last_use(reread.at - kAhead, rereads[(j + kAhead) % kBuffers]);
        }
        quantize_at(reread, rereads[j]);
      }""", """  int n_read = 0;
  while (n_read < first_kept || on_chip.at > first_kept) {
#pragma unroll
    for (int j = 0; j < kBuffers; ++j) {
      if (n_read < first_kept) {
        if (n_read + kAhead < first_kept) load_reread(n_read + kAhead, rereads[(j + kAhead) % kBuffers]);
        quantize_at(cursor_at(reread_step(n_read)), rereads[j]);
        ++n_read;
      }""")
if kind == "l2scale":
    rep("        p.scale_blocked + blocked_offset32(row, col, static_cast<unsigned>(cols_padded)));",
        "        p.scale_blocked + (p.rows < 0 ? blocked_offset32(row, col, static_cast<unsigned>(cols_padded)) : (first & 0x3FFFFu)));")
    kind = "altu"
if kind == "altu":
    rep("""  int n_read = 0;
  while""", """  int n_read = 0, credit = 0;
  const int kept_total = first_held - first_kept;
  while""")
    rep("""        quantize_at(cursor_at(reread_step(n_read)), rereads[j]);
        ++n_read;
      }
      if (on_chip.at > first_kept) {""", """        quantize_at(cursor_at(reread_step(n_read)), rereads[j]);
        ++n_read;
        credit += kept_total;
      } else {
        credit = first_kept;
      }
      if (on_chip.at > first_kept && credit >= first_kept) {
        credit -= first_kept;""")
if kind == "altp":
    rep("""  key = cta_max<kResidentThreads, /*kAcrossWarpsByRedux=*/false>(key);
  const float gs""", """#pragma unroll
  for (int s = 0; s < 2; ++s) {
    if (s < first_kept) asm volatile("prefetch.global.L2 [%0];" :: "l"(source(s)));
  }
  key = cta_max<kResidentThreads, /*kAcrossWarpsByRedux=*/false>(key);
  const float gs""")
open(p, "w").write(s)
