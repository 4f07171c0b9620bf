// nvfp4_gemm._C: plain pybind11 over the framework-free kernels. Integers in (device pointers,
// sizes, a device index and a cudaStream_t), Python exceptions out; the Python layer validates
// tensors before calling here. (The op's C++ kernels, torch_op.cpp, use torch's stable ABI only.)
#include <cuda_runtime_api.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "native_launch.h"
#include "nvfp4_gemm/families.h"  // generated from python/nvfp4_gemm/families.py
#include "nvfp4_gemm/prepared_launch.h"
#include "nvfp4_gemm/quantize/quantize.h"
#include "registry.h"

namespace py = pybind11;

using nvfp4_gemm::GemmProblem;
using nvfp4_gemm::KernelEntry;
using nvfp4_gemm::LaunchContext;
using nvfp4_gemm::LaunchStatus;
using nvfp4_gemm::OutDtype;
using nvfp4_gemm::PlanCounters;
using nvfp4_gemm::PreparedLaunch;

#ifndef NVFP4_GEMM_CUDA_ARCHS
#error "the build must define NVFP4_GEMM_CUDA_ARCHS (the CUDA architectures compiled into the wheel)"
#endif

namespace {

using nvfp4_gemm::kOutDtypeCount;
using nvfp4_gemm::kOutDtypeNames;
using Format = nvfp4_gemm::Nvfp4Format;

OutDtype parse_out_dtype(const std::string& name) {
  std::string known;
  for (int i = 0; i < kOutDtypeCount; ++i) {
    if (name == kOutDtypeNames[i]) return static_cast<OutDtype>(i);
    known += (i ? ", " : "") + std::string(kOutDtypeNames[i]);
  }
  throw py::value_error("out_dtype must be one of " + known + ", got " + name);
}

const char* out_dtype_name(OutDtype dtype) { return kOutDtypeNames[static_cast<int>(dtype)]; }

template <class T>
T* as_ptr(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("nvfp4_gemm: ") + what + ": " + cudaGetErrorString(err));
  }
}

// This extension links the CUDA runtime statically, so its notion of the current device is its
// own, separate from torch's: make the tensors' device current here, on every call.
void make_current(int device) {
  int current = -1;
  check_cuda(cudaGetDevice(&current), "cudaGetDevice");
  if (current != device) check_cuda(cudaSetDevice(device), "cudaSetDevice");
}

// Multiprocessor count per device, read once (the tile scheduler sizes its grid with it).
int sm_count(int device) {
  static std::array<int, nvfp4_gemm::kMaxDevices> cache{};
  if (device < 0 || device >= static_cast<int>(cache.size())) {
    throw py::value_error("device index out of range: " + std::to_string(device));
  }
  if (cache[device] == 0) {
    check_cuda(cudaDeviceGetAttribute(&cache[device], cudaDevAttrMultiProcessorCount, device),
               "cudaDeviceGetAttribute(multiProcessorCount)");
  }
  return cache[device];
}

GemmProblem make_problem(std::uintptr_t a, std::uintptr_t b, std::uintptr_t a_scale,
                         std::uintptr_t b_scale, std::uintptr_t out, std::uintptr_t alpha, int m,
                         int n, int k, int l, bool alpha_per_column = false) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.l = l;
  p.a = as_ptr<const void>(a);
  p.b = as_ptr<const void>(b);
  p.a_scale_blocked = as_ptr<const void>(a_scale);
  p.b_scale_blocked = as_ptr<const void>(b_scale);
  p.out = as_ptr<void>(out);
  p.alpha = as_ptr<const float>(alpha);
  p.alpha_per_column = alpha_per_column;
  return p;
}

// One plan: a registry entry and everything its prepared launch fixes.
struct PlanKey {
  const KernelEntry* entry;
  int m, n, k, l, split_k, device;
  cudaStream_t stream;

  bool operator==(const PlanKey& o) const {
    return entry == o.entry && m == o.m && n == o.n && k == o.k && l == o.l && split_k == o.split_k &&
           device == o.device && stream == o.stream;
  }
};

struct PlanKeyHash {
  std::size_t operator()(const PlanKey& key) const {
    std::size_t h = std::hash<const void*>{}(key.entry) ^ std::hash<const void*>{}(key.stream);
    for (int x : {key.m, key.n, key.k, key.l, key.split_k, key.device}) h = h * 1000003u ^ std::hash<int>{}(x);
    return h;
  }
};

