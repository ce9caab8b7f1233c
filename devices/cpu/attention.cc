// Attention kernels: ONNX's Attention and RotaryEmbedding (opset 23, below)
// and glint.Attention.
//
// glint.Attention: multi-head scaled dot-product attention (float32), the
// node the CPU optimiser's FuseAttention writes for the Reshape / Transpose
// / MatMul / Softmax / MatMul / Transpose / Reshape chain exporters emit.
//
// Q [B, S, H*D], K and V [B, T, H*D] (heads side by side in the last axis,
// as the projections write them), or for self-attention one packed QKV
// [B, S, 3*H*D] (Q, K, V side by side: one projection GEMM instead of
// three), give Y [B, S, H*D]:
//   Y[b, :, h] = softmax(scale * Q[b, :, h] · K[b, :, h]^T) · V[b, :, h]
// where [b, :, h] is head h's D columns. Heads are read and written in
// place through leading dimensions (no transposes), and one head's scores
// ([S, T], a per-thread buffer) stay in cache between the two products.
// Heads run in parallel; each product is one oneDNN sgemm.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "devices/cpu/dnnl_util.h"
#include "devices/cpu/element_types.h"
#include "devices/cpu/kernel_util.h"
#include "optimizer/fused_ops.h"
#include "devices/cpu/register.h"

namespace glint::cpu {
namespace {

// exp(x) for x <= 0 (a softmax row minus its maximum), branch-free so that
// the row loop vectorises: Cody-Waite reduction x = n ln2 + r, |r| <=
// ln2/2, and Cephes' degree-6 polynomial for exp(r) (relative error about
// 2e-7). Below -87 (where float's normal range ends) it returns exp(-87),
// which is negligible beside the row's maximum term, 1.
inline float ExpNonPositive(float x) {
  x = x < -87.0f ? -87.0f : x;
  // Round to nearest by adding and subtracting 1.5 * 2^23.
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  return p * __builtin_bit_cast(float, bits);
}

// Softmax of each of `rows` rows of `cols` contiguous floats, in place.
// Every loop vectorises (with -fno-trapping-math, see BUILD); the clones
// for AVX2 and AVX-512 run it 2.5x faster than the SSE4 baseline.
GLINT_VECTOR_CLONES
void SoftmaxRows(float* data, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    float* row = data + i * cols;
    float max = row[0];
#pragma omp simd reduction(max : max)
    for (int64_t j = 1; j < cols; ++j) max = std::max(max, row[j]);
    for (int64_t j = 0; j < cols; ++j) row[j] = ExpNonPositive(row[j] - max);
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < cols; ++j) sum += row[j];
    const float inv = 1.0f / sum;
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j) row[j] *= inv;
  }
}

class AttentionKernel final : public KernelBase {
 public:
  AttentionKernel(const KernelSpec& spec, int64_t heads, float scale)
      : KernelBase(spec),
        heads_(heads),
        scale_(scale),
        packed_(spec.node->num_inputs() == 1) {}

