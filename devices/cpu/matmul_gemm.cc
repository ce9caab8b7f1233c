// MatMul and Gemm on oneDNN's matmul primitive (float32 only).
//
// MatMul follows numpy: 1-D operands are promoted (and the added dimension
// dropped from the result), batch dimensions broadcast. When B has no batch
// (the usual "activations × weights" case) A's batch is folded into M and a
// single 2-D matmul runs. Gemm maps transA/transB onto strided memory
// descriptors, alpha onto output scales, and C either onto the bias (the
// fully connected case: alpha = beta = 1, C of shape [N] or [1, N]) or onto
// a sum post-op with scale beta over an output pre-filled with broadcast C.
// Constant B is packed into oneDNN's preferred layout once per shape (the
// layout oneDNN picks may depend on it).
//
// At bf16 precision (KernelSpec::precision) the primitive takes A and B in
// bfloat16 and writes float32 (accumulating in float32): constant B is
// packed as bfloat16, A (and a non-constant B) is converted on each call
// into a per-thread buffer. oneDNN 2.6's fpmath_mode attribute would say
// the same without the conversions, but its CPU primitives ignore it (the
// result was bit-identical to float32). Where oneDNN has no bfloat16
// implementation the kernel computes in float32.
//
// On CPUs where oneDNN's float32 matmul gives a row different bits at
// different M (AVX2 without AVX-512; isa.h), the float32 products run on
// RowGemm instead (row_gemm.h), with the same fusions, so that dynamic
// batching returns each request exactly its unbatched result. Constant 2-D
// B is then packed into RowGemm's panels, in place of oneDNN's layout,
// once for every shape (SharedRowPanels).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "devices/cpu/broadcast.h"
#include "devices/cpu/dnnl_util.h"
#include "devices/cpu/isa.h"
#include "devices/cpu/kernel_util.h"
#include "devices/cpu/register.h"
#include "devices/cpu/row_gemm.h"
#include "devices/cpu/shape_builds.h"
#include "optimizer/fused_ops.h"

namespace glint::cpu {
namespace {

using dnnl::memory;

// oneDNN's limit on tensor rank.
constexpr int kMaxDnnlRank = DNNL_MAX_NDIMS;

// RowGemm's packed panels of one node's constant B, shared by every shape
// the node meets. Packing depends on K, N and B's layout, never on M (the
// rows: batch and sequence length), so a shape first met at run time costs
// a plan instead of a pass over the weights, and a node holds its weights
// packed once rather than once per shape it has met. Without it a text
// network served at more sequence lengths than a kernel caches
// (ShapeKeyedCache::kMaxEntries) repacked every weight on every run.
// Thread-safe.
class SharedRowPanels {
 public:
  // The panels packed for this layout of B, or an empty memory.
  memory Find(int64_t k, int64_t n, int64_t stride_k, int64_t stride_n) const {
    absl::MutexLock lock(&mu_);
    if (!panels_ || key_ != Key{k, n, stride_k, stride_n}) return memory();
    return panels_;
  }
  // Keeps `panels` for this layout unless another thread kept some first;
  // returns those kept.
  memory Insert(int64_t k, int64_t n, int64_t stride_k, int64_t stride_n,
                memory panels) {
    absl::MutexLock lock(&mu_);
    const Key key{k, n, stride_k, stride_n};
    if (!panels_ || key_ != key) {
      key_ = key;
      panels_ = std::move(panels);
    }
    return panels_;
  }
  // Forgets the panels (the entries using them keep their own reference).
  void Clear() {
    absl::MutexLock lock(&mu_);
    panels_ = memory();
  }

 private:
  struct Key {
    int64_t k = -1, n = -1, stride_k = 0, stride_n = 0;
    bool operator!=(const Key& o) const {
      return k != o.k || n != o.n || stride_k != o.stride_k ||
             stride_n != o.stride_n;
    }
  };
  mutable absl::Mutex mu_;
  Key key_ ABSL_GUARDED_BY(mu_);
  memory panels_ ABSL_GUARDED_BY(mu_);
};

// How to build one matmul primitive. Memory descriptors are the user
// layouts of the operands.
struct MatMulConfig {
  memory::desc src, weights, dst;
  bool has_bias = false;
  memory::desc bias;
  float alpha = 1.0f;
  float sum_beta = 0.0f;  // Adds sum_beta * (prior dst) when non-zero.
  // Adds a tensor laid out as dst (a residual connection), after the sum.
  bool has_addend = false;
  Activation act;  // Applied last (fused nodes only).
  bool pack_weights = false;
  // With pack_weights, where RowGemm finds the panels another shape of the
  // same B packed, and keeps those it packs (null: packed per entry).
  SharedRowPanels* panels = nullptr;
  // src and weights go to the primitive in bfloat16 (dst stays float32).
  bool bf16 = false;
};

struct MatMulEntry {
  dnnl::matmul prim;
  // src, weights: the primitive's; *_user: the float32 operands' layouts,
  // which differ when the entry computes in bfloat16.
  memory::desc src, weights, dst, bias, scratchpad, src_user, weights_user;
  bool has_bias = false;
  // bf16: src (and weights, unless packed) go through these reorders.
  bool bf16 = false;
  dnnl::reorder src_reorder, weights_reorder;
  int addend_post_op = -1;  // The binary post-op's index, if any.
  // Set when the weights were packed at creation; then the weights input is
  // not read at run time, unless packed_weights was released, in which case
  // the input holds the packed bytes (PackedB).
  bool packed = false;
  // Mutable for PackedB::Release, which no Compute overlaps.
  mutable memory packed_weights;

