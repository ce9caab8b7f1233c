// ONNX's Attention and RotaryEmbedding (opset 23) against references
// computed here in double, written from the ONNX operator specs (and, for
// the order of mask and softcap, onnxruntime's CPU kernel: the mask is
// added before the softcap).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "devices/cpu/element_types.h"
#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using ::testing::HasSubstr;
using testing::MakeNode;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunKernel;
using testing::RunKernelOptions;
using testing::ToVector;

using Ints = std::vector<int64_t>;

constexpr double kInf = std::numeric_limits<double>::infinity();

using testing::Opset;

Tensor BoolTensor(Ints dims, const std::vector<int>& values) {
  std::vector<uint8_t> bytes(values.begin(), values.end());
  return Tensor::FromVector(DType::kBool, Shape(std::move(dims)), bytes);
}

// Elementwise |got - want| <= tol * max(1, |want|); NaN must meet NaN.
void ExpectNear(const Tensor& got, const std::vector<double>& want,
                double tol, const std::string& what) {
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size())) << what;
  const float* g = got.data<float>();
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(g[i])) << what << " element " << i;
      continue;
    }
    ASSERT_NEAR(g[i], want[i], tol * std::max(1.0, std::fabs(want[i])))
        << what << " element " << i;
  }
}

// ---------------------------------------------------------------- Attention

struct AttentionCase {
  std::string name;
  int64_t b = 1, hq = 2, hkv = 2, sq = 3, skv = 4, p = 0, d = 8, dv = 8;
  bool three_d = false;
  bool causal = false;
  float scale = 0;  // 0: the default 1/sqrt(D).
  float softcap = 0;
  std::string mask;  // "", "bool" or "float".
  Ints mask_dims;
  int64_t mode = -1;  // qk_matmul_output_mode; -1: no qk output.
  bool presents = false;
};

struct AttentionRef {
  std::vector<double> y, present_k, present_v, qk;
};

// The [B, H, S, W] element (b, h, s, w) of a 4-D tensor, or of its 3-D
// [B, S, H*W] form.
double At4(const std::vector<float>& t, bool three_d, int64_t h_count,
           int64_t s_count, int64_t w_count, int64_t b, int64_t h, int64_t s,
           int64_t w) {
  return three_d ? t[((b * s_count + s) * h_count + h) * w_count + w]
                 : t[((b * h_count + h) * s_count + s) * w_count + w];
}

