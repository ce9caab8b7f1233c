// Conv on oneDNN's convolution_forward primitive (float32; 1-D, 2-D and 3-D
// spatial). ONNX's grouped weights [M, C/G, k...] are, byte for byte,
// oneDNN's [G, M/G, C/G, k...]. oneDNN picks the layouts (format_tag::any):
// its direct JIT convolutions work on channel-blocked tensors (nChw16c /
// nChw8c) and run several times faster than the im2col GEMM it falls back
// to on plain NCHW, which outweighs reordering source and destination
// through per-thread buffers on every call. Constant weights are packed
// once into the chosen implementation's layout.
//
// glint.FusedConv with channels_last=1 (written by the CPU optimiser's
// ConvertToChannelsLast, optimize.h) takes X as [N, spatial..., C] and
// writes Y as [N, spatial..., M]: oneDNN's convolutions run on that layout
// directly, so a chain of them needs no reorder at all. Its optional input
// 3 (Z, Y's shape and layout) is added before the activation: a residual
// connection with no pass of its own over memory. Channels last, Y is the
// primitive's own dst: Z is copied into it and added by a sum post-op,
// which keeps oneDNN's fastest (brgemm) convolutions; NCHW, the dst may be
// a reordered buffer and Z goes in as a binary post-op instead.
//
// At bf16 precision (KernelSpec::precision) the primitive's source and
// weights are bfloat16 and its destination float32: X is converted by the
// source reorder (which NCHW convs have anyway), constant W is packed as
// bfloat16, a non-constant W is converted on each call. Where oneDNN has no
// bfloat16 implementation the kernel computes in float32.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "core/status_macros.h"
#include "devices/cpu/dnnl_util.h"
#include "devices/cpu/kernel_util.h"
#include "optimizer/fused_ops.h"
#include "devices/cpu/register.h"
#include "devices/cpu/shape_builds.h"
#include "devices/cpu/spatial.h"

namespace glint::cpu {
namespace {

using dnnl::memory;

struct ConvEntry {
  dnnl::convolution_forward prim;
  // src/dst: the primitive's layouts; *_user: the plain NC... tensors.
  memory::desc src, src_user, weights, weights_user, bias, dst, dst_user,
      scratchpad;
  bool has_bias = false;
  // The binary post-op's index, if Z is added as one.
  int addend_post_op = -1;
  bool addend_sum = false;  // Z is copied into Y and added by sum.
  bool packed = false;
  memory packed_weights;
  // Set where the primitive's layout differs from the plain one.
  bool reorder_src = false;
  bool reorder_dst = false;
  // A non-constant W in another type or layout than the primitive's.
  bool reorder_weights = false;
  dnnl::reorder src_reorder, dst_reorder, weights_reorder;
  // The implementation oneDNN chose (impl_info_str, e.g. "brg:avx512_core"),
  // with " bf16" when it computes in bfloat16: for Describe.
  std::string impl;
};

// Also runs glint.FusedConv: Conv + addend + activation (oneDNN post-ops).
class ConvKernel final : public KernelBase {
 public:
  ConvKernel(const KernelSpec& spec, WindowAttrs attrs, int64_t group,
             Activation act, bool channels_last)
      : KernelBase(spec),
        act_(act),
        channels_last_(channels_last),
        engine_(dnnl::engine::kind::cpu, 0),
        attrs_(std::move(attrs)),
        group_(group),
        constant_w_(spec.constant(1) != nullptr),
        has_addend_(spec.has_input(3)),
        precision_(spec.precision) {}

  absl::Status Prepare(const KernelSpec& spec) {
    const Shape& x = spec.inputs[0].shape;
    const Shape& w = spec.inputs[1].shape;
    const Shape* b = spec.has_input(2) ? &spec.inputs[2].shape : nullptr;
    if (!x.IsStatic() || !w.IsStatic() || (b != nullptr && !b->IsStatic())) {
      return absl::OkStatus();
    }
    const Tensor* cw = spec.constant(1);
    if (cw != nullptr && cw->shape() != w) {
      return InvalidArgument(node(), "constant W has shape ",
                             cw->shape().ToString(), " but is declared ",
                             w.ToString());
    }
    GLINT_ASSIGN_OR_RETURN(
        std::shared_ptr<const ConvEntry> entry,
        GetEntry(x, w, b, cw != nullptr ? cw->raw_data() : nullptr));
    if (entry != nullptr) impl_ = entry->impl;
    return absl::OkStatus();
  }