  absl::Status Compute(KernelContext& ctx) const override {
    // Where each operand's rows start and how far apart they are: packed,
    // one [B, S, 3E] tensor holds a row of Q, K and V side by side.
    const float* base[3];
    int64_t ld = 0;
    Shape q, k;
    if (packed_) {
      GLINT_ASSIGN_OR_RETURN(const TensorView* qkv,
                             GetInput(ctx, 0, DType::kFloat32, node()));
      if (qkv->shape.rank() != 3 || qkv->shape.dim(2) % (3 * heads_) != 0) {
        return InvalidArgument(node(), "expected packed QKV [B, S, 3E] with E"
                               " a multiple of num_heads=", heads_, "; got ",
                               qkv->shape.ToString());
      }
      const int64_t e = qkv->shape.dim(2) / 3;
      q = k = Shape({qkv->shape.dim(0), qkv->shape.dim(1), e});
      for (int i = 0; i < 3; ++i) base[i] = qkv->as<const float>() + i * e;
      ld = 3 * e;
    } else {
      const TensorView* in[3];
      for (int i = 0; i < 3; ++i) {
        GLINT_ASSIGN_OR_RETURN(in[i],
                               GetInput(ctx, i, DType::kFloat32, node()));
        base[i] = in[i]->as<const float>();
      }
      q = in[0]->shape;
      k = in[1]->shape;
      const Shape& v = in[2]->shape;
      if (q.rank() != 3 || k.rank() != 3 || v != k || k.dim(0) != q.dim(0) ||
          k.dim(2) != q.dim(2) || q.dim(2) % heads_ != 0) {
        return InvalidArgument(node(), "expected Q [B, S, E] and K, V [B, T, "
                               "E] with E a multiple of num_heads=", heads_,
                               "; got ", q.ToString(), ", ", k.ToString(),
                               ", ", v.ToString());
      }
      ld = q.dim(2);
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, q,
                                                        DType::kFloat32,
                                                        node()));
    const int64_t batch = q.dim(0), s = q.dim(1), t = k.dim(1);
    const int64_t e = q.dim(2), d = e / heads_;
    if (y.num_elements() == 0) return absl::OkStatus();
    if (t == 0) {  // P · V over an empty inner axis, as MatMul gives it.
      std::fill_n(y.as<float>(), y.num_elements(), 0.0f);
      return absl::OkStatus();
    }
    float* py = y.as<float>();
    // Nothing may throw out of a parallel task: failures are recorded.
    std::atomic<int> failed{dnnl_success};
    std::atomic<bool> out_of_memory{false};
    auto run = [&](int64_t begin, int64_t end) {
      float* scores = nullptr;
      try {
        scores = static_cast<float*>(ThreadBuffer(
            ThreadBufferSlot::kScratchpad, sizeof(float) * s * t));
      } catch (const std::bad_alloc&) {
        out_of_memory = true;
        return;
      }
      for (int64_t p = begin; p < end; ++p) {
        const int64_t b = p / heads_, h = p % heads_;
        const float* qh = base[0] + b * s * ld + h * d;
        const float* kh = base[1] + b * t * ld + h * d;
        const float* vh = base[2] + b * t * ld + h * d;
        float* yh = py + b * s * e + h * d;
        // scores = scale * Qh · Kh^T, rows of Qh and Kh ld floats apart.
        dnnl_status_t st = dnnl_sgemm('N', 'T', s, t, d, scale_, qh, ld, kh,
                                      ld, 0.0f, scores, t);
        SoftmaxRows(scores, s, t);
        if (st == dnnl_success) {
          st = dnnl_sgemm('N', 'N', s, d, t, 1.0f, scores, t, vh, ld, 0.0f,
                          yh, e);
        }
        if (st != dnnl_success) failed = st;
      }
    };
    // One (batch, head) pair per task. A single pair runs on this thread
    // and its sgemms use the thread pool themselves.
    ParallelFor(batch * heads_, 1, run);
    if (out_of_memory) {
      return absl::ResourceExhaustedError(
          absl::StrCat(node(), ": out of memory for attention scores"));
    }
    if (failed != dnnl_success) {
      return absl::InternalError(absl::StrCat(
          node(), ": oneDNN sgemm failed with status ", failed.load()));
    }
    return absl::OkStatus();
  }

 private:
  int64_t heads_;
  float scale_;
  bool packed_;  // One [B, S, 3E] input (self-attention) instead of three.
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeAttention(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 3));
  if (spec.node->num_inputs() == 2) {
    return InvalidArgument(spec.node->Describe(),
                           "takes Q, K, V or one packed QKV; got 2 inputs");
  }
  for (int i = 0; i < spec.node->num_inputs(); ++i) {
    GLINT_RETURN_IF_ERROR(SpecInputDType(spec, i, {DType::kFloat32}).status());
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, DType::kFloat32).status());
  const int64_t heads = spec.node->GetInt("num_heads", 0);
  if (heads < 1) {
    return InvalidArgument(spec.node->Describe(),
                           "num_heads must be >= 1; got ", heads);
  }
  return std::unique_ptr<Kernel>(std::make_unique<AttentionKernel>(
      spec, heads, spec.node->GetFloat("scale", 1.0f)));
}

// ------------------------------------------------ Attention (opset 23)
//
// ONNX's Attention, float32: Q [B, Hq, Sq, D] or [B, Sq, Hq*D], K and V
// [B, Hkv, Skv, D|Dv] or [B, Skv, Hkv*D|Dv] (3-D takes q_num_heads and
// kv_num_heads), past_key/past_value [B, Hkv, P, D|Dv] prepended along the
// sequence (present_key/present_value, T = P + Skv). Query head h reads
// KV head h / (Hq / Hkv) (grouped-query attention). Per (batch, head), in
// blocks of query rows whose scores [rows, T] stay in cache, as
// onnxruntime's CPU kernel orders it:
//   scores = scale * Q K^T           (qk_matmul_output_mode 0)
//          + attn_mask, causal mask  (mode 1; bool False and j > i + P:
//                                     -inf; a short mask's missing
//                                     columns too)
//   softcap: c * tanh(scores / c)    (mode 2)
//   softmax over T                   (mode 3)
//   Y = softmax · V
// Both products are oneDNN sgemms reading the heads in place through
// leading dimensions (the 3-D layouts need no transposes); heads run in
// parallel. A row whose every score is -inf has no softmax: its
// probabilities and Y are NaN, as in ONNX's reference and onnxruntime.