AttentionRef ReferenceAttention(const AttentionCase& c,
                                const std::vector<float>& q,
                                const std::vector<float>& k,
                                const std::vector<float>& v,
                                const std::vector<float>& past_k,
                                const std::vector<float>& past_v,
                                const Tensor* mask) {
  const int64_t t = c.p + c.skv;
  AttentionRef r;
  r.present_k.resize(c.b * c.hkv * t * c.d);
  r.present_v.resize(c.b * c.hkv * t * c.dv);
  for (int64_t b = 0; b < c.b; ++b) {
    for (int64_t h = 0; h < c.hkv; ++h) {
      for (int64_t j = 0; j < t; ++j) {
        for (int64_t w = 0; w < c.d; ++w) {
          r.present_k[((b * c.hkv + h) * t + j) * c.d + w] =
              j < c.p ? past_k[((b * c.hkv + h) * c.p + j) * c.d + w]
                      : At4(k, c.three_d, c.hkv, c.skv, c.d, b, h, j - c.p, w);
        }
        for (int64_t w = 0; w < c.dv; ++w) {
          r.present_v[((b * c.hkv + h) * t + j) * c.dv + w] =
              j < c.p ? past_v[((b * c.hkv + h) * c.p + j) * c.dv + w]
                      : At4(v, c.three_d, c.hkv, c.skv, c.dv, b, h, j - c.p, w);
        }
      }
    }
  }
  // The mask, numpy-broadcast to [B, Hq, Sq, T] (a one-column mask
  // broadcasts, a shorter one is padded with masked columns).
  auto mask_at = [&](int64_t b, int64_t h, int64_t i, int64_t j) -> double {
    if (mask == nullptr) return 0;
    Ints md(4, 1);
    const int mr = mask->shape().rank();
    for (int a = 0; a < mr; ++a) md[4 - mr + a] = mask->shape().dim(a);
    if (md[3] != 1 && j >= md[3]) return -kInf;
    const int64_t idx[4] = {md[0] == 1 ? 0 : b, md[1] == 1 ? 0 : h,
                            md[2] == 1 ? 0 : i, md[3] == 1 ? 0 : j};
    const int64_t flat = ((idx[0] * md[1] + idx[1]) * md[2] + idx[2]) * md[3] +
                         idx[3];
    if (mask->dtype() == DType::kBool) {
      return mask->data<bool>()[flat] ? 0.0 : -kInf;
    }
    return mask->data<float>()[flat];
  };
  const double scale = c.scale > 0 ? c.scale : 1 / std::sqrt(double(c.d));
  const int64_t group = c.hq / c.hkv;
  r.y.assign(c.b * c.hq * c.sq * c.dv, 0.0);
  r.qk.assign(c.b * c.hq * c.sq * t, 0.0);
  for (int64_t b = 0; b < c.b; ++b) {
    for (int64_t h = 0; h < c.hq; ++h) {
      const int64_t hk = h / group;
      for (int64_t i = 0; i < c.sq; ++i) {
        std::vector<double> s(t);
        for (int64_t j = 0; j < t; ++j) {
          double dot = 0;
          for (int64_t w = 0; w < c.d; ++w) {
            dot += At4(q, c.three_d, c.hq, c.sq, c.d, b, h, i, w) *
                   r.present_k[((b * c.hkv + hk) * t + j) * c.d + w];
          }
          double x = scale * dot;
          if (c.mode == 0) r.qk[((b * c.hq + h) * c.sq + i) * t + j] = x;
          x += mask_at(b, h, i, j);
          if (c.causal && j > i + c.p) x = -kInf;
          if (c.mode == 1) r.qk[((b * c.hq + h) * c.sq + i) * t + j] = x;
          if (c.softcap > 0) x = c.softcap * std::tanh(x / c.softcap);
          if (c.mode == 2) r.qk[((b * c.hq + h) * c.sq + i) * t + j] = x;
          s[j] = x;
        }
        const double max = *std::max_element(s.begin(), s.end());
        double sum = 0;
        for (double& x : s) {
          x = std::exp(x - max);  // All -inf: NaN, as numpy.
          sum += x;
        }
        for (int64_t j = 0; j < t; ++j) {
          s[j] /= sum;
          if (c.mode == 3) r.qk[((b * c.hq + h) * c.sq + i) * t + j] = s[j];
        }
        for (int64_t w = 0; w < c.dv; ++w) {
          double acc = 0;
          for (int64_t j = 0; j < t; ++j) {
            acc += s[j] * r.present_v[((b * c.hkv + hk) * t + j) * c.dv + w];
          }
          // Y in the inputs' layout.
          const int64_t at =
              c.three_d ? ((b * c.sq + i) * c.hq + h) * c.dv + w
                        : ((b * c.hq + h) * c.sq + i) * c.dv + w;
          r.y[at] = acc;
        }
      }
    }
  }
  return r;
}