  // Set when RowGemm computes the product instead of `prim`; then
  // `weights` describes RowGemm's packed panels when `packed`.
  struct RowPlan {
    RowGemmShape shape;
    int64_t b_stride_k = 0, b_stride_n = 0;
    // Per batch dimension of dst: its size, and the strides (elements) of
    // src, weights and dst along it; 0 where an operand broadcasts.
    std::vector<int64_t> batch, a_batch, b_batch, c_batch;
    RowGemmEpilogue epilogue;  // Without the bias, which comes per call.
  };
  std::optional<RowPlan> row;
  // What computes it, for Kernel::Describe: "RowGemm", or "oneDNN " and
  // the implementation oneDNN chose (impl_info_str), " bf16" at that
  // precision.
  std::string impl;
};

// Constant B packed at build time for the one shape the node sees, which
// the compiled function may move into the device's constant block
// (Kernel::PackedConstants): then B's view holds the packed bytes and the
// kernel drops its copy. Thread-compatible; set up before any Compute.
class PackedB {
 public:
  // Remembers the entry Prepare made, if it packed B.
  void Remember(std::shared_ptr<const MatMulEntry> entry) {
    if (entry != nullptr && entry->packed) entry_ = std::move(entry);
  }
  std::vector<PackedConstant> Describe() const {
    if (entry_ == nullptr || !entry_->packed_weights) return {};
    return {{1, entry_->packed_weights.get_data_handle(),
             entry_->weights.get_size()}};
  }
  void UseInput() { in_input_ = entry_ != nullptr; }
  // B's view is packed: no other shape can be packed from it.
  bool in_input() const { return in_input_; }
  void Release() {
    if (in_input_) entry_->packed_weights = memory();
  }

