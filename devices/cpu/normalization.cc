// BatchNormalization (inference; training_mode=1 from opset 14) and
// Softmax.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/status_macros.h"
#include "devices/cpu/dnnl_util.h"
#include "devices/cpu/kernel_util.h"
#include "optimizer/fused_ops.h"
#include "devices/cpu/register.h"
#include "devices/cpu/shape_builds.h"

namespace glint::cpu {
namespace {

// ------------------------------------------------------ BatchNormalization

// y = (x - mean) / sqrt(var + epsilon) * scale + bias, folded per channel
// into y = x * a + b. When all four parameters are constants the folding is
// done once at build time. training_mode=1 (opset 14+) normalises with the
// batch's own mean and (biased) variance instead and writes the running
// statistics input * momentum + batch * (1 - momentum) to outputs 1 and 2.
// As glint.BatchNormChannelsLast (inference only; the CPU optimiser's
// channels-last region, optimize.h) X is [N, ..., C]: the channel is the
// last axis, and attribute activation="Relu" applies a Relu after.
class BatchNormKernel final : public KernelBase {
 public:
  BatchNormKernel(const KernelSpec& spec, DType dtype, double epsilon,
                  bool training, double momentum, bool channels_last,
                  bool relu)
      : KernelBase(spec),
        dtype_(dtype),
        epsilon_(epsilon),
        training_(training),
        momentum_(momentum),
        channels_last_(channels_last),
        relu_(relu) {}