void RunAttentionCase(const AttentionCase& c, uint32_t seed) {
  SCOPED_TRACE(c.name);
  const Ints qd = c.three_d ? Ints{c.b, c.sq, c.hq * c.d}
                            : Ints{c.b, c.hq, c.sq, c.d};
  const Ints kd = c.three_d ? Ints{c.b, c.skv, c.hkv * c.d}
                            : Ints{c.b, c.hkv, c.skv, c.d};
  const Ints vd = c.three_d ? Ints{c.b, c.skv, c.hkv * c.dv}
                            : Ints{c.b, c.hkv, c.skv, c.dv};
  std::vector<Tensor> in = {RandomTensor(qd, seed, -2, 2),
                            RandomTensor(kd, seed + 1, -2, 2),
                            RandomTensor(vd, seed + 2), Tensor(), Tensor(),
                            Tensor()};
  std::vector<std::string> names = {"q", "k", "v", "", "", ""};
  if (c.mask == "bool") {
    int64_t n = 1;
    for (int64_t x : c.mask_dims) n *= x;
    std::vector<int> bits(n);
    for (int64_t i = 0; i < n; ++i) bits[i] = (i * 7 + seed) % 4 != 0;
    in[3] = BoolTensor(c.mask_dims, bits);
    names[3] = "m";
  } else if (c.mask == "float") {
    in[3] = RandomTensor(c.mask_dims, seed + 3, -3, 1);
    names[3] = "m";
  }
  if (c.p > 0) {
    in[4] = RandomTensor({c.b, c.hkv, c.p, c.d}, seed + 4, -2, 2);
    in[5] = RandomTensor({c.b, c.hkv, c.p, c.dv}, seed + 5);
    names[4] = "pk";
    names[5] = "pv";
  }
  while (!names.empty() && names.back().empty()) {
    names.pop_back();
    in.pop_back();
  }
  std::map<std::string, Attribute> attrs = {
      {"is_causal", int64_t{c.causal}}};
  if (c.three_d) {
    attrs["q_num_heads"] = c.hq;
    attrs["kv_num_heads"] = c.hkv;
  }
  if (c.scale > 0) attrs["scale"] = c.scale;
  if (c.softcap > 0) attrs["softcap"] = c.softcap;
  if (c.mode >= 0) attrs["qk_matmul_output_mode"] = c.mode;
  std::vector<std::string> outs = {"y", c.presents ? "pk_out" : "",
                                   c.presents ? "pv_out" : "",
                                   c.mode >= 0 ? "qk" : ""};
  while (outs.back().empty()) outs.pop_back();
  RunKernelOptions options = Opset(23);
  options.runs = 2;
  options.threads = 2;
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Attention", names, outs, attrs), in, options);
  ASSERT_TRUE(out.ok()) << out.status();
  const AttentionRef want = ReferenceAttention(
      c, ToVector<float>(in[0]), ToVector<float>(in[1]),
      ToVector<float>(in[2]),
      c.p > 0 ? ToVector<float>(in[4]) : std::vector<float>(),
      c.p > 0 ? ToVector<float>(in[5]) : std::vector<float>(),
      c.mask.empty() ? nullptr : &in[3]);
  const Ints yd = c.three_d ? Ints{c.b, c.sq, c.hq * c.dv}
                            : Ints{c.b, c.hq, c.sq, c.dv};
  EXPECT_EQ((*out)[0].shape(), Shape(yd));
  ExpectNear((*out)[0], want.y, 1e-5, "Y");
  if (c.presents) {
    const int64_t t = c.p + c.skv;
    EXPECT_EQ((*out)[1].shape(), Shape({c.b, c.hkv, t, c.d}));
    EXPECT_EQ((*out)[2].shape(), Shape({c.b, c.hkv, t, c.dv}));
    ExpectNear((*out)[1], want.present_k, 0, "present_key");
    ExpectNear((*out)[2], want.present_v, 0, "present_value");
  }
  if (c.mode >= 0) {
    EXPECT_EQ((*out)[3].shape(), Shape({c.b, c.hq, c.sq, c.p + c.skv}));
    ExpectNear((*out)[3], want.qk, 1e-5, "qk_matmul_output");
  }
}

