// The CUDA kernels of `torch.ops.nvfp4.gemm`, `_gemm_into`, `_gpumode` (the GPU MODE tuple) and `quantize`, in
// C++ through PyTorch's stable ABI (one binary for every torch >= TORCH_TARGET_VERSION).
//
// The rules stay in Python (nvfp4_gemm/_checks.py, the one home of every check and message): the
// first call of each signature (dtypes, shapes, strides, devices, out dtype) runs the whole Python
// path - validation, plan, launch - and hands the plan back; this file remembers it and serves later
// calls of that signature without Python: key lookup, per-call address checks, allocation, launch.
// Anything a remembered signature cannot vouch for (a misaligned or overlapping address, an empty
// problem) takes the Python path again, which raises the rule's error or answers. The rules that read
// what the stable ABI cannot (requires_grad) are the Python API's, as for any non-differentiable op.
// The oldest torch whose stable ABI this file needs (TORCH_BOX registration, new_zeros with kwargs).
#define TORCH_TARGET_VERSION (((0ULL + 2) << 56) | ((0ULL + 10) << 48))

#include <dlfcn.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>

#include <array>
#include <memory>
#include <cstdint>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
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

// The sizes of an output a plan allocates, and its contiguous strides (worked out once, not per call).
struct OutputShape {
  std::vector<int64_t> sizes, strides;