// Softmax of each of `rows` rows of `cols` floats, in place; -inf scores
// (masked) get probability 0 exactly.
GLINT_VECTOR_CLONES
void MaskedSoftmaxRows(float* data, int64_t rows, int64_t cols) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < rows; ++i) {
    float* row = data + i * cols;
    float max = row[0];
#pragma omp simd reduction(max : max)
    for (int64_t j = 1; j < cols; ++j) max = std::max(max, row[j]);
    for (int64_t j = 0; j < cols; ++j) {
      row[j] = row[j] == kNegInf ? 0.0f : ExpNonPositive(row[j] - max);
    }
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < cols; ++j) sum += row[j];
    // All -inf: 0 * inf = NaN throughout, as the reference's 0/0.
    const float inv = max == kNegInf ? std::numeric_limits<float>::quiet_NaN()
                                     : 1.0f / sum;
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j) row[j] *= inv;
  }
}

// Outputs of Attention are sized by run-time shapes of inputs that may be
// empty (Q with D = 0 still gives a [.., Sq, Dv] Y): each is capped.
constexpr double kMaxAttentionElements = static_cast<double>(int64_t{1} << 31);

class OnnxAttentionKernel final : public KernelBase {
 public:
  OnnxAttentionKernel(const KernelSpec& spec, bool causal, float scale,
                      float softcap, int64_t mode, int64_t q_heads,
                      int64_t kv_heads)
      : KernelBase(spec),
        causal_(causal),
        scale_(scale),
        softcap_(softcap),
        mode_(mode),
        q_heads_(q_heads),
        kv_heads_(kv_heads) {}