 private:
  std::shared_ptr<const MatMulEntry> entry_;
  bool in_input_ = false;
};

absl::Status PackedForOneShape(const std::string& node) {
  return absl::InternalError(absl::StrCat(
      node, ": its weights are held packed for the shapes it was compiled "
            "for, and a run gave other shapes"));
}

// Whether float32 products run on RowGemm on this CPU (file comment).
bool UseRowGemm() {
  static const bool use =
      !OneDnnSgemmRoundsAlikeAtEveryBatchSize() && RowGemmAvailable();
  return use;
}

// A RowGemm entry for `config` (float32), or null when its layouts are not
// RowGemm's (a dst that is not row-major). `weights` as for
// CreateMatMulEntry.
std::shared_ptr<const MatMulEntry> CreateRowGemmEntry(
    const dnnl::engine& engine, const MatMulConfig& config,
    const void* weights) {
  const dnnl_memory_desc_t& src = config.src.data;
  const dnnl_memory_desc_t& wei = config.weights.data;
  const dnnl_memory_desc_t& dst = config.dst.data;
  const int nd = dst.ndims;
  if (src.ndims != nd || wei.ndims != nd || nd < 2 ||
      src.format_kind != dnnl_blocked || wei.format_kind != dnnl_blocked ||
      dst.format_kind != dnnl_blocked ||
      dst.format_desc.blocking.strides[nd - 1] != 1) {
    return nullptr;
  }
  const dnnl_dims_t& ss = src.format_desc.blocking.strides;
  const dnnl_dims_t& ws = wei.format_desc.blocking.strides;
  const dnnl_dims_t& ds = dst.format_desc.blocking.strides;
  MatMulEntry::RowPlan plan;
  plan.shape.m = dst.dims[nd - 2];
  plan.shape.n = dst.dims[nd - 1];
  plan.shape.k = src.dims[nd - 1];
  plan.shape.a_stride_m = ss[nd - 2];
  plan.shape.a_stride_k = ss[nd - 1];
  plan.shape.ldc = ds[nd - 2];
  plan.b_stride_k = ws[nd - 2];
  plan.b_stride_n = ws[nd - 1];
  for (int i = 0; i < nd - 2; ++i) {
    plan.batch.push_back(dst.dims[i]);
    plan.a_batch.push_back(src.dims[i] == 1 ? 0 : ss[i]);
    plan.b_batch.push_back(wei.dims[i] == 1 ? 0 : ws[i]);
    plan.c_batch.push_back(ds[i]);
  }
  RowGemmEpilogue& e = plan.epilogue;
  e.alpha = config.alpha;
  e.sum_beta = config.sum_beta;
  using Activation = RowGemmEpilogue::Activation;
  switch (config.act.alg) {
    case dnnl::algorithm::undef:
      break;
    case dnnl::algorithm::eltwise_relu:
      e.activation = Activation::kRelu;
      e.relu_alpha = config.act.alpha;
      break;
    case dnnl::algorithm::eltwise_logistic:
      e.activation = Activation::kLogistic;
      break;
    case dnnl::algorithm::eltwise_tanh:
      e.activation = Activation::kTanh;
      break;
    case dnnl::algorithm::eltwise_gelu_erf:
      e.activation = Activation::kGeluErf;
      break;
    case dnnl::algorithm::eltwise_gelu_tanh:
      e.activation = Activation::kGeluTanh;
      break;
    default:
      return nullptr;
  }
  auto entry = std::make_shared<MatMulEntry>();
  entry->src = entry->src_user = config.src;
  entry->weights = entry->weights_user = config.weights;
  entry->dst = config.dst;
  entry->bias = config.bias;
  entry->has_bias = config.has_bias;
  entry->addend_post_op = config.has_addend ? 0 : -1;
  // Only one B can be packed: a batch of them is packed per call.
  if (config.pack_weights && nd == 2) {
    const int64_t floats =
        RowGemmPackedFloats(plan.shape.k, plan.shape.n);
    entry->weights = memory::desc({floats}, memory::data_type::f32,
                                  memory::format_tag::a);
    SharedRowPanels* const shared = config.panels;
    if (shared != nullptr) {
      entry->packed_weights = shared->Find(plan.shape.k, plan.shape.n,
                                           plan.b_stride_k, plan.b_stride_n);
    }
    if (!entry->packed_weights) {
      entry->packed_weights = memory(entry->weights, engine);
      RowGemmPackB(
          static_cast<const float*>(weights), plan.shape.k, plan.shape.n,
          plan.b_stride_k, plan.b_stride_n,
          static_cast<float*>(entry->packed_weights.get_data_handle()));
      if (shared != nullptr) {
        entry->packed_weights =
            shared->Insert(plan.shape.k, plan.shape.n, plan.b_stride_k,
                           plan.b_stride_n, entry->packed_weights);
      }
    }
    entry->packed = true;
  }
  entry->row = std::move(plan);
  entry->impl = "RowGemm";
  return entry;
}

// `weights` is read only when config.pack_weights (it must then hold the
// weights in config.weights' layout). Throws dnnl::error.
std::shared_ptr<const MatMulEntry> CreateMatMulEntry(
    const dnnl::engine& engine, const MatMulConfig& config,
    const void* weights) {
  if (!config.bf16 && UseRowGemm()) {
    if (auto entry = CreateRowGemmEntry(engine, config, weights)) {
      return entry;
    }
  }
  dnnl::primitive_attr attr = UserScratchpadAttr();
  if (config.alpha != 1.0f) attr.set_output_scales(0, {config.alpha});
  int addend_post_op = -1;
  if (config.sum_beta != 0.0f || config.has_addend || config.act.present()) {
    dnnl::post_ops ops;
    if (config.sum_beta != 0.0f) ops.append_sum(config.sum_beta);
    if (config.has_addend) {
      addend_post_op = ops.len();
      ops.append_binary(dnnl::algorithm::binary_add, config.dst);
    }
    AppendActivation(config.act, ops);
    attr.set_post_ops(ops);
  }
  const memory::data_type compute =
      config.bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  // bfloat16 operands are dense row-major copies of the user's.
  const memory::desc src_md =
      config.bf16 ? memory::desc(config.src.dims(), compute,
                                 RowMajorStrides(config.src.dims()))
                  : config.src;
  const memory::desc wei_md =
      config.pack_weights
          ? memory::desc(config.weights.dims(), compute,
                         memory::format_tag::any)
      : config.bf16 ? memory::desc(config.weights.dims(), compute,
                                   RowMajorStrides(config.weights.dims()))
                    : config.weights;
  const dnnl::matmul::desc desc =
      config.has_bias
          ? dnnl::matmul::desc(src_md, wei_md, config.bias, config.dst)
          : dnnl::matmul::desc(src_md, wei_md, config.dst);
  const dnnl::matmul::primitive_desc pd(desc, attr, engine);
  auto entry = std::make_shared<MatMulEntry>();
  entry->prim = dnnl::matmul(pd);
  entry->impl = absl::StrCat("oneDNN ", pd.impl_info_str(),
                             config.bf16 ? " bf16" : "");
  entry->src = src_md;
  entry->src_user = config.src;
  entry->weights_user = config.weights;
  entry->weights = pd.weights_desc();
  if (config.bf16) {
    entry->bf16 = true;
    entry->src_reorder = dnnl::reorder(
        dnnl::reorder::primitive_desc(engine, config.src, engine, src_md));
    if (!config.pack_weights) {
      entry->weights_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(
          engine, config.weights, engine, entry->weights));
    }
  }
  entry->dst = config.dst;
  entry->bias = config.bias;
  entry->has_bias = config.has_bias;
  entry->addend_post_op = addend_post_op;
  entry->scratchpad = pd.scratchpad_desc();
  if (config.pack_weights) {
    entry->packed_weights =
        ReorderToOwned(engine, config.weights, weights, pd.weights_desc());
    entry->packed = true;
  }
  return entry;
}

// At bf16 precision, computes in bfloat16 where oneDNN can, else (no
// implementation for the geometry) in float32. Throws dnnl::error.
std::shared_ptr<const MatMulEntry> CreateMatMulEntryAt(
    Precision precision, const dnnl::engine& engine, MatMulConfig config,
    const void* weights) {
  std::shared_ptr<const MatMulEntry> entry;
  CreateAtPrecision(precision, [&](Precision at) {
    config.bf16 = at == Precision::kBFloat16;
    entry = CreateMatMulEntry(engine, config, weights);
  });
  return entry;
}

// RunMatMul for an entry with a RowPlan.
void RunRowGemm(const MatMulEntry& e, const void* src, const void* weights,
                const void* bias, void* dst, const void* addend) {
  const MatMulEntry::RowPlan& plan = *e.row;
  const RowGemmShape& s = plan.shape;
  const size_t nb = plan.batch.size();
  // B items: the weights' own batch (dims where it does not broadcast).
  std::vector<int64_t> b_items_stride(nb, 0);
  int64_t b_items = 1;
  for (size_t i = nb; i-- > 0;) {
    if (plan.b_batch[i] == 0) continue;
    b_items_stride[i] = b_items;
    b_items *= plan.batch[i];
  }
  const float* packed = nullptr;
  const int64_t per_b = RowGemmPackedFloats(s.k, s.n);
  if (e.packed) {
    packed = static_cast<const float*>(
        e.packed_weights ? e.packed_weights.get_data_handle() : weights);
  } else {
    float* buffer = static_cast<float*>(ThreadBuffer(
        ThreadBufferSlot::kWeights, b_items * per_b * sizeof(float)));
    // Item j of the weights' batch: unravelled over the dims it spans.
    for (int64_t j = 0; j < b_items; ++j) {
      int64_t offset = 0;
      for (size_t i = 0; i < nb; ++i) {
        if (plan.b_batch[i] == 0) continue;
        offset += (j / b_items_stride[i]) % plan.batch[i] * plan.b_batch[i];
      }
      RowGemmPackB(static_cast<const float*>(weights) + offset, s.k, s.n,
                   plan.b_stride_k, plan.b_stride_n, buffer + j * per_b);
    }
    packed = buffer;
  }
  int64_t count = 1;
  for (int64_t d : plan.batch) count *= d;
  std::vector<RowGemmItem> items(count);
  for (int64_t t = 0; t < count; ++t) {
    int64_t a_off = 0, b_item = 0, c_off = 0, rest = t;
    for (size_t i = nb; i-- > 0;) {
      const int64_t idx = rest % plan.batch[i];
      rest /= plan.batch[i];
      a_off += idx * plan.a_batch[i];
      b_item += idx * b_items_stride[i];
      c_off += idx * plan.c_batch[i];
    }
    items[t].a = static_cast<const float*>(src) + a_off;
    items[t].packed_b = packed + b_item * per_b;
    items[t].c = static_cast<float*>(dst) + c_off;
    if (e.addend_post_op >= 0) {
      items[t].addend = static_cast<const float*>(addend) + c_off;
    }
  }
  RowGemmEpilogue epilogue = plan.epilogue;
  if (e.has_bias) epilogue.bias = static_cast<const float*>(bias);
  RowGemm(s, items, epilogue);
}

// `addend` is read only when the entry has one. Throws dnnl::error.
void RunMatMul(const dnnl::engine& engine, const MatMulEntry& e,
               const void* src, const void* weights, const void* bias,
               void* dst, const void* addend = nullptr) {
  if (e.row) {
    RunRowGemm(e, src, weights, bias, dst, addend);
    return;
  }
  dnnl::stream stream(engine);
  std::unordered_map<int, memory> args;
  args[DNNL_ARG_SRC] = memory(e.src_user, engine, const_cast<void*>(src));
  // Packed weights are the entry's own until released; then `weights`
  // holds them, in the packed layout e.weights describes.
  args[DNNL_ARG_WEIGHTS] =
      e.packed && e.packed_weights
          ? e.packed_weights
          : memory(e.packed ? e.weights : e.weights_user, engine,
                   const_cast<void*>(weights));
  if (e.bf16) {
    memory src_bf16(e.src, engine,
                    ThreadBuffer(ThreadBufferSlot::kSource, e.src.get_size()));
    e.src_reorder.execute(stream, args[DNNL_ARG_SRC], src_bf16);
    args[DNNL_ARG_SRC] = src_bf16;
    if (!e.packed) {
      memory weights_bf16(
          e.weights, engine,
          ThreadBuffer(ThreadBufferSlot::kWeights, e.weights.get_size()));
      e.weights_reorder.execute(stream, args[DNNL_ARG_WEIGHTS], weights_bf16);
      args[DNNL_ARG_WEIGHTS] = weights_bf16;
    }
  }
  if (e.has_bias) {
    args[DNNL_ARG_BIAS] = memory(e.bias, engine, const_cast<void*>(bias));
  }
  args[DNNL_ARG_DST] = memory(e.dst, engine, dst);
  if (e.addend_post_op >= 0) {
    args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(e.addend_post_op) | DNNL_ARG_SRC_1] =
        memory(e.dst, engine, const_cast<void*>(addend));
  }
  ExecuteOnStream(stream, e.prim, e.scratchpad, std::move(args));
  stream.wait();
}