  absl::Status Prepare(const KernelSpec& spec) {
    if (training_) return absl::OkStatus();
    std::vector<TensorView> params;
    for (int i = 1; i <= 4; ++i) {
      const Tensor* t = spec.constant(i);
      if (t == nullptr) return absl::OkStatus();
      params.push_back(ViewOf(*t));
    }
    GLINT_ASSIGN_OR_RETURN(folded_, Fold(params));
    have_folded_ = true;
    return absl::OkStatus();
  }

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    if (x->shape.rank() < 2) {
      return InvalidArgument(node(), "X has shape ", x->shape.ToString(),
                             "; expected [N, C, ...]");
    }
    const int64_t c = x->shape.dim(channels_last_ ? x->shape.rank() - 1 : 1);
    Folded computed;
    const Folded* f = &folded_;
    if (!have_folded_) {
      std::vector<TensorView> params;
      for (int i = 1; i <= 4; ++i) {
        GLINT_ASSIGN_OR_RETURN(const TensorView* p,
                               GetInput(ctx, i, dtype_, node()));
        params.push_back(*p);
      }
      if (training_) {
        GLINT_RETURN_IF_ERROR(Fold(params).status());  // Checks shapes.
        GLINT_ASSIGN_OR_RETURN(computed, FoldTraining(ctx, *x, params));
      } else {
        GLINT_ASSIGN_OR_RETURN(computed, Fold(params));
      }
      f = &computed;
    }
    if (static_cast<int64_t>(f->a.size()) != c) {
      return InvalidArgument(node(), "X has ", c,
                             " channels but the parameters have ",
                             f->a.size());
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, x->shape,
                                                        dtype_, node()));
    return VisitNumeric(dtype_, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* px = x->as<const T>();
      T* py = y.as<T>();
      std::vector<T> a(c), b(c);
      for (int64_t ch = 0; ch < c; ++ch) {
        a[ch] = static_cast<T>(f->a[ch]);
        b[ch] = static_cast<T>(f->b[ch]);
      }
      if (channels_last_) {
        // Rows of C channels, one per pixel.
        const int64_t rows = c == 0 ? 0 : x->num_elements() / c;
        ParallelFor(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(c, 1)),
                    [&](int64_t begin, int64_t end) {
                      for (int64_t r = begin; r < end; ++r) {
                        const T* in = px + r * c;
                        T* out = py + r * c;
                        for (int64_t ch = 0; ch < c; ++ch) {
                          out[ch] = in[ch] * a[ch] + b[ch];
                        }
                        if (relu_) {
                          for (int64_t ch = 0; ch < c; ++ch) {
                            out[ch] = std::max(out[ch], static_cast<T>(0));
                          }
                        }
                      }
                    });
        return absl::OkStatus();
      }
      // Planes of one channel of one image.
      const int64_t plane = Product(x->shape.dims(), 2, x->shape.rank());
      const int64_t planes = x->shape.dim(0) * c;
      ParallelFor(planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(plane, 1)),
                  [&](int64_t begin, int64_t end) {
                    for (int64_t p = begin; p < end; ++p) {
                      const T ap = a[p % c], bp = b[p % c];
                      const T* in = px + p * plane;
                      T* out = py + p * plane;
                      for (int64_t j = 0; j < plane; ++j) out[j] = in[j] * ap + bp;
                    }
                  });
      return absl::OkStatus();
    });
  }

 private:
  struct Folded {
    std::vector<double> a, b;
  };

  // Training mode: a and b from the batch's statistics (accumulated in
  // double), and the running statistics written to outputs 1 and 2 when
  // used. params: scale, bias, input mean, input var.
  absl::StatusOr<Folded> FoldTraining(KernelContext& ctx, const TensorView& x,
                                      const std::vector<TensorView>& params)
      const {
    const int64_t n = x.shape.dim(0), c = x.shape.dim(1);
    if (params[0].num_elements() != c) {
      return InvalidArgument(node(), "X has ", c,
                             " channels but the parameters have ",
                             params[0].num_elements());
    }
    const int64_t plane = Product(x.shape.dims(), 2, x.shape.rank());
    auto at = [&](const TensorView& t, int64_t i) -> double {
      return dtype_ == DType::kFloat32 ? t.as<const float>()[i]
                                       : t.as<const double>()[i];
    };
    std::vector<double> mean(c, 0.0), var(c, 0.0);
    const double count = static_cast<double>(n * plane);
    for (int64_t ch = 0; ch < c && count > 0; ++ch) {
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t base = (i * c + ch) * plane;
        for (int64_t j = 0; j < plane; ++j) sum += at(x, base + j);
      }
      mean[ch] = sum / count;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t base = (i * c + ch) * plane;
        for (int64_t j = 0; j < plane; ++j) {
          const double dv = at(x, base + j) - mean[ch];
          sq += dv * dv;
        }
      }
      var[ch] = sq / count;
    }
    Folded f;
    f.a.resize(c);
    f.b.resize(c);
    for (int64_t ch = 0; ch < c; ++ch) {
      f.a[ch] = at(params[0], ch) / std::sqrt(var[ch] + epsilon_);
      f.b[ch] = at(params[1], ch) - mean[ch] * f.a[ch];
    }
    for (int out = 1; out <= 2; ++out) {
      if (ctx.num_outputs() <= out || !ctx.output_used(out)) continue;
      GLINT_ASSIGN_OR_RETURN(
          TensorView r, AllocateOutput(ctx, out, Shape({c}), dtype_, node()));
      const std::vector<double>& batch = out == 1 ? mean : var;
      for (int64_t ch = 0; ch < c; ++ch) {
        const double v = at(params[out + 1], ch) * momentum_ +
                         batch[ch] * (1 - momentum_);
        if (dtype_ == DType::kFloat32) {
          r.as<float>()[ch] = static_cast<float>(v);
        } else {
          r.as<double>()[ch] = v;
        }
      }
    }
    return f;
  }

  // params: scale, bias, mean, var.
  absl::StatusOr<Folded> Fold(const std::vector<TensorView>& params) const {
    const int64_t c = params[0].num_elements();
    for (int i = 0; i < 4; ++i) {
      if (params[i].shape.rank() != 1 || params[i].num_elements() != c) {
        return InvalidArgument(node(), "parameter ", i + 1, " has shape ",
                               params[i].shape.ToString(), "; expected [", c,
                               "]");
      }
      if (params[i].dtype != dtype_) {
        return Unimplemented(node(), "parameter ", i + 1, " has dtype ",
                             DTypeName(params[i].dtype), " unlike X's ",
                             DTypeName(dtype_));
      }
    }
    Folded f;
    f.a.resize(c);
    f.b.resize(c);
    auto at = [&](int i, int64_t ch) -> double {
      return dtype_ == DType::kFloat32 ? params[i].as<const float>()[ch]
                                       : params[i].as<const double>()[ch];
    };
    for (int64_t ch = 0; ch < c; ++ch) {
      const double a = at(0, ch) / std::sqrt(at(3, ch) + epsilon_);
      f.a[ch] = a;
      f.b[ch] = at(1, ch) - at(2, ch) * a;
    }
    return f;
  }

  DType dtype_;
  double epsilon_;
  bool training_;
  double momentum_;
  bool channels_last_;
  bool relu_;
  bool have_folded_ = false;
  Folded folded_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeBatchNorm(const KernelSpec& spec) {
  const std::string node = spec.node->Describe();
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 5, 5));
  // training_mode exists from opset 14, with running_mean/var as outputs
  // 1 and 2 (opsets 7-13 signalled training by their five outputs).
  const bool training = spec.node->GetInt("training_mode", 0) != 0;
  if (training && spec.opset_version > 0 && spec.opset_version < 14) {
    return Unimplemented(node, "training_mode before opset 14 is not "
                               "supported");
  }
  if (spec.node->GetInt("spatial", 1) != 1) {
    return Unimplemented(node, "spatial=0 is not supported");
  }
  if (training && spec.node->outputs.size() > 3) {
    return InvalidArgument(node, "has ", spec.node->outputs.size(),
                           " outputs; expected at most 3 in training mode");
  }
  for (size_t i = training ? 3 : 1; i < spec.node->outputs.size(); ++i) {
    if (!spec.node->outputs[i].empty()) {
      return Unimplemented(node, "output ", i,
                           " (running or saved statistics) exists only in "
                           "training mode, which is not supported");
    }
  }
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kFloatDTypes));
  for (int i = 1; i <= 4; ++i) {
    GLINT_ASSIGN_OR_RETURN(DType d, SpecInputDType(spec, i, kFloatDTypes));
    if (d != dtype) {
      return Unimplemented(node, "input ", i, " has dtype ", DTypeName(d),
                           " unlike X's ", DTypeName(dtype));
    }
  }
  for (size_t i = 0; i < spec.node->outputs.size(); ++i) {
    if (spec.node->outputs[i].empty()) continue;
    GLINT_RETURN_IF_ERROR(
        SpecOutputDType(spec, static_cast<int>(i), dtype).status());
  }
  const bool channels_last = spec.node->op_type == kChannelsLastBatchNormOp;
  if (channels_last && training) {
    return Unimplemented(node, "training_mode=1 has no channels-last form");
  }
  const std::string activation = spec.node->GetString("activation", "");
  if (!activation.empty() && (!channels_last || activation != "Relu")) {
    return Unimplemented(node, "activation '", activation,
                         "' (only Relu, after glint.BatchNormChannelsLast)");
  }
  auto kernel = std::make_unique<BatchNormKernel>(
      spec, dtype, spec.node->GetFloat("epsilon", 1e-5f), training,
      spec.node->GetFloat("momentum", 0.9f), channels_last,
      activation == "Relu");
  GLINT_RETURN_IF_ERROR(kernel->Prepare(spec));
  return std::unique_ptr<Kernel>(std::move(kernel));
}

