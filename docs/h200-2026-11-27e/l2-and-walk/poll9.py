p = "csrc/include/nvfp4_gemm/quantize/quantize_common.cuh"; s = open(p).read()
def rep(a, b, n=1):
    global s
    assert s.count(a) == n, (a, s.count(a))
    s = s.replace(a, b)
rep("template <class WhileFirstPoll = NothingWhilePolling>\n__device__ __forceinline__ std::uint32_t await_partials(",
    "template <int kLoads = kPollLoads, class WhileFirstPoll = NothingWhilePolling>\n__device__ __forceinline__ std::uint32_t await_partials(")
rep("first += 32 * kPollLoads) {\n      std::uint64_t v[kPollLoads];", "first += 32 * kLoads) {\n      std::uint64_t v[kLoads];")
rep("      for (int j = 0; j < kPollLoads; ++j) {", "      for (int j = 0; j < kLoads; ++j) {", 2)
rep("bits_float(await_partials(p.amax_scratch, tag, partial, static_cast<int>(gridDim.x))));",
    "bits_float(await_partials<10>(p.amax_scratch, tag, partial, static_cast<int>(gridDim.x))));")
open(p, "w").write(s)