// ---------------------------------------------------------------- MatMul

struct MatMulGeometry {
  Shape out;
  int64_t k = 0;
  memory::dims src, weights, dst;  // As given to oneDNN.
  bool folded = false;             // A's batch folded into M (2-D matmul).
};

absl::StatusOr<MatMulGeometry> MatMulShapes(const Shape& a, const Shape& b,
                                            absl::string_view node) {
  if (a.rank() < 1 || b.rank() < 1) {
    return InvalidArgument(node, "MatMul operands must have rank >= 1; got ",
                           a.ToString(), " and ", b.ToString());
  }
  std::vector<int64_t> ad = a.dims();
  std::vector<int64_t> bd = b.dims();
  if (a.rank() == 1) ad.insert(ad.begin(), 1);
  if (b.rank() == 1) bd.push_back(1);
  const int64_t m = ad[ad.size() - 2];
  const int64_t k = ad.back();
  const int64_t n = bd.back();
  if (bd[bd.size() - 2] != k) {
    return InvalidArgument(node, "MatMul inner dimensions differ: ",
                           a.ToString(), " x ", b.ToString());
  }
  const Shape batch_a(std::vector<int64_t>(ad.begin(), ad.end() - 2));
  const Shape batch_b(std::vector<int64_t>(bd.begin(), bd.end() - 2));
  absl::StatusOr<Shape> batch = BroadcastShapes({batch_a, batch_b});
  if (!batch.ok()) {
    return InvalidArgument(node, "MatMul batch dimensions of ", a.ToString(),
                           " and ", b.ToString(), ": ",
                           batch.status().message());
  }
  MatMulGeometry g;
  g.k = k;
  std::vector<int64_t> out = batch->dims();
  if (a.rank() > 1) out.push_back(m);
  if (b.rank() > 1) out.push_back(n);
  g.out = Shape(out);
  const int64_t batch_count = batch->NumElements();
  if (batch_b.NumElements() == 1) {
    g.folded = true;
    g.src = {batch_count * m, k};
    g.weights = {k, n};
    g.dst = {batch_count * m, n};
    return g;
  }
  const int r = batch->rank();
  if (r + 2 > kMaxDnnlRank) {
    return Unimplemented(node, "MatMul with more than ", kMaxDnnlRank - 2,
                         " batch dimensions");
  }
  g.src.assign(r - batch_a.rank(), 1);
  g.src.insert(g.src.end(), batch_a.dims().begin(), batch_a.dims().end());
  g.src.insert(g.src.end(), {m, k});
  g.weights.assign(r - batch_b.rank(), 1);
  g.weights.insert(g.weights.end(), batch_b.dims().begin(),
                   batch_b.dims().end());
  g.weights.insert(g.weights.end(), {k, n});
  g.dst = ToDnnlDims(batch->dims());
  g.dst.insert(g.dst.end(), {m, n});
  return g;
}

