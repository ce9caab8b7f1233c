// Recurrent kernels: RNN, GRU, LSTM as ONNX defines them (opsets 1-14:
// directions, layout, sequence_lens, initial states, peepholes,
// input_forget, clip, linear_before_reset, every listed activation).
//
// Two code paths compute the same thing:
//  - oneDNN's RNN primitives (vanilla_rnn, lstm with peepholes, gru,
//    lbr_gru) for the default activations (RNN also Relu/Sigmoid) without
//    clip or input_forget, on runs whose sequences all have full length.
//    ONNX's weights [D, G*H, K] in gate order iofc (LSTM) / zrh (GRU) are
//    transposed into oneDNN's ldigo with its gate order ifco / uro (GRU:
//    the same order as zrh), the two biases summed (lbr_gru keeps the
//    recurrent candidate bias as its 4th gate), and reordered into the
//    primitive's layout: once per shape when W, R, B, P are constants, on every
//    run otherwise.
//  - a loop: X·Wᵀ for all steps in one dnnl_sgemm, then per step H·Rᵀ
//    (sgemm) and the cell in C++. It handles what oneDNN cannot: per-batch
//    sequence lengths (each sequence runs over its own length, reversed
//    within it for the reverse direction; Y past it is zero, Y_h/Y_c hold
//    its last valid step), clip, input_forget and other activations.
#include "devices/cpu/rnn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "devices/cpu/dnnl_util.h"
#include "devices/cpu/kernel_util.h"
#include "devices/cpu/register.h"
#include "devices/cpu/shape_builds.h"
#include "oneapi/dnnl/dnnl.h"

namespace glint::cpu {
namespace {

enum class Cell { kRnn, kGru, kLstm };

// Inputs and outputs by ONNX position.
enum : int {
  kX = 0,
  kW,
  kR,
  kB,
  kSeqLens,
  kInitialH,
  kInitialC,
  kP,
};
enum : int { kY = 0, kYH, kYC };

// ------------------------------------------------------------ activations

enum class ActKind {
  kRelu,
  kTanh,
  kSigmoid,
  kAffine,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kHardSigmoid,
  kElu,
  kSoftsign,
  kSoftplus,
};

struct Act {
  ActKind kind = ActKind::kTanh;
  float alpha = 0;
  float beta = 0;
};

inline float Apply(const Act& a, float x) {
  switch (a.kind) {
    case ActKind::kRelu:
      return x > 0 ? x : 0;
    case ActKind::kTanh:
      return std::tanh(x);
    case ActKind::kSigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case ActKind::kAffine:
      return a.alpha * x + a.beta;
    case ActKind::kLeakyRelu:
      return x >= 0 ? x : a.alpha * x;
    case ActKind::kThresholdedRelu:
      return x > a.alpha ? x : 0;
    case ActKind::kScaledTanh:
      return a.alpha * std::tanh(a.beta * x);
    case ActKind::kHardSigmoid:
      return std::max(0.0f, std::min(1.0f, a.alpha * x + a.beta));
    case ActKind::kElu:
      return x >= 0 ? x : a.alpha * (std::exp(x) - 1);
    case ActKind::kSoftsign:
      return x / (1 + std::fabs(x));
    case ActKind::kSoftplus:
      return std::log1p(std::exp(x));
  }
  return x;
}

// ONNX's activation list, each function taking its alpha (and beta) from
// activation_alpha/beta in order when it uses one, else its default (as
// onnxruntime reads them).
absl::StatusOr<std::vector<Act>> ParseActs(const Node& node, int per_dir,
                                           int dirs,
                                           const std::vector<Act>& defaults,
                                           const std::string& desc) {
  const std::vector<std::string> names = node.GetStrings("activations", {});
  const std::vector<float> alphas = node.GetFloats("activation_alpha", {});
  const std::vector<float> betas = node.GetFloats("activation_beta", {});
  if (names.empty()) {
    if (!alphas.empty() || !betas.empty()) {
      return InvalidArgument(desc,
                             "activation_alpha/beta without "
                             "activations");
    }
    std::vector<Act> acts;
    for (int d = 0; d < dirs; ++d) {
      acts.insert(acts.end(), defaults.begin(), defaults.end());
    }
    return acts;
  }
  if (static_cast<int>(names.size()) != per_dir &&
      static_cast<int>(names.size()) != per_dir * dirs) {
    return InvalidArgument(desc, "activations has ", names.size(),
                           " functions; expected ", per_dir, " per direction");
  }
  size_t ai = 0, bi = 0;
  std::vector<Act> acts;
  for (const std::string& raw : names) {
    const std::string name = absl::AsciiStrToLower(raw);
    Act a;
    int uses = 0;  // 1: alpha, 2: alpha and beta.
    float da = 0, db = 0;
    if (name == "relu") {
      a.kind = ActKind::kRelu;
    } else if (name == "tanh") {
      a.kind = ActKind::kTanh;
    } else if (name == "sigmoid") {
      a.kind = ActKind::kSigmoid;
    } else if (name == "affine") {
      a.kind = ActKind::kAffine, uses = 2, da = 1, db = 0;
    } else if (name == "leakyrelu") {
      a.kind = ActKind::kLeakyRelu, uses = 1, da = 0.01f;
    } else if (name == "thresholdedrelu") {
      a.kind = ActKind::kThresholdedRelu, uses = 1, da = 1;
    } else if (name == "scaledtanh") {
      a.kind = ActKind::kScaledTanh, uses = 2, da = 1, db = 1;
    } else if (name == "hardsigmoid") {
      a.kind = ActKind::kHardSigmoid, uses = 2, da = 0.2f, db = 0.5f;
    } else if (name == "elu") {
      a.kind = ActKind::kElu, uses = 1, da = 1;
    } else if (name == "softsign") {
      a.kind = ActKind::kSoftsign;
    } else if (name == "softplus") {
      a.kind = ActKind::kSoftplus;
    } else {
      return Unimplemented(desc, "activation '", raw,
                           "' in activations is not supported");
    }
    a.alpha = uses >= 1 && ai < alphas.size() ? alphas[ai++] : da;
    a.beta = uses >= 2 && bi < betas.size() ? betas[bi++] : db;
    acts.push_back(a);
  }
  if (acts.size() < static_cast<size_t>(per_dir * dirs)) {
    // One list for both directions.
    acts.insert(acts.end(), acts.begin(), acts.end());
  }
  return acts;
}

bool SameActs(const std::vector<Act>& acts, const std::vector<Act>& defaults) {
  for (size_t i = 0; i < acts.size(); ++i) {
    if (acts[i].kind != defaults[i % defaults.size()].kind) return false;
  }
  return true;
}

// ------------------------------------------------------------- the kernel

struct Config {
  Cell cell = Cell::kLstm;
  int gates = 4;         // G: 1, 3, 4.
  int64_t hidden = 0;    // H.
  int dirs = 1;          // D.
  bool reverse = false;  // D = 1 and direction = reverse.
  int layout = 0;
  bool has_clip = false;
  float clip = 0;
  bool input_forget = false;
  bool linear_before_reset = false;
  int acts_per_dir = 1;
  std::vector<Act> acts;  // acts_per_dir per direction.
};

// The run's dimensions and inputs (null when absent).
struct Run {
  int64_t t = 0, n = 0, k = 0;  // steps, batch, input size.
  const float* x = nullptr;
  const float* w = nullptr;
  const float* r = nullptr;
  const float* b = nullptr;
  const float* init_h = nullptr;
  const float* init_c = nullptr;
  const float* p = nullptr;
  std::vector<int64_t> lens;  // Per batch entry, in [0, t].
  bool full_length = true;
};

// The outputs (null when unused).
struct Outs {
  float* y = nullptr;
  float* yh = nullptr;
  float* yc = nullptr;
};

struct DnnlEntry {
  bool supported = false;
  dnnl::primitive prim;
  dnnl::memory::desc scratchpad, src_layer, dst_layer, iter, wl, wi, bias,
      peephole;
  // Packed constant weights (when W, R, B, P are constants).
  dnnl::memory wl_packed, wi_packed;
  std::vector<float> bias_plain, peephole_plain;
};

class RecurrentKernel final : public KernelBase {
 public:
  RecurrentKernel(const KernelSpec& spec, Config cfg, RecurrentPath path,
                  bool dnnl_fits)
      : KernelBase(spec),
        cfg_(std::move(cfg)),
        path_(path),
        dnnl_fits_(dnnl_fits),
        engine_(dnnl::engine::kind::cpu, 0) {
    for (int i : {kW, kR, kB, kP}) {
      constant_[i] = spec.constant(i) != nullptr || !spec.has_input(i);
    }
  }

