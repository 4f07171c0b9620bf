// round_magnitude before and after c66c649, compared on every non-negative float up to +inf (host, g++).
// Build: two wrapper TUs, old.cpp including the header of c66c649^ and new.cpp the header of c66c649, each
//   #include "<header>"
//   using namespace nvfp4_gemm::quantize::detail;
//   extern "C" unsigned <v>_e2m1(float a, int sat) { return sat ? round_magnitude<E2M1, true>(a).code : round_magnitude<E2M1, false>(a).code; }
//   (and <v>_e4m3, <v>_e2m1_value, <v>_e4m3_value likewise), compiled with
//   g++ -O2 -std=c++17 -c <v>.cpp -I csrc/include -I build/.../generated/include -I /usr/local/cuda/include
// then g++ -O2 exhaustive_round_magnitude.cpp old.o new.o && ./a.out  (22 s; prints the count of mismatches).
#include <cstdio>
#include <cstring>
#include <cstdint>
#include <cmath>
extern "C" unsigned old_e2m1(float, int), new_e2m1(float, int), old_e4m3(float, int), new_e4m3(float, int);
extern "C" float old_e2m1_value(float), new_e2m1_value(float), old_e4m3_value(float), new_e4m3_value(float);
int main() {
  long long checked = 0, bad = 0;
  // every non-negative float up to +inf (saturating form), and every one below kRoundsAboveMax (plain form)
  for (uint64_t b = 0; b <= 0x7F800000ull; ++b) {
    float a; uint32_t u = (uint32_t)b; std::memcpy(&a, &u, 4);
    ++checked;
    if (old_e2m1(a, 1) != new_e2m1(a, 1) || old_e4m3(a, 1) != new_e4m3(a, 1)) { if (bad++ < 5) printf("sat mismatch %a\n", a); }
    float v1 = old_e2m1_value(a), v2 = new_e2m1_value(a), w1 = old_e4m3_value(a), w2 = new_e4m3_value(a);
    if (std::memcmp(&v1, &v2, 4) || std::memcmp(&w1, &w2, 4)) { if (bad++ < 5) printf("value mismatch %a\n", a); }
    if (a < 7.0f && old_e2m1(a, 0) != new_e2m1(a, 0)) { if (bad++ < 5) printf("e2m1 plain mismatch %a\n", a); }
    if (a < 464.0f && old_e4m3(a, 0) != new_e4m3(a, 0)) { if (bad++ < 5) printf("e4m3 plain mismatch %a\n", a); }
  }
  printf("checked %lld non-negative floats, %lld mismatches\n", checked, bad);
  return bad != 0;
}