// Also runs glint.FusedMatMul: MatMul + optional bias input 2 of shape [N]
// (added to every row) + optional addend input 3 of the result's shape (a
// residual connection) + optional activation, in one primitive.
class MatMulKernel final : public KernelBase {
 public:
  MatMulKernel(const KernelSpec& spec, Activation act)
      : KernelBase(spec),
        engine_(dnnl::engine::kind::cpu, 0),
        constant_b_(spec.constant(1) != nullptr),
        has_bias_(spec.has_input(2)),
        has_addend_(spec.has_input(3)),
        alpha_(spec.node->op_type == kFusedMatMulOp
                   ? spec.node->GetFloat("alpha", 1.0f)
                   : 1.0f),
        act_(act),
        precision_(spec.precision) {}

  // Creates the primitive now when the shapes are known.
  absl::Status Prepare(const KernelSpec& spec) {
    const Shape& a = spec.inputs[0].shape;
    const Shape& b = spec.inputs[1].shape;
    if (!a.IsStatic() || !b.IsStatic()) return absl::OkStatus();
    const Tensor* wb = spec.constant(1);
    if (wb != nullptr && wb->shape() != b) {
      return InvalidArgument(node(), "constant B has shape ",
                             wb->shape().ToString(), " but is declared ",
                             b.ToString());
    }
    GLINT_ASSIGN_OR_RETURN(
        std::shared_ptr<const MatMulEntry> entry,
        GetEntry(a, b, wb != nullptr ? wb->raw_data() : nullptr));
    if (entry != nullptr) impl_ = entry->impl;
    packed_b_.Remember(std::move(entry));
    return absl::OkStatus();
  }

  // The engine is known when the shapes were static at build time.
  std::string Describe(const Node& node) const override {
    return DescribeKernel(node, impl_);
  }

