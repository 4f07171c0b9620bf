// e2m1_value_over_64 (quantize_common.cuh: the e2m1 rounding of the quantize kernels, on the host too)
// against round_magnitude<E2M1> (the rounding the reference's arithmetic gives) on every non-negative float up
// to +inf (saturating form) and every one below 7 (plain form), and the e4m3 code of each of its 8 values.
// Built and run by tests/test_quantize.py::test_e2m1_rounding_on_every_float (~7 s); by hand:
//   python3 csrc/generate_kernels.py --out-dir /tmp/gen --cuda-archs 90a
//   g++ -O2 -std=c++17 -ffp-contract=off -I csrc/include -I /tmp/gen/include -I /usr/local/cuda/include \
//       tests/exhaustive_e2m1_rounding.cpp -o /tmp/exhaustive && /tmp/exhaustive
#include <cstdint>
#include <cstdio>

#include "nvfp4_gemm/quantize/quantize_common.cuh"
using namespace nvfp4_gemm::quantize::detail;

int main() {
  bool codes_ok = true;  // value / 64 of e2m1 code c is the e4m3 value of code c << 2
  for (std::uint32_t c = 0; c < 8; ++c) codes_ok &= minifloat_value<E4M3>(c << 2) == minifloat_value<E2M1>(c) / 64;
  long long checked = 0, bad = 0;
  for (std::uint64_t b = 0; b <= 0x7F800000ull; ++b) {
    const float a = bits_float(static_cast<std::uint32_t>(b));
    bad += e2m1_value_over_64<true>(a) != round_magnitude<E2M1, true>(a).value / 64;
    if (a < E2M1::kRoundsAboveMax) bad += e2m1_value_over_64<false>(a) != round_magnitude<E2M1, false>(a).value / 64;
    ++checked;
  }
  std::printf("e4m3 codes of the 8 values: %s; %lld floats checked, %lld mismatches\n", codes_ok ? "c << 2" : "WRONG",
              checked, bad);
  return codes_ok && bad == 0 ? 0 : 1;
}
