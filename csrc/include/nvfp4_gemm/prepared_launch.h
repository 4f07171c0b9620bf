// The per-call half of a prepared launch, shared by every family that prepares (sm100) and by the
// binding's host-only probe: kernel parameters are built once per distinct set of operand
// addresses and reused while the addresses repeat. Framework-free: raw pointers, cudaStream_t.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "nvfp4_gemm/kernel_entry.h"

namespace nvfp4_gemm {

// Every address a kernel's parameters may embed (TMA descriptors hold global addresses; the
// stream-K scheduler holds the workspace).
struct OperandAddresses {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* a_scale = nullptr;
  const void* b_scale = nullptr;
  const void* out = nullptr;
  const void* alpha = nullptr;
  const void* workspace = nullptr;

  static OperandAddresses of(const GemmProblem& p, const void* workspace) {
    return {p.a, p.b, p.a_scale_blocked, p.b_scale_blocked, p.out, p.alpha, workspace};
  }
  bool operator==(const OperandAddresses& o) const {
    return a == o.a && b == o.b && a_scale == o.a_scale && b_scale == o.b_scale && out == o.out &&
           alpha == o.alpha && workspace == o.workspace;
  }
};

struct OperandAddressesHash {
  std::size_t operator()(const OperandAddresses& x) const {
    std::size_t h = 0;
    for (const void* p : {x.a, x.b, x.a_scale, x.b_scale, x.out, x.alpha, x.workspace}) {
      h = h * 1000003u ^ std::hash<const void*>{}(p);
    }
    return h;
  }
};

// A prepared launch over a Policy that holds what a plan fixed (arguments built, checked and sized
// once) and supplies the address-dependent steps:
//   using Params = ...;                                    // what the kernel receives
//   std::size_t workspace_bytes() const;
//   LaunchStatus build_params(const GemmProblem&, void* workspace, Params*);   // e.g. TMA encoding
//   LaunchStatus init_workspace(void* workspace, cudaStream_t);  // before every launch that has one
//   LaunchStatus launch(Params&, const GemmProblem&, const LaunchContext&);
template <class Policy>
class AddressKeyedLaunch final : public PreparedLaunch {
 public:
  // Distinct address sets whose parameters are kept (a GPU MODE run cycles through 50 inputs).
  // Past this many the cache starts over, so a caller cycling through more sets builds every call.
  static constexpr std::size_t kParamsCapacity = 64;

  explicit AddressKeyedLaunch(Policy policy) : policy_(std::move(policy)) {}

  LaunchStatus run(const GemmProblem& p, const LaunchContext& ctx, bool launch) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.calls;
    const std::size_t workspace_bytes = policy_.workspace_bytes();
    if (workspace_bytes > 0 && (ctx.workspace == nullptr || ctx.workspace_capacity < workspace_bytes)) {
      return {false, "workspace smaller than the kernel needs"};
    }
    void* workspace = workspace_bytes > 0 ? ctx.workspace : nullptr;
    const OperandAddresses addresses = OperandAddresses::of(p, workspace);
    auto found = params_.find(addresses);
    if (found == params_.end()) {
      if (params_.size() >= kParamsCapacity) params_.clear();
      typename Policy::Params params{};
      const LaunchStatus built = policy_.build_params(p, workspace, &params);
      if (!built.ok) return built;
      found = params_.emplace(addresses, params).first;
      ++counters_.params_builds;
    }
    // Never cached: whatever the workspace must hold at launch (stream-K's zeroed barriers) is
    // enqueued on the launch's stream before every launch, so back-to-back launches and every
    // replay of a captured graph get their own.
    if (workspace_bytes > 0) {
      const LaunchStatus initialised = policy_.init_workspace(workspace, ctx.stream);
      if (!initialised.ok) return initialised;
      ++counters_.workspace_inits;
    }
    if (!launch) return {};
    const LaunchStatus launched = policy_.launch(found->second, p, ctx);
    if (launched.ok) ++counters_.launches;
    return launched;
  }

  PlanCounters counters() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return counters_;
  }

 private:
  Policy policy_;
  mutable std::mutex mutex_;  // callers may share a plan across threads (same stream)
  std::unordered_map<OperandAddresses, typename Policy::Params, OperandAddressesHash> params_;
  PlanCounters counters_;
};

}  // namespace nvfp4_gemm