  absl::Status Prepare(const KernelSpec& spec) {
    // Primitive and packed weights now when X's shape is static.
    const Shape& xs = spec.inputs[kX].shape;
    if (!UseDnnlAtAll() || !xs.IsStatic() || xs.rank() != 3 || !AllConstant()) {
      return absl::OkStatus();
    }
    Run run;
    run.t = xs.dim(cfg_.layout == 0 ? 0 : 1);
    run.n = xs.dim(cfg_.layout == 0 ? 1 : 0);
    run.k = xs.dim(2);
    // The constants, when their sizes fit X's input size (else Compute
    // reports the shapes).
    const int64_t d = cfg_.dirs, h = cfg_.hidden, gh = GH();
    const int64_t want[kP + 1] = {
        0, d * gh * run.k, d * gh * h, d * 2 * gh, 0, 0, 0, d * 3 * h};
    for (int i : {kW, kR, kB, kP}) {
      const Tensor* c = spec.constant(i);
      if (c == nullptr) continue;
      if (c->num_elements() != want[i]) return absl::OkStatus();
      const float* f = c->data<float>();
      (i == kW ? run.w : i == kR ? run.r : i == kB ? run.b : run.p) = f;
    }
    if (run.t == 0 || run.n == 0) return absl::OkStatus();
    return CatchDnnl(node(), [&]() -> absl::Status {
      if (directions_[0] != nullptr && SmallSteps(run) &&
          KernelThreads() >= 2) {
        // What Compute will run: a primitive per direction, made on one
        // thread (RunDirectionsAtOnce).
        ScopedKernelThreads one(1);
        for (int dd = 0; dd < 2; ++dd) {
          directions_[dd]->GetEntry(ForDirection(run, dd));
        }
        return absl::OkStatus();
      }
      GetEntry(run);
      return absl::OkStatus();
    });
  }

  absl::Status Compute(KernelContext& ctx) const override {
    Run run;
    GLINT_RETURN_IF_ERROR(ReadInputs(ctx, run));
    const int64_t h = cfg_.hidden, d = cfg_.dirs;
    const Shape state_shape =
        cfg_.layout == 0 ? Shape({d, run.n, h}) : Shape({run.n, d, h});
    Outs outs;
    if (ctx.num_outputs() > kY && ctx.output_used(kY)) {
      const Shape y_shape = cfg_.layout == 0 ? Shape({run.t, d, run.n, h})
                                             : Shape({run.n, run.t, d, h});
      GLINT_ASSIGN_OR_RETURN(
          TensorView y,
          AllocateOutput(ctx, kY, y_shape, DType::kFloat32, node()));
      outs.y = y.as<float>();
    }
    if (ctx.num_outputs() > kYH && ctx.output_used(kYH)) {
      GLINT_ASSIGN_OR_RETURN(
          TensorView v,
          AllocateOutput(ctx, kYH, state_shape, DType::kFloat32, node()));
      outs.yh = v.as<float>();
    }
    if (cfg_.cell == Cell::kLstm && ctx.num_outputs() > kYC &&
        ctx.output_used(kYC)) {
      GLINT_ASSIGN_OR_RETURN(
          TensorView v,
          AllocateOutput(ctx, kYC, state_shape, DType::kFloat32, node()));
      outs.yc = v.as<float>();
    }
    if (run.n == 0) return absl::OkStatus();
    if (run.t == 0) {
      // No step: the states are the initial ones.
      WriteInitialStates(run, outs);
      return absl::OkStatus();
    }
    if (UseDnnlAtAll() && run.full_length) {
      // Set before the primitive is made (oneDNN fixes its split then) and
      // kept while it runs; the rule depends on the run's shape only, which
      // is the primitive cache's key.
      if (directions_[0] != nullptr && SmallSteps(run) &&
          KernelThreads() >= 2) {
        bool ran = false;
        GLINT_RETURN_IF_ERROR(RunDirectionsAtOnce(run, outs, &ran));
        if (ran) return absl::OkStatus();
      }
      std::optional<ScopedKernelThreads> serial;
      if (SmallSteps(run)) serial.emplace(1);
      return CatchDnnl(node(), [&]() -> absl::Status {
        std::shared_ptr<const DnnlEntry> e = GetEntry(run);
        if (e->supported) return RunDnnl(*e, run, outs);
        if (path_ == RecurrentPath::kDnnlOnly) {
          return Unimplemented(node(), "oneDNN has no primitive for it");
        }
        return RunLoop(run, outs);
      });
    }
    if (path_ == RecurrentPath::kDnnlOnly) {
      return Unimplemented(node(),
                           "sequence_lens shorter than the sequence need the "
                           "loop");
    }
    return CatchDnnl(node(), [&] { return RunLoop(run, outs); });
  }

