// Quantized (int8/uint8) ops: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger,
// QLinearConv, and the optimiser's glint.QLinearFusedMatMul /
// glint.QLinearFusedConv (a DequantizeLinear -> MatMul/Gemm/Conv
// [-> Relu] [-> QuantizeLinear] pattern, optimize.h).
//
// Rounding is ONNX's: round half to even (the default floating-point
// rounding mode, std::nearbyint), then saturate to the output type.
//
// Integer products run on oneDNN's int8 primitives (u8/s8 source, s8
// weights, VNNI on AVX-512). oneDNN 2.6 takes a zero point for the source
// (one value) and the destination, but none for the weights of a
// convolution: the weights' zero point is folded into the weights
// themselves, W' = W - zw, which must then fit int8 (always so for s8
// weights with zero point 0, the symmetric quantization every exporter
// uses; uint8 weights are converted the same way). The source's zero
// point of a MatMul with one per row is compensated after the product
// (acc -= za[m] * colsum(W')[n]). Where oneDNN cannot take the operands
// (W' outside int8, batched weights, a primitive it refuses), a plain
// int32 loop computes the same accumulators. One epilogue turns the int32
// accumulators into the output: y = mult[c] * (acc + add[c]), an optional
// Relu, then round, add the output zero point, saturate (or float32 out).
// ONNX's QLinear ops round acc * mult before adding the zero point, which
// that formula does exactly; the fused ops with oneDNN attributes add the
// zero point before rounding (oneDNN's order), which differs only for
// values exactly half-way between two integers, by one step.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "core/status_macros.h"
#include "devices/cpu/broadcast.h"
#include "devices/cpu/dnnl_util.h"
#include "devices/cpu/isa.h"
#include "devices/cpu/element_types.h"
#include "devices/cpu/kernel_util.h"
#include "optimizer/fused_ops.h"
#include "devices/cpu/register.h"
#include "devices/cpu/shape_builds.h"
#include "devices/cpu/spatial.h"

namespace glint::cpu {
namespace {

using dnnl::memory;

constexpr int64_t kMaxElements = int64_t{1} << 31;

bool IsQuantDType(DType d) { return d == DType::kUInt8 || d == DType::kInt8; }

// Round half to even and saturate `v` to [lo, hi] (NaN gives lo).
inline int32_t RoundSaturate(float v, int32_t lo, int32_t hi) {
  v = std::nearbyint(v);
  if (!(v >= static_cast<float>(lo))) return lo;
  if (v > static_cast<float>(hi)) return hi;
  return static_cast<int32_t>(v);
}

int32_t QMin(DType d) { return d == DType::kUInt8 ? 0 : -128; }
int32_t QMax(DType d) { return d == DType::kUInt8 ? 255 : 127; }

// Element `i` of an integer tensor (u8, s8 or s32) widened.
inline int32_t IntAt(const TensorView& t, int64_t i) {
  switch (t.dtype) {
    case DType::kUInt8:
      return t.as<const uint8_t>()[i];
    case DType::kInt8:
      return t.as<const int8_t>()[i];
    default:
      return t.as<const int32_t>()[i];
  }
}

// Input `i` or null when absent or when the op has no such input (i < 0).
absl::StatusOr<const TensorView*> OptionalAt(const KernelContext& ctx, int i,
                                             absl::string_view node) {
  if (i < 0) return nullptr;
  return GetOptionalInput(ctx, i, DType::kUndefined, node);
}

// A scale (float32) and zero point (u8/s8/s32) input pair, per tensor (one
// element) or per `count` channels (1-D of `count`).
struct QuantParams {
  std::vector<float> scale;
  std::vector<int32_t> zero;  // Empty: zero point 0.
  float s(int64_t c) const { return scale.size() == 1 ? scale[0] : scale[c]; }
  int32_t z(int64_t c) const {
    return zero.empty() ? 0 : (zero.size() == 1 ? zero[0] : zero[c]);
  }
};

absl::StatusOr<std::vector<int32_t>> ReadZeroPoints(const TensorView* t,
                                                    int64_t count,
                                                    absl::string_view what,
                                                    absl::string_view node) {
  std::vector<int32_t> v;
  if (t == nullptr) return v;
  const int64_t n = t->num_elements();
  if (t->shape.rank() > 1 || (n != 1 && n != count)) {
    return InvalidArgument(node, what, " zero point has shape ",
                           t->shape.ToString(), "; expected one value or ",
                           count);
  }
  v.resize(n);
  for (int64_t i = 0; i < n; ++i) v[i] = IntAt(*t, i);
  return v;
}

absl::StatusOr<std::vector<float>> ReadScales(const TensorView* t,
                                              int64_t count,
                                              absl::string_view what,
                                              absl::string_view node) {
  const int64_t n = t->num_elements();
  if (t->shape.rank() > 1 || (n != 1 && n != count)) {
    return InvalidArgument(node, what, " scale has shape ", t->shape.ToString(),
                           "; expected one value or ", count);
  }
  return std::vector<float>(t->as<const float>(), t->as<const float>() + n);
}

// Reads inputs `si` (scale) and `zi` (optional zero point) for `count`
// channels.
absl::StatusOr<QuantParams> ReadQuantParams(const KernelContext& ctx, int si,
                                            int zi, int64_t count,
                                            absl::string_view what,
                                            absl::string_view node) {
  QuantParams p;
  GLINT_ASSIGN_OR_RETURN(const TensorView* s,
                         GetInput(ctx, si, DType::kFloat32, node));
  GLINT_ASSIGN_OR_RETURN(p.scale, ReadScales(s, count, what, node));
  if (zi >= 0) {
    GLINT_ASSIGN_OR_RETURN(const TensorView* z,
                           GetOptionalInput(ctx, zi, DType::kUndefined, node));
    GLINT_ASSIGN_OR_RETURN(p.zero, ReadZeroPoints(z, count, what, node));
  }
  return p;
}

// ------------------------------------------------- Quantize / Dequantize

// The channel count and the [outer, channels, inner] split of `shape` for
// per-axis parameters along `axis` (per tensor: channels 1).
struct AxisSplit {
  int64_t outer = 1, channels = 1, inner = 1;
};

absl::StatusOr<AxisSplit> SplitForParams(const Shape& shape, int64_t axis,
                                         int64_t params,
                                         absl::string_view node) {
  AxisSplit s;
  if (params == 1) {
    s.inner = shape.NumElements();
    return s;
  }
  GLINT_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, shape.rank(), false, node));
  s.channels = shape.dim(a);
  s.outer = Product(shape.dims(), 0, a);
  s.inner = Product(shape.dims(), a + 1, shape.rank());
  return s;
}

