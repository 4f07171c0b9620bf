"""Builds the sm120 kernels of python/nvfp4_gemm/sm120_rules.py into standalone proof libraries.

Until the sm120 rows join the config table and the extension (docs/sm120_integration.md), the tests
compile each row themselves: one translation unit per row, holding the row's registry entries for
the three output dtypes exactly as csrc/generate_kernels.py would emit them (sm120::make_entry over
the launcher's kernel type), plus C exports over those entries for ctypes. Compiled with the
extension's own flags for sm_120f into a shared library, which serves both the host proofs (the
entries' hooks) and the SASS checks (cuobjdump on the library).

A library is cached under build/sm120_proofs/ (or $NVFP4_GEMM_SM120_PROOF_DIR), keyed by a hash of
its source, every header under csrc/include, the nvcc version and the flags: a changed launcher or
row rebuilds it, a rerun does not. Builds run one at a time (each takes minutes and GBs).

Run as a script (with nvfp4_gemm importable, as for the tests) to build every row ahead of the
tests: `python3 tests/sm120_proof_build.py`; `python3 tests/sm120_proof_build.py compare-archs ROW
OUT_DTYPE ARCH [ARCH ...]` compares one kernel's SASS across architectures.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nvfp4_gemm import sm120_rules

ROOT = Path(__file__).resolve().parents[1]

OUT_ENUM = {"float16": "OutDtype::kFloat16", "bfloat16": "OutDtype::kBFloat16", "float32": "OutDtype::kFloat32"}
DEFAULT_ARCH = "120f"
SM_MAJOR = 12  # compute capability major of the sm120 family (12.0 and 12.1)

# What the tests compare with the row beyond the registry entry: the compiled tile and shared
# memory, and the epilogue scalars of the launcher's own arguments.
_FACTS = r"""
struct Facts {
  int tile_m, tile_n, tile_k;
  int shared_memory_bytes;
  int epilogue_bytes;
  double (*applied_alpha)(const float* alpha);
};

// The alpha the epilogue applies with the arguments make_arguments builds for a problem whose alpha
// pointer is `alpha` (a host pointer here): CUTLASS's LinearCombination reads *alpha_ptr when set,
// else the scalar. NaN when the arguments would also read a source tensor or scale one by beta.
template <class Kernel>
double applied_alpha(const float* alpha) {
  GemmProblem p;
  p.m = 8; p.n = 8; p.k = 32; p.l = 1;
  p.alpha = alpha;
  const auto args = Kernel::make_arguments(p, /*device_id=*/0, /*sm_count=*/1, /*split_k=*/1);
  const auto& scalars = args.epilogue.thread;
  if (args.epilogue.ptr_C != nullptr || scalars.beta != 0.0f || scalars.beta_ptr != nullptr) {
    return __builtin_nan("");
  }
  return scalars.alpha_ptr != nullptr ? *scalars.alpha_ptr : scalars.alpha;
}