 private:
  bool UseDnnlAtAll() const {
    return dnnl_fits_ && path_ != RecurrentPath::kLoop;
  }

 public:
  // A bidirectional node in layout 0 also gets one kernel per direction
  // (forward, reverse), the same node's configuration for that direction
  // alone, which RunDirectionsAtOnce runs side by side. Call once, before
  // Prepare (which then makes their primitives instead of the
  // bidirectional one when they will run) and before the kernel is shared.
  void MakeDirectionKernels(const KernelSpec& spec) {
    if (cfg_.dirs != 2 || cfg_.layout != 0 || !UseDnnlAtAll()) return;
    for (int dd = 0; dd < 2; ++dd) {
      Config one = cfg_;
      one.dirs = 1;
      one.reverse = dd == 1;
      one.acts.assign(cfg_.acts.begin() + dd * cfg_.acts_per_dir,
                      cfg_.acts.begin() + (dd + 1) * cfg_.acts_per_dir);
      directions_[dd] = std::make_unique<RecurrentKernel>(spec, std::move(one),
                                                          path_, dnnl_fits_);
    }
  }

 private:
  // The calling thread's kernel threads. Sanitizer builds count them too
  // (and ParallelFor then runs the directions one after the other), so
  // that the side-by-side path is what they check.
  static int KernelThreads() {
#if defined(_OPENMP)
    return omp_get_max_threads();
#else
    return 1;
#endif
  }

  // Direction `dd`'s inputs within a bidirectional run's (layout 0: W, R,
  // B, P and the initial states hold the directions one after the other).
  Run ForDirection(const Run& run, int dd) const {
    const int64_t h = cfg_.hidden, gh = GH();
    Run one = run;
    one.w = run.w + dd * gh * run.k;
    one.r = run.r + dd * gh * h;
    if (run.b != nullptr) one.b = run.b + dd * 2 * gh;
    if (run.p != nullptr) one.p = run.p + dd * 3 * h;
    if (run.init_h != nullptr) one.init_h = run.init_h + dd * run.n * h;
    if (run.init_c != nullptr) one.init_c = run.init_c + dd * run.n * h;
    return one;
  }

  // A bidirectional run whose steps are too small to split over threads
  // (SmallSteps): its two directions at once, each on one thread, as two
  // unidirectional primitives, instead of one after the other on one
  // thread. The LSTM tagger's two bidirectional layers took 0.78-0.85 ms
  // a run that way, ONNX Runtime 0.43-0.65 ms. *ran false (and OK) when
  // oneDNN has no primitive for a direction: the caller runs it as before.
  absl::Status RunDirectionsAtOnce(const Run& run, const Outs& outs,
                                   bool* ran) const {
    const int64_t h = cfg_.hidden, n = run.n;
    Run runs[2] = {ForDirection(run, 0), ForDirection(run, 1)};
    std::shared_ptr<const DnnlEntry> entries[2];
    GLINT_RETURN_IF_ERROR(CatchDnnl(node(), [&]() -> absl::Status {
      // Made on one thread, as the primitives run.
      ScopedKernelThreads one(1);
      for (int dd = 0; dd < 2; ++dd) {
        entries[dd] = directions_[dd]->GetEntry(runs[dd]);
      }
      return absl::OkStatus();
    }));
    if (!entries[0]->supported || !entries[1]->supported)
      return absl::OkStatus();
    // Each direction writes its Y as [T, N, H], copied into Y's
    // [T, D, N, H] after; its final states straight into Y_h / Y_c.
    std::vector<float> y[2];
    Outs one[2];
    for (int dd = 0; dd < 2; ++dd) {
      if (outs.y != nullptr) {
        y[dd].resize(run.t * n * h);
        one[dd].y = y[dd].data();
      }
      if (outs.yh != nullptr) one[dd].yh = outs.yh + dd * n * h;
      if (outs.yc != nullptr) one[dd].yc = outs.yc + dd * n * h;
    }
    absl::Status status[2];
    // A team of the thread's full count (ParallelFor's rule); inside it
    // oneDNN runs each primitive on the thread that calls it.
    ParallelFor(2, 1, [&](int64_t begin, int64_t end) {
      for (int64_t dd = begin; dd < end; ++dd) {
        try {
          status[dd] = CatchDnnl(node(), [&] {
            return directions_[dd]->RunDnnl(*entries[dd], runs[dd], one[dd]);
          });
        } catch (...) {
          status[dd] = absl::ResourceExhaustedError(
              absl::StrCat(node(), ": the direction's run failed to allocate"));
        }
      }
    });
    GLINT_RETURN_IF_ERROR(status[0]);
    GLINT_RETURN_IF_ERROR(status[1]);
    if (outs.y != nullptr) {
      for (int64_t t = 0; t < run.t; ++t) {
        for (int dd = 0; dd < 2; ++dd) {
          std::memcpy(outs.y + (t * 2 + dd) * n * h, y[dd].data() + t * n * h,
                      n * h * sizeof(float));
        }
      }
    }
    *ran = true;
    return absl::OkStatus();
  }

  // Whether each step's recurrent GEMM is too small to share between
  // threads: oneDNN splits every step over them and joins them before the
  // next, and for a small batch and hidden size that join costs more than
  // the step. rnn_bench on this 2-core VM (LSTM, seq 20): batch 1, hidden
  // 128 took 92 us on one thread and 152 us on two; batch 4, hidden 128,
  // 144 against 281; while batch 32 (hidden 128), batch 8 (hidden 256)
  // and batch 1 with hidden 256 (1 MiB of recurrent weights, which two
  // cores' caches share) were faster on two. So: at most 2^19 multiply-adds
  // per step and recurrent weights of at most 512 KiB.
  bool SmallSteps(const Run& run) const {
    const int64_t h = cfg_.hidden, g = cfg_.gates;
    return run.n * g * h * h <= (int64_t{1} << 19) &&
           g * h * h * static_cast<int64_t>(sizeof(float)) <= (512 << 10);
  }
  bool AllConstant() const {
    return constant_[kW] && constant_[kR] && constant_[kB] && constant_[kP];
  }
  int64_t GH() const { return cfg_.gates * cfg_.hidden; }