class QuantizeKernel final : public KernelBase {
 public:
  QuantizeKernel(const KernelSpec& spec, DType in, DType out, int64_t axis)
      : KernelBase(spec), in_(in), out_(out), axis_(axis) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x, GetInput(ctx, 0, in_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* s,
                           GetInput(ctx, 1, DType::kFloat32, node()));
    GLINT_ASSIGN_OR_RETURN(
        AxisSplit sp,
        SplitForParams(x->shape, axis_, s->num_elements(), node()));
    GLINT_ASSIGN_OR_RETURN(
        QuantParams p,
        ReadQuantParams(ctx, 1, 2, sp.channels, "y", node()));
    if (ctx.input(2) != nullptr && ctx.input(2)->dtype != out_) {
      return InvalidArgument(node(), "y_zero_point has dtype ",
                             DTypeName(ctx.input(2)->dtype));
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y,
                           AllocateOutput(ctx, 0, x->shape, out_, node()));
    const int32_t lo = QMin(out_), hi = QMax(out_);
    auto run = [&](auto in_tag, auto out_tag) {
      using I = typename decltype(in_tag)::type;
      using O = typename decltype(out_tag)::type;
      const I* px = x->as<const I>();
      O* py = y.as<O>();
      int64_t i = 0;
      for (int64_t o = 0; o < sp.outer; ++o) {
        for (int64_t c = 0; c < sp.channels; ++c) {
          const float scale = p.s(c);
          const float zp = static_cast<float>(p.z(c));
          for (int64_t k = 0; k < sp.inner; ++k, ++i) {
            // ONNX: saturate(round(x / scale) + zero_point).
            const float q = std::nearbyint(static_cast<float>(px[i]) / scale);
            py[i] = static_cast<O>(RoundSaturate(q + zp, lo, hi));
          }
        }
      }
    };
    if (in_ == DType::kFloat32) {
      if (out_ == DType::kUInt8) {
        run(TypeTag<float>{}, TypeTag<uint8_t>{});
      } else {
        run(TypeTag<float>{}, TypeTag<int8_t>{});
      }
    } else if (out_ == DType::kUInt8) {
      run(TypeTag<int32_t>{}, TypeTag<uint8_t>{});
    } else {
      run(TypeTag<int32_t>{}, TypeTag<int8_t>{});
    }
    return absl::OkStatus();
  }

 private:
  DType in_, out_;
  int64_t axis_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeQuantize(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, 3));
  GLINT_ASSIGN_OR_RETURN(
      DType in, SpecInputDType(spec, 0, {DType::kFloat32, DType::kInt32}));
  GLINT_RETURN_IF_ERROR(SpecInputDType(spec, 1, {DType::kFloat32}).status());
  DType out = DType::kUInt8;
  if (spec.has_input(2)) {
    GLINT_ASSIGN_OR_RETURN(
        out, SpecInputDType(spec, 2, {DType::kUInt8, DType::kInt8}));
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, out).status());
  return std::unique_ptr<Kernel>(new QuantizeKernel(
      spec, in, out,
      spec.opset_version >= 13 ? spec.node->GetInt("axis", 1) : 1));
}

class DequantizeKernel final : public KernelBase {
 public:
  DequantizeKernel(const KernelSpec& spec, DType in, int64_t axis)
      : KernelBase(spec), in_(in), axis_(axis) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x, GetInput(ctx, 0, in_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* s,
                           GetInput(ctx, 1, DType::kFloat32, node()));
    GLINT_ASSIGN_OR_RETURN(
        AxisSplit sp,
        SplitForParams(x->shape, axis_, s->num_elements(), node()));
    GLINT_ASSIGN_OR_RETURN(
        QuantParams p,
        ReadQuantParams(ctx, 1, 2, sp.channels, "x", node()));
    if (ctx.input(2) != nullptr && ctx.input(2)->dtype != in_) {
      return InvalidArgument(node(), "x_zero_point has dtype ",
                             DTypeName(ctx.input(2)->dtype), "; x has ",
                             DTypeName(in_));
    }
    GLINT_ASSIGN_OR_RETURN(
        TensorView y,
        AllocateOutput(ctx, 0, x->shape, DType::kFloat32, node()));
    float* py = y.as<float>();
    return VisitNumeric(in_, [&](auto tag) -> absl::Status {
      using I = typename decltype(tag)::type;
      const I* px = x->as<const I>();
      int64_t i = 0;
      for (int64_t o = 0; o < sp.outer; ++o) {
        for (int64_t c = 0; c < sp.channels; ++c) {
          const float scale = p.s(c);
          const int64_t zp = p.z(c);
          for (int64_t k = 0; k < sp.inner; ++k, ++i) {
            py[i] =
                static_cast<float>(static_cast<int64_t>(px[i]) - zp) * scale;
          }
        }
      }
      return absl::OkStatus();
    });
  }

 private:
  DType in_;
  int64_t axis_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeDequantize(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, 3));
  GLINT_ASSIGN_OR_RETURN(
      DType in,
      SpecInputDType(spec, 0, {DType::kUInt8, DType::kInt8, DType::kInt32}));
  GLINT_RETURN_IF_ERROR(SpecInputDType(spec, 1, {DType::kFloat32}).status());
  if (spec.has_input(2)) {
    GLINT_RETURN_IF_ERROR(SpecInputDType(spec, 2, {in}).status());
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, DType::kFloat32).status());
  return std::unique_ptr<Kernel>(new DequantizeKernel(
      spec, in, spec.opset_version >= 13 ? spec.node->GetInt("axis", 1) : 1));
}

class DynamicQuantizeKernel final : public KernelBase {
 public:
  explicit DynamicQuantizeKernel(const KernelSpec& spec) : KernelBase(spec) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, DType::kFloat32, node()));
    const float* px = x->as<const float>();
    const int64_t n = x->num_elements();
    // The range always includes 0, so that 0 is exactly representable.
    float lo = 0.0f, hi = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      lo = std::min(lo, px[i]);
      hi = std::max(hi, px[i]);
    }
    const float scale = (hi - lo) / 255.0f;
    int32_t zp = 0;
    if (scale > 0.0f) zp = RoundSaturate(0.0f - lo / scale, 0, 255);
    GLINT_ASSIGN_OR_RETURN(
        TensorView y, AllocateOutput(ctx, 0, x->shape, DType::kUInt8, node()));
    GLINT_ASSIGN_OR_RETURN(
        TensorView ys,
        AllocateOutput(ctx, 1, Shape({}), DType::kFloat32, node()));
    GLINT_ASSIGN_OR_RETURN(
        TensorView yz,
        AllocateOutput(ctx, 2, Shape({}), DType::kUInt8, node()));
    *ys.as<float>() = scale;
    *yz.as<uint8_t>() = static_cast<uint8_t>(zp);
    uint8_t* py = y.as<uint8_t>();
    if (!(scale > 0.0f)) {  // All zeros (or NaN): everything is the zero.
      std::fill_n(py, n, uint8_t{0});
      return absl::OkStatus();
    }
    const float fz = static_cast<float>(zp);
    for (int64_t i = 0; i < n; ++i) {
      py[i] = static_cast<uint8_t>(
          RoundSaturate(std::nearbyint(px[i] / scale) + fz, 0, 255));
    }
    return absl::OkStatus();
  }
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeDynamicQuantize(
    const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
  GLINT_RETURN_IF_ERROR(SpecInputDType(spec, 0, {DType::kFloat32}).status());
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, DType::kUInt8).status());
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 1, DType::kFloat32).status());
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 2, DType::kUInt8).status());
  if (spec.node->outputs.size() != 3) {
    return InvalidArgument(spec.node->Describe(), "expected 3 outputs");
  }
  return std::unique_ptr<Kernel>(new DynamicQuantizeKernel(spec));
}

// ------------------------------------------------------------ Epilogue