  OutputShape() = default;
  explicit OutputShape(std::vector<int64_t> sizes_) : sizes(std::move(sizes_)), strides(sizes.size(), 1) {
    for (int i = static_cast<int>(strides.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * sizes[i + 1];
  }
};

// The plan the gemm ops' Python path made for one signature: what a later call of it launches.
struct OpPlan {
  const KernelEntry* entry = nullptr;
  int m = 0, n = 0, k = 0, l = 0, split_k = 1;
  std::size_t workspace_bytes = 0;
  std::size_t counters = 0;
  OutputShape out;
};

// The plan the quantize op's Python path made for one signature: the launch's sizes and codes, and
// the four outputs (their shapes and dtypes follow from the signature).
struct QuantizePlan {
  int format = 0, dtype = 0, rows = 0, k = 0;
  bool amax_scratch = false;  // NVFP4's dynamic global scale: its scratch (quantize::AmaxScratch)
  std::array<OutputShape, 4> outputs;
  std::array<int32_t, 4> out_dtypes{};
};

// Signatures seen and vouched for by the Python path. Bounded like the Python signature cache. A call
// holds its plan by a reference count (no copy per call; a concurrent clear cannot free it under it).
template <class Plan>
class PlanMemo {
 public:
  static constexpr std::size_t kCapacity = 4096;

  std::shared_ptr<const Plan> find(const std::vector<int64_t>& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = plans_.find(key);
    if (found == plans_.end()) return nullptr;
    return found->second;
  }

  void remember(std::vector<int64_t> key, Plan plan) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (plans_.size() >= kCapacity) plans_.clear();
    plans_[std::move(key)] = std::make_shared<const Plan>(std::move(plan));
  }

  std::size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return plans_.size();
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::vector<int64_t>, std::shared_ptr<const Plan>, KeyHash> plans_;
};

// Never destroyed: no teardown order to get wrong at exit.
PlanMemo<OpPlan>& gemm_plans() {
  static PlanMemo<OpPlan>* plans = new PlanMemo<OpPlan>();
  return *plans;
}

PlanMemo<QuantizePlan>& quantize_plans() {
  static PlanMemo<QuantizePlan>* plans = new PlanMemo<QuantizePlan>();
  return *plans;
}

// Scratch for split-K partials, stream-K counters and the quantize amax pass's partials: one buffer per
// (device, stream), grown when a plan needs more, never freed, zero-filled when (re)allocated (kernels
// leave the counters zero). Reuse on a stream is safe: each kernel waits for its predecessor there.
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

DeviceBuffers& amax_buffers() {
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

// Which op a memo key belongs to (its first element).
enum OpTag : int64_t { kGemmOp = 0, kGpumodeOp = 1, kQuantizeOp = 2 };

// The Python path of one call (binding.cpp -> `module`._op_first_call): validates, plans and runs it,
// or raises.
FirstCallAnswer python_call(const char* module, const std::uintptr_t* handles, std::size_t count,
                            const std::string_view* text = nullptr) {
  FirstCallAnswer answer = op_first_call(module, handles, count, text);
  if (!answer.error.empty()) throw std::runtime_error(answer.error);
  return answer;
}

// The gemm ops' Python path; the plan it made (ops._run_and_plan: kernel entry, split_k, workspace
// bytes, counters, m, n, k, l, out sizes) serves `key` from then on. Returns the output handle it
// answered (or null).
AtenTensorHandle gemm_python_path(const char* module, const std::uintptr_t* handles, std::size_t count,
                                  const std::vector<int64_t>& key) {
  FirstCallAnswer answer = python_call(module, handles, count);
  if (answer.planned) {
    const std::vector<int64_t>& fields = answer.plan;
    OpPlan plan;
    plan.entry = reinterpret_cast<const KernelEntry*>(static_cast<std::uintptr_t>(fields.at(0)));
    plan.split_k = static_cast<int>(fields.at(1));
    plan.workspace_bytes = static_cast<std::size_t>(fields.at(2));
    plan.counters = static_cast<std::size_t>(fields.at(3));
    plan.m = static_cast<int>(fields.at(4));
    plan.n = static_cast<int>(fields.at(5));
    plan.k = static_cast<int>(fields.at(6));
    plan.l = static_cast<int>(fields.at(7));
    plan.out = OutputShape(std::vector<int64_t>(fields.begin() + 8, fields.end()));
    gemm_plans().remember(key, std::move(plan));
  }
  return answer.out_handles.empty() ? nullptr : reinterpret_cast<AtenTensorHandle>(answer.out_handles[0]);
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
  return Tensor(gemm_python_path("nvfp4_gemm.ops", handles, 7, key));
}

// A new contiguous tensor of `shape` and `dtype` on CUDA device `device`.
Tensor empty_cuda(const OutputShape& shape, int32_t dtype, int device) {
  AtenTensorHandle handle = nullptr;
  check_aoti(aoti_torch_empty_strided(static_cast<int64_t>(shape.sizes.size()), shape.sizes.data(),
                                      shape.strides.data(), dtype, aoti_torch_device_type_cuda(), device, &handle),
             "empty_strided");
  return Tensor(handle);
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
  std::shared_ptr<const OpPlan> plan = gemm_plans().find(key);
  if (!plan || !addresses_fit(inputs, input_count, out ? &*out : nullptr)) {
    return gemm_python_call(a, b, a_scale, b_scale, alpha, out_dtype, out, key);
  }

  Tensor result = out ? *out : empty_cuda(plan->out, out_dtype, a.get_device_index());
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
  std::shared_ptr<const OpPlan> plan = gemm_plans().find(key);
  if (!plan || !addresses_fit(inputs, 4, &c)) {
    const std::uintptr_t handles[5] = {new_handle(a), new_handle(b), new_handle(sfa_permuted),
                                       new_handle(sfb_permuted), new_handle(c)};
    gemm_python_path("nvfp4_gemm.tools.gpumode", handles, 5, key);
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

using Outputs = std::tuple<Tensor, Tensor, Tensor, Tensor>;

// The quantize op's Python path (quantization._op_first_call); the plan it made (format code, x's dtype
// code, rows, k, amax scratch) and the outputs' sizes and dtypes serve `key` from then on.
Outputs quantize_python_call(const Tensor& x, const std::optional<Tensor>& global_scale,
                             const std::optional<Tensor>& partner_global_scale, std::string_view format,
                             const std::vector<int64_t>& key) {
  const std::uintptr_t handles[3] = {new_handle(x), global_scale ? new_handle(*global_scale) : 0,
                                     partner_global_scale ? new_handle(*partner_global_scale) : 0};
  FirstCallAnswer answer = python_call("nvfp4_gemm.quantization", handles, 3, &format);
  std::vector<Tensor> outputs;
  for (std::uintptr_t handle : answer.out_handles) outputs.emplace_back(reinterpret_cast<AtenTensorHandle>(handle));
  if (outputs.size() != 4) throw std::runtime_error("nvfp4_gemm: quantize's Python path answered no 4 outputs");
  if (answer.planned) {
    const std::vector<int64_t>& fields = answer.plan;
    QuantizePlan plan;
    plan.format = static_cast<int>(fields.at(0));
    plan.dtype = static_cast<int>(fields.at(1));
    plan.rows = static_cast<int>(fields.at(2));
    plan.k = static_cast<int>(fields.at(3));
    plan.amax_scratch = fields.at(4) != 0;
    for (std::size_t i = 0; i < 4; ++i) {
      const auto sizes = outputs[i].sizes();
      plan.outputs[i] = OutputShape(std::vector<int64_t>(sizes.begin(), sizes.end()));
      plan.out_dtypes[i] = dtype_code(outputs[i]);
    }
    quantize_plans().remember(key, std::move(plan));
  }
  return {outputs[0], outputs[1], outputs[2], outputs[3]};
}

Outputs quantize_cuda(const Tensor& x, const std::optional<Tensor>& global_scale,
                      const std::optional<Tensor>& partner_global_scale, std::string_view format) {
  thread_local std::vector<int64_t> key;
  key.clear();
  key.push_back(kQuantizeOp);
  key.push_back(global_scale.has_value());  // None: NVFP4's dynamic global scale (MX: none)
  key.push_back(partner_global_scale.has_value());
  key.push_back(static_cast<int64_t>(format.size()));
  for (char c : format) key.push_back(c);
  append_signature(key, x);
  if (global_scale) append_signature(key, *global_scale);
  if (partner_global_scale) append_signature(key, *partner_global_scale);

  std::shared_ptr<const QuantizePlan> plan = quantize_plans().find(key);
  // 16-byte loads of x and stores of the codes (the scalars and scale bytes need only their dtype's)
  if (!plan || address(x) % 16) return quantize_python_call(x, global_scale, partner_global_scale, format, key);
  const int device = x.get_device_index();
  Outputs outputs{empty_cuda(plan->outputs[0], plan->out_dtypes[0], device),
                  empty_cuda(plan->outputs[1], plan->out_dtypes[1], device),
                  empty_cuda(plan->outputs[2], plan->out_dtypes[2], device),
                  empty_cuda(plan->outputs[3], plan->out_dtypes[3], device)};
  auto& [data, scale, global_scale_out, alpha_out] = outputs;
  if (address(data) % 16) return quantize_python_call(x, global_scale, partner_global_scale, format, key);

  const cudaStream_t stream = current_stream(device);
  quantize::QuantizeProblem problem;
  problem.rows = plan->rows;
  problem.k = plan->k;
  problem.x = x.data_ptr();
  problem.global_scale = global_scale ? static_cast<const float*>(global_scale->data_ptr()) : nullptr;
  problem.partner_global_scale =
      partner_global_scale ? static_cast<const float*>(partner_global_scale->data_ptr()) : nullptr;
  problem.data = static_cast<std::uint8_t*>(data.data_ptr());
  problem.scale_blocked = static_cast<std::uint8_t*>(scale.data_ptr());
  problem.global_scale_out = static_cast<float*>(global_scale_out.data_ptr());
  problem.alpha_out = static_cast<float*>(alpha_out.data_ptr());
  if (plan->amax_scratch) {
    problem.amax_scratch = static_cast<quantize::AmaxScratch*>(
        amax_buffers().get(device, stream, quantize::kAmaxScratchBytes, x));
  }
  nvfp4_gemm::launch_quantize(problem, static_cast<OperandFormat>(plan->format),
                              static_cast<quantize::InputDtype>(plan->dtype), device, stream);
  return outputs;
}

// The schema's `str format`, read in place and released: TORCH_BOX's std::string argument would cost
// a heap string per call, and torch 2.13's conversion leaks it (pytorch/pytorch#190493).
class FormatArgument {
 public:
  explicit FormatArgument(StableIValue value) : handle_(torch::stable::detail::to<StringHandle>(value)) {}
  FormatArgument(const FormatArgument&) = delete;
  FormatArgument& operator=(const FormatArgument&) = delete;
  ~FormatArgument() { torch_delete_string(handle_); }

  std::string_view view() const {
    std::size_t length = 0;
    const char* data = nullptr;
    check_aoti(torch_string_length(handle_, &length), "string_length");
    check_aoti(torch_string_c_str(handle_, &data), "string_c_str");
    return {data, length};
  }

 private:
  StringHandle handle_;
};

// quantize(Tensor x, Tensor? global_scale, Tensor? partner_global_scale, str format) -> 4 tensors, boxed by
// hand for the string (TORCH_BOX's contract otherwise: take the arguments off the stack, put the outputs on).
void quantize_boxed(StableIValue* stack, uint64_t num_args, uint64_t num_outputs) {
  if (num_args != 4 || num_outputs != 4) {
    throw std::runtime_error("nvfp4_gemm: nvfp4::quantize's kernel takes 4 arguments and returns 4 tensors");
  }
  using torch::stable::detail::from;
  using torch::stable::detail::to;
  const Tensor x = to<Tensor>(stack[0]);
  const auto global_scale = to<std::optional<Tensor>>(stack[1]);
  const auto partner_global_scale = to<std::optional<Tensor>>(stack[2]);
  const FormatArgument format(stack[3]);
  const auto [data, scale, global_scale_out, alpha_out] =
      quantize_cuda(x, global_scale, partner_global_scale, format.view());
  stack[0] = from(data);
  stack[1] = from(scale);
  stack[2] = from(global_scale_out);
  stack[3] = from(alpha_out);
}

}  // namespace

std::size_t op_plan_count() { return gemm_plans().size() + quantize_plans().size(); }

}  // namespace nvfp4_gemm

STABLE_TORCH_LIBRARY_IMPL(nvfp4, CUDA, m) {
  m.impl("gemm", TORCH_BOX(&nvfp4_gemm::gemm_cuda));
  m.impl("_gemm_into", TORCH_BOX(&nvfp4_gemm::gemm_into_cuda));
  m.impl("_gpumode", TORCH_BOX(&nvfp4_gemm::gpumode_cuda));
  m.impl("quantize", &nvfp4_gemm::quantize_boxed);
}
