"""Scale-store probes of the resident kernel's quantize walk (argv[1]); the tree's header patched in place.
flat    - (timing only, wrong scales) every quantize-walk scale byte at the block's flat index (a warp's 32 bytes
          one sector, the same 3.7 MB footprint); the blocked offset still computed (masked to 0 by a runtime zero)
flatrr  - (timing only) the same for the re-read blocks only: what a walk that re-reads in whole sectors could get
word    - (exact) 4 lanes' scale bytes gathered by two shuffles, one 32-bit store per 4 lanes (re-read and kept loops)"""
import sys
p = "csrc/include/nvfp4_gemm/quantize/quantize_common.cuh"; s = open(p).read()
kind = sys.argv[1]
def rep(a, b):
    global s
    assert s.count(a) == 1, a
    s = s.replace(a, b)
OLD_QA = """  auto quantize_at = [&](const Cursor& c, const uint4 (&raw)[kV]) {
    const unsigned row = rows_of(c.block), col = rows_of.remainder(c.block, row);
    Io::template quantize</*kStreaming=*/true>(
        context, true, raw, Io::codes(p, static_cast<std::size_t>(c.block) * Io::kBlock),
        p.scale_blocked + blocked_offset32(row, col, static_cast<unsigned>(cols_padded)));
  };"""
if kind in ("flat", "flatrr"):
    rep(OLD_QA, """  const unsigned runtime_zero = static_cast<unsigned>(cols_padded) >> 24;
  auto quantize_at = [&](const Cursor& c, const uint4 (&raw)[kV], bool flat = true) {
    const unsigned row = rows_of(c.block), col = rows_of.remainder(c.block, row);
    const unsigned blocked = blocked_offset32(row, col, static_cast<unsigned>(cols_padded));
    Io::template quantize</*kStreaming=*/true>(
        context, true, raw, Io::codes(p, static_cast<std::size_t>(c.block) * Io::kBlock),
        p.scale_blocked + (flat ? (blocked & runtime_zero) + c.block : blocked));
  };""")
    if kind == "flatrr":
        rep("    if (on_chip.at < steps && on_chip.block < x_blocks) quantize_at(on_chip, held[h]);",
            "    if (on_chip.at < steps && on_chip.block < x_blocks) quantize_at(on_chip, held[h], false);")
        rep("        quantize_at(on_chip, raw);\n      }\n    }\n  }", "        quantize_at(on_chip, raw, false);\n      }\n    }\n  }")
elif kind == "word":
    # BlockIo::quantize with the scale byte gathered over 4 lanes
    rep("""      std::uint32_t words[kWords] = {};
      scale_byte = Recipe::quantize(v, amax_bits, signs, context, words);
      store<kStreaming>(dst, words);
    }
    store_vector<kStreaming>(scale, static_cast<std::uint8_t>(scale_byte));
  }""", """      std::uint32_t words[kWords] = {};
      scale_byte = Recipe::quantize(v, amax_bits, signs, context, words);
      store<kStreaming>(dst, words);
    }
    store_vector<kStreaming>(scale, static_cast<std::uint8_t>(scale_byte));
  }
#ifdef __CUDA_ARCH__
  // the whole warp, 4 lanes per 4 consecutive aligned scale columns of one row: one 32-bit store per 4 lanes
  template <class Context, class Source>
  __device__ static void quantize_gathered(const Context& context, const Source& source, std::uint8_t* dst,
                                           std::uint8_t* scale) {
    float v[kBlock];
    std::uint32_t signs[kWords], amax_bits;
    E::to_float(source, v);
    E::template sign_bits<Recipe::kCodeBits>(source, signs);
    amax_bits = E::block_magnitude_bits(source);
    std::uint32_t words[kWords] = {};
    std::uint32_t b = Recipe::quantize(v, amax_bits, signs, context, words);
    store<true>(dst, words);
    b |= __shfl_down_sync(0xffffffffu, b, 1) << 8;
    b |= __shfl_down_sync(0xffffffffu, b, 2) << 16;
    if ((threadIdx.x & 3) == 0) store_vector<true>(reinterpret_cast<std::uint32_t*>(scale), b);
  }
#endif""")
    rep(OLD_QA, OLD_QA + """
  const bool gathered = (blocks_per_row & 3) == 0;
  auto quantize_at_gathered = [&](const Cursor& c, const uint4 (&raw)[kV]) {
    if (!gathered) return quantize_at(c, raw);
    const unsigned row = rows_of(c.block), col = rows_of.remainder(c.block, row);
    Io::quantize_gathered(context, raw, Io::codes(p, static_cast<std::size_t>(c.block) * Io::kBlock),
                          p.scale_blocked + blocked_offset32(row, col, static_cast<unsigned>(cols_padded)));
  };""")
    rep("        quantize_at(cursor_at(reread_step(n_read)), rereads[j]);", "        quantize_at_gathered(cursor_at(reread_step(n_read)), rereads[j]);")
    rep("        quantize_at(on_chip, raw);\n      }\n    }\n  }", "        quantize_at_gathered(on_chip, raw);\n      }\n    }\n  }")
else:
    sys.exit("unknown variant " + kind)
open(p, "w").write(s)