  // The implementation is known when the shapes were static at build time.
  std::string Describe(const Node& node) const override {
    return DescribeKernel(
        node, impl_.empty() ? "oneDNN" : absl::StrCat("oneDNN ", impl_));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, DType::kFloat32, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* w,
                           GetInput(ctx, 1, DType::kFloat32, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* b,
                           GetOptionalInput(ctx, 2, DType::kFloat32, node()));
    const Shape* b_shape = b != nullptr ? &b->shape : nullptr;
    GLINT_ASSIGN_OR_RETURN(ConvGeometry g,
                           Geometry(x->shape, w->shape, b_shape));
    const TensorView* z = nullptr;
    if (has_addend_) {
      GLINT_ASSIGN_OR_RETURN(z, GetInput(ctx, 3, DType::kFloat32, node()));
      if (z->shape != g.out) {
        return InvalidArgument(node(), "addend of shape ",
                               z->shape.ToString(), " for output ",
                               g.out.ToString());
      }
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, g.out,
                                                        DType::kFloat32,
                                                        node()));
    if (y.num_elements() == 0) return absl::OkStatus();
    if (g.c == 0) {  // No input channels: the result is the bias alone.
      float* py = y.as<float>();
      const int64_t plane = y.num_elements() / (g.n * g.m);
      for (int64_t i = 0; i < y.num_elements(); ++i) {
        const int64_t channel = channels_last_ ? i % g.m : (i / plane) % g.m;
        float v = b != nullptr ? b->as<const float>()[channel] : 0.0f;
        if (z != nullptr) v += z->as<const float>()[i];
        py[i] = act_.present() ? ApplyActivation(act_, v) : v;
      }
      return absl::OkStatus();
    }
    GLINT_ASSIGN_OR_RETURN(std::shared_ptr<const ConvEntry> e,
                           GetEntry(x->shape, w->shape, b_shape, w->data));
    return CatchDnnl(node(), [&] {
      dnnl::stream stream(engine_);
      memory x_user(e->src_user, engine_, x->data);
      memory src = x_user;
      if (e->reorder_src) {
        src = memory(e->src, engine_,
                     ThreadBuffer(ThreadBufferSlot::kSource,
                                  e->src.get_size()));
        e->src_reorder.execute(stream, x_user, src);
      }
      memory y_user(e->dst_user, engine_, y.data);
      memory dst = e->reorder_dst
                       ? memory(e->dst, engine_,
                                ThreadBuffer(ThreadBufferSlot::kDestination,
                                             e->dst.get_size()))
                       : y_user;
      std::unordered_map<int, memory> args;
      args[DNNL_ARG_SRC] = src;
      if (e->packed) {
        args[DNNL_ARG_WEIGHTS] = e->packed_weights;
      } else if (e->reorder_weights) {
        memory w_user(e->weights_user, engine_, w->data);
        memory converted(e->weights, engine_,
                         ThreadBuffer(ThreadBufferSlot::kWeights,
                                      e->weights.get_size()));
        e->weights_reorder.execute(stream, w_user, converted);
        args[DNNL_ARG_WEIGHTS] = converted;
      } else {
        args[DNNL_ARG_WEIGHTS] = memory(e->weights, engine_, w->data);
      }
      if (e->has_bias) args[DNNL_ARG_BIAS] = memory(e->bias, engine_, b->data);
      args[DNNL_ARG_DST] = dst;
      if (e->addend_sum) {
        std::memcpy(y.data, z->data, y.num_bytes());
      } else if (e->addend_post_op >= 0) {
        args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(e->addend_post_op) |
             DNNL_ARG_SRC_1] =
            memory(e->dst_user, engine_, const_cast<void*>(z->data));
      }
      ExecuteOnStream(stream, e->prim, e->scratchpad, std::move(args));
      if (e->reorder_dst) e->dst_reorder.execute(stream, dst, y_user);
      stream.wait();
      return absl::OkStatus();
    });
  }