// The prepared launches, one per plan, made on first use and kept for the process (like the
// per-stream workspaces: one per distinct shape, never per call).
class PlanTable {
 public:
  PreparedLaunch* get(const KernelEntry* entry, const GemmProblem& p, const LaunchContext& ctx) {
    const PlanKey key{entry, p.m, p.n, p.k, p.l, ctx.split_k, ctx.device_id, ctx.stream};
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = plans_.find(key);
    if (found != plans_.end()) return found->second.get();
    LaunchStatus status;
    std::unique_ptr<PreparedLaunch> plan = entry->prepare(p, ctx, &status);
    if (plan == nullptr) {
      throw std::runtime_error(std::string("nvfp4_gemm: kernel ") + entry->config_name + " (" +
                               out_dtype_name(entry->out_dtype) + "): " + status.message);
    }
    return plans_.emplace(key, std::move(plan)).first->second.get();
  }

  const PreparedLaunch* find(const PlanKey& key) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = plans_.find(key);
    return found == plans_.end() ? nullptr : found->second.get();
  }

  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return plans_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<PlanKey, std::unique_ptr<PreparedLaunch>, PlanKeyHash> plans_;
};

PlanTable& process_plans() {
  static PlanTable* table = new PlanTable();  // never destroyed: no teardown order to get wrong at exit
  return *table;
}

LaunchContext make_context(int split_k, std::uintptr_t workspace, std::size_t workspace_capacity,
                           std::uintptr_t counters, std::size_t counter_capacity, int device, int sms,
                           std::uintptr_t stream) {
  LaunchContext ctx;
  ctx.split_k = split_k;
  ctx.workspace = as_ptr<void>(workspace);
  ctx.workspace_capacity = workspace_capacity;
  ctx.counters = as_ptr<unsigned int>(counters);
  ctx.counter_capacity = counter_capacity;
  ctx.device_id = device;
  ctx.sm_count = sms;
  ctx.stream = as_ptr<CUstream_st>(stream);
  return ctx;
}

void require_prepared(const KernelEntry* entry) {
  if (entry->prepare == nullptr) {
    throw py::type_error(std::string("kernel ") + entry->config_name +
                         " launches without a prepared plan: prepare_only measures the sm100 family");
  }
}

// One call of `entry`: through its plan's prepared launch where the family prepares, else its
// launch function. launch = false stops before the launch (prepared families only).
void dispatch(PlanTable& plans, const KernelEntry* entry, const GemmProblem& p, const LaunchContext& ctx,
              bool launch) {
  // A column_alpha kernel takes n values only; the others one, or n where their whole family takes both.
  if (entry->column_alpha ? !p.alpha_per_column
                          : p.alpha_per_column && !nvfp4_gemm::takes_per_column_alpha(entry->sm_major)) {
    throw std::invalid_argument(std::string("nvfp4_gemm: kernel ") + entry->config_name +
                                (entry->column_alpha ? " takes alpha as n values, one per output column"
                                                     : " takes one alpha, not one per output column"));
  }
  LaunchStatus status;
  if (!launch) require_prepared(entry);
  if (entry->prepare != nullptr) {
    status = plans.get(entry, p, ctx)->run(p, ctx, launch);
  } else {
    status = entry->launch(p, ctx);
  }
  if (!status.ok) {
    throw std::runtime_error(std::string("nvfp4_gemm: kernel ") + entry->config_name + " (" +
                             out_dtype_name(entry->out_dtype) + "): " + status.message);
  }
}

py::dict counters_dict(const PlanCounters& c) {
  py::dict out;
  out["calls"] = c.calls;
  out["params_builds"] = c.params_builds;
  out["workspace_inits"] = c.workspace_inits;
  out["launches"] = c.launches;
  return out;
}

// A stand-in prepared family for host-only tests of the plan machinery above (no device, no
// CUTLASS): its "parameters" are the addresses they were built for, its launch fails when handed
// parameters built for other addresses, and stream-K-like plans (split_k > 1) have a workspace.
struct HostProbePlan {
  using Params = nvfp4_gemm::OperandAddresses;
  static constexpr std::size_t kSplitWorkspaceBytes = 256;

  std::size_t workspace;
  std::size_t workspace_bytes() const { return workspace; }
  LaunchStatus build_params(const GemmProblem& p, void* ws, Params* params) const {
    *params = Params::of(p, ws);
    return {};
  }
  LaunchStatus init_workspace(void*, cudaStream_t) const { return {}; }
  LaunchStatus launch(Params& params, const GemmProblem& p, const LaunchContext& ctx) const {
    if (!(params == Params::of(p, workspace > 0 ? ctx.workspace : nullptr))) {
      return {false, "parameters of other addresses"};
    }
    return {};
  }
};

