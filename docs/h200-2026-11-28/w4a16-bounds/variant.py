"""Rewrite a copy of the tree as a timing-only variant of the W4A16 kernels (wrong values on purpose).
usage: python variant.py TREE {nodeq|dq9|bare|bare4|notok|bare_notok}"""
import sys
tree, kind = sys.argv[1], sys.argv[2]
path = f"{tree}/csrc/include/nvfp4_gemm/sm90/common.cuh"
src = open(path).read()
head = "__device__ __forceinline__ void dequant8(std::uint32_t x, __nv_bfloat162 s, std::uint32_t (&out)[4]) {\n"
start = src.index(head) + len(head)
end = src.index("\n}\n", start)
bodies = {
    # 4 LOP3 per word instead of 11 bit ops + 4 HMUL2 (the scale still read)
    "nodeq": """  const std::uint32_t sb = *reinterpret_cast<const std::uint32_t*>(&s);
  out[0] = x ^ sb;
  out[1] = x ^ 0x11111111u;
  out[2] = x ^ 0x22222222u;
  out[3] = x ^ 0x44444444u;""",
    # the permuted layout's count: 5 shifts + 4 LOP3 + 4 HMUL2 (instead of 7 + 4 + 4)
    "dq9": """  const std::uint32_t a = x << 6, b = x >> 6, c = x << 3, d = x >> 3, e = x << 9;
  const std::uint32_t bits[4] = {select_bits<0x81C081C0u>(x, a), select_bits<0x81C081C0u>(b, c),
                                 select_bits<0x81C081C0u>(d, e), select_bits<0x81C081C0u>(a, d)};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __nv_bfloat162 v = __hmul2(*reinterpret_cast<const __nv_bfloat162*>(&bits[i]), s);
    out[i] = *reinterpret_cast<const std::uint32_t*>(&v);
  }""",
}
if kind != "notok":
    src = src[:start] + bodies["nodeq" if kind.startswith("bare") else kind] + src[end:]
if kind.startswith("bare"):  # and the direct kernel's bf16 MMA as a fold of its operands (2 LOP3)
    mma = src.index('"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32')
    a0 = src.rindex("  asm volatile(", 0, mma)
    a1 = src.index(");\n", mma) + 3
    src = src[:a0] + """  c[0] = __uint_as_float(__float_as_uint(c[0]) ^ a[0] ^ a[1] ^ a[2]);
  c[1] = __uint_as_float(__float_as_uint(c[1]) ^ a[3] ^ b0 ^ b1);
""" + src[a1:]
open(path, "w").write(src)
if kind.endswith("notok"):  # no global token reads: the staging stores zeros (its barriers and stores stay)
    d = f"{tree}/csrc/include/nvfp4_gemm/sm90/direct_gemm.cuh"
    text = open(d).read()
    line = "const bool ok = a_ok && chunk < b_end && chunk * 4 + rec_t < k_lanes;"
    assert text.count(line) == 1
    open(d, "w").write(text.replace(line, "const bool ok = a_ok && chunk < 0;"))
if kind == "bare4":  # four chunks per register set (256 bytes in flight per lane)
    d = f"{tree}/csrc/include/nvfp4_gemm/sm90/direct_gemm.cuh"
    text = open(d).read()
    assert "kChunksPerSet = 2;" in text
    open(d, "w").write(text.replace("kChunksPerSet = 2;", "kChunksPerSet = 4;"))
print(f"{tree}: timing-only variant {kind}")