// -------------------------------------- glint.ConcatBatchNormChannelsLast

// Concat along the channels of [N, ..., C_i] inputs, then y = x * a + b
// per channel [-> Relu], written in one pass: each output row (a pixel) is
// gathered from the inputs' rows and normalised on the way
// (optimizer/optimize.h FuseConcatBatchNorm). Inputs 0-3 are the
// BatchNormalization's constant parameters, folded into a and b when the
// kernel is built; 4... are the values to concatenate. float32.
class ConcatBatchNormKernel final : public KernelBase {
 public:
  ConcatBatchNormKernel(const KernelSpec& spec, std::vector<float> a,
                        std::vector<float> b, bool relu)
      : KernelBase(spec), a_(std::move(a)), b_(std::move(b)), relu_(relu) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(std::vector<const TensorView*> xs,
                           GetChannelsLastConcatInputs(ctx, 4, node()));
    const int n = static_cast<int>(xs.size());
    const Shape& first = xs[0]->shape;
    const int rank = first.rank();
    std::vector<int64_t> out = first.dims();
    std::vector<int64_t> start(n + 1, 0);
    for (int i = 0; i < n; ++i) {
      start[i + 1] = start[i] + xs[i]->shape.dim(rank - 1);
    }
    const int64_t c = start[n];
    if (c != static_cast<int64_t>(a_.size())) {
      return InvalidArgument(node(), "the inputs have ", c,
                             " channels together but the parameters have ",
                             a_.size());
    }
    out[rank - 1] = c;
    GLINT_ASSIGN_OR_RETURN(
        TensorView y,
        AllocateOutput(ctx, 0, Shape(out), DType::kFloat32, node()));
    const int64_t rows = c == 0 ? 0 : y.num_elements() / c;
    float* py = y.as<float>();
    ParallelFor(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(c, 1)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t r = begin; r < end; ++r) {
                    for (int i = 0; i < n; ++i) {
                      const int64_t ci = start[i + 1] - start[i];
                      Normalize(xs[i]->as<const float>() + r * ci,
                                a_.data() + start[i], b_.data() + start[i],
                                py + r * c + start[i], ci);
                    }
                  }
                });
    return absl::OkStatus();
  }

 private:
  void Normalize(const float* __restrict x, const float* __restrict a,
                 const float* __restrict b, float* __restrict y,
                 int64_t count) const {
    if (relu_) {
      for (int64_t k = 0; k < count; ++k) {
        y[k] = std::max(x[k] * a[k] + b[k], 0.0f);
      }
    } else {
      for (int64_t k = 0; k < count; ++k) y[k] = x[k] * a[k] + b[k];
    }
  }

  const std::vector<float> a_, b_;
  const bool relu_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeConcatBatchNorm(
    const KernelSpec& spec) {
  const std::string node = spec.node->Describe();
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 5, 1 << 20));
  for (int i = 0; i < spec.node->num_inputs(); ++i) {
    GLINT_RETURN_IF_ERROR(SpecInputDType(spec, i, {DType::kFloat32}).status());
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, DType::kFloat32).status());
  const std::string activation = spec.node->GetString("activation", "");
  if (!activation.empty() && activation != "Relu") {
    return Unimplemented(node, "activation '", activation, "' (only Relu)");
  }
  // scale, B, mean, var -> a = scale / sqrt(var + epsilon),
  // b = B - mean * a, in double as BatchNormalization folds them.
  std::vector<const Tensor*> params(4);
  for (int i = 0; i < 4; ++i) {
    params[i] = spec.constant(i);
    if (params[i] == nullptr) {
      return Unimplemented(node, "parameter ", i,
                           " is not a constant (FuseConcatBatchNorm fuses "
                           "constant parameters only)");
    }
    if (params[i]->shape().rank() != 1 ||
        params[i]->num_elements() != params[0]->num_elements()) {
      return InvalidArgument(node, "parameter ", i, " has shape ",
                             params[i]->shape().ToString(), "; expected [",
                             params[0]->num_elements(), "]");
    }
  }
  const double epsilon = spec.node->GetFloat("epsilon", 1e-5f);
  const int64_t c = params[0]->num_elements();
  std::vector<float> a(c), b(c);
  for (int64_t ch = 0; ch < c; ++ch) {
    const double ad = params[0]->data<float>()[ch] /
                      std::sqrt(params[3]->data<float>()[ch] + epsilon);
    a[ch] = static_cast<float>(ad);
    b[ch] = static_cast<float>(params[1]->data<float>()[ch] -
                               params[2]->data<float>()[ch] * ad);
  }
  return std::unique_ptr<Kernel>(new ConcatBatchNormKernel(
      spec, std::move(a), std::move(b), activation == "Relu"));
}