std::unique_ptr<PreparedLaunch> prepare_host_probe(const GemmProblem&, const LaunchContext& ctx, LaunchStatus*) {
  return std::make_unique<nvfp4_gemm::AddressKeyedLaunch<HostProbePlan>>(
      HostProbePlan{ctx.split_k > 1 ? HostProbePlan::kSplitWorkspaceBytes : 0});
}

const KernelEntry kHostProbeEntry{"host_plan_probe", OutDtype::kFloat16, /*sm_major=*/0, nullptr, nullptr, nullptr,
                                  nullptr, nullptr, nullptr, 0, &prepare_host_probe};

// The plan machinery of `Kernel.run` on the host only: the same table and dispatch with a
// stand-in entry, minus the device steps (current device, SM count).
class HostPlanProbe {
 public:
  void run(std::uintptr_t a, std::uintptr_t b, std::uintptr_t a_scale, std::uintptr_t b_scale, std::uintptr_t out,
           std::uintptr_t alpha, int m, int n, int k, int l, int split_k, std::uintptr_t workspace,
           std::size_t workspace_capacity, std::uintptr_t stream, bool launch) {
    dispatch(plans_, &kHostProbeEntry, make_problem(a, b, a_scale, b_scale, out, alpha, m, n, k, l),
             make_context(split_k, workspace, workspace_capacity, 0, 0, /*device=*/0, /*sms=*/1, stream), launch);
  }

  std::optional<py::dict> counters(int m, int n, int k, int l, int split_k, std::uintptr_t stream) const {
    const PreparedLaunch* plan = plans_.find({&kHostProbeEntry, m, n, k, l, split_k, 0, as_ptr<CUstream_st>(stream)});
    if (plan == nullptr) return std::nullopt;
    return counters_dict(plan->counters());
  }

  std::size_t plan_count() const { return plans_.size(); }

 private:
  PlanTable plans_;
};

// A handle on one registry entry; Python resolves it once per shape and keeps it.
class Kernel {
 public:
  explicit Kernel(const KernelEntry* entry) : entry_(entry) {}

  std::string config_name() const { return entry_->config_name; }
  std::string out_dtype() const { return out_dtype_name(entry_->out_dtype); }
  int sm_major() const { return entry_->sm_major; }
  // The registry entry's address: the C++ op remembers the plan the Python path made by it.
  std::uintptr_t entry_address() const { return reinterpret_cast<std::uintptr_t>(entry_); }
  int pipeline_stages() const { return entry_->pipeline_stages; }
  bool column_alpha() const { return entry_->column_alpha; }

  std::optional<std::string> can_implement(int m, int n, int k, int l) const {
    GemmProblem p;
    p.m = m;
    p.n = n;
    p.k = k;
    p.l = l;
    LaunchStatus status = entry_->can_implement(p);
    if (status.ok) return std::nullopt;
    return std::string(status.message);
  }

  std::size_t workspace_bytes(int m, int n, int k, int l, int split_k, int device) const {
    GemmProblem p;
    p.m = m;
    p.n = n;
    p.k = k;
    p.l = l;
    make_current(device);
    return entry_->workspace_bytes(p, device, sm_count(device), split_k);
  }

  std::size_t counters_needed(int m, int n, int k, int l, int split_k) const {
    GemmProblem p;
    p.m = m;
    p.n = n;
    p.k = k;
    p.l = l;
    return entry_->counters_needed(p, split_k);
  }

  // What a plan needs to know before its first launch, in one call: (why the kernel rejects the
  // problem, or None; workspace bytes; split-K counters), the sizes only when it accepts.
  std::tuple<std::optional<std::string>, std::size_t, std::size_t> plan(int m, int n, int k, int l, int split_k,
                                                                         int device) const {
    std::optional<std::string> rejection = can_implement(m, n, k, l);
    if (rejection) return {rejection, 0, 0};
    return {std::nullopt, workspace_bytes(m, n, k, l, split_k, device), counters_needed(m, n, k, l, split_k)};
  }

  // (dynamic shared memory the kernel launches with, its maxDynamicSharedMemorySize attribute on
  // `device`): the opt-in of the launcher, read back per device by a GPU test.
  std::pair<int, int> dynamic_smem(int device) const {
    if (entry_->dynamic_smem_attribute == nullptr) throw py::type_error("this kernel reports no shared memory");
    make_current(device);
    return {entry_->dynamic_smem_bytes, entry_->dynamic_smem_attribute()};
  }

