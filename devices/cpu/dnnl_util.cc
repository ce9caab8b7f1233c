#include "devices/cpu/dnnl_util.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace glint::cpu {

absl::Status DnnlErrorToStatus(const dnnl::error& e, absl::string_view node) {
  const std::string msg = absl::StrCat(node, ": oneDNN: ", e.what());
  switch (e.status) {
    case dnnl_unimplemented:
      return absl::UnimplementedError(msg);
    case dnnl_invalid_arguments:
      return absl::InvalidArgumentError(msg);
    case dnnl_out_of_memory:
      return absl::ResourceExhaustedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

dnnl::memory::dims ToDnnlDims(const std::vector<int64_t>& dims) {
  return dnnl::memory::dims(dims.begin(), dims.end());
}

dnnl::memory::dims RowMajorStrides(const dnnl::memory::dims& dims) {
  dnnl::memory::dims strides(dims.size());
  dnnl::memory::dim s = 1;
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    strides[i] = s;
    s *= dims[i] > 0 ? dims[i] : 1;
  }
  return strides;
}

dnnl::memory::desc PlainF32(const dnnl::memory::dims& dims) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32,
                            RowMajorStrides(dims));
}

dnnl::memory::desc ChannelsLastF32(const dnnl::memory::dims& dims) {
  dnnl::memory::dims stored = {dims[0]};
  stored.insert(stored.end(), dims.begin() + 2, dims.end());
  stored.push_back(dims[1]);
  const dnnl::memory::dims stored_strides = RowMajorStrides(stored);
  dnnl::memory::dims strides(dims.size());
  strides[0] = stored_strides[0];
  strides[1] = stored_strides.back();
  for (size_t i = 2; i < dims.size(); ++i) strides[i] = stored_strides[i - 1];
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

dnnl::primitive_attr UserScratchpadAttr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

absl::StatusOr<Activation> ParseActivation(const Node& node) {
  const std::string name = node.GetString("activation", "");
  Activation act;
  if (name.empty()) return act;
  if (name == "Relu") {
    act.alg = dnnl::algorithm::eltwise_relu;
  } else if (name == "LeakyRelu") {
    act.alg = dnnl::algorithm::eltwise_relu;
    act.alpha = node.GetFloat("activation_alpha", 0.01f);
  } else if (name == "Sigmoid") {
    act.alg = dnnl::algorithm::eltwise_logistic;
  } else if (name == "Tanh") {
    act.alg = dnnl::algorithm::eltwise_tanh;
  } else if (name == "Gelu") {
    act.alg = dnnl::algorithm::eltwise_gelu_erf;
  } else if (name == "GeluTanh") {
    act.alg = dnnl::algorithm::eltwise_gelu_tanh;
  } else if (name == "Swish") {
    // SiLU, x * Sigmoid(x): PyTorch exports it as that pair of nodes.
    act.alg = dnnl::algorithm::eltwise_swish;
    act.alpha = 1.0f;
  } else if (name == "HardSwish") {
    act.alg = dnnl::algorithm::eltwise_hardswish;
  } else if (name == "Clip") {
    act.alg = dnnl::algorithm::eltwise_clip;
    act.alpha = node.GetFloat("activation_alpha", 0.0f);
    act.beta = node.GetFloat("activation_beta", 6.0f);
  } else {
    return absl::UnimplementedError(absl::StrCat(
        node.Describe(), ": fused activation '", name, "' is not supported"));
  }
  return act;
}

void AppendActivation(const Activation& act, dnnl::post_ops& ops) {
  if (act.present()) ops.append_eltwise(1.0f, act.alg, act.alpha, act.beta);
}

float ApplyActivation(const Activation& act, float v) {
  switch (act.alg) {
    case dnnl::algorithm::eltwise_relu:
      return v > 0 ? v : v * act.alpha;
    case dnnl::algorithm::eltwise_logistic:
      return 1.0f / (1.0f + std::exp(-v));
    case dnnl::algorithm::eltwise_tanh:
      return std::tanh(v);
    case dnnl::algorithm::eltwise_gelu_erf:
      return 0.5f * v * (1.0f + std::erf(v / std::sqrt(2.0f)));
    case dnnl::algorithm::eltwise_gelu_tanh:
      return 0.5f * v *
             (1.0f + std::tanh(0.7978845608f * (v + 0.044715f * v * v * v)));
    case dnnl::algorithm::eltwise_swish:
      return v / (1.0f + std::exp(-act.alpha * v));
    case dnnl::algorithm::eltwise_hardswish:
      return v * std::min(std::max(v + 3.0f, 0.0f), 6.0f) / 6.0f;
    case dnnl::algorithm::eltwise_clip:
      return std::min(std::max(v, act.alpha), act.beta);
    default:
      return v;
  }
}

dnnl::memory::desc WithDataType(const dnnl::memory::desc& md,
                                dnnl::memory::data_type type) {
  dnnl_memory_desc_t c = md.data;
  c.data_type = dnnl::memory::convert_to_c(type);
  return dnnl::memory::desc(c);
}

dnnl::memory::data_type ComputeDataType(Precision precision) {
  return precision == Precision::kBFloat16 ? dnnl::memory::data_type::bf16
                                           : dnnl::memory::data_type::f32;
}

void* ThreadBuffer(ThreadBufferSlot slot, size_t bytes) {
  struct Buffer {
    std::unique_ptr<void, decltype(&std::free)> data{nullptr, &std::free};
    size_t bytes = 0;
  };
  thread_local Buffer buffers[static_cast<int>(ThreadBufferSlot::kCount)];
  Buffer& b = buffers[static_cast<int>(slot)];
  if (b.bytes < bytes) {
    b.data.reset();
    b.bytes = 0;
    b.data.reset(AlignedAlloc(bytes));
    if (b.data == nullptr) throw std::bad_alloc();
    b.bytes = bytes;
  }
  return b.data.get();
}

void ExecuteOnStream(const dnnl::stream& stream, const dnnl::primitive& prim,
                     const dnnl::memory::desc& scratchpad_md,
                     std::unordered_map<int, dnnl::memory> args) {
  const size_t bytes = scratchpad_md.get_size();
  if (bytes > 0) {
    args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(
        scratchpad_md, stream.get_engine(),
        ThreadBuffer(ThreadBufferSlot::kScratchpad, bytes));
  }
  prim.execute(stream, args);
}

void ExecuteWithScratchpad(const dnnl::engine& engine,
                           const dnnl::primitive& prim,
                           const dnnl::memory::desc& scratchpad_md,
                           std::unordered_map<int, dnnl::memory> args) {
  dnnl::stream stream(engine);
  ExecuteOnStream(stream, prim, scratchpad_md, std::move(args));
  stream.wait();
}

dnnl::memory ReorderToOwned(const dnnl::engine& engine,
                            const dnnl::memory::desc& src_md, const void* src,
                            const dnnl::memory::desc& dst_md) {
  dnnl::memory from(src_md, engine, const_cast<void*>(src));
  dnnl::memory to(dst_md, engine);
  dnnl::stream stream(engine);
  dnnl::reorder(from, to).execute(stream, from, to);
  stream.wait();
  return to;
}

std::vector<int64_t> ShapeKey(std::initializer_list<const Shape*> shapes) {
  std::vector<int64_t> key;
  for (const Shape* s : shapes) {
    if (s == nullptr) {
      key.push_back(-1);
      continue;
    }
    key.push_back(s->rank());
    key.insert(key.end(), s->dims().begin(), s->dims().end());
  }
  return key;
}

}  // namespace glint::cpu