TEST(Attention23Test, MatchesReference) {
  std::vector<AttentionCase> cases;
  {
    AttentionCase c;
    c.name = "4-D MHA";
    cases.push_back(c);
  }
  {
    AttentionCase c;
    c.name = "4-D GQA, past, causal, softmax out";
    c.b = 2, c.hq = 4, c.hkv = 2, c.sq = 3, c.skv = 3, c.p = 4, c.d = 6,
    c.dv = 5;
    c.causal = true;
    c.mode = 3;
    c.presents = true;
    cases.push_back(c);
  }
  {
    AttentionCase c;
    c.name = "3-D GQA, bool [Sq, T] mask, softcap";
    c.b = 2, c.hq = 6, c.hkv = 3, c.sq = 5, c.skv = 7, c.d = 4, c.dv = 3;
    c.three_d = true;
    c.mask = "bool";
    c.mask_dims = {5, 7};
    c.softcap = 2.5f;
    c.mode = 2;
    c.presents = true;
    cases.push_back(c);
  }
  {
    AttentionCase c;
    c.name = "3-D MQA, float padding mask [B, 1, 1, T], scale, past";
    c.b = 2, c.hq = 4, c.hkv = 1, c.sq = 2, c.skv = 3, c.p = 2, c.d = 8,
    c.dv = 8;
    c.three_d = true;
    c.mask = "float";
    c.mask_dims = {2, 1, 1, 5};
    c.scale = 0.3f;
    c.mode = 1;
    cases.push_back(c);
  }
  {
    AttentionCase c;
    c.name = "4-D short bool mask, causal, raw QK out";
    c.sq = 4, c.skv = 6, c.d = 3, c.dv = 2;
    c.mask = "bool";
    c.mask_dims = {1, 2, 4, 4};
    c.causal = true;
    c.mode = 0;
    cases.push_back(c);
  }
  {
    AttentionCase c;
    c.name = "4-D long sequences (several query-row blocks), causal";
    c.b = 1, c.hq = 2, c.hkv = 1, c.sq = 300, c.skv = 300, c.d = 16,
    c.dv = 16;
    c.causal = true;
    c.mask = "float";
    c.mask_dims = {300, 300};
    cases.push_back(c);
  }
  uint32_t seed = 100;
  for (const AttentionCase& c : cases) RunAttentionCase(c, seed += 10);
}

TEST(Attention23Test, FullyMaskedRowIsNaNAndEmptyQueriesStillGivePresents) {
  // Query 0 sees nothing: its row of Y is NaN (the reference's 0/0).
  const Tensor q = RandomTensor({1, 1, 2, 4}, 1);
  const Tensor k = RandomTensor({1, 1, 3, 4}, 2);
  const Tensor v = RandomTensor({1, 1, 3, 4}, 3);
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Attention", {"q", "k", "v", "m"}, {"y"}),
                       {q, k, v, BoolTensor({2, 3}, {0, 0, 0, 1, 0, 1})},
                       Opset(23));
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<float> y = ToVector<float>((*out)[0]);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(std::isnan(y[i]));
  for (int i = 4; i < 8; ++i) EXPECT_FALSE(std::isnan(y[i]));
  // No queries: Y is empty, present_key is still past + K.
  auto empty = RunKernel(
      CpuKernelRegistry(),
      MakeNode("Attention", {"q", "k", "v", "", "pk", "pv"},
               {"y", "pk_out", "pv_out"}),
      {MakeTensor<float>({1, 1, 0, 4}, {}), k, v, Tensor(),
       MakeTensor<float>({1, 1, 1, 4}, {1, 2, 3, 4}),
       MakeTensor<float>({1, 1, 1, 4}, {5, 6, 7, 8})},
      Opset(23));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ((*empty)[0].num_elements(), 0);
  EXPECT_EQ((*empty)[1].shape(), Shape({1, 1, 4, 4}));
  EXPECT_EQ(ToVector<float>((*empty)[1])[3], 4.0f);
  EXPECT_EQ(ToVector<float>((*empty)[1])[4], ToVector<float>(k)[0]);
}

