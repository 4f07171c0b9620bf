"""Scratch only: NVFP4_Q_PROTECT=R (read on every launch) overrides the resident kernel's evict-last walked steps
(min(R, walked)); unset, the tree's rule."""
p = "csrc/include/nvfp4_gemm/quantize/quantize_common.cuh"; s = open(p).read()
a = "  const int walked = steps > on_chip_steps ? steps - on_chip_steps : 0;\n"
assert s.count(a) == 1
s = s.replace(a, a + """  if (const char* forced = std::getenv("NVFP4_Q_PROTECT")) return std::min(walked, std::atoi(forced));
""")
if "#include <cstdlib>" not in s:
    s = s.replace("#pragma once\n", "#pragma once\n#include <cstdlib>\n#include <algorithm>\n", 1)
open(p, "w").write(s)
print("override patched")