// ----------------------------------------------------------------- Softmax

// Before opset 13 the input is coerced to 2-D [prod(dims[:axis]),
// prod(dims[axis:])] and each row normalised (default axis 1); from 13 the
// softmax runs along the one axis (default -1).
// Softmax, LogSoftmax and Hardmax share the axis rules and the walk.
// float32 Softmax and LogSoftmax run on oneDNN's primitives (vectorised
// exp, threaded), viewing the input as [outer, n, inner] normalised along
// n; the loop below serves the other types and Hardmax.
enum class SoftmaxMode { kSoftmax, kLogSoftmax, kHardmax };

struct SoftmaxEntry {
  dnnl::primitive prim;
  dnnl::memory::desc data, scratchpad;
};

class SoftmaxKernel final : public KernelBase {
 public:
  SoftmaxKernel(const KernelSpec& spec, DType dtype, int64_t axis,
                bool coerce_2d, SoftmaxMode mode)
      : KernelBase(spec),
        dtype_(dtype),
        axis_(axis),
        coerce_2d_(coerce_2d),
        mode_(mode),
        use_dnnl_(dtype == DType::kFloat32 && mode != SoftmaxMode::kHardmax),
        engine_(dnnl::engine::kind::cpu, 0) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    const int rank = x->shape.rank();
    if (rank == 0) {
      return InvalidArgument(node(), "Softmax needs an input of rank >= 1");
    }
    GLINT_ASSIGN_OR_RETURN(int axis,
                           NormalizeAxis(axis_, rank, coerce_2d_, node()));
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, x->shape,
                                                        dtype_, node()));
    const std::vector<int64_t>& d = x->shape.dims();
    int64_t outer, n, inner;
    if (coerce_2d_) {
      outer = Product(d, 0, axis);
      n = Product(d, axis, rank);
      inner = 1;
    } else {
      outer = Product(d, 0, axis);
      n = d[axis];
      inner = Product(d, axis + 1, rank);
    }
    if (outer * n * inner == 0) return absl::OkStatus();
    if (use_dnnl_) return RunDnnl(x->data, y.data, outer, n, inner);
    return VisitNumeric(dtype_, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>) {
        Run(x->as<const T>(), y.as<T>(), outer, n, inner);
      }
      return absl::OkStatus();
    });
  }

 private:
  template <typename T>
  void Run(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) const {
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const T* xs = x + o * n * inner + i;
        T* ys = y + o * n * inner + i;
        T max = xs[0];
        int64_t arg = 0;
        for (int64_t k = 1; k < n; ++k) {
          if (xs[k * inner] > max) {
            max = xs[k * inner];
            arg = k;
          }
        }
        if (mode_ == SoftmaxMode::kHardmax) {
          // The first maximum wins ties, as ONNX specifies.
          for (int64_t k = 0; k < n; ++k) ys[k * inner] = k == arg ? 1 : 0;
          continue;
        }
        T sum = 0;
        for (int64_t k = 0; k < n; ++k) {
          const T e = std::exp(xs[k * inner] - max);
          if (mode_ == SoftmaxMode::kSoftmax) ys[k * inner] = e;
          sum += e;
        }
        if (mode_ == SoftmaxMode::kLogSoftmax) {
          const T log_sum = std::log(sum);
          for (int64_t k = 0; k < n; ++k) {
            ys[k * inner] = xs[k * inner] - max - log_sum;
          }
        } else {
          const T inv = T(1) / sum;
          for (int64_t k = 0; k < n; ++k) ys[k * inner] *= inv;
        }
      }
    }
  }

  absl::Status RunDnnl(const void* x, void* y, int64_t outer, int64_t n,
                       int64_t inner) const {
    return CatchDnnl(node(), [&] {
      const std::vector<int64_t> key = {outer, n, inner};
      std::shared_ptr<const SoftmaxEntry> e = cache_.Find(key);
      if (e == nullptr) {
        ShapeBuildTimer timing;  // A shape first met: counted at run time.
        auto entry = std::make_shared<SoftmaxEntry>();
        entry->data = PlainF32({outer, n, inner});
        const auto prop = dnnl::prop_kind::forward_inference;
        const dnnl::primitive_attr attr = UserScratchpadAttr();
        if (mode_ == SoftmaxMode::kSoftmax) {
          const dnnl::softmax_forward::primitive_desc pd(
              {prop, entry->data, 1}, attr, engine_);
          entry->prim = dnnl::softmax_forward(pd);
          entry->scratchpad = pd.scratchpad_desc();
        } else {
          const dnnl::logsoftmax_forward::primitive_desc pd(
              {prop, entry->data, 1}, attr, engine_);
          entry->prim = dnnl::logsoftmax_forward(pd);
          entry->scratchpad = pd.scratchpad_desc();
        }
        e = cache_.Insert(key, std::move(entry));
      }
      ExecuteWithScratchpad(
          engine_, e->prim, e->scratchpad,
          {{DNNL_ARG_SRC,
            dnnl::memory(e->data, engine_, const_cast<void*>(x))},
           {DNNL_ARG_DST, dnnl::memory(e->data, engine_, y)}});
      return absl::OkStatus();
    });
  }

  DType dtype_;
  int64_t axis_;
  bool coerce_2d_;
  SoftmaxMode mode_;
  bool use_dnnl_;
  dnnl::engine engine_;
  // Primitives by [outer, n, inner]; filled from const Compute().
  mutable ShapeKeyedCache<SoftmaxEntry> cache_;
};

