// The resident quantize kernel's block position (quantize_common.cuh): RowDivider against the division, and
// blocked_offset32 against blocked_offset. Built and run by
// tests/test_quantize.py::test_resident_block_position_on_the_host; by hand:
//   python3 csrc/generate_kernels.py --out-dir /tmp/gen --cuda-archs 90a
//   g++ -O2 -std=c++17 -I csrc/include -I /tmp/gen/include -I /usr/local/cuda/include \
//       tests/resident_block_position.cpp -o /tmp/position && /tmp/position
#include <cstdint>
#include <cstdio>

#include "nvfp4_gemm/quantize/quantize_common.cuh"
using namespace nvfp4_gemm::quantize::detail;
using nvfp4_gemm::blocked_offset;

int main() {
  constexpr std::uint32_t kLimit = 1u << 30;  // the kernel's blocks are fewer (launch_resident)
  long long divisions = 0, division_errors = 0;
  // every divisor up to 2^16 (K up to 2^20 at 16 values per block) and the powers of two and their neighbours
  // beyond: for each, every quotient's first and last n near 0 and near the limit, and a stride of quotients between
  auto check_divisor = [&](std::uint32_t d) {
    const RowDivider divide = RowDivider::of(d);
    auto check = [&](std::uint32_t n) {
      const std::uint32_t q = divide(n);
      division_errors += q != n / d || divide.remainder(n, q) != n % d;
      ++divisions;
    };
    const std::uint32_t last_q = (kLimit - 1) / d;
    const std::uint32_t step = last_q / 64 + 1;
    for (std::uint32_t q = 0; q <= last_q; q = (q < 64 || q + 64 > last_q) ? q + 1 : q + step) {
      const std::uint64_t first = static_cast<std::uint64_t>(q) * d, last = first + d - 1;
      check(static_cast<std::uint32_t>(first));
      if (last < kLimit) check(static_cast<std::uint32_t>(last));
      if (q == last_q) break;
    }
    check(kLimit - 1);
  };
  for (std::uint32_t d = 1; d <= (1u << 16); ++d) check_divisor(d);
  for (int e = 17; e < 30; ++e) {
    for (std::uint32_t d : {(1u << e) - 1, 1u << e, (1u << e) + 1, 3u << (e - 1)}) check_divisor(d);
  }
  long long offsets = 0, offset_errors = 0;
  for (int cols_padded = 4; cols_padded <= 2048; cols_padded += cols_padded < 64 ? 4 : 124) {
    for (std::uint32_t row = 0; row < 1024; ++row) {
      for (int col = 0; col < cols_padded; ++col) {
        offset_errors += blocked_offset32(row, col, cols_padded) != blocked_offset(row, col, cols_padded);
        ++offsets;
      }
    }
  }
  // the largest layouts the kernel takes: rows near 2^23 / cols
  for (std::uint32_t row : {(1u << 22) - 1, (1u << 22) + 127, (1u << 23) - 129}) {
    for (int col = 0; col < 512; ++col) {
      offset_errors += blocked_offset32(row, col, 512) != blocked_offset(row, col, 512);
      ++offsets;
    }
  }
  std::printf("%lld divisions checked, %lld wrong; %lld offsets checked, %lld wrong\n", divisions, division_errors,
              offsets, offset_errors);
  return division_errors == 0 && offset_errors == 0 ? 0 : 1;
}