template <class Kernel>
constexpr Facts facts_of() {
  using Tile = typename Kernel::TileShape;
  return {cute::size<0>(Tile{}), cute::size<1>(Tile{}), cute::size<2>(Tile{}), Kernel::kSharedMemoryBytes,
          static_cast<int>(sizeof(typename Kernel::CollectiveEpilogue::SharedStorage)), &applied_alpha<Kernel>};
}
"""

# The C exports every proof library carries (over the entries the generated part defines).
_EXPORTS = r"""
extern "C" {
int proof_entry_count() { return static_cast<int>(sizeof(kEntries) / sizeof(kEntries[0])); }
const char* proof_entry_name(int i) { return kEntries[i]->config_name; }
int proof_entry_out_dtype(int i) { return static_cast<int>(kEntries[i]->out_dtype); }
int proof_entry_sm_major(int i) { return kEntries[i]->sm_major; }
int proof_entry_pipeline_stages(int i) { return kEntries[i]->pipeline_stages; }
int proof_shared_memory_bytes(int i) { return kFacts[i].shared_memory_bytes; }
int proof_epilogue_bytes(int i) { return kFacts[i].epilogue_bytes; }
void proof_tile(int i, int* mnk) { mnk[0] = kFacts[i].tile_m; mnk[1] = kFacts[i].tile_n; mnk[2] = kFacts[i].tile_k; }
double proof_applied_alpha(int i, const float* alpha) { return kFacts[i].applied_alpha(alpha); }

// nullptr when the kernel's can_implement accepts the problem, else its message.
const char* proof_can_implement(int i, int m, int n, int k, int l) {
  nvfp4_gemm::GemmProblem p;
  p.m = m; p.n = n; p.k = k; p.l = l;
  const nvfp4_gemm::LaunchStatus status = kEntries[i]->can_implement(p);
  return status.ok ? nullptr : status.message;
}

void proof_scale_offsets(int i, int operand, int rows, int k, int l, std::int64_t* offsets) {
  kEntries[i]->scale_offsets(static_cast<nvfp4_gemm::ScaleOperand>(operand), rows, k, l, offsets);
}

void proof_host_reference(int i, const void* a, const void* b, const void* a_scale, const void* b_scale,
                          double* out, int m, int n, int k, int l, double alpha) {
  nvfp4_gemm::GemmProblem p;
  p.m = m; p.n = n; p.k = k; p.l = l;
  p.a = a; p.b = b; p.a_scale_blocked = a_scale; p.b_scale_blocked = b_scale;
  kEntries[i]->host_reference(p, alpha, out);
}

// The plan a launch would make (arguments, can_implement, workspace size), host-only: nullptr on
// success, else the reason. No device is touched: nothing is launched.
const char* proof_prepare(int i, int m, int n, int k, int l, int split_k) {
  nvfp4_gemm::GemmProblem p;
  p.m = m; p.n = n; p.k = k; p.l = l;
  nvfp4_gemm::LaunchContext ctx;
  ctx.sm_count = 1;
  ctx.split_k = split_k;
  nvfp4_gemm::LaunchStatus status;
  auto plan = kEntries[i]->prepare(p, ctx, &status);
  return plan ? nullptr : status.message;
}

// A real launch through the entry's prepared launch, on the current device (GPU tests only):
// nullptr when it was enqueued on `stream`, else the reason.
const char* proof_run(int i, const void* a, const void* b, const void* a_scale, const void* b_scale, void* out,
                      const float* alpha, int m, int n, int k, int l, int split_k, void* workspace,
                      std::size_t workspace_capacity, int device_id, int sm_count, void* stream) {
  nvfp4_gemm::GemmProblem p;
  p.m = m; p.n = n; p.k = k; p.l = l;
  p.a = a; p.b = b; p.a_scale_blocked = a_scale; p.b_scale_blocked = b_scale; p.out = out; p.alpha = alpha;
  nvfp4_gemm::LaunchContext ctx;
  ctx.workspace = workspace;
  ctx.workspace_capacity = workspace_capacity;
  ctx.device_id = device_id;
  ctx.sm_count = sm_count;
  ctx.split_k = split_k;
  ctx.stream = static_cast<cudaStream_t>(stream);
  nvfp4_gemm::LaunchStatus status;
  auto plan = kEntries[i]->prepare(p, ctx, &status);
  if (!plan) return status.message;
  status = plan->run(p, ctx, /*launch=*/true);
  return status.ok ? nullptr : status.message;
}

std::size_t proof_workspace_bytes(int i, int m, int n, int k, int l, int device_id, int sm_count, int split_k) {
  nvfp4_gemm::GemmProblem p;
  p.m = m; p.n = n; p.k = k; p.l = l;
  return kEntries[i]->workspace_bytes(p, device_id, sm_count, split_k);
}
}
"""


def kernel_type(config, out_dtype: str) -> str:
    return sm120_rules.kernel_type(config, out_dtype)


def translation_unit(config, arch_macros: tuple[str, ...] = ()) -> str:
    """The proof TU of one row: its three registry entries and the C exports."""
    lines = ["// Generated by tests/sm120_proof_build.py from python/nvfp4_gemm/sm120_rules.py. Do not edit."]
    lines += [f"#define {m}" for m in arch_macros]
    lines += [
        '#include "nvfp4_gemm/sm120/blockscaled_gemm.cuh"',
        '#include "nvfp4_gemm/sm120/host_proof.hpp"',
        "",
        "#include <cstdint>",
        "",
        "namespace nvfp4_gemm::generated {",
    ]
    symbols = []
    for out_dtype in sm120_rules.OUT_DTYPES:
        symbol = f"{config.name}__{out_dtype}"
        lines.append(
            f"extern const KernelEntry {symbol} =\n"
            f'    sm120::make_entry<{kernel_type(config, out_dtype)}>("{config.name}", {OUT_ENUM[out_dtype]}, '
            f"/*sm_major=*/{SM_MAJOR});"
        )
        symbols.append((symbol, kernel_type(config, out_dtype)))
    lines += ["}  // namespace nvfp4_gemm::generated", ""]
    lines.append("namespace {")
    lines.append("const nvfp4_gemm::KernelEntry* const kEntries[] = {")
    lines += [f"    &nvfp4_gemm::generated::{s}," for s, _ in symbols]
    lines.append("};")
    lines.append("using namespace nvfp4_gemm;")
    lines.append(_FACTS)
    lines.append("const Facts kFacts[] = {")
    lines += [f"    facts_of<{t}>()," for _, t in symbols]
    lines.append("};")
    lines.append("}  // namespace")
    lines.append(_EXPORTS)
    return "\n".join(lines)


def cutlass_root() -> Path:
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None:
        pytest.skip("nvidia-cutlass (the build requirement) is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "source"


def nvcc_or_skip() -> str:
    nvcc = shutil.which("nvcc") or (
        str(Path(os.environ["CUDA_HOME"]) / "bin" / "nvcc") if os.environ.get("CUDA_HOME") else None
    )
    if nvcc is None or not os.access(nvcc, os.X_OK):
        pytest.skip("nvcc not found (PATH or CUDA_HOME): the sm120 proofs compile their kernels")
    return nvcc


def generated_include_dir() -> Path:
    """The headers the build generates (dtypes.h, families.h: csrc/generate_kernels.py's own writers),
    written under the cache directory; problem.h includes the generated dtypes.h."""
    spec = importlib.util.spec_from_file_location("_nvfp4_gemm_generate_kernels", ROOT / "csrc" / "generate_kernels.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    return generator.write_headers(cache_dir() / "generated")


def nvcc_flags(arch: str) -> list[str]:
    """The extension's CUDA flags (CMakeLists.txt) for one architecture, plus a shared library."""
    root = cutlass_root()
    return [
        "-std=c++17", "-O3", "-DNDEBUG", "--expt-relaxed-constexpr", "-lineinfo",
        "-DCUTLASS_ENABLE_GDC_FOR_SM100=1",
        f"--generate-code=arch=compute_{arch},code=[sm_{arch}]",
        "-Xcompiler=-fPIC", "-shared",
        f"-I{ROOT / 'csrc'}", f"-I{ROOT / 'csrc' / 'include'}", f"-I{generated_include_dir()}",
        "-isystem", str(root / "include"), "-isystem", str(root / "tools" / "util" / "include"),
    ]


def cache_dir() -> Path:
    return Path(os.environ.get("NVFP4_GEMM_SM120_PROOF_DIR", ROOT / "build" / "sm120_proofs"))


def _key(source: str, nvcc: str, flags: list[str]) -> str:
    h = hashlib.sha256()
    h.update(source.encode())
    for header in sorted([*(ROOT / "csrc" / "include").rglob("*"), *generated_include_dir().rglob("*")]):
        if header.is_file():
            h.update(header.name.encode())
            h.update(header.read_bytes())
    h.update(subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.encode())
    h.update(" ".join(flags).encode())
    return h.hexdigest()[:16]


class BuildFailed(Exception):
    pass


def build(config, arch: str = DEFAULT_ARCH, arch_macros: tuple[str, ...] = ()) -> Path:
    """The proof library of one row (built now, or found in the cache)."""
    nvcc = nvcc_or_skip()
    source = translation_unit(config, arch_macros)
    flags = nvcc_flags(arch)
    key = _key(source, nvcc, flags)
    out_dir = cache_dir() / f"{config.name}-{arch}-{key}"
    library = out_dir / "proof.so"
    if library.is_file():
        return library
    out_dir.mkdir(parents=True, exist_ok=True)
    tu = out_dir / "proof.cu"
    tu.write_text(source)
    started = time.monotonic()
    result = subprocess.run([nvcc, *flags, str(tu), "-o", str(out_dir / "proof.so.part")], capture_output=True, text=True)
    seconds = time.monotonic() - started
    (out_dir / "build.log").write_text(f"{' '.join([nvcc, *flags])}\n{seconds:.1f} s\n{result.stdout}{result.stderr}")
    if result.returncode != 0:
        raise BuildFailed(f"{config.name} ({arch}) failed to compile; log: {out_dir / 'build.log'}\n{result.stderr[-3000:]}")
    (out_dir / "proof.so.part").rename(library)
    return library


class ProofLibrary:
    """ctypes view of one proof library's exports."""

    def __init__(self, path: Path):
        self.path = path
        lib = ctypes.CDLL(str(path))
        c = ctypes
        lib.proof_entry_name.restype = c.c_char_p
        lib.proof_can_implement.restype = c.c_char_p
        lib.proof_can_implement.argtypes = [c.c_int] * 5
        lib.proof_scale_offsets.argtypes = [c.c_int] * 5 + [c.c_void_p]
        lib.proof_host_reference.argtypes = [c.c_int] + [c.c_void_p] * 5 + [c.c_int] * 4 + [c.c_double]
        lib.proof_prepare.restype = c.c_char_p
        lib.proof_tile.argtypes = [c.c_int, c.c_void_p]
        lib.proof_run.restype = c.c_char_p
        lib.proof_run.argtypes = [c.c_int] + [c.c_void_p] * 6 + [c.c_int] * 5 + [c.c_void_p, c.c_size_t] + [c.c_int] * 2 + [c.c_void_p]
        lib.proof_workspace_bytes.restype = c.c_size_t
        lib.proof_workspace_bytes.argtypes = [c.c_int] * 8
        lib.proof_applied_alpha.restype = c.c_double
        lib.proof_applied_alpha.argtypes = [c.c_int, c.c_void_p]
        lib.proof_prepare.argtypes = [c.c_int] * 6
        self._lib = lib
        names = {0: "float16", 1: "bfloat16", 2: "float32"}
        self.entries = {
            names[lib.proof_entry_out_dtype(i)]: i for i in range(lib.proof_entry_count())
        }
        self.name = lib.proof_entry_name(0).decode()

    def __getattr__(self, item):
        return getattr(self._lib, item)


def sass_instructions(cubin: Path) -> dict:
    """{function: [instruction without address, encoding or register allocation comments]}."""
    import re

    from test_sass import cuobjdump

    text = subprocess.run([cuobjdump(), "--dump-sass", str(cubin)], check=True, capture_output=True, text=True).stdout
    functions, current = {}, None
    for line in text.splitlines():
        func = re.match(r"\s*Function : (\S+)", line)
        if func:
            current = functions.setdefault(func.group(1), [])
            continue
        instruction = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", line)
        if instruction and current is not None:
            current.append(instruction.group(1))
    return functions


def kernel_cubin(row_name: str, out_dtype: str, arch: str, defines: tuple[str, ...] = ()) -> Path:
    """One kernel (row x out dtype) compiled to a cubin for one architecture, device code only
    (cached like the proof libraries). `defines` are -D macros, e.g. the launcher's
    NVFP4_GEMM_SM120_BUILDER_SCALE_ATOMS (the builder's scale atoms as they are: a host pass would
    fail with GCC 12, a cubin needs none)."""
    row = sm120_rules.by_name(row_name)
    nvcc = nvcc_or_skip()
    source = (
        '#include "nvfp4_gemm/sm120/blockscaled_gemm.cuh"\n#include "nvfp4_gemm/sm120/host_proof.hpp"\n'
        "namespace nvfp4_gemm {\n"
        f'extern const KernelEntry entry = sm120::make_entry<{kernel_type(row, out_dtype)}>("{row.name}", '
        f"{OUT_ENUM[out_dtype]}, /*sm_major=*/{SM_MAJOR});\n}}\n"
    )
    flags = [f for f in nvcc_flags(arch) if f not in ("-shared", "-Xcompiler=-fPIC")] + [f"-D{d}" for d in defines]
    out_dir = cache_dir() / f"cubin-{row_name}-{out_dtype}-{arch}-{_key(source, nvcc, flags)}"
    cubin = out_dir / "kernel.cubin"
    if cubin.is_file():
        return cubin
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "kernel.cu").write_text(source)
    started = time.monotonic()
    result = subprocess.run([nvcc, *flags, "-cubin", str(out_dir / "kernel.cu"), "-o", str(out_dir / "part")],
                            capture_output=True, text=True)
    (out_dir / "build.log").write_text(f"{time.monotonic() - started:.1f} s\n{result.stdout}{result.stderr}")
    if result.returncode != 0:
        raise BuildFailed(f"{row_name} {out_dtype} sm_{arch} failed to compile; log: {out_dir / 'build.log'}")
    (out_dir / "part").rename(cubin)
    return cubin


