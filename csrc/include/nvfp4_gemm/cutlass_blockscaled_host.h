// The host side of a CUTLASS block-scaled GemmUniversal launch, one home for the sm_100 and sm_120 families
// (sm100/blockscaled_gemm.cuh, sm120/blockscaled_gemm.cuh): a GemmProblem turned into CUTLASS arguments, the checks
// and sizes asked of them, and the prepared launch (prepared_launch.h).
//
// `Kernel` is a family's kernel description: its CUTLASS types (Gemm, GemmKernel, Arguments, ScaleConfig), the
// kernel's operand data types (ElementDataA, ElementDataB: the kernel's A and B, the user's b and a when swapped),
// ElementScale, the output type ElementD, kValuesPerScale, kPipelineStages, and three choices:
//   kSwapAB        the kernel computes out.T = b @ a.T (the weights on the MMA's M side), writing D column-major,
//                  which is the user's row-major (M, N) output;
//   kColumnAlpha   the epilogue scales output column n by alpha[n] (one fp32 vector shared by every batch);
//   kStreamK       CUTLASS's stream-K tile scheduler (split_k = 1: stream-K, split_k > 1: that many K splits,
//                  both reduced deterministically in the workspace).
// The host-proof hooks (sm100/host_proof.hpp) call make_arguments and user_scale_layout, so the CPU tests
// prove what the device receives.
#pragma once

#include <cuda_runtime_api.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/util/packed_stride.hpp>

#include <cstddef>
#include <memory>
#include <type_traits>

#include "nvfp4_gemm/cutlass_pdl_launch.h"
#include "nvfp4_gemm/dynamic_smem.h"
#include "nvfp4_gemm/kernel_entry.h"
#include "nvfp4_gemm/prepared_launch.h"
#include "nvfp4_gemm/problem.h"

namespace nvfp4_gemm {

template <class Kernel>
struct CutlassBlockScaledHost : Kernel {
  using Gemm = typename Kernel::Gemm;
  using GemmKernel = typename Kernel::GemmKernel;
  using Arguments = typename Kernel::Arguments;
  using ScaleConfig = typename Kernel::ScaleConfig;

  // The single place that turns a GemmProblem into kernel arguments. Host-only callers pass sm_count = 1: it
  // keeps CUTLASS from querying a device (there may be none); it sizes only the persistent grid and the
  // stream-K work split, never a shape or a stride.
  static Arguments make_arguments(const GemmProblem& p, int device_id, int sm_count, int split_k) {
    using StrideA = typename GemmKernel::StrideA;
    using StrideB = typename GemmKernel::StrideB;
    using StrideC = typename GemmKernel::StrideC;
    using StrideD = typename GemmKernel::StrideD;
    // The kernel's own (M, N): the user's, or their swap.
    const int kernel_m = Kernel::kSwapAB ? p.n : p.m;
    const int kernel_n = Kernel::kSwapAB ? p.m : p.n;
    const auto problem_mnkl = cute::make_shape(kernel_m, kernel_n, p.k, p.l);

    Arguments args{};
    args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
    args.problem_shape = {kernel_m, kernel_n, p.k, p.l};
    args.mainloop.dA = cutlass::make_cute_packed_stride(StrideA{}, cute::make_shape(kernel_m, p.k, p.l));
    args.mainloop.dB = cutlass::make_cute_packed_stride(StrideB{}, cute::make_shape(kernel_n, p.k, p.l));
    args.mainloop.layout_SFA = ScaleConfig::tile_atom_to_shape_SFA(problem_mnkl);
    args.mainloop.layout_SFB = ScaleConfig::tile_atom_to_shape_SFB(problem_mnkl);

    args.epilogue.ptr_C = nullptr;
    args.epilogue.dC = cutlass::make_cute_packed_stride(StrideC{}, cute::make_shape(kernel_m, kernel_n, p.l));
    args.epilogue.dD = cutlass::make_cute_packed_stride(StrideD{}, cute::make_shape(kernel_m, kernel_n, p.l));
    args.epilogue.thread.alpha = 1.0f;  // used only when alpha_ptr is null
    args.epilogue.thread.beta = 0.0f;
    if constexpr (Kernel::kColumnAlpha) {
      // alpha_ptr holds the user's N values, one per output column (swapped: per kernel row); batch stride 0
      if constexpr (Kernel::kSwapAB) {
        args.epilogue.thread.dAlpha = {true, cute::_0{}, 0};
      } else {
        args.epilogue.thread.dAlpha = {cute::_0{}, true, 0};
      }
    }
    set_addresses(args, p);

    if constexpr (Kernel::kStreamK) {
      using Decomposition = typename GemmKernel::TileScheduler::Params::DecompositionMode;
      using Reduction = typename GemmKernel::TileScheduler::Params::ReductionMode;
      args.scheduler.splits = split_k;
      args.scheduler.decomposition_mode = split_k > 1 ? Decomposition::SplitK : Decomposition::StreamK;
      args.scheduler.reduction_mode = Reduction::Deterministic;
    }

    args.hw_info.device_id = device_id;
    args.hw_info.sm_count = sm_count;
    return args;
  }