  absl::Status Compute(KernelContext& ctx) const override {
    const TensorView* in[3];
    for (int i = 0; i < 3; ++i) {
      GLINT_ASSIGN_OR_RETURN(in[i], GetInput(ctx, i, DType::kFloat32, node()));
    }
    GLINT_ASSIGN_OR_RETURN(const TensorView* mask,
                           GetOptionalInput(ctx, 3, DType::kUndefined, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* past_k,
                           GetOptionalInput(ctx, 4, DType::kFloat32, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* past_v,
                           GetOptionalInput(ctx, 5, DType::kFloat32, node()));
    const Shape &qs = in[0]->shape, &ks = in[1]->shape, &vs = in[2]->shape;
    const int rank = qs.rank();
    if ((rank != 3 && rank != 4) || ks.rank() != rank || vs.rank() != rank) {
      return InvalidArgument(node(), "Q, K and V must all be 3-D or 4-D; got ",
                             qs.ToString(), ", ", ks.ToString(), ", ",
                             vs.ToString());
    }
    Geometry g;
    g.three_d = rank == 3;
    g.b = qs.dim(0);
    if (g.three_d) {
      if (q_heads_ < 1 || kv_heads_ < 1) {
        return InvalidArgument(node(), "3-D inputs need q_num_heads and "
                               "kv_num_heads >= 1");
      }
      g.hq = q_heads_;
      g.hkv = kv_heads_;
      g.sq = qs.dim(1);
      g.skv = ks.dim(1);
      if (qs.dim(2) % g.hq != 0 || ks.dim(2) % g.hkv != 0 ||
          vs.dim(2) % g.hkv != 0) {
        return InvalidArgument(node(), "hidden sizes of Q ", qs.ToString(),
                               ", K ", ks.ToString(), ", V ", vs.ToString(),
                               " are not multiples of q_num_heads=", g.hq,
                               " / kv_num_heads=", g.hkv);
      }
      g.d = qs.dim(2) / g.hq;
      g.dv = vs.dim(2) / g.hkv;
      if (ks.dim(2) / g.hkv != g.d || vs.dim(1) != g.skv) {
        return InvalidArgument(node(), "K ", ks.ToString(), " and V ",
                               vs.ToString(), " do not match Q ",
                               qs.ToString());
      }
    } else {
      g.hq = qs.dim(1);
      g.sq = qs.dim(2);
      g.d = qs.dim(3);
      g.hkv = ks.dim(1);
      g.skv = ks.dim(2);
      g.dv = vs.dim(3);
      if (ks.dim(3) != g.d || vs.dim(1) != g.hkv || vs.dim(2) != g.skv) {
        return InvalidArgument(node(), "K ", ks.ToString(), " and V ",
                               vs.ToString(), " do not match Q ",
                               qs.ToString());
      }
    }
    if (ks.dim(0) != g.b || vs.dim(0) != g.b) {
      return InvalidArgument(node(), "Q, K and V have different batch sizes");
    }
    if (g.hkv < 1 || g.hq % g.hkv != 0) {
      return InvalidArgument(node(), "query heads (", g.hq,
                             ") must be a multiple of key/value heads (",
                             g.hkv, ")");
    }
    if ((past_k == nullptr) != (past_v == nullptr)) {
      return InvalidArgument(node(), "past_key and past_value come together");
    }
    if (past_k != nullptr) {
      const Shape &pk = past_k->shape, &pv = past_v->shape;
      if (pk.rank() != 4 || pv.rank() != 4 || pk.dim(0) != g.b ||
          pk.dim(1) != g.hkv || pk.dim(3) != g.d || pv.dim(0) != g.b ||
          pv.dim(1) != g.hkv || pv.dim(2) != pk.dim(2) || pv.dim(3) != g.dv) {
        return InvalidArgument(node(), "past_key ", pk.ToString(),
                               " / past_value ", pv.ToString(), " must be [",
                               g.b, ", ", g.hkv, ", P, ", g.d, " / ", g.dv,
                               "]");
      }
      g.p = pk.dim(2);
    }
    g.t = g.p + g.skv;
    const double bh = static_cast<double>(g.b) * g.hq;
    const double bhk = static_cast<double>(g.b) * g.hkv;
    if (bh * g.sq * g.dv > kMaxAttentionElements ||
        bhk * g.t * std::max(g.d, g.dv) > kMaxAttentionElements ||
        (ctx.output_used(3) && bh * g.sq * g.t > kMaxAttentionElements)) {
      return InvalidArgument(node(), "outputs exceed 2^31 elements");
    }
    GLINT_ASSIGN_OR_RETURN(MaskPlan mp, PlanMask(mask, g));

    const std::vector<int64_t> y_dims =
        g.three_d ? std::vector<int64_t>{g.b, g.sq, g.hq * g.dv}
                  : std::vector<int64_t>{g.b, g.hq, g.sq, g.dv};
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
        ctx, 0, Shape(y_dims), DType::kFloat32, node()));
    // K and V as the scores read them: in place without a past, else the
    // present tensors (the outputs, or scratch when those are unused).
    Operand k{in[1]->as<const float>(), g.three_d ? g.hkv * g.d : g.d,
              g.three_d ? g.d : g.skv * g.d,
              g.three_d ? g.skv * g.hkv * g.d : g.hkv * g.skv * g.d};
    Operand v{in[2]->as<const float>(), g.three_d ? g.hkv * g.dv : g.dv,
              g.three_d ? g.dv : g.skv * g.dv,
              g.three_d ? g.skv * g.hkv * g.dv : g.hkv * g.skv * g.dv};
    std::vector<float> scratch_k, scratch_v;
    for (int which = 0; which < 2; ++which) {
      const int64_t width = which == 0 ? g.d : g.dv;
      const bool used = ctx.num_outputs() > 1 + which &&
                        ctx.output_used(1 + which);
      float* present = nullptr;
      if (used) {
        GLINT_ASSIGN_OR_RETURN(TensorView pt, AllocateOutput(
            ctx, 1 + which, Shape({g.b, g.hkv, g.t, width}), DType::kFloat32,
            node()));
        present = pt.as<float>();
      } else if (g.p > 0) {
        std::vector<float>& s = which == 0 ? scratch_k : scratch_v;
        s.resize(static_cast<size_t>(g.b * g.hkv * g.t * width));
        present = s.data();
      }
      if (present == nullptr) continue;
      Operand& op = which == 0 ? k : v;
      const TensorView* past = which == 0 ? past_k : past_v;
      BuildPresent(past, op, g, width, present);
      if (g.p > 0) {
        op = Operand{present, width, g.t * width, g.hkv * g.t * width};
      }
    }
    float* qk = nullptr;
    if (ctx.num_outputs() > 3 && ctx.output_used(3)) {
      GLINT_ASSIGN_OR_RETURN(TensorView t, AllocateOutput(
          ctx, 3, Shape({g.b, g.hq, g.sq, g.t}), DType::kFloat32, node()));
      qk = t.as<float>();
    }
    if (g.b * g.hq * g.sq == 0 || (y.num_elements() == 0 && qk == nullptr)) {
      return absl::OkStatus();
    }
    const float scale = std::isnan(scale_)
                            ? 1.0f / std::sqrt(static_cast<float>(g.d))
                            : scale_;
    Operand q{in[0]->as<const float>(), g.three_d ? g.hq * g.d : g.d,
              g.three_d ? g.d : g.sq * g.d,
              g.three_d ? g.sq * g.hq * g.d : g.hq * g.sq * g.d};
    return Run(g, q, k, v, mp, scale, y.as<float>(), qk);
  }

