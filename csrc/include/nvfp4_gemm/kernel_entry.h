// One registry entry: a compiled kernel (one config x one output dtype) and its host-side hooks.
// Framework-free: raw pointers, sizes and a cudaStream_t only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "nvfp4_gemm/problem.h"

namespace nvfp4_gemm {

// Devices one process may use: the size of per-device state (SM counts, kernel attributes).
inline constexpr int kMaxDevices = 64;

// What a launch needs beyond the problem itself; owned by the caller (the binding).
struct LaunchContext {
  void* workspace = nullptr;  // scratch device memory, at least workspace_bytes(problem) long
  std::size_t workspace_capacity = 0;
  // Zeroed device counters, at least counters_needed(problem) of them, used for nothing else; every
  // launch leaves them zero again. Kept apart from the scratch so that no launch can find another
  // launch's scratch data where it expects zeroed counters.
  unsigned int* counters = nullptr;
  std::size_t counter_capacity = 0;
  int device_id = 0;  // the launch device, already current on the calling thread
  int sm_count = 0;   // its multiprocessor count, read once per device by the caller
  int split_k = 1;    // K partitions (kernels without split-K reject anything but 1)
  cudaStream_t stream = nullptr;
};

// Outcome of a host-side check or a launch. `message` is a static string (never freed).
struct LaunchStatus {
  bool ok = true;
  const char* message = "";
};

// What a prepared launch has done so far; tests and the host-cost benchmark read it.
struct PlanCounters {
  std::uint64_t calls = 0;            // run() calls, launching or not
  std::uint64_t params_builds = 0;    // kernel parameters built for addresses not seen before
  std::uint64_t workspace_inits = 0;  // workspace initialisations enqueued (stream-K barrier clears)
  std::uint64_t launches = 0;
};

// A launch prepared once per plan: problem sizes, output dtype, config, split, device and stream are
// fixed when it is made; per call only what depends on the operand addresses is left.
class PreparedLaunch {
 public:
  virtual ~PreparedLaunch() = default;
  // `p` holds this call's addresses (its sizes are the plan's), `ctx` its buffers. With
  // launch = false: everything a launch does except the launch itself and the kernel's one-time
  // device attributes, so the host cost can be measured on a GPU the kernel cannot run on.
  virtual LaunchStatus run(const GemmProblem& p, const LaunchContext& ctx, bool launch) = 0;
  virtual PlanCounters counters() const = 0;
};

struct KernelEntry {
  const char* config_name;  // stable name from csrc/configs.toml
  OutDtype out_dtype;
  int sm_major;  // compute capability major this kernel runs on (the family's, python/nvfp4_gemm/families.py)

  // Host-only: whether the kernel's own can_implement accepts the problem (no device touched).
  LaunchStatus (*can_implement)(const GemmProblem&);
  std::size_t (*workspace_bytes)(const GemmProblem&, int device_id, int sm_count, int split_k);
  std::size_t (*counters_needed)(const GemmProblem&, int split_k);
  // Launches with everything prepared on the spot (nullptr for families that have `prepare`).
  LaunchStatus (*launch)(const GemmProblem&, const LaunchContext&);

  // Test hooks (nullptr where a family has none). Both build the kernel's arguments with the
  // launcher's own code and read them back.
  // scale_offsets: element offset of logical scale (l, row, k_block) for every l, row, k_block,
  // row-major over (l, rows, k / 16), written to `offsets`.
  void (*scale_offsets)(ScaleOperand, int rows, int k, int l, std::int64_t* offsets);
  // host_reference: CUTLASS's host GEMM on host copies of the operands (problem pointers are host
  // pointers; problem.alpha is ignored in favour of `alpha`, except by column_alpha kernels, which read
  // its n values through their own epilogue arguments), float64 accumulation, float64 output
  // written through the output stride the launcher builds into `out` ((l, m, n) elements).
  void (*host_reference)(const GemmProblem&, double alpha, double* out);

  // Facts of the compiled kernel that the resolver's model also derives (a test compares them):
  // depth of the shared-memory operand pipeline in K tiles (0 where a family does not report it).
  int pipeline_stages = 0;

  // Makes the prepared launch of one plan: the sizes of `shape` (its addresses are not read) and
  // ctx's split, device, SM count and stream. On failure: nullptr, and `status` says why. nullptr
  // for families that launch through `launch`.
  std::unique_ptr<PreparedLaunch> (*prepare)(const GemmProblem& shape, const LaunchContext& ctx,
                                             LaunchStatus* status) = nullptr;

  // The dynamic shared memory the kernel launches with, and (test hook) the kernel's
  // maxDynamicSharedMemorySize attribute in the current device's context (-1: unreadable).
  int dynamic_smem_bytes = 0;
  int (*dynamic_smem_attribute)() = nullptr;

  // The kernel reads alpha as n values, out[l, m, n] scaled by alpha[n], never as one (the sm100 rows
  // marked per_column_alpha in csrc/configs.toml). Families whose every kernel takes either say so in
  // the generated families.h (takes_per_column_alpha).
  bool column_alpha = false;
};

}  // namespace nvfp4_gemm