template <SoftmaxMode kMode>
absl::StatusOr<std::unique_ptr<Kernel>> MakeSoftmax(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kFloatDTypes));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  const bool coerce_2d = spec.opset_version > 0 && spec.opset_version < 13;
  const int64_t axis = spec.node->GetInt("axis", coerce_2d ? 1 : -1);
  std::unique_ptr<Kernel> kernel;
  GLINT_RETURN_IF_ERROR(CatchDnnl(spec.node->Describe(), [&] {
    kernel = std::make_unique<SoftmaxKernel>(spec, dtype, axis, coerce_2d,
                                             kMode);
    return absl::OkStatus();
  }));
  return kernel;
}

}  // namespace

void RegisterNormalizationKernels(KernelRegistry* registry) {
  registry->Register("BatchNormalization", MakeBatchNorm);
  registry->Register(kChannelsLastBatchNormOp, MakeBatchNorm);
  registry->Register(kChannelsLastConcatBatchNormOp, MakeConcatBatchNorm);
  registry->Register("Softmax", MakeSoftmax<SoftmaxMode::kSoftmax>);
  registry->Register("LogSoftmax", MakeSoftmax<SoftmaxMode::kLogSoftmax>);
  registry->Register("Hardmax", MakeSoftmax<SoftmaxMode::kHardmax>);
  RegisterMoreNormalizationKernels(registry);
}

}  // namespace glint::cpu
