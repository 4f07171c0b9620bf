import sys
p = sys.argv[1] + "/csrc/include/nvfp4_gemm/quantize/quantize_common.cuh"
s = open(p).read()
old = """  std::uint32_t key = 0;
  for (int i = 0; i < Io::kVectors; ++i) key = umax(key, Elements<T>::finite_key(raw[i]));
  key = cta_max<kCtaThreads>(key);
  // What the block's"""
assert s.count(old) == 1
s = s.replace(old, """  const std::uint32_t key = cta_max<kCtaThreads>(run_finite_key<T>(raw));
  // What the block's""")
# run_finite_key must precede the one-pass kernel
a = s.index("// The largest finite magnitude key (Elements<T>::finite_key) of a run of vectors in fewer instructions:")
b = s.index("__device__ __forceinline__ std::uint64_t l2_evict_first_policy()")
func = s[a:b]; s = s[:a] + s[b:]
anchor = "// A dynamic global scale over an x with no more blocks than a co-resident grid has threads"
s = s.replace(anchor, func + anchor)
open(p, "w").write(s)