 private:
  struct Geometry {
    bool three_d = false;
    int64_t b = 0, hq = 0, hkv = 0, sq = 0, skv = 0, p = 0, t = 0, d = 0,
            dv = 0;
  };
  // A [B, H, S, W] operand read in place: row r of head h in batch b starts
  // at data + b * batch + h * head + r * ld.
  struct Operand {
    const float* data;
    int64_t ld, head, batch;
    const float* At(int64_t b, int64_t h) const {
      return data + b * batch + h * head;
    }
  };
  // attn_mask broadcast to [B, Hq, Sq, T]: element strides per axis (0 when
  // broadcast), the columns it has (later ones are masked out), bool or
  // float.
  struct MaskPlan {
    const void* data = nullptr;
    bool is_bool = false;
    int64_t stride[4] = {0, 0, 0, 0};
    int64_t cols = 0;
  };

  absl::StatusOr<MaskPlan> PlanMask(const TensorView* mask,
                                    const Geometry& g) const {
    MaskPlan mp;
    if (mask == nullptr) return mp;
    if (mask->dtype != DType::kBool && mask->dtype != DType::kFloat32) {
      return InvalidArgument(node(), "attn_mask must be bool or float32; got ",
                             DTypeName(mask->dtype));
    }
    const int r = mask->shape.rank();
    if (r < 1 || r > 4) {
      return InvalidArgument(node(), "attn_mask ", mask->shape.ToString(),
                             " must have rank 1 to 4");
    }
    const int64_t target[4] = {g.b, g.hq, g.sq, g.t};
    int64_t dims[4] = {1, 1, 1, 1};
    for (int i = 0; i < r; ++i) dims[4 - r + i] = mask->shape.dim(i);
    int64_t stride = 1;
    for (int a = 3; a >= 0; --a) {
      const bool last = a == 3;
      const bool fits = dims[a] == target[a] || dims[a] == 1 ||
                        (last && dims[a] < target[a]);
      if (!fits) {
        return InvalidArgument(node(), "attn_mask ", mask->shape.ToString(),
                               " does not broadcast to [", g.b, ", ", g.hq,
                               ", ", g.sq, ", ", g.t, "]");
      }
      mp.stride[a] = dims[a] == 1 && target[a] != 1 ? 0 : stride;
      stride *= dims[a];
    }
    // A one-column mask broadcasts; a shorter one leaves the rest masked.
    mp.cols = dims[3] == 1 ? g.t : dims[3];
    mp.data = mask->data;
    mp.is_bool = mask->dtype == DType::kBool;
    return mp;
  }

  // present = concat(past, new) along the sequence, [B, Hkv, T, width].
  static void BuildPresent(const TensorView* past, const Operand& fresh,
                           const Geometry& g, int64_t width, float* present) {
    for (int64_t b = 0; b < g.b; ++b) {
      for (int64_t h = 0; h < g.hkv; ++h) {
        float* dst = present + (b * g.hkv + h) * g.t * width;
        if (g.p > 0) {
          const float* src =
              past->as<const float>() + (b * g.hkv + h) * g.p * width;
          std::copy(src, src + g.p * width, dst);
          dst += g.p * width;
        }
        const float* src = fresh.At(b, h);
        for (int64_t s = 0; s < g.skv; ++s) {
          std::copy(src + s * fresh.ld, src + s * fresh.ld + width,
                    dst + s * width);
        }
      }
    }
  }