 private:
  absl::StatusOr<ConvGeometry> Geometry(const Shape& x, const Shape& w,
                                        const Shape* b) const {
    return ComputeConvGeometry(x, w, b, attrs_, group_, channels_last_,
                               node());
  }

  absl::StatusOr<std::shared_ptr<const ConvEntry>> GetEntry(
      const Shape& x, const Shape& w, const Shape* b,
      const void* w_data) const {
    std::vector<int64_t> key = ShapeKey({&x, &w, b});
    if (auto e = cache_.Find(key)) return e;
    ShapeBuildTimer timing;  // A shape first met: counted at run time.
    GLINT_ASSIGN_OR_RETURN(ConvGeometry g, Geometry(x, w, b));
    if (g.out.NumElements() == 0 || g.c == 0) {
      return std::shared_ptr<const ConvEntry>();  // Never executed.
    }
    std::shared_ptr<ConvEntry> entry;
    // Throws dnnl::error (dnnl_unimplemented: no kernel at `precision`).
    auto create = [&](Precision precision) {
      entry = std::make_shared<ConvEntry>();
      const memory::data_type compute = ComputeDataType(precision);
      memory::dims w_dims;
      if (g.group > 1) {
        w_dims = {g.group, g.m / g.group, g.c / g.group};
      } else {
        w_dims = {g.m, g.c};
      }
      w_dims.insert(w_dims.end(), g.kernel.begin(), g.kernel.end());
      memory::dims src_dims = {g.n, g.c}, dst_dims = {g.n, g.m};
      src_dims.insert(src_dims.end(), g.in.begin(), g.in.end());
      dst_dims.insert(dst_dims.end(), g.window.out.begin(),
                      g.window.out.end());
      const memory::desc src = channels_last_ ? ChannelsLastF32(src_dims)
                                              : PlainF32(src_dims);
      const memory::desc w_user = PlainF32(w_dims);
      // A non-constant W converted to bfloat16 on each call may as well be
      // converted into the primitive's preferred layout.
      const memory::desc w_md =
          constant_w_ || compute != memory::data_type::f32
              ? memory::desc(w_dims, compute, memory::format_tag::any)
              : w_user;
      const memory::desc dst = channels_last_ ? ChannelsLastF32(dst_dims)
                                              : PlainF32(dst_dims);
      // NC... tensors: any layout for the primitive, reorders bridge to the
      // plain tensors. Channels-last ones are used as they are.
      const memory::desc src_any =
          channels_last_ ? WithDataType(src, compute)
                         : memory::desc(src_dims, compute,
                                        memory::format_tag::any);
      const memory::desc dst_any =
          channels_last_ ? dst
                         : memory::desc(dst_dims, memory::data_type::f32,
                                        memory::format_tag::any);
      const memory::desc bias =
          b != nullptr ? PlainF32({g.m}) : memory::desc();
      memory::dims dilations;
      for (int64_t d : attrs_.dilations) dilations.push_back(d - 1);
      const memory::dims strides = ToDnnlDims(attrs_.strides);
      const memory::dims pad_l = ToDnnlDims(g.window.pad_begin);
      const memory::dims pad_r = ToDnnlDims(g.window.pad_end);
      const auto prop = dnnl::prop_kind::forward_inference;
      const auto alg = dnnl::algorithm::convolution_direct;
      const dnnl::convolution_forward::desc desc =
          b != nullptr
              ? dnnl::convolution_forward::desc(prop, alg, src_any, w_md,
                                                bias, dst_any, strides,
                                                dilations, pad_l, pad_r)
              : dnnl::convolution_forward::desc(prop, alg, src_any, w_md,
                                                dst_any, strides, dilations,
                                                pad_l, pad_r);
      dnnl::primitive_attr attr = UserScratchpadAttr();
      if (has_addend_ || act_.present()) {
        dnnl::post_ops ops;
        if (has_addend_ && channels_last_) {
          entry->addend_sum = true;
          ops.append_sum(1.0f);
        } else if (has_addend_) {
          // Z is a user tensor: laid out as Y, whatever the primitive's dst.
          entry->addend_post_op = ops.len();
          ops.append_binary(dnnl::algorithm::binary_add, dst);
        }
        AppendActivation(act_, ops);
        attr.set_post_ops(ops);
      }
      const dnnl::convolution_forward::primitive_desc pd(desc, attr,
                                                         engine_);
      entry->prim = dnnl::convolution_forward(pd);
      entry->impl = pd.impl_info_str();
      if (precision == Precision::kBFloat16) entry->impl += " bf16";
      entry->src = pd.src_desc();
      entry->src_user = src;
      entry->weights = pd.weights_desc();
      entry->weights_user = w_user;
      entry->bias = bias;
      entry->has_bias = b != nullptr;
      entry->dst = pd.dst_desc();
      entry->dst_user = dst;
      if (entry->src != src) {
        entry->reorder_src = true;
        entry->src_reorder = dnnl::reorder(
            dnnl::reorder::primitive_desc(engine_, src, engine_, entry->src));
      }
      if (entry->dst != dst) {
        entry->reorder_dst = true;
        entry->dst_reorder = dnnl::reorder(
            dnnl::reorder::primitive_desc(engine_, entry->dst, engine_, dst));
      }
      entry->scratchpad = pd.scratchpad_desc();
      if (constant_w_) {
        entry->packed_weights =
            ReorderToOwned(engine_, w_user, w_data, pd.weights_desc());
        entry->packed = true;
      } else if (entry->weights != w_user) {
        entry->reorder_weights = true;
        entry->weights_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(
            engine_, w_user, engine_, entry->weights));
      }
    };
    GLINT_RETURN_IF_ERROR(CatchDnnl(node(), [&] {
      CreateAtPrecision(precision_, create);
      return absl::OkStatus();
    }));
    return cache_.Insert(std::move(key), std::move(entry));
  }

  Activation act_;
  bool channels_last_;
  dnnl::engine engine_;
  WindowAttrs attrs_;
  int64_t group_;
  bool constant_w_;
  bool has_addend_;
  Precision precision_;
  // Filled lazily from const Compute(); synchronised internally.
  mutable ShapeKeyedCache<ConvEntry> cache_;
  // The build-time entry's ConvEntry::impl; empty if shapes were dynamic.
  // Written by Prepare only, before any Compute or Describe.
  std::string impl_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeConv(const KernelSpec& spec) {
  const std::string node = spec.node->Describe();
  const bool fused = spec.node->op_type == kFusedConvOp;
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, fused ? 4 : 3));
  for (int i = 0; i < spec.node->num_inputs(); ++i) {
    if (i >= 2 && !spec.has_input(i)) continue;
    GLINT_RETURN_IF_ERROR(SpecInputDType(spec, i, {DType::kFloat32}).status());
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, DType::kFloat32).status());
  // The spatial rank comes from W's declared rank, else from kernel_shape.
  int spatial = spec.inputs[1].shape.rank() - 2;
  if (spec.node->HasAttribute("kernel_shape")) {
    spatial = static_cast<int>(spec.node->GetInts("kernel_shape").size());
  }
  if (spatial < 1 || spatial > 3) {
    return Unimplemented(node, "Conv with ", spatial,
                         " spatial dimensions (oneDNN supports 1 to 3)");
  }
  GLINT_ASSIGN_OR_RETURN(WindowAttrs attrs,
                         ParseWindowAttrs(*spec.node, spatial));
  attrs.ceil_mode = false;  // Not a Conv attribute.
  const int64_t group = spec.node->GetInt("group", 1);
  if (group < 1) {
    return InvalidArgument(node, "group must be >= 1; got ", group);
  }
  Activation act;
  bool channels_last = false;
  if (fused) {
    channels_last = spec.node->GetInt("channels_last", 0) != 0;
    GLINT_ASSIGN_OR_RETURN(act, ParseActivation(*spec.node));
  }
  std::unique_ptr<ConvKernel> kernel;
  GLINT_RETURN_IF_ERROR(CatchDnnl(node, [&] {
    kernel =
        std::make_unique<ConvKernel>(spec, std::move(attrs), group, act,
                                     channels_last);
    return absl::OkStatus();
  }));
  GLINT_RETURN_IF_ERROR(kernel->Prepare(spec));
  return std::unique_ptr<Kernel>(std::move(kernel));
}

}  // namespace

void RegisterConvKernels(KernelRegistry* registry) {
  registry->Register("Conv", MakeConv);
  registry->Register(kFusedConvOp, MakeConv);
}

}  // namespace glint::cpu