  void run(std::uintptr_t a, std::uintptr_t b, std::uintptr_t a_scale, std::uintptr_t b_scale,
           std::uintptr_t out, std::uintptr_t alpha, int m, int n, int k, int l,
           int split_k, std::uintptr_t workspace, std::size_t workspace_capacity, std::uintptr_t counters,
           std::size_t counter_capacity, int device, std::uintptr_t stream, bool alpha_per_column) const {
    call(a, b, a_scale, b_scale, out, alpha, m, n, k, l, split_k, workspace, workspace_capacity, counters,
         counter_capacity, device, stream, /*launch=*/true, alpha_per_column);
  }

  void prepare_only(std::uintptr_t a, std::uintptr_t b, std::uintptr_t a_scale, std::uintptr_t b_scale,
                    std::uintptr_t out, std::uintptr_t alpha, int m, int n, int k, int l, int split_k,
                    std::uintptr_t workspace, std::size_t workspace_capacity, std::uintptr_t counters,
                    std::size_t counter_capacity, int device, std::uintptr_t stream) const {
    require_prepared(entry_);  // before the device is touched: a clear error on any machine
    // Only a GPU of the kernel's own family: on an H200 (2026-11-24, cuda-gdb) the driver refuses to
    // encode the sm100 kernels' FP4 TMA descriptors (cuTensorMapEncodeTiled: CUDA_ERROR_INVALID_VALUE),
    // and CUTLASS's error path then calls through a null pointer (segmentation fault).
    int major = 0;
    check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
               "cudaDeviceGetAttribute(computeCapabilityMajor)");
    if (major != entry_->sm_major) {
      throw std::runtime_error("prepare_only needs a compute capability " + std::to_string(entry_->sm_major) +
                               ".x GPU (this kernel's family); cuda:" + std::to_string(device) + " is " +
                               std::to_string(major) + ".x, whose driver refuses the sm100 kernels' FP4 TMA descriptors");
    }
    // alpha as the kernel takes it (no launch reads it)
    call(a, b, a_scale, b_scale, out, alpha, m, n, k, l, split_k, workspace, workspace_capacity, counters,
         counter_capacity, device, stream, /*launch=*/false, /*alpha_per_column=*/entry_->column_alpha);
  }

  std::optional<py::dict> plan_counters(int m, int n, int k, int l, int split_k, int device,
                                        std::uintptr_t stream) const {
    const PreparedLaunch* plan = process_plans().find({entry_, m, n, k, l, split_k, device, as_ptr<CUstream_st>(stream)});
    if (plan == nullptr) return std::nullopt;
    return counters_dict(plan->counters());
  }

  void scale_offsets(int operand, int rows, int k, int l, std::uintptr_t offsets) const {
    if (entry_->scale_offsets == nullptr) throw py::type_error("this kernel family has no scale_offsets hook");
    if (operand != 0 && operand != 1) throw py::value_error("operand must be 0 (a) or 1 (b)");
    if (rows < 1 || k < Format::kValuesPerScale || k % Format::kValuesPerScale || l < 1) {
      throw py::value_error("scale_offsets needs rows >= 1, l >= 1 and k a positive multiple of " +
                            std::to_string(Format::kValuesPerScale));
    }
    entry_->scale_offsets(static_cast<nvfp4_gemm::ScaleOperand>(operand), rows, k, l,
                          as_ptr<std::int64_t>(offsets));
  }

  void host_reference(std::uintptr_t a, std::uintptr_t b, std::uintptr_t a_scale,
                      std::uintptr_t b_scale, std::uintptr_t out, int m, int n, int k, int l,
                      double alpha, std::uintptr_t alpha_column) const {
    if (entry_->host_reference == nullptr) throw py::type_error("this kernel family has no host_reference hook");
    if (entry_->column_alpha != (alpha_column != 0)) {
      throw py::value_error(entry_->column_alpha ? "this kernel reads alpha per output column: pass alpha_column"
                                                 : "this kernel takes one alpha: pass alpha, not alpha_column");
    }
    py::gil_scoped_release release;
    entry_->host_reference(make_problem(a, b, a_scale, b_scale, out, alpha_column, m, n, k, l, alpha_column != 0),
                           alpha, as_ptr<double>(out));
  }

 private:
  void call(std::uintptr_t a, std::uintptr_t b, std::uintptr_t a_scale, std::uintptr_t b_scale, std::uintptr_t out,
            std::uintptr_t alpha, int m, int n, int k, int l, int split_k, std::uintptr_t workspace,
            std::size_t workspace_capacity, std::uintptr_t counters, std::size_t counter_capacity, int device,
            std::uintptr_t stream, bool launch, bool alpha_per_column = false) const {
    make_current(device);
    dispatch(process_plans(), entry_, make_problem(a, b, a_scale, b_scale, out, alpha, m, n, k, l, alpha_per_column),
             make_context(split_k, workspace, workspace_capacity, counters, counter_capacity, device, sm_count(device),
                          stream),
             launch);
  }

  const KernelEntry* entry_;
};

}  // namespace