  absl::Status Run(const Geometry& g, const Operand& q, const Operand& k,
                   const Operand& v, const MaskPlan& mp, float scale, float* y,
                   float* qk) const {
    const int64_t group = g.hq / g.hkv;
    const int64_t ldy = g.three_d ? g.hq * g.dv : g.dv;
    // Query rows per block: their scores fill about 256 KiB.
    const int64_t block =
        std::clamp<int64_t>((int64_t{1} << 16) / std::max<int64_t>(g.t, 1), 1,
                            g.sq);
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    std::atomic<int> failed{dnnl_success};
    std::atomic<bool> out_of_memory{false};
    auto run = [&](int64_t begin, int64_t end) {
      float* scores = nullptr;
      try {
        scores = static_cast<float*>(ThreadBuffer(
            ThreadBufferSlot::kScratchpad,
            sizeof(float) * std::max<int64_t>(1, block * g.t)));
      } catch (const std::bad_alloc&) {
        out_of_memory = true;
        return;
      }
      for (int64_t task = begin; task < end; ++task) {
        const int64_t b = task / g.hq, h = task % g.hq, hk = h / group;
        const float* qh = q.At(b, h);
        const float* kh = k.At(b, hk);
        const float* vh = v.At(b, hk);
        float* yh = y + (g.three_d ? b * g.sq * ldy + h * g.dv
                                   : (b * g.hq + h) * g.sq * g.dv);
        float* qkh = qk == nullptr ? nullptr : qk + (b * g.hq + h) * g.sq * g.t;
        for (int64_t i0 = 0; i0 < g.sq; i0 += block) {
          const int64_t rows = std::min(block, g.sq - i0);
          const int64_t n = rows * g.t;
          if (g.d > 0 && g.t > 0) {
            const dnnl_status_t st =
                dnnl_sgemm('N', 'T', rows, g.t, g.d, scale, qh + i0 * q.ld,
                           q.ld, kh, k.ld, 0.0f, scores, g.t);
            if (st != dnnl_success) failed = st;
          } else {
            std::fill_n(scores, n, 0.0f);
          }
          float* qk_rows = qkh == nullptr ? nullptr : qkh + i0 * g.t;
          if (qk_rows != nullptr && mode_ == 0) {
            std::copy(scores, scores + n, qk_rows);
          }
          if (mp.data != nullptr) AddMask(mp, g, b, h, i0, rows, scores);
          if (causal_) {
            for (int64_t r = 0; r < rows; ++r) {
              // Query i sees the past and the new keys up to itself.
              const int64_t first = std::max<int64_t>(0, g.p + i0 + r + 1);
              std::fill(scores + r * g.t + std::min(first, g.t),
                        scores + (r + 1) * g.t, kNegInf);
            }
          }
          if (qk_rows != nullptr && mode_ == 1) {
            std::copy(scores, scores + n, qk_rows);
          }
          if (softcap_ > 0) {
            const float c = softcap_, inv = 1.0f / softcap_;
            for (int64_t i = 0; i < n; ++i) {
              scores[i] = c * std::tanh(scores[i] * inv);
            }
          }
          if (qk_rows != nullptr && mode_ == 2) {
            std::copy(scores, scores + n, qk_rows);
          }
          if (g.t > 0) MaskedSoftmaxRows(scores, rows, g.t);
          if (qk_rows != nullptr && mode_ == 3) {
            std::copy(scores, scores + n, qk_rows);
          }
          if (g.dv == 0) continue;
          float* y_rows = yh + i0 * ldy;
          if (g.t == 0) {  // P · V over an empty inner axis, as MatMul.
            for (int64_t r = 0; r < rows; ++r) {
              std::fill_n(y_rows + r * ldy, g.dv, 0.0f);
            }
            continue;
          }
          const dnnl_status_t st =
              dnnl_sgemm('N', 'N', rows, g.dv, g.t, 1.0f, scores, g.t, vh,
                         v.ld, 0.0f, y_rows, ldy);
          if (st != dnnl_success) failed = st;
        }
      }
    };
    // One (batch, head) pair per task. A single pair runs on this thread
    // and its sgemms use the thread pool themselves.
    ParallelFor(g.b * g.hq, 1, run);
    if (out_of_memory) {
      return absl::ResourceExhaustedError(
          absl::StrCat(node(), ": out of memory for attention scores"));
    }
    if (failed != dnnl_success) {
      return absl::InternalError(absl::StrCat(
          node(), ": oneDNN sgemm failed with status ", failed.load()));
    }
    return absl::OkStatus();
  }

  // scores[r, j] += mask[b, h, i0 + r, j] (broadcast), -inf for a false
  // bool or a column the mask does not have.
  static void AddMask(const MaskPlan& mp, const Geometry& g, int64_t b,
                      int64_t h, int64_t i0, int64_t rows, float* scores) {
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    const int64_t base = b * mp.stride[0] + h * mp.stride[1];
    const int64_t cols = std::min(mp.cols, g.t);
    for (int64_t r = 0; r < rows; ++r) {
      float* row = scores + r * g.t;
      const int64_t at = base + (i0 + r) * mp.stride[2];
      const int64_t cs = mp.stride[3];
      if (mp.is_bool) {
        const bool* m = static_cast<const bool*>(mp.data) + at;
        for (int64_t j = 0; j < cols; ++j) {
          if (!m[j * cs]) row[j] = kNegInf;
        }
      } else {
        const float* m = static_cast<const float*>(mp.data) + at;
        for (int64_t j = 0; j < cols; ++j) row[j] += m[j * cs];
      }
      for (int64_t j = cols; j < g.t; ++j) row[j] = kNegInf;
    }
  }

