// The CUDA kernels of `torch.ops.nvfp4.gemm`, `_gemm_into` and `_gpumode` (the GPU MODE tuple), in C++ through
// PyTorch's stable ABI (one binary for every torch >= TORCH_TARGET_VERSION).
//
// The rules stay in Python (nvfp4_gemm/_checks.py, the one home of every check and message): the
// first call of each signature (dtypes, shapes, strides, devices, out dtype) runs the whole Python
// path - validation, plan, launch - and hands the plan back; this file remembers it and serves later
// calls of that signature without Python: key lookup, per-call address checks, allocation, launch.
// Anything a remembered signature cannot vouch for (a misaligned or overlapping address, an empty
// problem) takes the Python path again, which raises the rule's error or answers.
// The oldest torch whose stable ABI this file needs (TORCH_BOX registration, new_zeros with kwargs).
#define TORCH_TARGET_VERSION (((0ULL + 2) << 56) | ((0ULL + 10) << 48))

#include <dlfcn.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "native_launch.h"

using torch::stable::Tensor;

namespace nvfp4_gemm {
namespace {

void check_aoti(AOTITorchError err, const char* what) {
  if (err != AOTI_TORCH_SUCCESS) throw std::runtime_error(std::string("nvfp4_gemm: torch shim call failed: ") + what);
}

int32_t dtype_code(const Tensor& t) {
  int32_t code = 0;
  check_aoti(aoti_torch_get_dtype(t.get(), &code), "get_dtype");
  return code;
}

int32_t dtype_code(torch::headeronly::ScalarType dtype) {
  return torch::stable::detail::to<int32_t>(torch::stable::detail::from(dtype));
}

// A new reference to `t` for Python to take over (torch._C._aoti.alloc_tensors_by_stealing_from_void_ptrs).
std::uintptr_t new_handle(const Tensor& t) {
  AtenTensorHandle handle = nullptr;
  check_aoti(aoti_torch_new_tensor_handle(t.get(), &handle), "new_tensor_handle");
  return reinterpret_cast<std::uintptr_t>(handle);
}

// torch's current CUDA stream of a device. The shim function lives in libtorch_cuda, which a CPU
// build of torch lacks; it is looked up once, from the copy torch has already loaded.
cudaStream_t current_stream(int device) {
  using GetStream = AOTITorchError (*)(int32_t, void**);
  static GetStream get_stream = [] {
    void* lib = dlopen("libtorch_cuda.so", RTLD_LAZY | RTLD_NOLOAD);
    void* symbol = lib == nullptr ? nullptr : dlsym(lib, "aoti_torch_get_current_cuda_stream");
    return reinterpret_cast<GetStream>(symbol);
  }();
  if (get_stream == nullptr) {
    throw std::runtime_error("nvfp4_gemm: this torch has no CUDA support (libtorch_cuda is not loaded)");
  }
  void* stream = nullptr;
  check_aoti(get_stream(device, &stream), "get_current_cuda_stream");
  return static_cast<cudaStream_t>(stream);
}

struct KeyHash {
  std::size_t operator()(const std::vector<int64_t>& key) const {
    std::size_t h = 1469598103934665603ull;
    for (int64_t x : key) h = (h ^ static_cast<std::size_t>(x)) * 1099511628211ull;
    return h;
  }
};

// Signatures seen and vouched for by the Python path. Bounded like the Python signature cache.
class PlanMemo {
 public:
  static constexpr std::size_t kCapacity = 4096;

  std::optional<OpPlan> find(const std::vector<int64_t>& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = plans_.find(key);
    if (found == plans_.end()) return std::nullopt;
    return found->second;
  }

  void remember(std::vector<int64_t> key, OpPlan plan) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (plans_.size() >= kCapacity) plans_.clear();
    plans_[std::move(key)] = std::move(plan);
  }

  std::size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return plans_.size();
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::vector<int64_t>, OpPlan, KeyHash> plans_;
};

PlanMemo& memo() {
  static PlanMemo* plans = new PlanMemo();  // never destroyed: no teardown order to get wrong at exit
  return *plans;
}

// Scratch for split-K partials and stream-K counters: one buffer per (device, stream), grown when a
// plan needs more, never freed, zero-filled when (re)allocated (kernels leave the counters zero).
class DeviceBuffers {
 public:
  void* get(int device, cudaStream_t stream, std::size_t bytes, const Tensor& like) {
    const std::pair<int, cudaStream_t> key{device, stream};
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = buffers_.find(key);
    if (found == buffers_.end() || found->second.second < bytes) {
      const int64_t size = static_cast<int64_t>(bytes);
      Tensor buffer = torch::stable::new_zeros(like, torch::headeronly::IntHeaderOnlyArrayRef(&size, 1),
                                               torch::headeronly::ScalarType::Byte);
      void* data = buffer.data_ptr();
      buffers_[key] = {buffer, bytes};
      return data;
    }
    return found->second.first.data_ptr();
  }