def gemm_instructions(cubin: Path) -> list[str]:
    functions = sass_instructions(cubin)
    gemms = [body for name, body in functions.items() if "GemmUniversal" in name]
    assert len(gemms) == 1, list(functions)
    return gemms[0]


def compare_archs(row_name: str, out_dtype: str, archs: list[str]) -> None:
    """Compile one kernel per architecture and compare the SASS instruction for instruction (the
    check behind the choice of family target)."""
    listings = {}
    for arch in archs:
        started = time.monotonic()
        listings[arch] = gemm_instructions(kernel_cubin(row_name, out_dtype, arch))
        print(f"sm_{arch}: {len(listings[arch])} instructions ({time.monotonic() - started:.0f} s)", flush=True)
    first = archs[0]
    for arch in archs[1:]:
        a, b = listings[first], listings[arch]
        differing = sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b))
        print(f"sm_{first} vs sm_{arch}: " + ("identical" if a == b else f"{differing} instructions differ"))
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                print(f"  first difference at {i}: {x!r} vs {y!r}")
                break


if __name__ == "__main__":
    if sys.argv[1:2] == ["compare-archs"]:
        # python3 tests/sm120_proof_build.py compare-archs ROW OUT_DTYPE ARCH [ARCH ...]
        compare_archs(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        for row in sm120_rules.load_configs():
            started = time.monotonic()
            print(row.name, build(row), f"{time.monotonic() - started:.0f} s", flush=True)