  std::vector<PackedConstant> PackedConstants() const override {
    return packed_b_.Describe();
  }
  void UsePackedConstant(int input) override {
    if (input == 1) packed_b_.UseInput();
  }
  void ReleasePackedConstants() override {
    // The device now holds B packed: the host's panels go (no other shape
    // can be packed once B's view holds the packed bytes).
    if (packed_b_.in_input()) panels_.Clear();
    packed_b_.Release();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* a,
                           GetInput(ctx, 0, DType::kFloat32, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* b,
                           GetInput(ctx, 1, DType::kFloat32, node()));
    const TensorView* bias = nullptr;
    if (has_bias_) {
      GLINT_ASSIGN_OR_RETURN(bias, GetInput(ctx, 2, DType::kFloat32, node()));
    }
    const TensorView* addend = nullptr;
    if (has_addend_) {
      GLINT_ASSIGN_OR_RETURN(addend,
                             GetInput(ctx, 3, DType::kFloat32, node()));
    }
    GLINT_ASSIGN_OR_RETURN(MatMulGeometry g,
                           MatMulShapes(a->shape, b->shape, node()));
    if (bias != nullptr && bias->num_elements() != g.dst.back()) {
      return InvalidArgument(node(), "bias of shape ", bias->shape.ToString(),
                             " for output ", g.out.ToString());
    }
    if (addend != nullptr && addend->shape != g.out) {
      return InvalidArgument(node(), "addend of shape ",
                             addend->shape.ToString(), " for output ",
                             g.out.ToString());
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, g.out,
                                                        DType::kFloat32,
                                                        node()));
    if (y.num_elements() == 0) return absl::OkStatus();
    if (g.k == 0) {
      // Only the bias and activation remain; rare enough for a plain loop.
      float* py = y.as<float>();
      const int64_t n = g.dst.back();
      for (int64_t i = 0; i < y.num_elements(); ++i) {
        float v = bias != nullptr ? bias->as<const float>()[i % n] : 0.0f;
        if (addend != nullptr) v += addend->as<const float>()[i];
        if (act_.present()) v = ApplyActivation(act_, v);
        py[i] = v;
      }
      return absl::OkStatus();
    }
    GLINT_ASSIGN_OR_RETURN(std::shared_ptr<const MatMulEntry> e,
                           GetEntry(a->shape, b->shape, b->data));
    return CatchDnnl(node(), [&] {
      RunMatMul(engine_, *e, a->data, b->data,
                bias != nullptr ? bias->data : nullptr, y.data,
                addend != nullptr ? addend->data : nullptr);
      return absl::OkStatus();
    });
  }

 private:

  // `b_data` is used only to pack constant weights.
  absl::StatusOr<std::shared_ptr<const MatMulEntry>> GetEntry(
      const Shape& a, const Shape& b, const void* b_data) const {
    std::vector<int64_t> key = ShapeKey({&a, &b});
    if (auto e = cache_.Find(key)) return e;
    if (packed_b_.in_input()) return PackedForOneShape(node());
    ShapeBuildTimer timing;  // A shape first met: counted at run time.
    GLINT_ASSIGN_OR_RETURN(MatMulGeometry g, MatMulShapes(a, b, node()));
    if (g.out.NumElements() == 0 || g.k == 0) {
      return std::shared_ptr<const MatMulEntry>();  // Never executed.
    }
    std::shared_ptr<const MatMulEntry> entry;
    GLINT_RETURN_IF_ERROR(CatchDnnl(node(), [&] {
      MatMulConfig config;
      config.src = PlainF32(g.src);
      config.weights = PlainF32(g.weights);
      config.dst = PlainF32(g.dst);
      if (has_bias_) {
        // [1, ..., 1, N]: broadcast over every row of every batch.
        memory::dims bias_dims(g.dst.size(), 1);
        bias_dims.back() = g.dst.back();
        config.has_bias = true;
        config.bias = PlainF32(bias_dims);
      }
      config.alpha = alpha_;
      config.has_addend = has_addend_;
      config.act = act_;
      // Packing pays off when the same weights are reused across calls.
      config.pack_weights = constant_b_ && g.folded;
      config.panels = &panels_;
      entry = CreateMatMulEntryAt(precision_, engine_, config, b_data);
      return absl::OkStatus();
    }));
    return cache_.Insert(std::move(key), std::move(entry));
  }

  dnnl::engine engine_;
  bool constant_b_;
  bool has_bias_;
  bool has_addend_;
  float alpha_;  // Scales the product (the optimiser uses it without bias).
  Activation act_;
  Precision precision_;
  // Filled lazily from const Compute(); synchronised internally.
  mutable ShapeKeyedCache<MatMulEntry> cache_;
  // Constant B packed for RowGemm, for every shape (SharedRowPanels).
  mutable SharedRowPanels panels_;
  PackedB packed_b_;
  // The build-time entry's MatMulEntry::impl; empty if shapes were
  // dynamic. Written by Prepare only, before any Compute or Describe.
  std::string impl_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeMatMul(const KernelSpec& spec) {
  const bool fused = spec.node->op_type == kFusedMatMulOp;
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, fused ? 4 : 2));
  for (int i = 0; i < spec.node->num_inputs(); ++i) {
    if (i >= 2 && !spec.has_input(i)) continue;
    GLINT_RETURN_IF_ERROR(SpecInputDType(spec, i, {DType::kFloat32}).status());
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, DType::kFloat32).status());
  Activation act;
  if (fused) {
    GLINT_ASSIGN_OR_RETURN(act, ParseActivation(*spec.node));
  }
  std::unique_ptr<MatMulKernel> kernel;
  GLINT_RETURN_IF_ERROR(CatchDnnl(spec.node->Describe(), [&] {
    kernel = std::make_unique<MatMulKernel>(spec, act);
    return absl::OkStatus();
  }));
  GLINT_RETURN_IF_ERROR(kernel->Prepare(spec));
  return std::unique_ptr<Kernel>(std::move(kernel));
}