void nvfp4_gemm::launch_entry(const KernelEntry* entry, const GemmProblem& problem, int split_k, void* workspace,
                              std::size_t workspace_capacity, unsigned int* counters, std::size_t counter_capacity,
                              int device, cudaStream_t stream) {
  make_current(device);
  dispatch(process_plans(), entry, problem,
           make_context(split_k, reinterpret_cast<std::uintptr_t>(workspace), workspace_capacity,
                        reinterpret_cast<std::uintptr_t>(counters), counter_capacity, device, sm_count(device),
                        reinterpret_cast<std::uintptr_t>(stream)),
           /*launch=*/true);
}

namespace {
// The SMs the quantize kernels size their grids for (set_quantize_sms); 0: all of the device's.
std::atomic<int> quantize_sms_limit{0};
int quantize_sms(int device) {
  const int limit = quantize_sms_limit.load(std::memory_order_relaxed), all = sm_count(device);
  return limit > 0 && limit < all ? limit : all;
}
}  // namespace

void nvfp4_gemm::launch_quantize(const quantize::QuantizeProblem& problem, OperandFormat format,
                                 quantize::InputDtype dtype, int device, cudaStream_t stream) {
  make_current(device);
  const LaunchStatus status = quantize::launch_quantize(problem, format, dtype, device, quantize_sms(device), stream);
  if (!status.ok) throw std::runtime_error(std::string("nvfp4_gemm quantize: launch failed: ") + status.message);
}

#ifdef NVFP4_GEMM_TORCH_OP
namespace {
// The Python path's last exception on this thread, for nvfp4_gemm.gemm to re-raise with its own type
// (an exception leaving a C++ kernel reaches Python as RuntimeError). An owned reference; leaked if the
// thread ends holding one (no GIL may be held then).
thread_local PyObject* pending_op_error = nullptr;

py::object take_op_error() {
  if (pending_op_error == nullptr) return py::none();
  return py::reinterpret_steal<py::object>(std::exchange(pending_op_error, nullptr));
}
}  // namespace

nvfp4_gemm::FirstCallAnswer nvfp4_gemm::op_first_call(const char* module, const std::uintptr_t* handles,
                                                      std::size_t count, const std::string_view* text) {
  py::gil_scoped_acquire gil;
  FirstCallAnswer answer;
  try {
    // torch._C._aoti passes tensor handles as PyCapsules
    py::list arguments;
    for (std::size_t i = 0; i < count; ++i) {
      const std::uintptr_t handle = handles[i];
      arguments.append(handle ? py::object(py::capsule(reinterpret_cast<void*>(handle))) : py::object(py::none()));
    }
    if (text != nullptr) arguments.append(py::str(text->data(), text->size()));
    auto result = py::module_::import(module).attr("_op_first_call")(arguments).cast<py::tuple>();
    const auto take = [&](py::handle capsule) {
      answer.out_handles.push_back(reinterpret_cast<std::uintptr_t>(capsule.cast<py::capsule>().get_pointer()));
    };
    if (py::isinstance<py::tuple>(result[0])) {
      for (py::handle capsule : result[0]) take(capsule);
    } else if (!result[0].is_none()) {
      take(result[0]);
    }
    if (!result[1].is_none()) {
      answer.planned = true;
      answer.plan = result[1].cast<std::vector<std::int64_t>>();
    }
  } catch (py::error_already_set& e) {
    answer = FirstCallAnswer{};
    answer.error = e.type().attr("__name__").cast<std::string>() + ": " + py::str(e.value()).cast<std::string>();
    Py_XDECREF(pending_op_error);
    pending_op_error = e.value().inc_ref().ptr();
  }
  return answer;
}
#endif