TEST(Attention23Test, Refusals) {
  const Tensor q3 = RandomTensor({1, 2, 8}, 1);
  const Tensor q4 = RandomTensor({1, 2, 3, 4}, 1);
  const Tensor k4 = RandomTensor({1, 2, 5, 4}, 2);
  auto run = [](std::vector<Tensor> in, std::map<std::string, Attribute> attrs,
                std::vector<std::string> names = {"q", "k", "v"}) {
    return RunKernel(CpuKernelRegistry(),
                     MakeNode("Attention", names, {"y"}, attrs), in, Opset(23));
  };
  // 3-D without head counts.
  EXPECT_EQ(run({q3, q3, q3}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Query heads not a multiple of KV heads.
  EXPECT_EQ(run({RandomTensor({1, 3, 3, 4}, 1), k4, k4}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A mask that does not broadcast, or of an integer type.
  EXPECT_EQ(run({q4, k4, k4, RandomTensor({3, 6}, 4)}, {}, {"q", "k", "v", "m"})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(run({q4, k4, k4, MakeTensor<int32_t>({1}, {1})}, {},
                {"q", "k", "v", "m"})
                .status()
                .code(),
            absl::StatusCode::kUnimplemented);
  // past_key without past_value.
  EXPECT_EQ(run({q4, k4, k4, Tensor(), RandomTensor({1, 2, 1, 4}, 5)}, {},
                {"q", "k", "v", "", "pk"})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // Attributes.
  EXPECT_EQ(run({q4, k4, k4}, {{"qk_matmul_output_mode", int64_t{4}}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(run({q4, k4, k4}, {{"softcap", -1.0f}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // float32 only.
  auto f64 = RunKernel(
      CpuKernelRegistry(), MakeNode("Attention", {"q", "k", "v"}, {"y"}),
      {MakeTensor<double>({1, 1, 1, 1}, {1}), MakeTensor<double>({1, 1, 1, 1}, {1}),
       MakeTensor<double>({1, 1, 1, 1}, {1})},
      Opset(23));
  EXPECT_EQ(f64.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(f64.status().message(), HasSubstr("Attention-23"));
}

// ---------------------------------------------------------- RotaryEmbedding

struct RotaryCase {
  std::string name;
  bool three_d = false, interleaved = false, positions = false;
  int64_t b = 2, h = 3, s = 4, d = 8, rotary_dim = 0;
};

TEST(Attention23Test, RotaryEmbeddingMatchesReference) {
  const std::vector<RotaryCase> cases = {
      {"4-D halves, cache per position", false, false, false},
      {"4-D interleaved, position_ids", false, true, true},
      {"3-D halves, partial rotation, position_ids", true, false, true, 2, 3,
       4, 8, 4},
      {"3-D interleaved, partial rotation", true, true, false, 1, 2, 5, 6, 2},
  };
  uint32_t seed = 300;
  for (const RotaryCase& c : cases) {
    SCOPED_TRACE(c.name);
    const int64_t rot = c.rotary_dim > 0 ? c.rotary_dim : c.d;
    const int64_t half = rot / 2, max_pos = 11;
    const Ints xd = c.three_d ? Ints{c.b, c.s, c.h * c.d}
                              : Ints{c.b, c.h, c.s, c.d};
    const Tensor x = RandomTensor(xd, seed += 10, -2, 2);
    const Ints cd = c.positions ? Ints{max_pos, half} : Ints{c.b, c.s, half};
    const Tensor cosc = RandomTensor(cd, seed + 1);
    const Tensor sinc = RandomTensor(cd, seed + 2);
    std::vector<int64_t> pos(c.b * c.s);
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = (i * 5 + 3) % max_pos;
    std::vector<Tensor> in = {x, cosc, sinc};
    std::vector<std::string> names = {"x", "c", "s"};
    if (c.positions) {
      in.push_back(MakeTensor<int64_t>({c.b, c.s}, pos));
      names.push_back("p");
    }
    std::map<std::string, Attribute> attrs = {
        {"interleaved", int64_t{c.interleaved}},
        {"rotary_embedding_dim", c.rotary_dim}};
    if (c.three_d) attrs["num_heads"] = c.h;
    auto out = RunKernel(CpuKernelRegistry(),
                         MakeNode("RotaryEmbedding", names, {"y"}, attrs), in,
                         Opset(23));
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<float> xv = ToVector<float>(x);
    const std::vector<float> cv = ToVector<float>(cosc);
    const std::vector<float> sv = ToVector<float>(sinc);
    std::vector<double> want(xv.begin(), xv.end());
    for (int64_t b = 0; b < c.b; ++b) {
      for (int64_t h = 0; h < c.h; ++h) {
        for (int64_t s = 0; s < c.s; ++s) {
          const int64_t row = c.three_d ? ((b * c.s + s) * c.h + h) * c.d
                                        : ((b * c.h + h) * c.s + s) * c.d;
          const int64_t cache = c.positions ? pos[b * c.s + s] : b * c.s + s;
          for (int64_t i = 0; i < half; ++i) {
            const int64_t i1 = c.interleaved ? 2 * i : i;
            const int64_t i2 = c.interleaved ? 2 * i + 1 : i + half;
            const double x1 = xv[row + i1], x2 = xv[row + i2];
            const double co = cv[cache * half + i], si = sv[cache * half + i];
            want[row + i1] = co * x1 - si * x2;
            want[row + i2] = si * x1 + co * x2;
          }
        }
      }
    }
    ExpectNear((*out)[0], want, 1e-6, "Y");
  }
}

TEST(Attention23Test, RotaryEmbeddingFloat16AndRefusals) {
  // One head, one position, rotation by 90 degrees: (x1, x2) -> (-x2, x1).
  std::vector<Float16> x, c, s;
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) x.push_back({FloatToFloat16(v)});
  for (int i = 0; i < 2; ++i) {
    c.push_back({FloatToFloat16(0.0f)});
    s.push_back({FloatToFloat16(1.0f)});
  }
  auto out = RunKernel(
      CpuKernelRegistry(), MakeNode("RotaryEmbedding", {"x", "c", "s"}, {"y"}),
      {Tensor::FromVector(DType::kFloat16, Shape({1, 1, 1, 4}), x),
       Tensor::FromVector(DType::kFloat16, Shape({1, 1, 2}), c),
       Tensor::FromVector(DType::kFloat16, Shape({1, 1, 2}), s)},
      Opset(23));
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> got;
  for (int i = 0; i < 4; ++i) {
    got.push_back(Float16ToFloat((*out)[0].data<uint16_t>()[i]));
  }
  EXPECT_THAT(got, ::testing::ElementsAre(-3, -4, 1, 2));

  const Tensor x4 = RandomTensor({1, 1, 2, 4}, 1);
  const Tensor cache = RandomTensor({1, 2, 2}, 2);
  auto run = [&](std::vector<Tensor> in, std::map<std::string, Attribute> a) {
    std::vector<std::string> names = {"x", "c", "s", "p"};
    names.resize(in.size());
    return RunKernel(CpuKernelRegistry(),
                     MakeNode("RotaryEmbedding", names, {"y"}, a), in,
                     Opset(23));
  };
  EXPECT_TRUE(run({x4, cache, cache}, {}).ok());
  // Odd or too large a rotary dimension; caches of the wrong width.
  EXPECT_EQ(run({x4, cache, cache}, {{"rotary_embedding_dim", int64_t{3}}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(run({x4, RandomTensor({1, 2, 3}, 3), RandomTensor({1, 2, 3}, 3)},
                {})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // A position past the caches.
  const Tensor table = RandomTensor({4, 2}, 4);
  EXPECT_TRUE(
      run({x4, table, table, MakeTensor<int64_t>({1, 2}, {0, 3})}, {}).ok());
  EXPECT_EQ(run({x4, table, table, MakeTensor<int64_t>({1, 2}, {0, 4})}, {})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // 3-D needs num_heads.
  EXPECT_EQ(run({RandomTensor({1, 2, 4}, 5), cache, cache}, {})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint::cpu