// int32 accumulators -> output, per channel c:
//   v = mult[c] * (acc + add[c]); Relu; then round + zero point + saturate
// (u8/s8 out) or v itself (float32). int32 out: acc + add (integers).
struct Epilogue {
  DType out = DType::kInt32;
  std::vector<float> mult;  // 1 or C values.
  std::vector<float> add;   // Empty, 1 or C values (accumulator units).
  // An int32 bias (QLinearConv's B): added to acc exactly, before the
  // conversion to float, as onnxruntime does. Empty or C values.
  std::vector<int32_t> add_int;
  bool relu = false;
  int32_t zero = 0;
  float m(int64_t c) const { return mult.size() == 1 ? mult[0] : mult[c]; }
  float a(int64_t c) const {
    return add.empty() ? 0.0f : (add.size() == 1 ? add[0] : add[c]);
  }
};

// Applies `e` to `acc` laid out [outer, channels, inner] into `y`.
void ApplyEpilogue(const Epilogue& e, const int32_t* acc, int64_t outer,
                   int64_t channels, int64_t inner, void* y) {
  const int32_t lo = IsQuantDType(e.out) ? QMin(e.out) : 0;
  const int32_t hi = IsQuantDType(e.out) ? QMax(e.out) : 0;
  int64_t i = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t c = 0; c < channels; ++c) {
      if (e.out == DType::kInt32) {
        const int32_t add = static_cast<int32_t>(e.a(c));
        for (int64_t k = 0; k < inner; ++k, ++i) {
          static_cast<int32_t*>(y)[i] = acc[i] + add;
        }
        continue;
      }
      const float mult = e.m(c), add = e.a(c);
      const int32_t iadd = e.add_int.empty() ? 0 : e.add_int[c];
      for (int64_t k = 0; k < inner; ++k, ++i) {
        float v = mult * (static_cast<float>(acc[i] + iadd) + add);
        if (e.relu && v < 0.0f) v = 0.0f;
        if (e.out == DType::kFloat32) {
          static_cast<float*>(y)[i] = v;
        } else {
          const int32_t q = RoundSaturate(
              std::nearbyint(v) + static_cast<float>(e.zero), lo, hi);
          if (e.out == DType::kUInt8) {
            static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(q);
          } else {
            static_cast<int8_t*>(y)[i] = static_cast<int8_t>(q);
          }
        }
      }
    }
  }
}

memory::data_type DnnlType(DType d) {
  switch (d) {
    case DType::kUInt8:
      return memory::data_type::u8;
    case DType::kInt8:
      return memory::data_type::s8;
    case DType::kInt32:
      return memory::data_type::s32;
    default:
      return memory::data_type::f32;
  }
}

// W' = W - zw[channel] as int8 (W laid out [channels, inner] when
// `channel_major`, else [inner, channels]); false when a value does not
// fit.
bool ShiftWeights(const TensorView& w, const std::vector<int32_t>& zw,
                  int64_t channels, bool channel_major, int8_t* out) {
  const int64_t n = w.num_elements();
  const int64_t inner = channels > 0 ? n / channels : 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c =
        channel_major ? i / std::max<int64_t>(inner, 1) : i % channels;
    const int32_t z = zw.empty() ? 0 : (zw.size() == 1 ? zw[0] : zw[c]);
    const int32_t v = IntAt(w, i) - z;
    if (v < -128 || v > 127) return false;
    out[i] = static_cast<int8_t>(v);
  }
  return true;
}

void AppendFloatBits(std::vector<int64_t>& key, const std::vector<float>& v) {
  key.push_back(static_cast<int64_t>(v.size()));
  for (float f : v) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    key.push_back(bits);
  }
}

// ------------------------------------------------------------- Conv

// Input positions of the three ops: X, its scale and zero point, W, its
// scale and zero point, Y's scale and zero point, B. -1: not an input.
struct QuantInputs {
  int x = 0, x_scale = -1, x_zero = -1, w = 1, w_scale = -1, w_zero = -1,
      y_scale = -1, y_zero = -1, bias = -1;
};

QuantInputs IntegerInputs() {  // ConvInteger, MatMulInteger.
  QuantInputs q;
  q.x_zero = 2;
  q.w_zero = 3;
  return q;
}
QuantInputs QLinearInputs() {  // QLinearConv/MatMul and the fused ops.
  return QuantInputs{0, 1, 2, 3, 4, 5, 6, 7, 8};
}

// What one run needs besides the tensors: the zero points, the epilogue.
struct QuantRun {
  int32_t x_zero = 0;
  std::vector<int32_t> w_zero;
  std::vector<float> x_w_scale;  // sx * sw[c] (1 or C values).
  Epilogue epilogue;
  bool fused_epilogue = false;  // oneDNN applies it (fused ops).
};

// Reads the zero points and scales of a run and derives the epilogue for
// `channels` output channels. `bias` (float32 real values or int32
// accumulator units) may be null.
absl::StatusOr<QuantRun> ReadQuantRun(const KernelContext& ctx,
                                      const QuantInputs& q, int64_t channels,
                                      DType out, bool relu,
                                      const TensorView* bias,
                                      absl::string_view node) {
  QuantRun r;
  r.epilogue.out = out;
  r.epilogue.relu = relu;
  GLINT_ASSIGN_OR_RETURN(const TensorView* xz, OptionalAt(ctx, q.x_zero, node));
  GLINT_ASSIGN_OR_RETURN(std::vector<int32_t> xzv,
                         ReadZeroPoints(xz, 1, "x", node));
  r.x_zero = xzv.empty() ? 0 : xzv[0];
  GLINT_ASSIGN_OR_RETURN(const TensorView* wz, OptionalAt(ctx, q.w_zero, node));
  GLINT_ASSIGN_OR_RETURN(r.w_zero, ReadZeroPoints(wz, channels, "w", node));
  if (q.x_scale < 0) {  // Integer ops: int32 out, no scales.
    r.epilogue.mult = {1.0f};
    return r;
  }
  GLINT_ASSIGN_OR_RETURN(QuantParams xs,
                         ReadQuantParams(ctx, q.x_scale, -1, 1, "x", node));
  GLINT_ASSIGN_OR_RETURN(
      QuantParams ws, ReadQuantParams(ctx, q.w_scale, -1, channels, "w", node));
  const int64_t nc = ws.scale.size();
  for (int64_t c = 0; c < nc; ++c) {
    r.x_w_scale.push_back(xs.s(0) * ws.s(c));
  }
  float y_scale = 1.0f;
  if (out != DType::kFloat32) {
    GLINT_ASSIGN_OR_RETURN(
        QuantParams ys,
        ReadQuantParams(ctx, q.y_scale, q.y_zero, 1, "y", node));
    y_scale = ys.s(0);
    r.epilogue.zero = ys.z(0);
  }
  for (int64_t c = 0; c < nc; ++c) {
    // As ONNX's reference and onnxruntime do: one float multiplier.
    r.epilogue.mult.push_back(
        out == DType::kFloat32 ? r.x_w_scale[c] : r.x_w_scale[c] / y_scale);
  }
  if (bias != nullptr) {
    if (bias->shape.rank() != 1 || bias->num_elements() != channels) {
      return InvalidArgument(node, "bias has shape ", bias->shape.ToString(),
                             "; expected [", channels, "]");
    }
    for (int64_t c = 0; c < channels; ++c) {
      // Accumulator units: int32 bias already is; a float one is divided
      // by its scale sx * sw.
      if (bias->dtype == DType::kInt32) {
        r.epilogue.add_int.push_back(bias->as<const int32_t>()[c]);
      } else {
        r.epilogue.add.push_back(bias->as<const float>()[c] /
                                 r.x_w_scale[nc == 1 ? 0 : c]);
      }
    }
  }
  return r;
}