  absl::Status ExpectShape(const TensorView* v, const Shape& want,
                           const char* what) const {
    if (v->shape != want) {
      return InvalidArgument(node(), what, " has shape ", v->shape.ToString(),
                             "; expected ", want.ToString());
    }
    return absl::OkStatus();
  }

  absl::Status ReadInputs(const KernelContext& ctx, Run& run) const {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, kX, DType::kFloat32, node()));
    if (x->shape.rank() != 3) {
      return InvalidArgument(node(), "X has shape ", x->shape.ToString(),
                             "; expected rank 3");
    }
    run.t = x->shape.dim(cfg_.layout == 0 ? 0 : 1);
    run.n = x->shape.dim(cfg_.layout == 0 ? 1 : 0);
    run.k = x->shape.dim(2);
    run.x = x->as<const float>();
    const int64_t d = cfg_.dirs, h = cfg_.hidden, gh = GH();
    GLINT_ASSIGN_OR_RETURN(const TensorView* w,
                           GetInput(ctx, kW, DType::kFloat32, node()));
    GLINT_RETURN_IF_ERROR(ExpectShape(w, Shape({d, gh, run.k}), "W"));
    GLINT_ASSIGN_OR_RETURN(const TensorView* r,
                           GetInput(ctx, kR, DType::kFloat32, node()));
    GLINT_RETURN_IF_ERROR(ExpectShape(r, Shape({d, gh, h}), "R"));
    run.w = w->as<const float>();
    run.r = r->as<const float>();
    GLINT_ASSIGN_OR_RETURN(const TensorView* b,
                           GetOptionalInput(ctx, kB, DType::kFloat32, node()));
    if (b != nullptr) {
      GLINT_RETURN_IF_ERROR(ExpectShape(b, Shape({d, 2 * gh}), "B"));
      run.b = b->as<const float>();
    }
    const Shape state =
        cfg_.layout == 0 ? Shape({d, run.n, h}) : Shape({run.n, d, h});
    GLINT_ASSIGN_OR_RETURN(
        const TensorView* ih,
        GetOptionalInput(ctx, kInitialH, DType::kFloat32, node()));
    if (ih != nullptr) {
      GLINT_RETURN_IF_ERROR(ExpectShape(ih, state, "initial_h"));
      run.init_h = ih->as<const float>();
    }
    if (cfg_.cell == Cell::kLstm) {
      GLINT_ASSIGN_OR_RETURN(
          const TensorView* ic,
          GetOptionalInput(ctx, kInitialC, DType::kFloat32, node()));
      if (ic != nullptr) {
        GLINT_RETURN_IF_ERROR(ExpectShape(ic, state, "initial_c"));
        run.init_c = ic->as<const float>();
      }
      GLINT_ASSIGN_OR_RETURN(
          const TensorView* p,
          GetOptionalInput(ctx, kP, DType::kFloat32, node()));
      if (p != nullptr) {
        GLINT_RETURN_IF_ERROR(ExpectShape(p, Shape({d, 3 * h}), "P"));
        run.p = p->as<const float>();
      }
    }
    run.lens.assign(run.n, run.t);
    GLINT_ASSIGN_OR_RETURN(
        const TensorView* sl,
        GetOptionalInput(ctx, kSeqLens, DType::kUndefined, node()));
    if (sl != nullptr) {
      if (sl->dtype != DType::kInt32 && sl->dtype != DType::kInt64) {
        return InvalidArgument(node(), "sequence_lens has dtype ",
                               DTypeName(sl->dtype), "; expected int32");
      }
      GLINT_ASSIGN_OR_RETURN(run.lens,
                             ReadInt64s(*sl, "sequence_lens", node()));
      if (static_cast<int64_t>(run.lens.size()) != run.n ||
          sl->shape.rank() != 1) {
        return InvalidArgument(node(), "sequence_lens has shape ",
                               sl->shape.ToString(), "; expected [", run.n,
                               "]");
      }
      for (int64_t len : run.lens) {
        if (len < 0 || len > run.t) {
          return InvalidArgument(node(), "sequence_lens holds ", len,
                                 ", outside [0, ", run.t, "]");
        }
        if (len != run.t) run.full_length = false;
      }
    }
    return absl::OkStatus();
  }

  // Offsets of (direction, batch) in a state tensor and of (step,
  // direction, batch) in Y, in the node's layout.
  int64_t StateAt(int64_t d, int64_t b, int64_t n) const {
    return (cfg_.layout == 0 ? d * n + b : b * cfg_.dirs + d) * cfg_.hidden;
  }
  int64_t YAt(int64_t t, int64_t d, int64_t b, const Run& run) const {
    return (cfg_.layout == 0 ? (t * cfg_.dirs + d) * run.n + b
                             : (b * run.t + t) * cfg_.dirs + d) *
           cfg_.hidden;
  }

  void WriteInitialStates(const Run& run, const Outs& outs) const {
    const size_t bytes = cfg_.dirs * run.n * cfg_.hidden * sizeof(float);
    for (auto [dst, src] :
         {std::pair{outs.yh, run.init_h}, std::pair{outs.yc, run.init_c}}) {
      if (dst == nullptr) continue;
      if (src != nullptr) {
        std::memcpy(dst, src, bytes);
      } else {
        std::memset(dst, 0, bytes);
      }
    }
  }

  // --------------------------------------------------------------- loop