// ------------------------------------------------------------------ Gemm

struct GemmGeometry {
  int64_t m = 0, k = 0, n = 0;
  bool bias = false;  // C goes in as oneDNN bias [1, N].
};

// Also runs glint.FusedGemm: Gemm + activation.
class GemmKernel final : public KernelBase {
 public:
  GemmKernel(const KernelSpec& spec, Activation act)
      : KernelBase(spec),
        act_(act),
        engine_(dnnl::engine::kind::cpu, 0),
        trans_a_(spec.node->GetInt("transA", 0) != 0),
        trans_b_(spec.node->GetInt("transB", 0) != 0),
        alpha_(spec.node->GetFloat("alpha", 1.0f)),
        beta_(spec.node->GetFloat("beta", 1.0f)),
        constant_b_(spec.constant(1) != nullptr),
        precision_(spec.precision) {}

  absl::Status Prepare(const KernelSpec& spec) {
    const Shape& a = spec.inputs[0].shape;
    const Shape& b = spec.inputs[1].shape;
    const Shape* c = spec.has_input(2) ? &spec.inputs[2].shape : nullptr;
    if (!a.IsStatic() || !b.IsStatic() || (c != nullptr && !c->IsStatic())) {
      return absl::OkStatus();
    }
    const Tensor* wb = spec.constant(1);
    if (wb != nullptr && wb->shape() != b) {
      return InvalidArgument(node(), "constant B has shape ",
                             wb->shape().ToString(), " but is declared ",
                             b.ToString());
    }
    GLINT_ASSIGN_OR_RETURN(
        std::shared_ptr<const MatMulEntry> entry,
        GetEntry(a, b, c, wb != nullptr ? wb->raw_data() : nullptr));
    if (entry != nullptr) impl_ = entry->impl;
    packed_b_.Remember(std::move(entry));
    return absl::OkStatus();
  }

  // The engine is known when the shapes were static at build time.
  std::string Describe(const Node& node) const override {
    return DescribeKernel(node, impl_);
  }