// The output dtype and whether Relu follows, for the three kinds of op.
struct QuantOpKind {
  QuantInputs inputs;
  DType out = DType::kInt32;
  bool relu = false;
  bool fused = false;
};

absl::StatusOr<QuantOpKind> ParseQuantOp(const KernelSpec& spec,
                                         bool integer_op,
                                         absl::string_view fused_op) {
  const std::string node = spec.node->Describe();
  QuantOpKind k;
  k.fused = spec.node->op_type == fused_op;
  if (integer_op) {
    k.inputs = IntegerInputs();
    GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, 4));
    GLINT_ASSIGN_OR_RETURN(
        DType xd, SpecInputDType(spec, 0, {DType::kUInt8, DType::kInt8}));
    GLINT_ASSIGN_OR_RETURN(
        DType wd, SpecInputDType(spec, 1, {DType::kUInt8, DType::kInt8}));
    if (spec.has_input(2)) {
      GLINT_RETURN_IF_ERROR(SpecInputDType(spec, 2, {xd}).status());
    }
    if (spec.has_input(3)) {
      GLINT_RETURN_IF_ERROR(SpecInputDType(spec, 3, {wd}).status());
    }
    k.out = DType::kInt32;
  } else {
    k.inputs = QLinearInputs();
    GLINT_RETURN_IF_ERROR(CheckArity(spec, k.fused ? 6 : 8, 9));
    GLINT_ASSIGN_OR_RETURN(
        DType xd, SpecInputDType(spec, 0, {DType::kUInt8, DType::kInt8}));
    GLINT_ASSIGN_OR_RETURN(
        DType wd, SpecInputDType(spec, 3, {DType::kUInt8, DType::kInt8}));
    for (int i : {1, 4}) {
      GLINT_RETURN_IF_ERROR(
          SpecInputDType(spec, i, {DType::kFloat32}).status());
    }
    if (spec.has_input(2)) {
      GLINT_RETURN_IF_ERROR(SpecInputDType(spec, 2, {xd}).status());
    }
    if (spec.has_input(5)) {
      GLINT_RETURN_IF_ERROR(SpecInputDType(spec, 5, {wd}).status());
    }
    k.out = DType::kFloat32;
    if (spec.has_input(6)) {
      GLINT_RETURN_IF_ERROR(
          SpecInputDType(spec, 6, {DType::kFloat32}).status());
      k.out = DType::kUInt8;
      if (spec.has_input(7)) {
        GLINT_ASSIGN_OR_RETURN(
            k.out, SpecInputDType(spec, 7, {DType::kUInt8, DType::kInt8}));
      }
    } else if (!k.fused) {
      return InvalidArgument(node, "y_scale is required");
    }
    if (spec.has_input(8)) {
      GLINT_RETURN_IF_ERROR(
          SpecInputDType(spec, 8, {k.fused ? DType::kFloat32 : DType::kInt32})
              .status());
    }
    if (k.fused) {
      const std::string act = spec.node->GetString("activation", "");
      if (act == "Relu") {
        k.relu = true;
      } else if (!act.empty()) {
        return Unimplemented(node, "activation ", act);
      }
    }
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, k.out).status());
  return k;
}

struct QConvEntry {
  dnnl::convolution_forward prim;
  memory::desc src, src_user, weights, weights_user, bias, dst, dst_user,
      scratchpad;
  bool reorder_src = false, reorder_dst = false;
  dnnl::reorder src_reorder, dst_reorder;
  memory packed_weights;  // Constant W' packed (else W' per call).
  bool packed = false;
  bool has_bias = false;
  std::vector<float> bias_values;  // Accumulator units (fused only).
};

// ConvInteger, QLinearConv, glint.QLinearFusedConv.
class QConvKernel final : public KernelBase {
 public:
  QConvKernel(const KernelSpec& spec, QuantOpKind kind, WindowAttrs attrs,
              int64_t group, bool channels_last)
      : KernelBase(spec),
        kind_(std::move(kind)),
        attrs_(std::move(attrs)),
        group_(group),
        channels_last_(channels_last),
        engine_(dnnl::engine::kind::cpu, 0) {
    x_dtype_ = spec.inputs[kind_.inputs.x].dtype;
    // The weights and their zero point are fixed when both are constants:
    // W' is then packed once.
    const Tensor* w = spec.constant(kind_.inputs.w);
    const bool wz_const = !spec.has_input(kind_.inputs.w_zero) ||
                          spec.constant(kind_.inputs.w_zero) != nullptr;
    if (w != nullptr && wz_const) {
      const_w_ = *w;
      if (spec.has_input(kind_.inputs.w_zero)) {
        const_wz_ = *spec.constant(kind_.inputs.w_zero);
      }
    }
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const QuantInputs& q = kind_.inputs;
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, q.x, x_dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* w,
                           GetInput(ctx, q.w, DType::kUndefined, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* b,
                           OptionalAt(ctx, q.bias, node()));
    GLINT_ASSIGN_OR_RETURN(ConvGeometry g, Geometry(x->shape, w->shape));
    GLINT_ASSIGN_OR_RETURN(QuantRun r, ReadQuantRun(ctx, q, g.m, kind_.out,
                                                    kind_.relu, b, node()));
    GLINT_ASSIGN_OR_RETURN(TensorView y,
                           AllocateOutput(ctx, 0, g.out, kind_.out, node()));
    if (y.num_elements() == 0) return absl::OkStatus();
    const int64_t plane = y.num_elements() / (g.n * g.m);
    // The epilogue's [outer, channels, inner] view of Y.
    const int64_t e_outer = channels_last_ ? g.n * plane : g.n;
    const int64_t e_inner = channels_last_ ? 1 : plane;
    // oneDNN's path: W' in int8, the primitive for these shapes.
    std::shared_ptr<const QConvEntry> e;
    std::vector<int8_t> w_shifted;
    bool dnnl_ok = g.c > 0;
    if (dnnl_ok && !(const_w_.valid() && IsConstW(w))) {
      w_shifted.resize(w->num_elements());
      dnnl_ok = ShiftWeights(*w, r.w_zero, g.m, true, w_shifted.data());
    }
    if (dnnl_ok) {
      absl::StatusOr<std::shared_ptr<const QConvEntry>> entry =
          GetEntry(g, x->shape, w->shape, r);
      if (entry.ok()) {
        e = *entry;
      } else if (!absl::IsUnimplemented(entry.status()) &&
                 !absl::IsFailedPrecondition(entry.status())) {
        return entry.status();
      }
    }
    if (e == nullptr) {
      return Reference(g, *x, *w, r, y, plane, e_outer, e_inner);
    }
    return CatchDnnl(node(), [&] {
      dnnl::stream stream(engine_);
      memory x_user(e->src_user, engine_, x->data);
      memory src = x_user;
      if (e->reorder_src) {
        src =
            memory(e->src, engine_,
                   ThreadBuffer(ThreadBufferSlot::kSource, e->src.get_size()));
        e->src_reorder.execute(stream, x_user, src);
      }
      // Integer ops write int32 accumulators, which the epilogue turns
      // into the output; fused ops write the output itself.
      const bool direct = r.fused_epilogue;
      std::vector<int32_t> acc;
      if (!direct) acc.resize(y.num_elements());
      memory y_user(e->dst_user, engine_, direct ? y.data : acc.data());
      memory dst = e->reorder_dst
                       ? memory(e->dst, engine_,
                                ThreadBuffer(ThreadBufferSlot::kDestination,
                                             e->dst.get_size()))
                       : y_user;
      std::unordered_map<int, memory> args;
      args[DNNL_ARG_SRC] = src;
      args[DNNL_ARG_WEIGHTS] =
          e->packed ? e->packed_weights
                    : memory(e->weights_user, engine_, w_shifted.data());
      if (e->has_bias) {
        args[DNNL_ARG_BIAS] =
            memory(e->bias, engine_, const_cast<float*>(e->bias_values.data()));
      }
      args[DNNL_ARG_DST] = dst;
      ExecuteOnStream(stream, e->prim, e->scratchpad, std::move(args));
      if (e->reorder_dst) e->dst_reorder.execute(stream, dst, y_user);
      stream.wait();
      if (!direct) {
        ApplyEpilogue(r.epilogue, acc.data(), e_outer, g.m, e_inner, y.data);
      }
      return absl::OkStatus();
    });
  }