  static absl::Status Sgemm(char transb, int64_t m, int64_t n, int64_t k,
                            const float* a, int64_t lda, const float* b,
                            int64_t ldb, float beta, float* c, int64_t ldc,
                            const std::string& node) {
    if (m == 0 || n == 0) return absl::OkStatus();
    const dnnl_status_t st =
        dnnl_sgemm('N', transb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
    if (st != dnnl_success) {
      return Internal(node, "dnnl_sgemm failed with status ",
                      static_cast<int>(st));
    }
    return absl::OkStatus();
  }

  absl::Status RunLoop(const Run& run, const Outs& outs) const {
    const int64_t h = cfg_.hidden, gh = GH(), n = run.n, t_len = run.t;
    const bool lstm = cfg_.cell == Cell::kLstm;
    const bool gru = cfg_.cell == Cell::kGru;
    const bool lbr = gru && cfg_.linear_before_reset;
    if (outs.y != nullptr && !run.full_length) {
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t t = run.lens[b]; t < t_len; ++t) {
          for (int64_t d = 0; d < cfg_.dirs; ++d) {
            std::fill_n(outs.y + YAt(t, d, b, run), h, 0.0f);
          }
        }
      }
    }
    std::vector<float> xw(t_len * n * gh), hr(n * gh), hs(n * h), cs;
    std::vector<float> rh;  // GRU (lbr = 0): r ⊙ H_{t-1}.
    if (lstm) cs.resize(n * h);
    if (gru && !lbr) rh.resize(n * h);
    for (int64_t d = 0; d < cfg_.dirs; ++d) {
      const bool reverse = cfg_.reverse || d == 1;
      const float* w = run.w + d * gh * run.k;
      const float* r = run.r + d * gh * h;
      const float* wb = run.b == nullptr ? nullptr : run.b + d * 2 * gh;
      const float* rb = wb == nullptr ? nullptr : wb + gh;
      const Act* act = &cfg_.acts[d * cfg_.acts_per_dir];
      // X·Wᵀ for every (step, batch) row in X's memory order, plus the
      // biases that sit outside the cell's products.
      GLINT_RETURN_IF_ERROR(Sgemm('T', t_len * n, gh, run.k, run.x, run.k, w,
                                  run.k, 0.0f, xw.data(), gh, node()));
      if (wb != nullptr) {
        std::vector<float> bias(gh);
        for (int64_t j = 0; j < gh; ++j) {
          // lbr: the candidate's recurrent bias goes inside r ⊙ (...).
          bias[j] = wb[j] + (lbr && j >= 2 * h ? 0.0f : rb[j]);
        }
        for (int64_t row = 0; row < t_len * n; ++row) {
          float* xr = xw.data() + row * gh;
          for (int64_t j = 0; j < gh; ++j) xr[j] += bias[j];
        }
      }
      for (int64_t b = 0; b < n; ++b) {
        const int64_t s = StateAt(d, b, n);
        for (int64_t j = 0; j < h; ++j) {
          hs[b * h + j] = run.init_h == nullptr ? 0.0f : run.init_h[s + j];
          if (lstm) {
            cs[b * h + j] = run.init_c == nullptr ? 0.0f : run.init_c[s + j];
          }
        }
      }
      const float* pi = run.p == nullptr ? nullptr : run.p + d * 3 * h;
      const float* po = pi == nullptr ? nullptr : pi + h;
      const float* pf = pi == nullptr ? nullptr : pi + 2 * h;
      auto clip = [&](float v) {
        return cfg_.has_clip ? std::max(-cfg_.clip, std::min(cfg_.clip, v)) : v;
      };
      for (int64_t step = 0; step < t_len; ++step) {
        // H·Rᵀ for every batch entry (the finished ones are ignored);
        // GRU without lbr multiplies the candidate's part after r.
        const int64_t cols = gru && !lbr ? 2 * h : gh;
        GLINT_RETURN_IF_ERROR(Sgemm('T', n, cols, h, hs.data(), h, r, h, 0.0f,
                                    hr.data(), gh, node()));
        if (gru && !lbr) {
          for (int64_t b = 0; b < n; ++b) {
            if (step >= run.lens[b]) continue;
            const int64_t t = reverse ? run.lens[b] - 1 - step : step;
            const float* xr = xw.data() + Row(t, b, run) * gh;
            for (int64_t j = 0; j < h; ++j) {
              const float rg =
                  Apply(act[0], clip(xr[h + j] + hr[b * gh + h + j]));
              rh[b * h + j] = rg * hs[b * h + j];
            }
          }
          GLINT_RETURN_IF_ERROR(Sgemm('T', n, h, h, rh.data(), h, r + 2 * h * h,
                                      h, 0.0f, hr.data() + 2 * h, gh, node()));
        }
        for (int64_t b = 0; b < n; ++b) {
          if (step >= run.lens[b]) continue;
          const int64_t t = reverse ? run.lens[b] - 1 - step : step;
          const float* xr = xw.data() + Row(t, b, run) * gh;
          const float* hrb = hr.data() + b * gh;
          float* hb = hs.data() + b * h;
          if (cfg_.cell == Cell::kRnn) {
            for (int64_t j = 0; j < h; ++j) {
              hb[j] = Apply(act[0], clip(xr[j] + hrb[j]));
            }
          } else if (gru) {
            for (int64_t j = 0; j < h; ++j) {
              const float z = Apply(act[0], clip(xr[j] + hrb[j]));
              float cand;
              if (lbr) {
                const float rg = Apply(act[0], clip(xr[h + j] + hrb[h + j]));
                const float rbh = rb == nullptr ? 0.0f : rb[2 * h + j];
                cand = Apply(act[1],
                             clip(xr[2 * h + j] + rg * (hrb[2 * h + j] + rbh)));
              } else {
                cand = Apply(act[1], clip(xr[2 * h + j] + hrb[2 * h + j]));
              }
              hb[j] = (1 - z) * cand + z * hb[j];
            }
          } else {
            float* cb = cs.data() + b * h;
            for (int64_t j = 0; j < h; ++j) {
              const float c_prev = cb[j];
              float ig = xr[j] + hrb[j];
              float fg = xr[2 * h + j] + hrb[2 * h + j];
              if (pi != nullptr) {
                ig += pi[j] * c_prev;
                fg += pf[j] * c_prev;
              }
              const float i_act = Apply(act[0], clip(ig));
              const float f_act =
                  cfg_.input_forget ? 1 - i_act : Apply(act[0], clip(fg));
              const float c_cand =
                  Apply(act[1], clip(xr[3 * h + j] + hrb[3 * h + j]));
              const float c = f_act * c_prev + i_act * c_cand;
              float og = xr[h + j] + hrb[h + j];
              if (po != nullptr) og += po[j] * c;
              const float o_act = Apply(act[0], clip(og));
              cb[j] = c;
              hb[j] = o_act * Apply(act[2], c);
            }
          }
          if (outs.y != nullptr) {
            std::memcpy(outs.y + YAt(t, d, b, run), hb, h * sizeof(float));
          }
        }
      }
      for (int64_t b = 0; b < n; ++b) {
        const int64_t s = StateAt(d, b, n);
        if (outs.yh != nullptr) {
          std::memcpy(outs.yh + s, hs.data() + b * h, h * sizeof(float));
        }
        if (outs.yc != nullptr) {
          std::memcpy(outs.yc + s, cs.data() + b * h, h * sizeof(float));
        }
      }
    }
    return absl::OkStatus();
  }

  // X's row of (step t, batch b).
  int64_t Row(int64_t t, int64_t b, const Run& run) const {
    return cfg_.layout == 0 ? t * run.n + b : b * run.t + t;
  }

  // ------------------------------------------------------------- oneDNN

  // oneDNN's gate g is ONNX's gate kGateMap[g]: LSTM ifco ← iofc, GRU and
  // RNN in the same order.
  int OnnxGate(int g) const {
    static constexpr int kLstm[4] = {0, 2, 3, 1};
    return cfg_.cell == Cell::kLstm ? kLstm[g] : g;
  }
  int BiasGates() const { return cfg_.linear_before_reset ? 4 : cfg_.gates; }

  // ONNX weights [D, G*H, rows] → plain ldigo [1, D, rows, G, H].
  void ToLdigo(const float* src, int64_t rows, float* dst) const {
    const int64_t h = cfg_.hidden, g = cfg_.gates;
    for (int64_t d = 0; d < cfg_.dirs; ++d) {
      const float* s = src + d * g * h * rows;
      float* o = dst + d * rows * g * h;
      for (int64_t gate = 0; gate < g; ++gate) {
        const int64_t og = OnnxGate(static_cast<int>(gate));
        for (int64_t j = 0; j < h; ++j) {
          const float* srow = s + (og * h + j) * rows;
          for (int64_t i = 0; i < rows; ++i)
            o[(i * g + gate) * h + j] = srow[i];
        }
      }
    }
  }

  // ONNX B [D, 2*G*H] → ldgo [1, D, BiasGates, H]; P [D, 3H] (iof) → ldgo
  // [1, D, 3, H] (ifo).
  void ToBias(const float* b, float* dst) const {
    const int64_t h = cfg_.hidden, g = cfg_.gates, bg = BiasGates();
    std::fill_n(dst, cfg_.dirs * bg * h, 0.0f);
    if (b == nullptr) return;
    for (int64_t d = 0; d < cfg_.dirs; ++d) {
      const float* wb = b + d * 2 * g * h;
      const float* rb = wb + g * h;
      float* o = dst + d * bg * h;
      for (int64_t gate = 0; gate < g; ++gate) {
        const int64_t og = OnnxGate(static_cast<int>(gate));
        const bool split = cfg_.linear_before_reset && gate == 2;
        for (int64_t j = 0; j < h; ++j) {
          o[gate * h + j] = wb[og * h + j] + (split ? 0.0f : rb[og * h + j]);
          if (split) o[3 * h + j] = rb[og * h + j];
        }
      }
    }
  }
  void ToPeephole(const float* p, float* dst) const {
    static constexpr int kOnnx[3] = {0, 2, 1};
    const int64_t h = cfg_.hidden;
    for (int64_t d = 0; d < cfg_.dirs; ++d) {
      for (int gate = 0; gate < 3; ++gate) {
        std::memcpy(dst + (d * 3 + gate) * h, p + (d * 3 + kOnnx[gate]) * h,
                    h * sizeof(float));
      }
    }
  }

  // The primitive for the run's shape (cached); when W, R, B and P are
  // constants, packs them (run's pointers, the constants' values) into it.
  // Throws like oneDNN.
  std::shared_ptr<const DnnlEntry> GetEntry(const Run& run) const {
    const std::vector<int64_t> key = {run.t, run.n, run.k};
    std::shared_ptr<const DnnlEntry> found = cache_.Find(key);
    if (found != nullptr) return found;
    ShapeBuildTimer timing;  // A shape first met: counted at run time.
    auto e = std::make_shared<DnnlEntry>();
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const int64_t h = cfg_.hidden, d = cfg_.dirs, g = cfg_.gates;
    const tag seq_tag = cfg_.layout == 0 ? tag::tnc : tag::ntc;
    e->src_layer = dnnl::memory::desc({run.t, run.n, run.k}, dt::f32, seq_tag);
    e->dst_layer = dnnl::memory::desc({run.t, run.n, d * h}, dt::f32, seq_tag);
    e->iter = dnnl::memory::desc({1, d, run.n, h}, dt::f32, tag::ldnc);
    const dnnl::memory::desc wl_any({1, d, run.k, g, h}, dt::f32, tag::any);
    const dnnl::memory::desc wi_any({1, d, h, g, h}, dt::f32, tag::any);
    e->bias = dnnl::memory::desc({1, d, BiasGates(), h}, dt::f32, tag::ldgo);
    const bool peephole = run.p != nullptr;
    if (peephole) {
      e->peephole = dnnl::memory::desc({1, d, 3, h}, dt::f32, tag::ldgo);
    }
    const auto prop = dnnl::prop_kind::forward_inference;
    const auto dir = d == 2 ? dnnl::rnn_direction::bidirectional_concat
                     : cfg_.reverse
                         ? dnnl::rnn_direction::unidirectional_right2left
                         : dnnl::rnn_direction::unidirectional_left2right;
    const dnnl::primitive_attr attr = UserScratchpadAttr();
    auto finish = [&](const auto& pd) {
      e->prim = dnnl::primitive(pd);
      e->scratchpad = pd.scratchpad_desc();
      e->wl = pd.weights_layer_desc();
      e->wi = pd.weights_iter_desc();
      e->supported = true;
    };
    try {
      switch (cfg_.cell) {
        case Cell::kRnn: {
          const dnnl::algorithm alg = cfg_.acts[0].kind == ActKind::kRelu
                                          ? dnnl::algorithm::eltwise_relu
                                      : cfg_.acts[0].kind == ActKind::kSigmoid
                                          ? dnnl::algorithm::eltwise_logistic
                                          : dnnl::algorithm::eltwise_tanh;
          const dnnl::vanilla_rnn_forward::desc desc(
              prop, alg, dir, e->src_layer, e->iter, wl_any, wi_any, e->bias,
              e->dst_layer, e->iter);
          finish(
              dnnl::vanilla_rnn_forward::primitive_desc(desc, attr, engine_));
          break;
        }
        case Cell::kGru:
          if (cfg_.linear_before_reset) {
            const dnnl::lbr_gru_forward::desc desc(
                prop, dir, e->src_layer, e->iter, wl_any, wi_any, e->bias,
                e->dst_layer, e->iter);
            finish(dnnl::lbr_gru_forward::primitive_desc(desc, attr, engine_));
          } else {
            const dnnl::gru_forward::desc desc(prop, dir, e->src_layer, e->iter,
                                               wl_any, wi_any, e->bias,
                                               e->dst_layer, e->iter);
            finish(dnnl::gru_forward::primitive_desc(desc, attr, engine_));
          }
          break;
        case Cell::kLstm: {
          const dnnl::lstm_forward::desc desc(
              prop, dir, e->src_layer, e->iter, e->iter, wl_any, wi_any,
              e->peephole, e->bias, e->dst_layer, e->iter, e->iter);
          finish(dnnl::lstm_forward::primitive_desc(desc, attr, engine_));
          break;
        }
      }
    } catch (const dnnl::error&) {
      // No primitive for this configuration: the loop runs it.
      e->supported = false;
    }
    if (e->supported && AllConstant()) {
      const float* w = run.w;
      const float* r = run.r;
      std::vector<float> plain(d * std::max(run.k, h) * g * h);
      ToLdigo(w, run.k, plain.data());
      e->wl_packed = ReorderToOwned(
          engine_, dnnl::memory::desc({1, d, run.k, g, h}, dt::f32, tag::ldigo),
          plain.data(), e->wl);
      ToLdigo(r, h, plain.data());
      e->wi_packed = ReorderToOwned(
          engine_, dnnl::memory::desc({1, d, h, g, h}, dt::f32, tag::ldigo),
          plain.data(), e->wi);
      e->bias_plain.resize(d * BiasGates() * h);
      ToBias(run.b, e->bias_plain.data());
      if (peephole) {
        e->peephole_plain.resize(d * 3 * h);
        ToPeephole(run.p, e->peephole_plain.data());
      }
    }
    return cache_.Insert(key, std::move(e));
  }

  absl::Status RunDnnl(const DnnlEntry& e, const Run& run,
                       const Outs& outs) const {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const int64_t h = cfg_.hidden, d = cfg_.dirs, g = cfg_.gates, n = run.n;
    const int64_t state = d * n * h;
    auto mem = [&](const dnnl::memory::desc& md, const void* p) {
      return dnnl::memory(md, engine_, const_cast<void*>(p));
    };
    std::unordered_map<int, dnnl::memory> args;
    args[DNNL_ARG_SRC_LAYER] = mem(e.src_layer, run.x);
    // Weights: packed at build time, else packed now.
    dnnl::memory wl = e.wl_packed, wi = e.wi_packed;
    std::vector<float> bias_now, peephole_now;
    const float* bias = e.bias_plain.data();
    const float* peephole = e.peephole_plain.data();
    if (!wl) {
      std::vector<float> plain(d * std::max(run.k, h) * g * h);
      ToLdigo(run.w, run.k, plain.data());
      wl = ReorderToOwned(
          engine_, dnnl::memory::desc({1, d, run.k, g, h}, dt::f32, tag::ldigo),
          plain.data(), e.wl);
      ToLdigo(run.r, h, plain.data());
      wi = ReorderToOwned(
          engine_, dnnl::memory::desc({1, d, h, g, h}, dt::f32, tag::ldigo),
          plain.data(), e.wi);
      bias_now.resize(d * BiasGates() * h);
      ToBias(run.b, bias_now.data());
      bias = bias_now.data();
      if (run.p != nullptr) {
        peephole_now.resize(d * 3 * h);
        ToPeephole(run.p, peephole_now.data());
        peephole = peephole_now.data();
      }
    }
    args[DNNL_ARG_WEIGHTS_LAYER] = wl;
    args[DNNL_ARG_WEIGHTS_ITER] = wi;
    args[DNNL_ARG_BIAS] = mem(e.bias, bias);
    if (!e.peephole.is_zero()) {
      args[DNNL_ARG_WEIGHTS_PEEPHOLE] = mem(e.peephole, peephole);
    }
    // States in ldnc: ONNX's layout 0 is that; layout 1 ([N, D, H]) goes
    // through copies.
    const bool lstm = cfg_.cell == Cell::kLstm;
    std::vector<float> states(4 * state, 0.0f);
    float* src_h = states.data();
    float* src_c = src_h + state;
    float* dst_h = src_c + state;
    float* dst_c = dst_h + state;
    auto to_ldnc = [&](const float* src, float* dst) {
      for (int64_t dd = 0; dd < d; ++dd) {
        for (int64_t b = 0; b < n; ++b) {
          std::memcpy(dst + (dd * n + b) * h, src + StateAt(dd, b, n),
                      h * sizeof(float));
        }
      }
    };
    if (run.init_h != nullptr) to_ldnc(run.init_h, src_h);
    if (run.init_c != nullptr) to_ldnc(run.init_c, src_c);
    args[DNNL_ARG_SRC_ITER] = mem(e.iter, src_h);
    args[DNNL_ARG_DST_ITER] = mem(e.iter, dst_h);
    if (lstm) {
      args[DNNL_ARG_SRC_ITER_C] = mem(e.iter, src_c);
      args[DNNL_ARG_DST_ITER_C] = mem(e.iter, dst_c);
    }
    // Y: written in place where oneDNN's [T, N, D*H] (or [N, T, D*H]) is
    // ONNX's layout: one direction, or layout 1.
    const bool y_direct = outs.y != nullptr && (d == 1 || cfg_.layout == 1);
    std::vector<float> dst_tmp;
    float* dst = outs.y;
    if (!y_direct) {
      dst_tmp.resize(run.t * n * d * h);
      dst = dst_tmp.data();
    }
    args[DNNL_ARG_DST_LAYER] = mem(e.dst_layer, dst);
    ExecuteWithScratchpad(engine_, e.prim, e.scratchpad, std::move(args));
    if (outs.y != nullptr && !y_direct) {
      // [T, N, D, H] → [T, D, N, H].
      for (int64_t t = 0; t < run.t; ++t) {
        for (int64_t b = 0; b < n; ++b) {
          for (int64_t dd = 0; dd < d; ++dd) {
            std::memcpy(outs.y + YAt(t, dd, b, run),
                        dst + ((t * n + b) * d + dd) * h, h * sizeof(float));
          }
        }
      }
    }
    auto from_ldnc = [&](const float* src, float* out) {
      if (out == nullptr) return;
      for (int64_t dd = 0; dd < d; ++dd) {
        for (int64_t b = 0; b < n; ++b) {
          std::memcpy(out + StateAt(dd, b, n), src + (dd * n + b) * h,
                      h * sizeof(float));
        }
      }
    };
    from_ldnc(dst_h, outs.yh);
    from_ldnc(dst_c, outs.yc);
    return absl::OkStatus();
  }

  Config cfg_;
  RecurrentPath path_;
  bool dnnl_fits_;
  dnnl::engine engine_;
  // Per input index (W, R, B, P): whether it is constant or absent. The
  // kernel keeps no copy of the constants: packing for a new shape reads
  // them from the run's inputs.
  bool constant_[kP + 1] = {};
  // Primitives by [T, N, input size]; filled from const Compute().
  mutable ShapeKeyedCache<DnnlEntry> cache_;
  // Forward and reverse alone (MakeDirectionKernels); null unless the node
  // is bidirectional in layout 0 and oneDNN may run it.
  std::unique_ptr<RecurrentKernel> directions_[2];
};

}  // namespace

