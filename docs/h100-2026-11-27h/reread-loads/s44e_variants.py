"""Re-read load variants of the resident kernel (on HEAD, 1555030's order), argv[1]:
na       - re-reads by ld.global.nc.L1::no_allocate (the L1 keeps nothing of them)
cg       - re-reads by ld.global.cg (cached in L2 only)
a1       - one re-read in flight instead of two (16-bit x)
ldsprobe - (timing only, wrong codes) every re-read from the thread's slot of the first kept step in shared memory"""
import sys
p = "csrc/include/nvfp4_gemm/quantize/quantize_common.cuh"; s = open(p).read()
kind = sys.argv[1]
def rep(a, b):
    global s
    assert s.count(a) == 1, a
    s = s.replace(a, b)
new_loader = {
    "na": "ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32",
    "cg": "ld.global.cg.L2::cache_hint.v4.u32",
}
if kind in new_loader:
    rep('''  auto load_reread = [&](int n, uint4 (&raw)[kV]) { load_last_use(reread_step(n), raw); };''',
        '''  auto load_reread = [&](int n, uint4 (&raw)[kV]) {
#pragma unroll
    for (int i = 0; i < kV; ++i) {
      const uint4* at = source(reread_step(n)) + i;
      asm volatile("%s {%%0, %%1, %%2, %%3}, [%%4], %%5;\\n"
                   : "=r"(raw[i].x), "=r"(raw[i].y), "=r"(raw[i].z), "=r"(raw[i].w)
                   : "l"(at), "l"(last_use));
    }
  };''' % new_loader[kind])
elif kind == "a1":
    rep("constexpr int kResidentAheadBytes = 64;", "constexpr int kResidentAheadBytes = 32;")
    rep('''  static constexpr int kAheadSteps = kResidentAheadBytes / kBlockBytes;
  static_assert(kAheadSteps >= 1, "a block is at most kResidentAheadBytes");''',
        '''  static constexpr int kAheadSteps = kResidentAheadBytes > kBlockBytes ? kResidentAheadBytes / kBlockBytes : 1;''')
elif kind == "ldsprobe":
    rep('''  auto load_reread = [&](int n, uint4 (&raw)[kV]) { load_last_use(reread_step(n), raw); };''',
        '''  auto load_reread = [&](int n, uint4 (&raw)[kV]) {
#pragma unroll
    for (int i = 0; i < kV; ++i) {
      asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\\n"
                   : "=r"(raw[i].x), "=r"(raw[i].y), "=r"(raw[i].z), "=r"(raw[i].w)
                   : "r"(static_cast<std::uint32_t>(__cvta_generic_to_shared(&kept_slot(first_kept, i))) + 0 * n));
    }
  };''')
else:
    raise SystemExit(kind)
open(p, "w").write(s)