 private:
  // Whether the run's W is the constant one (it always is when constant).
  bool IsConstW(const TensorView* w) const {
    return w->shape == const_w_.shape();
  }

  absl::StatusOr<ConvGeometry> Geometry(const Shape& x, const Shape& w) const {
    GLINT_ASSIGN_OR_RETURN(
        ConvGeometry g, ComputeConvGeometry(x, w, nullptr, attrs_, group_,
                                            channels_last_, node()));
    if (g.out.NumElements() > kMaxElements) {
      return InvalidArgument(node(), "output ", g.out.ToString(),
                             " has more than 2^31 elements");
    }
    return g;
  }

  // The primitive for these shapes and parameters; UNIMPLEMENTED when
  // oneDNN has none (the caller then uses the reference loop),
  // FAILED_PRECONDITION when constant W' does not fit int8.
  absl::StatusOr<std::shared_ptr<const QConvEntry>> GetEntry(
      const ConvGeometry& g, const Shape& x, const Shape& w,
      QuantRun& r) const {
    if (!CpuInt8ProductsAreExact()) {
      return absl::UnimplementedError(
          "oneDNN's int8 convolutions saturate on this CPU (no VNNI)");
    }
    // Fused ops hand oneDNN the whole epilogue: output scales, bias, Relu,
    // output zero point.
    const bool fused = kind_.fused;
    std::vector<int64_t> key = ShapeKey({&x, &w});
    key.push_back(r.x_zero);
    if (fused) {
      AppendFloatBits(key, r.epilogue.mult);
      AppendFloatBits(key, r.epilogue.add);
      key.push_back(r.epilogue.zero);
    }
    r.fused_epilogue = fused;
    if (auto e = cache_.Find(key)) return e;
    ShapeBuildTimer timing;  // A shape first met: counted at run time.
    auto entry = std::make_shared<QConvEntry>();
    std::vector<int8_t> packed_source;
    if (const_w_.valid()) {
      packed_source.resize(const_w_.num_elements());
      std::vector<int32_t> zw;
      if (const_wz_.valid()) {
        const TensorView v = ViewOf(const_wz_);
        for (int64_t i = 0; i < v.num_elements(); ++i) {
          zw.push_back(IntAt(v, i));
        }
      }
      if (!ShiftWeights(ViewOf(const_w_), zw, g.m, true,
                        packed_source.data())) {
        return absl::FailedPreconditionError("W' does not fit int8");
      }
    }
    GLINT_RETURN_IF_ERROR(CatchDnnl(node(), [&] {
      memory::dims w_dims;
      if (g.group > 1) {
        w_dims = {g.group, g.m / g.group, g.c / g.group};
      } else {
        w_dims = {g.m, g.c};
      }
      w_dims.insert(w_dims.end(), g.kernel.begin(), g.kernel.end());
      memory::dims src_dims = {g.n, g.c}, dst_dims = {g.n, g.m};
      src_dims.insert(src_dims.end(), g.in.begin(), g.in.end());
      dst_dims.insert(dst_dims.end(), g.window.out.begin(), g.window.out.end());
      const memory::data_type dst_type =
          fused ? DnnlType(kind_.out) : memory::data_type::s32;
      const memory::desc src_user(src_dims, DnnlType(x_dtype_),
                                  Strides(src_dims));
      const memory::desc dst_user(dst_dims, dst_type, Strides(dst_dims));
      const memory::desc w_user(w_dims, memory::data_type::s8,
                                RowMajorStrides(w_dims));
      const memory::desc w_md =
          const_w_.valid() ? memory::desc(w_dims, memory::data_type::s8,
                                          memory::format_tag::any)
                           : w_user;
      // Channels last is oneDNN's own int8 layout: no reorders. NCHW
      // tensors are reordered to whatever it picks.
      const memory::desc src_any =
          channels_last_ ? src_user
                         : memory::desc(src_dims, DnnlType(x_dtype_),
                                        memory::format_tag::any);
      const memory::desc dst_any =
          channels_last_
              ? dst_user
              : memory::desc(dst_dims, dst_type, memory::format_tag::any);
      const bool has_bias = fused && !r.epilogue.add.empty();
      const memory::desc bias = has_bias ? PlainF32({g.m}) : memory::desc();
      memory::dims dilations;
      for (int64_t d : attrs_.dilations) dilations.push_back(d - 1);
      const memory::dims strides = ToDnnlDims(attrs_.strides);
      const memory::dims pad_l = ToDnnlDims(g.window.pad_begin);
      const memory::dims pad_r = ToDnnlDims(g.window.pad_end);
      const auto prop = dnnl::prop_kind::forward_inference;
      const auto alg = dnnl::algorithm::convolution_direct;
      const dnnl::convolution_forward::desc desc =
          has_bias ? dnnl::convolution_forward::desc(prop, alg, src_any, w_md,
                                                     bias, dst_any, strides,
                                                     dilations, pad_l, pad_r)
                   : dnnl::convolution_forward::desc(prop, alg, src_any, w_md,
                                                     dst_any, strides,
                                                     dilations, pad_l, pad_r);
      dnnl::primitive_attr attr = UserScratchpadAttr();
      if (r.x_zero != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {r.x_zero});
      if (fused) {
        // oneDNN 2.x: dst = scale[m] * (acc + bias[m]), post-ops, + zero.
        const std::vector<float>& mult = r.epilogue.mult;
        attr.set_output_scales(mult.size() == 1 ? 0 : 1 << 1, mult);
        if (r.epilogue.zero != 0) {
          attr.set_zero_points(DNNL_ARG_DST, 0, {r.epilogue.zero});
        }
        if (r.epilogue.relu) {
          dnnl::post_ops ops;
          ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
          attr.set_post_ops(ops);
        }
      }
      const dnnl::convolution_forward::primitive_desc pd(desc, attr, engine_);
      entry->prim = dnnl::convolution_forward(pd);
      entry->src = pd.src_desc();
      entry->src_user = src_user;
      entry->weights = pd.weights_desc();
      entry->weights_user = w_user;
      entry->dst = pd.dst_desc();
      entry->dst_user = dst_user;
      entry->bias = bias;
      entry->has_bias = has_bias;
      if (has_bias) {
        for (int64_t c = 0; c < g.m; ++c) {
          entry->bias_values.push_back(r.epilogue.a(c));
        }
      }
      if (entry->src != src_user) {
        entry->reorder_src = true;
        entry->src_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(
            engine_, src_user, engine_, entry->src));
      }
      if (entry->dst != dst_user) {
        entry->reorder_dst = true;
        entry->dst_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(
            engine_, entry->dst, engine_, dst_user));
      }
      entry->scratchpad = pd.scratchpad_desc();
      if (const_w_.valid()) {
        entry->packed_weights = ReorderToOwned(
            engine_, w_user, packed_source.data(), pd.weights_desc());
        entry->packed = true;
      }
      return absl::OkStatus();
    }));
    return cache_.Insert(std::move(key), std::move(entry));
  }

  // Strides of logical [N, C, spatial...] dims in this kernel's layout.
  memory::dims Strides(const memory::dims& dims) const {
    if (!channels_last_) return RowMajorStrides(dims);
    memory::dims strides(dims.size());
    int64_t s = dims[1];
    strides[1] = 1;
    for (int d = static_cast<int>(dims.size()) - 1; d >= 2; --d) {
      strides[d] = s;
      s *= dims[d];
    }
    strides[0] = s;
    return strides;
  }

  // Plain int32 loops: where oneDNN cannot take the operands.
  absl::Status Reference(const ConvGeometry& g, const TensorView& x,
                         const TensorView& w, QuantRun& r, TensorView& y,
                         int64_t plane, int64_t e_outer,
                         int64_t e_inner) const {
    r.fused_epilogue = false;
    // Up to three spatial axes; missing ones have size 1.
    const int sd = static_cast<int>(g.in.size());
    int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1};
    int64_t st[3] = {1, 1, 1}, dl[3] = {1, 1, 1}, pb[3] = {0, 0, 0};
    for (int d = 0; d < sd; ++d) {
      in[d] = g.in[d];
      k[d] = g.kernel[d];
      out[d] = g.window.out[d];
      st[d] = attrs_.strides[d];
      dl[d] = attrs_.dilations[d];
      pb[d] = g.window.pad_begin[d];
    }
    const int64_t cg = g.c / g.group, mg = g.m / g.group;
    const int64_t in_plane = in[0] * in[1] * in[2];
    const int64_t k_size = k[0] * k[1] * k[2];
    // Element strides of batch, channel and spatial position, per layout.
    const int64_t xs_n = g.c * in_plane;
    const int64_t xs_c = channels_last_ ? 1 : in_plane;
    const int64_t xs_p = channels_last_ ? g.c : 1;
    const int64_t ys_m = channels_last_ ? 1 : plane;
    const int64_t ys_p = channels_last_ ? g.m : 1;
    std::vector<int32_t> acc(y.num_elements());
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t m = 0; m < g.m; ++m) {
        int64_t p = 0;
        const int64_t grp = m / mg;
        const int32_t zw =
            r.w_zero.empty() ? 0 : r.w_zero[r.w_zero.size() == 1 ? 0 : m];
        for (int64_t o0 = 0; o0 < out[0]; ++o0) {
          for (int64_t o1 = 0; o1 < out[1]; ++o1) {
            for (int64_t o2 = 0; o2 < out[2]; ++o2, ++p) {
              int32_t sum = 0;
              for (int64_t c = 0; c < cg; ++c) {
                const int64_t xc = n * xs_n + (grp * cg + c) * xs_c;
                const int64_t wc = (m * cg + c) * k_size;
                for (int64_t k0 = 0; k0 < k[0]; ++k0) {
                  const int64_t i0 = o0 * st[0] - pb[0] + k0 * dl[0];
                  if (i0 < 0 || i0 >= in[0]) continue;
                  for (int64_t k1 = 0; k1 < k[1]; ++k1) {
                    const int64_t i1 = o1 * st[1] - pb[1] + k1 * dl[1];
                    if (i1 < 0 || i1 >= in[1]) continue;
                    for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                      const int64_t i2 = o2 * st[2] - pb[2] + k2 * dl[2];
                      if (i2 < 0 || i2 >= in[2]) continue;
                      const int32_t xv =
                          IntAt(x,
                                xc + ((i0 * in[1] + i1) * in[2] + i2) * xs_p) -
                          r.x_zero;
                      const int32_t wv =
                          IntAt(w, wc + (k0 * k[1] + k1) * k[2] + k2) - zw;
                      sum += xv * wv;
                    }
                  }
                }
              }
              acc[n * g.m * plane + m * ys_m + p * ys_p] = sum;
            }
          }
        }
      }
    }
    ApplyEpilogue(r.epilogue, acc.data(), e_outer, g.m, e_inner, y.data);
    return absl::OkStatus();
  }

  QuantOpKind kind_;
  WindowAttrs attrs_;
  int64_t group_;
  bool channels_last_;
  dnnl::engine engine_;
  DType x_dtype_ = DType::kUndefined;
  Tensor const_w_;   // Invalid unless W (and its zero point) are constant.
  Tensor const_wz_;  // Invalid when absent.
  mutable ShapeKeyedCache<QConvEntry> cache_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeQConv(const KernelSpec& spec) {
  const std::string node = spec.node->Describe();
  const bool integer_op = spec.node->op_type == "ConvInteger";
  GLINT_ASSIGN_OR_RETURN(QuantOpKind kind,
                         ParseQuantOp(spec, integer_op, kQLinearFusedConvOp));
  int spatial = spec.inputs[kind.inputs.w].shape.rank() - 2;
  if (spec.node->HasAttribute("kernel_shape")) {
    spatial = static_cast<int>(spec.node->GetInts("kernel_shape").size());
  }
  if (spatial < 1 || spatial > 3) {
    return Unimplemented(node, "convolution with ", spatial,
                         " spatial dimensions (1 to 3 supported)");
  }
  GLINT_ASSIGN_OR_RETURN(WindowAttrs attrs,
                         ParseWindowAttrs(*spec.node, spatial));
  attrs.ceil_mode = false;
  const int64_t group = spec.node->GetInt("group", 1);
  if (group < 1) {
    return InvalidArgument(node, "group must be >= 1; got ", group);
  }
  std::unique_ptr<Kernel> kernel;
  GLINT_RETURN_IF_ERROR(CatchDnnl(node, [&] {
    kernel = std::make_unique<QConvKernel>(
        spec, std::move(kind), std::move(attrs), group,
        spec.node->op_type == kQLinearFusedConvOp &&
            spec.node->GetInt("channels_last", 0) != 0);
    return absl::OkStatus();
  }));
  return kernel;
}