 private:
  struct PairHash {
    std::size_t operator()(const std::pair<int, cudaStream_t>& k) const {
      return std::hash<int>{}(k.first) * 31u ^ std::hash<const void*>{}(k.second);
    }
  };
  std::mutex mutex_;
  std::unordered_map<std::pair<int, cudaStream_t>, std::pair<Tensor, std::size_t>, PairHash> buffers_;
};

DeviceBuffers& workspaces() {
  static DeviceBuffers* buffers = new DeviceBuffers();
  return *buffers;
}

DeviceBuffers& counter_buffers() {
  static DeviceBuffers* buffers = new DeviceBuffers();
  return *buffers;
}

// Appends what the rules read of one tensor: dtype, device, sizes, strides.
void append_signature(std::vector<int64_t>& key, const Tensor& t) {
  int32_t device_type = 0;
  check_aoti(aoti_torch_get_device_type(t.get(), &device_type), "get_device_type");
  key.push_back(dtype_code(t));
  key.push_back(device_type);
  key.push_back(t.get_device_index());
  const int64_t dim = t.dim();
  key.push_back(dim);
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  for (int64_t i = 0; i < dim; ++i) key.push_back(sizes[i]);
  for (int64_t i = 0; i < dim; ++i) key.push_back(strides[i]);
}

std::uintptr_t address(const Tensor& t) { return reinterpret_cast<std::uintptr_t>(t.data_ptr()); }

std::size_t nbytes(const Tensor& t) { return static_cast<std::size_t>(t.numel()) * t.element_size(); }

// What a remembered signature cannot vouch for: the addresses of this call.
bool addresses_fit(const Tensor* tensors[], int count, const Tensor* out) {
  for (int i = 0; i < count; ++i) {
    if (address(*tensors[i]) % 16) return false;
  }
  if (out == nullptr) return true;
  if (address(*out) % 16) return false;
  const std::uintptr_t begin = address(*out), end = begin + nbytes(*out);
  for (int i = 0; i < count; ++i) {
    const std::uintptr_t b = address(*tensors[i]), e = b + nbytes(*tensors[i]);
    if (e > b && end > begin && b < end && begin < e) return false;
  }
  return true;
}

// Which op a memo key belongs to (its first element): one memo serves both.
enum OpTag : int64_t { kGemmOp = 0, kGpumodeOp = 1 };

// The Python path of one call (binding.cpp -> `module`._op_first_call): validates, plans and runs it,
// or raises; the plan it made serves `key` from then on. Returns the output handle it answered (or null).
AtenTensorHandle python_call(const char* module, const std::uintptr_t* handles, std::size_t count,
                             const std::vector<int64_t>& key) {
  FirstCallAnswer answer = op_first_call(module, handles, count);
  if (!answer.error.empty()) throw std::runtime_error(answer.error);
  if (answer.planned) memo().remember(key, std::move(answer.plan));
  return reinterpret_cast<AtenTensorHandle>(answer.out_handle);
}

Tensor gemm_python_call(const Tensor& a, const Tensor& b, const std::optional<Tensor>& a_scale, const Tensor& b_scale,
                        const std::optional<Tensor>& alpha, int32_t out_dtype, const std::optional<Tensor>& out,
                        const std::vector<int64_t>& key) {
  // A zero-element CPU tensor carries out_dtype to Python as a torch.dtype, whatever it is.
  AtenTensorHandle witness = nullptr;
  const int64_t zero = 0, one = 1;
  check_aoti(aoti_torch_empty_strided(1, &zero, &one, out_dtype, aoti_torch_device_type_cpu(), 0, &witness),
             "empty_strided");
  const std::uintptr_t handles[7] = {new_handle(a), new_handle(b), a_scale ? new_handle(*a_scale) : 0, new_handle(b_scale),
                                     alpha ? new_handle(*alpha) : 0, out ? new_handle(*out) : 0,
                                     reinterpret_cast<std::uintptr_t>(witness)};
  return Tensor(python_call("nvfp4_gemm.ops", handles, 7, key));
}

// Launches a remembered plan on the current stream of `like`'s device; `problem` holds the addresses.
void launch_plan(const OpPlan& plan, GemmProblem problem, const Tensor& like) {
  const int device = like.get_device_index();
  const cudaStream_t stream = current_stream(device);
  void* workspace = plan.workspace_bytes ? workspaces().get(device, stream, plan.workspace_bytes, like) : nullptr;
  void* counters = plan.counters
                       ? counter_buffers().get(device, stream, plan.counters * sizeof(unsigned int), like)
                       : nullptr;
  problem.m = plan.m;
  problem.n = plan.n;
  problem.k = plan.k;
  problem.l = plan.l;
  launch_entry(plan.entry, problem, plan.split_k, workspace, plan.workspace_bytes,
               static_cast<unsigned int*>(counters), plan.counters, device, stream);
}

Tensor gemm_impl(const Tensor& a, const Tensor& b, const std::optional<Tensor>& a_scale, const Tensor& b_scale,
                 const std::optional<Tensor>& alpha, int32_t out_dtype, const std::optional<Tensor>& out) {
  thread_local std::vector<int64_t> key;
  key.clear();
  key.push_back(kGemmOp);
  key.push_back(out_dtype);
  key.push_back(a_scale.has_value());  // None: 16-bit a used as given (weight-only)
  key.push_back(alpha.has_value());
  key.push_back(out.has_value());
  for (const Tensor* t : {&a, &b, &b_scale}) append_signature(key, *t);
  if (a_scale) append_signature(key, *a_scale);
  if (alpha) append_signature(key, *alpha);
  if (out) append_signature(key, *out);

  const Tensor* inputs[5] = {&a, &b, &b_scale, nullptr, nullptr};
  int input_count = 3;
  if (a_scale) inputs[input_count++] = &*a_scale;
  if (alpha) inputs[input_count++] = &*alpha;
  std::optional<OpPlan> plan = memo().find(key);
  if (!plan || !addresses_fit(inputs, input_count, out ? &*out : nullptr)) {
    return gemm_python_call(a, b, a_scale, b_scale, alpha, out_dtype, out, key);
  }

  Tensor result = out ? *out : [&] {
    AtenTensorHandle handle = nullptr;
    std::vector<int64_t> strides(plan->out_sizes.size(), 1);
    for (int i = static_cast<int>(strides.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * plan->out_sizes[i + 1];
    check_aoti(aoti_torch_empty_strided(static_cast<int64_t>(plan->out_sizes.size()), plan->out_sizes.data(),
                                        strides.data(), out_dtype, aoti_torch_device_type_cuda(),
                                        a.get_device_index(), &handle),
               "empty_strided");
    return Tensor(handle);
  }();
  if (address(result) % 16) return gemm_python_call(a, b, a_scale, b_scale, alpha, out_dtype, out, key);

  GemmProblem problem;
  problem.a = a.data_ptr();
  problem.b = b.data_ptr();
  problem.a_scale_blocked = a_scale ? a_scale->data_ptr() : nullptr;
  problem.b_scale_blocked = b_scale.data_ptr();
  problem.out = result.data_ptr();
  problem.alpha = alpha ? static_cast<const float*>(alpha->data_ptr()) : nullptr;
  problem.alpha_per_column = alpha && alpha->numel() > 1;  // the signature's rules allow 1 or N elements
  launch_plan(*plan, problem, a);
  return result;
}

Tensor gemm_cuda(Tensor a, Tensor b, std::optional<Tensor> a_scale, Tensor b_scale, std::optional<Tensor> alpha,
                 torch::headeronly::ScalarType out_dtype) {
  return gemm_impl(a, b, a_scale, b_scale, alpha, dtype_code(out_dtype), std::nullopt);
}

void gemm_into_cuda(Tensor a, Tensor b, std::optional<Tensor> a_scale, Tensor b_scale, Tensor out, std::optional<Tensor> alpha,
                    std::optional<torch::headeronly::ScalarType> out_dtype) {
  gemm_impl(a, b, a_scale, b_scale, alpha, out_dtype ? dtype_code(*out_dtype) : dtype_code(out), out);
}

// The GPU MODE tuple's members (nvfp4_gemm.gpumode): L-last permuted views of L-first contiguous
// buffers. The signature (strides included) stands for the layout the Python path checked; a permute
// keeps the data pointer, so the views' addresses are the L-first operands' and the plan launches on them.
void gpumode_cuda(Tensor a, Tensor b, Tensor sfa_permuted, Tensor sfb_permuted, Tensor c) {
  thread_local std::vector<int64_t> key;
  key.clear();
  key.push_back(kGpumodeOp);
  for (const Tensor* t : {&a, &b, &sfa_permuted, &sfb_permuted, &c}) append_signature(key, *t);

  const Tensor* inputs[4] = {&a, &b, &sfa_permuted, &sfb_permuted};
  std::optional<OpPlan> plan = memo().find(key);
  if (!plan || !addresses_fit(inputs, 4, &c)) {
    const std::uintptr_t handles[5] = {new_handle(a), new_handle(b), new_handle(sfa_permuted),
                                       new_handle(sfb_permuted), new_handle(c)};
    python_call("nvfp4_gemm.tools.gpumode", handles, 5, key);
    return;
  }
  GemmProblem problem;
  problem.a = a.data_ptr();
  problem.b = b.data_ptr();
  problem.a_scale_blocked = sfa_permuted.data_ptr();
  problem.b_scale_blocked = sfb_permuted.data_ptr();
  problem.out = c.data_ptr();
  launch_plan(*plan, problem, a);
}

}  // namespace

std::size_t op_plan_count() { return memo().size(); }

}  // namespace nvfp4_gemm

STABLE_TORCH_LIBRARY_IMPL(nvfp4, CUDA, m) {
  m.impl("gemm", TORCH_BOX(&nvfp4_gemm::gemm_cuda));
  m.impl("_gemm_into", TORCH_BOX(&nvfp4_gemm::gemm_into_cuda));
  m.impl("_gpumode", TORCH_BOX(&nvfp4_gemm::gpumode_cuda));
}