absl::StatusOr<std::unique_ptr<Kernel>> MakeRecurrentKernel(
    const KernelSpec& spec, RecurrentPath path) {
  const Node& node = *spec.node;
  const std::string desc = node.Describe();
  Config cfg;
  std::vector<Act> defaults;
  if (node.op_type == "RNN") {
    cfg.cell = Cell::kRnn, cfg.gates = 1;
    defaults = {Act{ActKind::kTanh}};
  } else if (node.op_type == "GRU") {
    cfg.cell = Cell::kGru, cfg.gates = 3;
    defaults = {Act{ActKind::kSigmoid}, Act{ActKind::kTanh}};
  } else if (node.op_type == "LSTM") {
    cfg.cell = Cell::kLstm, cfg.gates = 4;
    defaults = {Act{ActKind::kSigmoid}, Act{ActKind::kTanh},
                Act{ActKind::kTanh}};
  } else {
    return InvalidArgument(desc, "not a recurrent op");
  }
  const bool lstm = cfg.cell == Cell::kLstm;
  // Not CheckArity: every output is optional (Y is often left out).
  const int max_inputs = lstm ? 8 : 6;
  if (node.num_inputs() < 3 || node.num_inputs() > max_inputs) {
    return InvalidArgument(desc, "has ", node.num_inputs(),
                           " inputs; expected 3 to ", max_inputs);
  }
  if (node.outputs.size() > (lstm ? 3u : 2u)) {
    return InvalidArgument(desc, "has ", node.outputs.size(),
                           " outputs; expected at most ", lstm ? 3 : 2);
  }
  for (int i : {kX, kW, kR, kB, kInitialH, kInitialC, kP}) {
    if (i >= static_cast<int>(spec.inputs.size()) || !spec.has_input(i)) {
      continue;
    }
    GLINT_RETURN_IF_ERROR(SpecInputDType(spec, i, {DType::kFloat32}).status());
  }
  if (spec.has_input(kSeqLens)) {
    GLINT_RETURN_IF_ERROR(
        SpecInputDType(spec, kSeqLens, {DType::kInt32, DType::kInt64})
            .status());
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i].empty()) continue;
    GLINT_RETURN_IF_ERROR(
        SpecOutputDType(spec, static_cast<int>(i), DType::kFloat32).status());
  }
  cfg.hidden = node.GetInt("hidden_size", 0);
  if (cfg.hidden <= 0) {
    // ONNX lets it be inferred from R, but every exporter writes it.
    const Tensor* r = spec.constant(kR);
    if (r == nullptr || r->shape().rank() != 3) {
      return InvalidArgument(desc, "hidden_size is missing or not positive");
    }
    cfg.hidden = r->shape().dim(2);
    if (cfg.hidden <= 0) {
      return InvalidArgument(desc, "hidden_size is not positive");
    }
  }
  // Bounded so that G·H and the buffers' sizes cannot overflow; W and R
  // would hold billions of elements long before.
  if (cfg.hidden > (int64_t{1} << 28)) {
    return InvalidArgument(desc, "hidden_size ", cfg.hidden, " is too large");
  }
  const std::string direction = node.GetString("direction", "forward");
  if (direction == "bidirectional") {
    cfg.dirs = 2;
  } else if (direction == "reverse") {
    cfg.reverse = true;
  } else if (direction != "forward") {
    return InvalidArgument(desc, "direction '", direction,
                           "' is not forward, reverse or bidirectional");
  }
  cfg.layout = static_cast<int>(node.GetInt("layout", 0));
  if (cfg.layout != 0 && cfg.layout != 1) {
    return InvalidArgument(desc, "layout ", cfg.layout, " is not 0 or 1");
  }
  if (node.HasAttribute("clip")) {
    cfg.has_clip = true;
    cfg.clip = node.GetFloat("clip", 0);
    if (!(cfg.clip > 0)) {
      return InvalidArgument(desc, "clip ", cfg.clip, " is not positive");
    }
  }
  if (lstm) cfg.input_forget = node.GetInt("input_forget", 0) != 0;
  if (cfg.cell == Cell::kGru) {
    cfg.linear_before_reset = node.GetInt("linear_before_reset", 0) != 0;
  }
  cfg.acts_per_dir = static_cast<int>(defaults.size());
  GLINT_ASSIGN_OR_RETURN(
      cfg.acts, ParseActs(node, cfg.acts_per_dir, cfg.dirs, defaults, desc));
  bool dnnl_fits = !cfg.has_clip && !cfg.input_forget;
  if (cfg.cell == Cell::kRnn) {
    for (const Act& a : cfg.acts) {
      const bool mapped = a.kind == ActKind::kTanh ||
                          a.kind == ActKind::kSigmoid ||
                          (a.kind == ActKind::kRelu);
      if (!mapped || a.kind != cfg.acts[0].kind) dnnl_fits = false;
    }
  } else if (!SameActs(cfg.acts, defaults)) {
    dnnl_fits = false;
  }
  if (path == RecurrentPath::kDnnlOnly && !dnnl_fits) {
    return Unimplemented(desc,
                         "oneDNN cannot run this node (clip, "
                         "input_forget or activations)");
  }
  auto kernel =
      std::make_unique<RecurrentKernel>(spec, std::move(cfg), path, dnnl_fits);
  kernel->MakeDirectionKernels(spec);
  GLINT_RETURN_IF_ERROR(kernel->Prepare(spec));
  return std::unique_ptr<Kernel>(std::move(kernel));
}

void RegisterRecurrentKernels(KernelRegistry* registry) {
  for (const char* op : {"RNN", "GRU", "LSTM"}) {
    registry->Register(op, [](const KernelSpec& spec) {
      return MakeRecurrentKernel(spec, RecurrentPath::kAuto);
    });
  }
}

}  // namespace glint::cpu