  std::vector<PackedConstant> PackedConstants() const override {
    return packed_b_.Describe();
  }
  void UsePackedConstant(int input) override {
    if (input == 1) packed_b_.UseInput();
  }
  void ReleasePackedConstants() override {
    // The device now holds B packed: the host's panels go (no other shape
    // can be packed once B's view holds the packed bytes).
    if (packed_b_.in_input()) panels_.Clear();
    packed_b_.Release();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* a,
                           GetInput(ctx, 0, DType::kFloat32, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* b,
                           GetInput(ctx, 1, DType::kFloat32, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* c,
                           GetOptionalInput(ctx, 2, DType::kFloat32, node()));
    const Shape* c_shape = c != nullptr ? &c->shape : nullptr;
    GLINT_ASSIGN_OR_RETURN(GemmGeometry g,
                           Geometry(a->shape, b->shape, c_shape));
    GLINT_ASSIGN_OR_RETURN(
        TensorView y,
        AllocateOutput(ctx, 0, Shape({g.m, g.n}), DType::kFloat32, node()));
    if (y.num_elements() == 0) return absl::OkStatus();
    float* py = y.as<float>();
    const bool use_c = c != nullptr && beta_ != 0.0f;
    if (use_c && !g.bias) {
      // Pre-fill Y with broadcast C; the sum post-op scales it by beta.
      const BroadcastPlan plan = MakeBroadcastPlan(y.shape, {c->shape});
      const float* pc = c->as<const float>();
      const int64_t sc = plan.strides[0].back();
      ForEachBroadcastRow(plan, [&](int64_t o,
                                    const std::vector<int64_t>& in) {
        for (int64_t i = 0; i < plan.inner(); ++i) {
          py[o + i] = pc[in[0] + i * sc];
        }
      });
    }
    if (g.k == 0) {  // alpha * (empty product) = 0.
      const int64_t n = y.num_elements();
      if (!use_c) {
        std::fill_n(py, n, 0.0f);
      } else if (g.bias) {
        for (int64_t i = 0; i < n; ++i) py[i] = c->as<const float>()[i % g.n];
      } else {
        for (int64_t i = 0; i < n; ++i) py[i] *= beta_;
      }
      if (act_.present()) {
        // The optimiser fuses only Relu/LeakyRelu into Gemm.
        for (int64_t i = 0; i < n; ++i) {
          if (py[i] < 0) py[i] *= act_.alpha;
        }
      }
      return absl::OkStatus();
    }
    GLINT_ASSIGN_OR_RETURN(std::shared_ptr<const MatMulEntry> e,
                           GetEntry(a->shape, b->shape, c_shape, b->data));
    return CatchDnnl(node(), [&] {
      RunMatMul(engine_, *e, a->data, b->data,
                g.bias ? c->data : nullptr, py);
      return absl::OkStatus();
    });
  }

 private:
  absl::StatusOr<GemmGeometry> Geometry(const Shape& a, const Shape& b,
                                        const Shape* c) const {
    if (a.rank() != 2 || b.rank() != 2) {
      return InvalidArgument(node(), "Gemm operands must be 2-D; got ",
                             a.ToString(), " and ", b.ToString());
    }
    GemmGeometry g;
    g.m = trans_a_ ? a.dim(1) : a.dim(0);
    g.k = trans_a_ ? a.dim(0) : a.dim(1);
    const int64_t kb = trans_b_ ? b.dim(1) : b.dim(0);
    g.n = trans_b_ ? b.dim(0) : b.dim(1);
    if (kb != g.k) {
      return InvalidArgument(node(), "Gemm inner dimensions differ: A ",
                             a.ToString(), (trans_a_ ? " (transposed)" : ""),
                             ", B ", b.ToString(),
                             (trans_b_ ? " (transposed)" : ""));
    }
    if (c != nullptr) {
      const Shape y({g.m, g.n});
      absl::StatusOr<Shape> bc = BroadcastShapes({*c, y});
      if (c->rank() > 2 || !bc.ok() || *bc != y) {
        return InvalidArgument(node(), "C of shape ", c->ToString(),
                               " does not broadcast to the output shape ",
                               y.ToString());
      }
      g.bias = alpha_ == 1.0f && beta_ == 1.0f && c->NumElements() == g.n &&
               (c->rank() == 1 || c->dim(0) == 1);
    }
    return g;
  }

  absl::StatusOr<std::shared_ptr<const MatMulEntry>> GetEntry(
      const Shape& a, const Shape& b, const Shape* c,
      const void* b_data) const {
    std::vector<int64_t> key = ShapeKey({&a, &b, c});
    if (auto e = cache_.Find(key)) return e;
    if (packed_b_.in_input()) return PackedForOneShape(node());
    ShapeBuildTimer timing;  // A shape first met: counted at run time.
    GLINT_ASSIGN_OR_RETURN(GemmGeometry g, Geometry(a, b, c));
    if (g.m == 0 || g.n == 0 || g.k == 0) {
      return std::shared_ptr<const MatMulEntry>();  // Never executed.
    }
    std::shared_ptr<const MatMulEntry> entry;
    GLINT_RETURN_IF_ERROR(CatchDnnl(node(), [&] {
      MatMulConfig config;
      // A transposed is stored [K, M]: element (m, k) at k * M + m.
      config.src = memory::desc({g.m, g.k}, memory::data_type::f32,
                                trans_a_ ? memory::dims{1, g.m}
                                         : memory::dims{g.k, 1});
      config.weights = memory::desc({g.k, g.n}, memory::data_type::f32,
                                    trans_b_ ? memory::dims{1, g.k}
                                             : memory::dims{g.n, 1});
      config.dst = PlainF32({g.m, g.n});
      config.alpha = alpha_;
      if (c != nullptr && beta_ != 0.0f) {
        if (g.bias) {
          config.has_bias = true;
          config.bias = PlainF32({1, g.n});
        } else {
          config.sum_beta = beta_;
        }
      }
      config.act = act_;
      config.pack_weights = constant_b_;
      config.panels = &panels_;
      entry = CreateMatMulEntryAt(precision_, engine_, config, b_data);
      return absl::OkStatus();
    }));
    return cache_.Insert(std::move(key), std::move(entry));
  }

  Activation act_;
  dnnl::engine engine_;
  bool trans_a_;
  bool trans_b_;
  float alpha_;
  float beta_;
  bool constant_b_;
  Precision precision_;
  // Filled lazily from const Compute(); synchronised internally.
  mutable ShapeKeyedCache<MatMulEntry> cache_;
  // Constant B packed for RowGemm, for every shape (SharedRowPanels).
  mutable SharedRowPanels panels_;
  PackedB packed_b_;
  // The build-time entry's MatMulEntry::impl; empty if shapes were
  // dynamic. Written by Prepare only, before any Compute or Describe.
  std::string impl_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeGemm(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, 3));
  for (int i = 0; i < 2; ++i) {
    GLINT_RETURN_IF_ERROR(SpecInputDType(spec, i, {DType::kFloat32}).status());
  }
  if (spec.has_input(2)) {
    GLINT_RETURN_IF_ERROR(SpecInputDType(spec, 2, {DType::kFloat32}).status());
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, DType::kFloat32).status());
  Activation act;
  if (spec.node->op_type == kFusedGemmOp) {
    GLINT_ASSIGN_OR_RETURN(act, ParseActivation(*spec.node));
    if (act.present() && act.alg != dnnl::algorithm::eltwise_relu) {
      return Unimplemented(spec.node->Describe(),
                           "FusedGemm takes only Relu/LeakyRelu");
    }
  }
  std::unique_ptr<GemmKernel> kernel;
  GLINT_RETURN_IF_ERROR(CatchDnnl(spec.node->Describe(), [&] {
    kernel = std::make_unique<GemmKernel>(spec, act);
    return absl::OkStatus();
  }));
  GLINT_RETURN_IF_ERROR(kernel->Prepare(spec));
  return std::unique_ptr<Kernel>(std::move(kernel));
}

}  // namespace

void RegisterMatMulGemmKernels(KernelRegistry* registry) {
  registry->Register("MatMul", MakeMatMul);
  registry->Register("Gemm", MakeGemm);
  registry->Register(kFusedMatMulOp, MakeMatMul);
  registry->Register(kFusedGemmOp, MakeGemm);
}

}  // namespace glint::cpu