// ----------------------------------------------------------- MatMul

struct QMatMulEntry {
  dnnl::matmul prim;
  memory::desc src, weights, weights_user, dst, bias, scratchpad;
  memory packed_weights;
  bool packed = false;
  bool has_bias = false;
  std::vector<float> bias_values;
  std::vector<int32_t> col_sums;  // Of constant W' (compensation).
};

// MatMulInteger, QLinearMatMul, glint.QLinearFusedMatMul (with attribute
// "transB": W is [N, K], as Gemm's transB writes it).
class QMatMulKernel final : public KernelBase {
 public:
  QMatMulKernel(const KernelSpec& spec, QuantOpKind kind)
      : KernelBase(spec),
        kind_(std::move(kind)),
        engine_(dnnl::engine::kind::cpu, 0),
        trans_b_(spec.node->GetInt("transB", 0) != 0) {
    x_dtype_ = spec.inputs[kind_.inputs.x].dtype;
    const Tensor* w = spec.constant(kind_.inputs.w);
    const bool wz_const = !spec.has_input(kind_.inputs.w_zero) ||
                          spec.constant(kind_.inputs.w_zero) != nullptr;
    if (w != nullptr && wz_const && w->shape().rank() == 2) {
      const_w_ = *w;
      if (spec.has_input(kind_.inputs.w_zero)) {
        const_wz_ = *spec.constant(kind_.inputs.w_zero);
      }
    }
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const QuantInputs& q = kind_.inputs;
    GLINT_ASSIGN_OR_RETURN(const TensorView* a,
                           GetInput(ctx, q.x, x_dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* b,
                           GetInput(ctx, q.w, DType::kUndefined, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* bias,
                           OptionalAt(ctx, q.bias, node()));
    if (a->shape.rank() < 1 || b->shape.rank() < 1 ||
        (trans_b_ && b->shape.rank() != 2)) {
      return InvalidArgument(node(), "operands of shapes ", a->shape.ToString(),
                             " and ", b->shape.ToString());
    }
    // numpy's MatMul shapes.
    std::vector<int64_t> ad = a->shape.dims(), bd = b->shape.dims();
    if (trans_b_) std::swap(bd[0], bd[1]);
    const bool a_vec = ad.size() == 1, b_vec = bd.size() == 1;
    if (a_vec) ad.insert(ad.begin(), 1);
    if (b_vec) bd.push_back(1);
    const int64_t m = ad[ad.size() - 2], k = ad.back(), n = bd.back();
    if (bd[bd.size() - 2] != k) {
      return InvalidArgument(node(),
                             "inner dimensions differ: ", a->shape.ToString(),
                             " x ", b->shape.ToString());
    }
    const Shape batch_a(std::vector<int64_t>(ad.begin(), ad.end() - 2));
    const Shape batch_b(std::vector<int64_t>(bd.begin(), bd.end() - 2));
    absl::StatusOr<Shape> batch = BroadcastShapes({batch_a, batch_b});
    if (!batch.ok()) {
      return InvalidArgument(node(), "batch dimensions of ",
                             a->shape.ToString(), " and ", b->shape.ToString(),
                             " do not broadcast");
    }
    std::vector<int64_t> out = batch->dims();
    if (!a_vec) out.push_back(m);
    if (!b_vec) out.push_back(n);
    const Shape out_shape(out);
    if (out_shape.NumElements() > kMaxElements) {
      return InvalidArgument(node(), "output ", out_shape.ToString(),
                             " has more than 2^31 elements");
    }
    // The a zero point may be per row (MatMulInteger): M values.
    GLINT_ASSIGN_OR_RETURN(const TensorView* az,
                           OptionalAt(ctx, q.x_zero, node()));
    GLINT_ASSIGN_OR_RETURN(std::vector<int32_t> a_zero,
                           ReadZeroPoints(az, m, "a", node()));
    QuantInputs q_no_x_zero = q;
    q_no_x_zero.x_zero = -1;
    GLINT_ASSIGN_OR_RETURN(
        QuantRun r,
        ReadQuantRun(ctx, q_no_x_zero, n, kind_.out, kind_.relu, bias, node()));
    GLINT_ASSIGN_OR_RETURN(
        TensorView y, AllocateOutput(ctx, 0, out_shape, kind_.out, node()));
    if (y.num_elements() == 0) return absl::OkStatus();
    const int64_t rows = out_shape.NumElements() / n;
    const bool per_row_zero = a_zero.size() > 1;
    // oneDNN: 2-D weights (A's batch folded into M), K > 0.
    if (batch_b.NumElements() == 1 && b->shape.rank() == 2 && k > 0) {
      std::vector<int8_t> w_shifted;
      bool fits = true;
      if (!const_w_.valid()) {
        w_shifted.resize(b->num_elements());
        fits = ShiftWeights(*b, r.w_zero, n, trans_b_, w_shifted.data());
      }
      if (fits) {
        r.x_zero = a_zero.size() == 1 ? a_zero[0] : 0;
        // A per-row zero point is compensated after the product.
        const bool fused = kind_.fused && !per_row_zero;
        absl::StatusOr<std::shared_ptr<const QMatMulEntry>> entry =
            GetEntry(rows, k, n, r, fused);
        if (entry.ok()) {
          return Run(**entry, *a, w_shifted, r, a_zero, rows, k, n, y);
        }
        if (!absl::IsUnimplemented(entry.status()) &&
            !absl::IsFailedPrecondition(entry.status())) {
          return entry.status();
        }
      }
    }
    return Reference(*a, *b, ad, bd, *batch, m, k, n, a_zero, r, y, rows);
  }

 private:
  absl::Status Run(const QMatMulEntry& e, const TensorView& a,
                   const std::vector<int8_t>& w_shifted, const QuantRun& r,
                   const std::vector<int32_t>& a_zero, int64_t rows, int64_t k,
                   int64_t n, TensorView& y) const {
    const bool direct = r.fused_epilogue;
    std::vector<int32_t> acc;
    if (!direct) acc.resize(rows * n);
    GLINT_RETURN_IF_ERROR(CatchDnnl(node(), [&] {
      std::unordered_map<int, memory> args;
      args[DNNL_ARG_SRC] = memory(e.src, engine_, a.data);
      args[DNNL_ARG_WEIGHTS] =
          e.packed ? e.packed_weights
                   : memory(e.weights_user, engine_,
                            const_cast<int8_t*>(w_shifted.data()));
      if (e.has_bias) {
        args[DNNL_ARG_BIAS] =
            memory(e.bias, engine_, const_cast<float*>(e.bias_values.data()));
      }
      args[DNNL_ARG_DST] = memory(e.dst, engine_, direct ? y.data : acc.data());
      ExecuteWithScratchpad(engine_, e.prim, e.scratchpad, std::move(args));
      return absl::OkStatus();
    }));
    if (direct) return absl::OkStatus();
    // A's zero point: acc -= za[m] * colsum(W')[n] (one value or per row).
    const bool any_zero = std::any_of(a_zero.begin(), a_zero.end(),
                                      [](int32_t z) { return z != 0; });
    if (any_zero) {
      std::vector<int32_t> sums = e.col_sums;
      if (sums.empty()) {
        sums.assign(n, 0);
        for (int64_t kk = 0; kk < k; ++kk) {
          for (int64_t j = 0; j < n; ++j) {
            sums[j] += trans_b_ ? w_shifted[j * k + kk] : w_shifted[kk * n + j];
          }
        }
      }
      const int64_t m =
          a_zero.size() > 1 ? static_cast<int64_t>(a_zero.size()) : 1;
      for (int64_t i = 0; i < rows; ++i) {
        const int32_t za = a_zero.size() > 1 ? a_zero[i % m] : a_zero[0];
        if (za == 0) continue;
        for (int64_t j = 0; j < n; ++j) acc[i * n + j] -= za * sums[j];
      }
    }
    ApplyEpilogue(r.epilogue, acc.data(), rows, n, 1, y.data);
    return absl::OkStatus();
  }

  // The primitive for [rows, k] x [k, n]. Fused: the epilogue in oneDNN
  // attributes (and A's zero point); else int32 out, A's zero point left
  // to Run.
  absl::StatusOr<std::shared_ptr<const QMatMulEntry>> GetEntry(
      int64_t rows, int64_t k, int64_t n, QuantRun& r, bool fused) const {
    if (!CpuInt8ProductsAreExact()) {
      return absl::UnimplementedError(
          "oneDNN's int8 matmuls saturate on this CPU (no VNNI)");
    }
    std::vector<int64_t> key = {rows, k, n, fused ? 1 : 0};
    if (fused) {
      key.push_back(r.x_zero);
      AppendFloatBits(key, r.epilogue.mult);
      AppendFloatBits(key, r.epilogue.add);
      key.push_back(r.epilogue.zero);
    }
    r.fused_epilogue = fused;
    if (auto e = cache_.Find(key)) return e;
    ShapeBuildTimer timing;  // A shape first met: counted at run time.
    auto entry = std::make_shared<QMatMulEntry>();
    std::vector<int8_t> packed_source;
    if (const_w_.valid()) {
      packed_source.resize(const_w_.num_elements());
      std::vector<int32_t> zw;
      if (const_wz_.valid()) {
        const TensorView v = ViewOf(const_wz_);
        for (int64_t i = 0; i < v.num_elements(); ++i) {
          zw.push_back(IntAt(v, i));
        }
      }
      if (!ShiftWeights(ViewOf(const_w_), zw, n, trans_b_,
                        packed_source.data())) {
        return absl::FailedPreconditionError("W' does not fit int8");
      }
      entry->col_sums.assign(n, 0);
      for (int64_t kk = 0; kk < k; ++kk) {
        for (int64_t j = 0; j < n; ++j) {
          entry->col_sums[j] +=
              trans_b_ ? packed_source[j * k + kk] : packed_source[kk * n + j];
        }
      }
    }
    GLINT_RETURN_IF_ERROR(CatchDnnl(node(), [&] {
      const memory::data_type dst_type =
          fused ? DnnlType(kind_.out) : memory::data_type::s32;
      entry->src =
          memory::desc({rows, k}, DnnlType(x_dtype_), memory::dims{k, 1});
      entry->weights_user =
          memory::desc({k, n}, memory::data_type::s8,
                       trans_b_ ? memory::dims{1, k} : memory::dims{n, 1});
      const memory::desc w_md =
          const_w_.valid() ? memory::desc({k, n}, memory::data_type::s8,
                                          memory::format_tag::any)
                           : entry->weights_user;
      entry->dst = memory::desc({rows, n}, dst_type, memory::dims{n, 1});
      entry->has_bias = fused && !r.epilogue.add.empty();
      if (entry->has_bias) {
        entry->bias = PlainF32({1, n});
        for (int64_t j = 0; j < n; ++j) {
          entry->bias_values.push_back(r.epilogue.a(j));
        }
      }
      dnnl::primitive_attr attr = UserScratchpadAttr();
      if (fused) {
        if (r.x_zero != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {r.x_zero});
        const std::vector<float>& mult = r.epilogue.mult;
        attr.set_output_scales(mult.size() == 1 ? 0 : 1 << 1, mult);
        if (r.epilogue.zero != 0) {
          attr.set_zero_points(DNNL_ARG_DST, 0, {r.epilogue.zero});
        }
        if (r.epilogue.relu) {
          dnnl::post_ops ops;
          ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
          attr.set_post_ops(ops);
        }
      }
      const dnnl::matmul::desc desc =
          entry->has_bias
              ? dnnl::matmul::desc(entry->src, w_md, entry->bias, entry->dst)
              : dnnl::matmul::desc(entry->src, w_md, entry->dst);
      const dnnl::matmul::primitive_desc pd(desc, attr, engine_);
      entry->prim = dnnl::matmul(pd);
      entry->weights = pd.weights_desc();
      entry->scratchpad = pd.scratchpad_desc();
      if (const_w_.valid()) {
        entry->packed_weights =
            ReorderToOwned(engine_, entry->weights_user, packed_source.data(),
                           pd.weights_desc());
        entry->packed = true;
      }
      return absl::OkStatus();
    }));
    return cache_.Insert(std::move(key), std::move(entry));
  }

  // Plain int32 loops with numpy broadcasting of the batch.
  absl::Status Reference(const TensorView& a, const TensorView& b,
                         const std::vector<int64_t>& ad,
                         const std::vector<int64_t>& bd, const Shape& batch,
                         int64_t m, int64_t k, int64_t n,
                         const std::vector<int32_t>& a_zero, QuantRun& r,
                         TensorView& y, int64_t rows) const {
    r.fused_epilogue = false;
    const int rank = batch.rank();
    const int ra = static_cast<int>(ad.size()) - 2;
    const int rb = static_cast<int>(bd.size()) - 2;
    std::vector<int32_t> acc(rows * n);
    const int64_t batches = batch.NumElements();
    std::vector<int64_t> idx(rank, 0);
    for (int64_t bi = 0; bi < batches; ++bi) {
      int64_t rem = bi;
      for (int d = rank - 1; d >= 0; --d) {
        idx[d] = rem % batch.dim(d);
        rem /= batch.dim(d);
      }
      int64_t oa = 0, ob = 0;
      for (int d = 0; d < ra; ++d) {
        const int64_t dim = ad[d];
        oa = oa * dim + (dim == 1 ? 0 : idx[rank - ra + d]);
      }
      for (int d = 0; d < rb; ++d) {
        const int64_t dim = bd[d];
        ob = ob * dim + (dim == 1 ? 0 : idx[rank - rb + d]);
      }
      for (int64_t i = 0; i < m; ++i) {
        const int32_t za =
            a_zero.empty() ? 0 : a_zero[a_zero.size() == 1 ? 0 : i];
        for (int64_t j = 0; j < n; ++j) {
          const int32_t zb =
              r.w_zero.empty() ? 0 : r.w_zero[r.w_zero.size() == 1 ? 0 : j];
          int32_t sum = 0;
          for (int64_t kk = 0; kk < k; ++kk) {
            const int64_t bidx = trans_b_ ? j * k + kk : kk * n + j;
            sum += (IntAt(a, (oa * m + i) * k + kk) - za) *
                   (IntAt(b, ob * k * n + bidx) - zb);
          }
          acc[(bi * m + i) * n + j] = sum;
        }
      }
    }
    ApplyEpilogue(r.epilogue, acc.data(), rows, n, 1, y.data);
    return absl::OkStatus();
  }

  QuantOpKind kind_;
  dnnl::engine engine_;
  bool trans_b_;
  DType x_dtype_ = DType::kUndefined;
  Tensor const_w_;
  Tensor const_wz_;
  mutable ShapeKeyedCache<QMatMulEntry> cache_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeQMatMul(const KernelSpec& spec) {
  const bool integer_op = spec.node->op_type == "MatMulInteger";
  GLINT_ASSIGN_OR_RETURN(QuantOpKind kind,
                         ParseQuantOp(spec, integer_op, kQLinearFusedMatMulOp));
  std::unique_ptr<Kernel> kernel;
  GLINT_RETURN_IF_ERROR(CatchDnnl(spec.node->Describe(), [&] {
    kernel = std::make_unique<QMatMulKernel>(spec, std::move(kind));
    return absl::OkStatus();
  }));
  return kernel;
}

}  // namespace

void RegisterQuantKernels(KernelRegistry* registry) {
  registry->Register("QuantizeLinear", MakeQuantize);
  registry->Register("DequantizeLinear", MakeDequantize);
  registry->Register("DynamicQuantizeLinear", MakeDynamicQuantize);
  registry->Register("ConvInteger", MakeQConv);
  registry->Register("QLinearConv", MakeQConv);
  registry->Register(kQLinearFusedConvOp, MakeQConv);
  registry->Register("MatMulInteger", MakeQMatMul);
  registry->Register("QLinearMatMul", MakeQMatMul);
  registry->Register(kQLinearFusedMatMulOp, MakeQMatMul);
}

}  // namespace glint::cpu