namespace {

namespace quantize = nvfp4_gemm::quantize;

// The launcher's own guards (the Python layer checks tensors first): a bad size or a missing
// pointer is an error here, never a fault on the device.
quantize::QuantizeProblem make_quantize_problem(std::uintptr_t x, int dtype, int format, int rows, int k,
                                                std::uintptr_t global_scale, std::uintptr_t partner_global_scale,
                                                std::uintptr_t data, std::uintptr_t scale_blocked,
                                                std::uintptr_t global_scale_out, std::uintptr_t alpha_out,
                                                std::uintptr_t amax_scratch) {
  if (dtype < 0 || dtype > 2) throw py::value_error("dtype must be 0 (float32), 1 (float16) or 2 (bfloat16)");
  if (format < 0 || format >= nvfp4_gemm::kOperandFormatCount) {
    throw py::value_error("format must be an operand format's position in dtypes.OPERAND_FORMATS (0 .. " +
                          std::to_string(nvfp4_gemm::kOperandFormatCount - 1) + "), got " + std::to_string(format));
  }
  const quantize::FormatShape shape = quantize::format_shape(static_cast<nvfp4_gemm::OperandFormat>(format));
  if (rows < 0 || k < shape.values_per_scale || k % shape.values_per_scale) {
    throw py::value_error("quantize needs rows >= 0 and k a positive multiple of " +
                          std::to_string(shape.values_per_scale));
  }
  const long long padded_rows = (rows + shape.tile_rows - 1LL) / shape.tile_rows * shape.tile_rows;
  const long long padded_cols =
      (k / shape.values_per_scale + shape.tile_cols - 1LL) / shape.tile_cols * shape.tile_cols;
  const long long padded = padded_rows * padded_cols;
  if (padded > 0x7FFFFFFFLL) throw py::value_error("quantize: more than 2^31 blocked scale bytes");
  if (x == 0 && rows > 0) throw py::value_error("quantize: x is null");
  if (data == 0 && rows > 0) throw py::value_error("quantize: data is null");
  if ((scale_blocked == 0 && rows > 0) || global_scale_out == 0 || alpha_out == 0) {
    throw py::value_error("quantize: an output pointer is null");
  }
  if (!shape.global_scale && global_scale != 0) {
    throw py::value_error("quantize: this format has no global scale (pass 0)");
  }
  if (shape.global_scale && global_scale == 0 && amax_scratch == 0) {
    throw py::value_error("quantize: a dynamic global scale needs the amax_scratch");
  }
  quantize::QuantizeProblem p;
  p.rows = rows;
  p.k = k;
  p.x = as_ptr<const void>(x);
  p.global_scale = as_ptr<const float>(global_scale);
  p.partner_global_scale = as_ptr<const float>(partner_global_scale);
  p.data = as_ptr<std::uint8_t>(data);
  p.scale_blocked = as_ptr<std::uint8_t>(scale_blocked);
  p.global_scale_out = as_ptr<float>(global_scale_out);
  p.alpha_out = as_ptr<float>(alpha_out);
  p.amax_scratch = as_ptr<quantize::AmaxScratch>(amax_scratch);
  return p;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "nvfp4_gemm native kernels (framework-free; pointers and sizes as integers)";

  m.def("compiled_architectures", [] {
    std::vector<std::string> archs;
    std::string all = NVFP4_GEMM_CUDA_ARCHS;
    std::size_t start = 0;
    while (start <= all.size()) {
      std::size_t end = all.find(';', start);
      if (end == std::string::npos) end = all.size();
      if (end > start) archs.push_back("sm_" + all.substr(start, end - start));
      start = end + 1;
    }
    return archs;
  }, "CUDA architectures this build compiled, e.g. ['sm_100f'].");

  m.def("kernels", [] {
    std::vector<std::tuple<std::string, std::string, int>> out;
    for (std::size_t i = 0; i < nvfp4_gemm::kKernelTableSize; ++i) {
      const KernelEntry* e = nvfp4_gemm::kKernelTable[i];
      out.emplace_back(e->config_name, out_dtype_name(e->out_dtype), e->sm_major);
    }
    return out;
  }, "Every registry entry as (config name, out dtype, compute capability major).");

  m.def("lookup", [](const std::string& config_name, const std::string& out_dtype) {
    const KernelEntry* entry = nvfp4_gemm::find_kernel(config_name, parse_out_dtype(out_dtype));
    if (entry == nullptr) {
      throw py::key_error("this build carries no kernel " + config_name + " for " + out_dtype);
    }
    return Kernel(entry);
  }, py::arg("config_name"), py::arg("out_dtype"));

  py::class_<HostPlanProbe>(m, "HostPlanProbe",
                            "The plan table and prepared-launch cache of Kernel.run over a stand-in kernel "
                            "that touches no device: for host-only tests.")
      .def(py::init<>())
      .def("run", &HostPlanProbe::run, py::arg("a"), py::arg("b"), py::arg("a_scale"), py::arg("b_scale"),
           py::arg("out"), py::arg("alpha"), py::arg("m"), py::arg("n"), py::arg("k"), py::arg("l"),
           py::arg("split_k"), py::arg("workspace"), py::arg("workspace_capacity"), py::arg("stream"),
           py::arg("launch") = true)
      .def("counters", &HostPlanProbe::counters, py::arg("m"), py::arg("n"), py::arg("k"), py::arg("l"),
           py::arg("split_k"), py::arg("stream"))
      .def_property_readonly("plan_count", &HostPlanProbe::plan_count)
      .def_property_readonly_static("params_capacity", [](py::object) {
        return nvfp4_gemm::AddressKeyedLaunch<HostProbePlan>::kParamsCapacity;
      });

#ifdef NVFP4_GEMM_TORCH_OP
  m.attr("HAS_TORCH_OP") = true;
  m.def("op_plan_count", &nvfp4_gemm::op_plan_count,
        "Signatures the C++ op serves without Python (each planned once by the Python path).");
  m.def("take_op_error", &take_op_error,
        "The exception the C++ op's Python path raised last on this thread (then cleared), or None.");
#else
  m.attr("HAS_TORCH_OP") = false;
#endif

  m.attr("QUANTIZE_AMAX_SCRATCH_BYTES") = quantize::kAmaxScratchBytes;
  // the scratch's layout, for the test that reads its tags: slot i's uint64 index, last_tag's byte offset
  m.attr("QUANTIZE_AMAX_SLOTS_PER_LINE") = quantize::kTaggedSlotsPerLine;
  m.attr("QUANTIZE_AMAX_LINE_STRIDE") = quantize::kTaggedLineStride;
  m.attr("QUANTIZE_AMAX_LAST_TAG_OFFSET") = static_cast<int>(offsetof(quantize::AmaxScratch, last_tag));
  m.def("set_quantize_sms", [](int sms) { quantize_sms_limit.store(sms, std::memory_order_relaxed); },
        py::arg("sms"), "The SMs the quantize kernels size their grids for (0: all; checked by the caller).");
  m.def("quantize_sms_limit", [] { return quantize_sms_limit.load(std::memory_order_relaxed); },
        "What set_quantize_sms last set (0: all SMs).");

  m.def("quantize", [](std::uintptr_t x, int dtype, int format, int rows, int k, std::uintptr_t global_scale,
                       std::uintptr_t partner_global_scale, std::uintptr_t data, std::uintptr_t scale_blocked,
                       std::uintptr_t global_scale_out, std::uintptr_t alpha_out, std::uintptr_t amax_scratch,
                       int device, std::uintptr_t stream) {
    const quantize::QuantizeProblem p = make_quantize_problem(x, dtype, format, rows, k, global_scale,
                                                              partner_global_scale, data, scale_blocked,
                                                              global_scale_out, alpha_out, amax_scratch);
    nvfp4_gemm::launch_quantize(p, static_cast<nvfp4_gemm::OperandFormat>(format),
                                static_cast<quantize::InputDtype>(dtype), device, as_ptr<CUstream_st>(stream));
  }, py::arg("x"), py::arg("dtype"), py::arg("format"), py::arg("rows"), py::arg("k"), py::arg("global_scale"),
     py::arg("partner_global_scale"), py::arg("data"), py::arg("scale_blocked"), py::arg("global_scale_out"),
     py::arg("alpha_out"), py::arg("amax_scratch"), py::arg("device"), py::arg("stream"),
     "Quantize x on `stream` of `device` (device pointers; format: the position in dtypes.OPERAND_FORMATS; "
     "global_scale 0: dynamic (NVFP4) or none (MX), partner 0: 1; amax_scratch: QUANTIZE_AMAX_SCRATCH_BYTES "
     "zero-filled bytes when NVFP4's is dynamic, kept for later calls on the same stream).");

  m.def("quantize_on_host", [](std::uintptr_t x, int dtype, int format, int rows, int k, std::uintptr_t global_scale,
                               std::uintptr_t partner_global_scale, std::uintptr_t data, std::uintptr_t scale_blocked,
                               std::uintptr_t global_scale_out, std::uintptr_t alpha_out) {
    // the host pass needs no scratch: a non-null placeholder satisfies the dynamic-scale guard
    const quantize::QuantizeProblem p = make_quantize_problem(x, dtype, format, rows, k, global_scale,
                                                              partner_global_scale, data, scale_blocked,
                                                              global_scale_out, alpha_out, 1);
    py::gil_scoped_release release;
    quantize::quantize_on_host(p, static_cast<nvfp4_gemm::OperandFormat>(format),
                               static_cast<quantize::InputDtype>(dtype));
  }, py::arg("x"), py::arg("dtype"), py::arg("format"), py::arg("rows"), py::arg("k"), py::arg("global_scale"),
     py::arg("partner_global_scale"), py::arg("data"), py::arg("scale_blocked"), py::arg("global_scale_out"),
     py::arg("alpha_out"),
     "The quantize kernels' per-block arithmetic on host pointers (a test hook).");

  py::class_<Kernel>(m, "Kernel")
      .def_property_readonly("config_name", &Kernel::config_name)
      .def_property_readonly("entry_address", &Kernel::entry_address)
      .def_property_readonly("out_dtype", &Kernel::out_dtype)
      .def_property_readonly("sm_major", &Kernel::sm_major)
      .def_property_readonly("pipeline_stages", &Kernel::pipeline_stages,
                             "Shared-memory operand pipeline depth in K tiles (0: not reported).")
      .def_property_readonly("column_alpha", &Kernel::column_alpha,
                             "Whether the kernel takes alpha as n values (one per output column) only.")
      .def("can_implement", &Kernel::can_implement, py::arg("m"), py::arg("n"), py::arg("k"),
           py::arg("l"), "None if CUTLASS accepts the problem, else why not (host only).")
      .def("workspace_bytes", &Kernel::workspace_bytes, py::arg("m"), py::arg("n"), py::arg("k"),
           py::arg("l"), py::arg("split_k"), py::arg("device"))
      .def("counters_needed", &Kernel::counters_needed, py::arg("m"), py::arg("n"), py::arg("k"), py::arg("l"),
           py::arg("split_k"))
      .def("plan", &Kernel::plan, py::arg("m"), py::arg("n"), py::arg("k"), py::arg("l"), py::arg("split_k"),
           py::arg("device"),
           "(rejection or None, workspace bytes, split-K counters) of a plan: can_implement, workspace_bytes and "
           "counters_needed in one call.")
      .def("dynamic_smem", &Kernel::dynamic_smem, py::arg("device"),
           "(dynamic shared memory bytes the kernel launches with, its maxDynamicSharedMemorySize attribute on "
           "`device`).")
      .def("run", &Kernel::run, py::arg("a"), py::arg("b"), py::arg("a_scale"), py::arg("b_scale"),
           py::arg("out"), py::arg("alpha"), py::arg("m"), py::arg("n"), py::arg("k"), py::arg("l"),
           py::arg("split_k"), py::arg("workspace"), py::arg("workspace_capacity"), py::arg("counters"),
           py::arg("counter_capacity"), py::arg("device"), py::arg("stream"), py::arg("alpha_per_column") = false,
           "Launch on `stream` of `device`; pointers are device addresses, alpha 0 means 1; with "
           "alpha_per_column, alpha holds n floats and column n is scaled by alpha[n] (sm90 family; the sm100 "
           "column_alpha kernels, which take nothing else).")
      .def("prepare_only", &Kernel::prepare_only, py::arg("a"), py::arg("b"), py::arg("a_scale"),
           py::arg("b_scale"), py::arg("out"), py::arg("alpha"), py::arg("m"), py::arg("n"), py::arg("k"),
           py::arg("l"), py::arg("split_k"), py::arg("workspace"), py::arg("workspace_capacity"),
           py::arg("counters"), py::arg("counter_capacity"), py::arg("device"), py::arg("stream"),
           "Everything `run` does except the launch: the plan (made on first use), kernel parameters for "
           "addresses not seen before (TMA descriptors), the workspace initialisation on `stream`. The "
           "kernel's shared-memory attribute is not set: it needs a GPU the kernel runs on, and this hook "
           "measures the host cost on any GPU. Prepared (sm100) kernels only.")
      .def("plan_counters", &Kernel::plan_counters, py::arg("m"), py::arg("n"), py::arg("k"), py::arg("l"),
           py::arg("split_k"), py::arg("device"), py::arg("stream"),
           "What the plan of these sizes, split, device and stream has done (calls, params_builds, "
           "workspace_inits, launches), or None before its first call.")
      .def("scale_offsets", &Kernel::scale_offsets, py::arg("operand"), py::arg("rows"), py::arg("k"),
           py::arg("l"), py::arg("offsets"),
           "Write the scale layout's offset of every (l, row, k_block) into int64 host memory.")
      .def("host_reference", &Kernel::host_reference, py::arg("a"), py::arg("b"), py::arg("a_scale"),
           py::arg("b_scale"), py::arg("out"), py::arg("m"), py::arg("n"), py::arg("k"), py::arg("l"),
           py::arg("alpha"), py::arg("alpha_column") = 0,
           "CUTLASS host GEMM on host pointers with the launcher's strides; float64 out. column_alpha kernels "
           "take alpha_column (a host pointer to n float32 values, read through the launcher's epilogue "
           "arguments) instead of alpha.");
}