  // The addresses in `args` (the user's operands, or their swap): the only part a prepared launch changes per call.
  static void set_addresses(Arguments& args, const GemmProblem& p) {
    using ElementScale = typename Kernel::ElementScale;
    args.mainloop.ptr_A = static_cast<const typename Kernel::ElementDataA*>(Kernel::kSwapAB ? p.b : p.a);
    args.mainloop.ptr_B = static_cast<const typename Kernel::ElementDataB*>(Kernel::kSwapAB ? p.a : p.b);
    args.mainloop.ptr_SFA = static_cast<const ElementScale*>(Kernel::kSwapAB ? p.b_scale_blocked : p.a_scale_blocked);
    args.mainloop.ptr_SFB = static_cast<const ElementScale*>(Kernel::kSwapAB ? p.a_scale_blocked : p.b_scale_blocked);
    args.epilogue.ptr_D = static_cast<typename Kernel::ElementD*>(p.out);
    args.epilogue.thread.alpha_ptr = p.alpha;
  }

  // The scale layout the kernel reads the user's a (or b) scales through (the host proofs' hook).
  template <class Args>
  static const auto& user_scale_layout(const Args& args, ScaleOperand operand_of_user) {
    const bool kernel_a = (operand_of_user == ScaleOperand::kA) != Kernel::kSwapAB;
    if constexpr (std::is_same_v<decltype(args.mainloop.layout_SFA), decltype(args.mainloop.layout_SFB)>) {
      return kernel_a ? args.mainloop.layout_SFA : args.mainloop.layout_SFB;
    } else {
      static_assert(sizeof(Args) == 0, "SFA and SFB layouts differ in type: walk them separately");
    }
  }

  static LaunchStatus can_implement(const GemmProblem& p) {
    if (Gemm::can_implement(make_arguments(p, /*device_id=*/0, /*sm_count=*/1, /*split_k=*/1)) !=
        cutlass::Status::kSuccess) {
      return {false, "CUTLASS can_implement rejected the problem (alignment or shape)"};
    }
    return {};
  }

  // Stream-K partials and barriers (zero for data-parallel kernels); sized with the device's SM count.
  static std::size_t workspace_bytes(const GemmProblem& p, int device_id, int sm_count, int split_k) {
    return Gemm::get_workspace_size(make_arguments(p, device_id, sm_count, split_k));
  }

  static std::size_t counters_needed(const GemmProblem&, int /*split_k*/) { return 0; }

  // The shared-memory opt-in of this kernel, per device (nvfp4_gemm/dynamic_smem.h).
  using Smem = DynamicSmem<cutlass::device_kernel<GemmKernel>>;
  static constexpr int kDynamicSmemBytes = GemmKernel::SharedStorageSize;
  static int dynamic_smem_attribute() { return Smem::attribute(); }

  // What a plan fixes: the arguments of its sizes, split and device (addresses patched in when parameters are
  // built), its workspace size and device. The policy of AddressKeyedLaunch.
  class Plan {
   public:
    using Params = typename GemmKernel::Params;

    Plan(const Arguments& args, std::size_t workspace_bytes, int device_id)
        : args_(args), workspace_bytes_(workspace_bytes), device_id_(device_id) {}

    std::size_t workspace_bytes() const { return workspace_bytes_; }

    // TMA descriptors for these addresses (encoded on the host, no device work).
    LaunchStatus build_params(const GemmProblem& p, void* workspace, Params* params) {
      set_addresses(args_, p);
      *params = GemmKernel::to_underlying_arguments(args_, workspace);
      return {};
    }

    // Stream-K: the reduction barriers are zeroed (cudaMemsetAsync on the launch stream).
    LaunchStatus init_workspace(void* workspace, cudaStream_t stream) const {
      if (GemmKernel::initialize_workspace(args_, workspace, stream) != cutlass::Status::kSuccess) {
        return {false, "CUTLASS could not initialise the workspace (stream-K barrier clear)"};
      }
      return {};
    }

    LaunchStatus launch(Params& params, const GemmProblem&, const LaunchContext& ctx) const {
      return run_with_pdl<Gemm, Smem>(params, device_id_, kDynamicSmemBytes, ctx.stream);
    }

   private:
    Arguments args_;
    std::size_t workspace_bytes_;
    int device_id_;
  };

  static std::unique_ptr<PreparedLaunch> prepare(const GemmProblem& shape, const LaunchContext& ctx,
                                                 LaunchStatus* status) {
    if (ctx.split_k < 1) {
      *status = {false, "split_k must be at least 1"};
      return nullptr;
    }
    if (!Kernel::kStreamK && ctx.split_k != 1) {
      *status = {false, "this data-parallel kernel takes split_k = 1 only"};
      return nullptr;
    }
    const Arguments args = make_arguments(shape, ctx.device_id, ctx.sm_count, ctx.split_k);
    if (Gemm::can_implement(args) != cutlass::Status::kSuccess) {
      *status = {false, "CUTLASS can_implement rejected the problem (alignment or shape)"};
      return nullptr;
    }
    return std::make_unique<AddressKeyedLaunch<Plan>>(Plan(args, Gemm::get_workspace_size(args), ctx.device_id));
  }
};

}  // namespace nvfp4_gemm