  bool causal_;
  float scale_;  // NaN: 1 / sqrt(D).
  float softcap_;
  int64_t mode_;
  int64_t q_heads_, kv_heads_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeOnnxAttention(
    const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 3, 6));
  const std::string node = spec.node->Describe();
  const std::string op = absl::StrCat(
      "Attention-", spec.opset_version == 0 ? std::string("latest")
                                            : absl::StrCat(spec.opset_version));
  for (int i = 0; i < 3; ++i) {
    if (!spec.has_input(i)) {
      return InvalidArgument(node, "Q, K and V are required");
    }
    if (spec.inputs[i].dtype != DType::kFloat32) {
      return Unimplemented(node, op, " on ", DTypeName(spec.inputs[i].dtype),
                           " not supported (float32 only)");
    }
  }
  if (spec.has_input(3)) {
    GLINT_RETURN_IF_ERROR(
        SpecInputDType(spec, 3, {DType::kBool, DType::kFloat32}).status());
  }
  for (int i = 4; i < 6; ++i) {
    if (spec.has_input(i)) {
      GLINT_RETURN_IF_ERROR(
          SpecInputDType(spec, i, {DType::kFloat32}).status());
    }
  }
  for (int i = 0; i < static_cast<int>(spec.node->outputs.size()); ++i) {
    if (i >= 4) return InvalidArgument(node, "has at most 4 outputs");
    if (!spec.node->outputs[i].empty()) {
      GLINT_RETURN_IF_ERROR(
          SpecOutputDType(spec, i, DType::kFloat32).status());
    }
  }
  const int64_t causal = spec.node->GetInt("is_causal", 0);
  if (causal != 0 && causal != 1) {
    return InvalidArgument(node, "is_causal must be 0 or 1; got ", causal);
  }
  const float scale = spec.node->GetFloat(
      "scale", std::numeric_limits<float>::quiet_NaN());
  if (!std::isnan(scale) && !(scale > 0 && std::isfinite(scale))) {
    return InvalidArgument(node, "scale must be positive; got ", scale);
  }
  const float softcap = spec.node->GetFloat("softcap", 0.0f);
  if (!(softcap >= 0 && std::isfinite(softcap))) {
    return InvalidArgument(node, "softcap must be >= 0; got ", softcap);
  }
  const int64_t mode = spec.node->GetInt("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) {
    return InvalidArgument(node, "qk_matmul_output_mode must be 0 to 3; got ",
                           mode);
  }
  // The softmax runs in float32 whatever softmax_precision asks; float32 is
  // what onnxruntime's CPU kernel uses for float32 inputs too.
  const int64_t precision = spec.node->GetInt("softmax_precision", 0);
  if (precision != 0 && precision != 1 && precision != 10 &&
      precision != 11 && precision != 16) {
    return InvalidArgument(node, "softmax_precision must be a float type; "
                           "got ", precision);
  }
  return std::unique_ptr<Kernel>(new OnnxAttentionKernel(
      spec, causal == 1, scale, softcap, mode,
      spec.node->GetInt("q_num_heads", 0),
      spec.node->GetInt("kv_num_heads", 0)));
}

// ------------------------------------------ RotaryEmbedding (opset 23)
//
// X [B, H, S, D] or [B, S, H*D] (num_heads): the first
// rotary_embedding_dim (default D) features of each head are rotated in
// pairs by the position's angle, (x1, x2) -> (c x1 - s x2, s x1 + c x2),
// pairs being (i, i + half) or, interleaved, (2i, 2i + 1); the rest are
// copied. cos/sin come from [B, S, half] caches, or rows position_ids
// [B, S] of [max_position, half] ones.

class RotaryEmbeddingKernel final : public KernelBase {
 public:
  RotaryEmbeddingKernel(const KernelSpec& spec, DType dtype, bool interleaved,
                        int64_t rotary_dim, int64_t heads)
      : KernelBase(spec),
        dtype_(dtype),
        interleaved_(interleaved),
        rotary_dim_(rotary_dim),
        heads_(heads) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* cos,
                           GetInput(ctx, 1, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* sin,
                           GetInput(ctx, 2, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* pos,
                           GetOptionalInput(ctx, 3, DType::kInt64, node()));
    const Shape& xs = x->shape;
    int64_t b, h, s, d;
    if (xs.rank() == 4) {
      b = xs.dim(0), h = xs.dim(1), s = xs.dim(2), d = xs.dim(3);
    } else if (xs.rank() == 3) {
      if (heads_ < 1) {
        return InvalidArgument(node(), "3-D X needs num_heads >= 1");
      }
      if (xs.dim(2) % heads_ != 0) {
        return InvalidArgument(node(), "hidden size ", xs.dim(2),
                               " is not a multiple of num_heads=", heads_);
      }
      b = xs.dim(0), s = xs.dim(1), h = heads_, d = xs.dim(2) / heads_;
    } else {
      return InvalidArgument(node(), "X ", xs.ToString(),
                             " must be [B, H, S, D] or [B, S, H*D]");
    }
    const int64_t rot = rotary_dim_ > 0 ? rotary_dim_ : d;
    if (rot % 2 != 0 || rot > d) {
      return InvalidArgument(node(), "rotary_embedding_dim ", rot,
                             " must be even and at most the head size ", d);
    }
    const int64_t half = rot / 2;
    const Shape want_cache =
        pos != nullptr ? Shape({cos->shape.rank() == 2 ? cos->shape.dim(0) : -1,
                                half})
                       : Shape({b, s, half});
    if (cos->shape != want_cache || sin->shape != cos->shape) {
      return InvalidArgument(
          node(), "cos_cache ", cos->shape.ToString(), " and sin_cache ",
          sin->shape.ToString(), " must be ",
          pos != nullptr ? absl::StrCat("[max_position, ", half, "]")
                         : want_cache.ToString());
    }
    const int64_t positions = pos != nullptr ? cos->shape.dim(0) : 0;
    if (pos != nullptr && pos->shape != Shape({b, s})) {
      return InvalidArgument(node(), "position_ids ", pos->shape.ToString(),
                             " must be [", b, ", ", s, "]");
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y,
                           AllocateOutput(ctx, 0, xs, dtype_, node()));
    if (y.num_elements() == 0) return absl::OkStatus();
    if (pos != nullptr) {
      const int64_t* p = pos->as<const int64_t>();
      for (int64_t i = 0; i < b * s; ++i) {
        if (p[i] < 0 || p[i] >= positions) {
          return InvalidArgument(node(), "position_ids holds ", p[i],
                                 ", outside the caches' ", positions,
                                 " positions");
        }
      }
    }
    return VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      if constexpr (kIsFloatStorage<S>) {
        Rotate<S>(*x, *cos, *sin, pos, b, h, s, d, half, y);
      }
      return absl::OkStatus();
    });
  }

 private:
  template <typename S>
  void Rotate(const TensorView& x, const TensorView& cos_cache,
              const TensorView& sin_cache, const TensorView* pos, int64_t b,
              int64_t h, int64_t s, int64_t d, int64_t half,
              const TensorView& y) const {
    using C = ComputeType<S>;
    const bool four_d = x.shape.rank() == 4;
    const S* px = x.as<const S>();
    const S* pc = cos_cache.as<const S>();
    const S* ps = sin_cache.as<const S>();
    S* py = y.as<S>();
    const int64_t rows = b * s * h;
    ParallelFor(rows, std::max<int64_t>(1, 16384 / d),
                [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        // r walks (batch, position, head); the row's place depends on the
        // layout.
        const int64_t bi = r / (s * h), si = (r / h) % s, hi = r % h;
        const int64_t at = four_d ? ((bi * h + hi) * s + si) * d
                                  : ((bi * s + si) * h + hi) * d;
        const int64_t cache_row =
            pos != nullptr ? pos->as<const int64_t>()[bi * s + si]
                           : bi * s + si;
        const S* c = pc + cache_row * half;
        const S* sn = ps + cache_row * half;
        const S* in = px + at;
        S* out = py + at;
        for (int64_t i = 0; i < half; ++i) {
          const int64_t i1 = interleaved_ ? 2 * i : i;
          const int64_t i2 = interleaved_ ? 2 * i + 1 : i + half;
          const C x1 = Load<C>(in[i1]), x2 = Load<C>(in[i2]);
          const C cv = Load<C>(c[i]), sv = Load<C>(sn[i]);
          out[i1] = Store<S>(static_cast<C>(cv * x1 - sv * x2));
          out[i2] = Store<S>(static_cast<C>(sv * x1 + cv * x2));
        }
        std::copy(in + 2 * half, in + d, out + 2 * half);
      }
    });
  }

  DType dtype_;
  bool interleaved_;
  int64_t rotary_dim_;
  int64_t heads_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeRotaryEmbedding(
    const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 3, 4));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kAllFloatDTypes));
  for (int i = 1; i < 3; ++i) {
    GLINT_RETURN_IF_ERROR(SpecInputDType(spec, i, {dtype}).status());
  }
  if (spec.has_input(3)) {
    GLINT_RETURN_IF_ERROR(SpecInputDType(spec, 3, {DType::kInt64}).status());
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  const int64_t interleaved = spec.node->GetInt("interleaved", 0);
  if (interleaved != 0 && interleaved != 1) {
    return InvalidArgument(spec.node->Describe(),
                           "interleaved must be 0 or 1; got ", interleaved);
  }
  const int64_t rotary_dim = spec.node->GetInt("rotary_embedding_dim", 0);
  if (rotary_dim < 0) {
    return InvalidArgument(spec.node->Describe(),
                           "rotary_embedding_dim must be >= 0; got ",
                           rotary_dim);
  }
  return std::unique_ptr<Kernel>(new RotaryEmbeddingKernel(
      spec, dtype, interleaved == 1, rotary_dim,
      spec.node->GetInt("num_heads", 0)));
}

}  // namespace

void RegisterAttentionKernels(KernelRegistry* registry) {
  registry->Register(kAttentionOp, MakeAttention);
  registry->Register("Attention", MakeOnnxAttention);
  registry->Register("RotaryEmbedding", MakeRotaryEmbedding);
}

}  // namespace glint::cpu
