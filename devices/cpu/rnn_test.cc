// RNN, GRU and LSTM against a naive reference of ONNX's equations on random
// data, for every direction, layout and option, on both code paths (the
// loop and oneDNN's primitives), which must agree.
#include "devices/cpu/rnn.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "devices/cpu/kernel_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using ::testing::HasSubstr;
using testing::MakeNode;
using testing::MakeTensor;
using testing::MaxRelativeError;
using testing::RandomTensor;
using testing::RunKernel;
using testing::RunKernelOptions;
using testing::ToVector;

const KernelRegistry& Registry(RecurrentPath path) {
  static const KernelRegistry* registries[3] = {nullptr, nullptr, nullptr};
  const KernelRegistry*& r = registries[static_cast<int>(path)];
  if (r == nullptr) {
    auto* reg = new KernelRegistry;
    for (const char* op : {"RNN", "GRU", "LSTM"}) {
      reg->Register(op, [path](const KernelSpec& spec) {
        return MakeRecurrentKernel(spec, path);
      });
    }
    r = reg;
  }
  return *r;
}

using Fn = std::function<double(double)>;
double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

struct Case {
  std::string op = "LSTM";
  std::string direction = "forward";
  int64_t layout = 0;
  int64_t t = 5, n = 3, k = 4, h = 6;
  bool bias = false;
  bool initial = false;
  bool peephole = false;
  bool lbr = false;
  std::vector<int64_t> lens;  // Empty: no sequence_lens input.
  float clip = 0;             // 0: none.
  bool input_forget = false;
  // Non-default activations (and their reference functions), per
  // direction.
  std::vector<std::string> acts;
  std::vector<float> alphas, betas;
  std::vector<Fn> ref_acts;

  int gates() const { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }
  int dirs() const { return direction == "bidirectional" ? 2 : 1; }
  std::string Name() const {
    return absl::StrCat(
        op, lbr ? "(lbr)" : "", " ", direction, " layout ", layout,
        bias ? " B" : "", initial ? " init" : "", peephole ? " P" : "",
        lens.empty() ? "" : " lens", clip > 0 ? " clip" : "",
        input_forget ? " input_forget" : "", acts.empty() ? "" : " acts");
  }
};

// Layout-0 inputs of a case (the test transposes them for layout 1).
struct Inputs {
  Tensor x, w, r, b, lens, init_h, init_c, p;
};

Inputs MakeInputs(const Case& c, uint32_t seed) {
  const int64_t d = c.dirs(), g = c.gates();
  Inputs in;
  in.x = RandomTensor({c.t, c.n, c.k}, seed);
  in.w = RandomTensor({d, g * c.h, c.k}, seed + 1, -0.6f, 0.6f);
  in.r = RandomTensor({d, g * c.h, c.h}, seed + 2, -0.6f, 0.6f);
  if (c.bias) in.b = RandomTensor({d, 2 * g * c.h}, seed + 3);
  if (c.initial) {
    in.init_h = RandomTensor({d, c.n, c.h}, seed + 4);
    if (c.op == "LSTM") in.init_c = RandomTensor({d, c.n, c.h}, seed + 5);
  }
  if (c.peephole) in.p = RandomTensor({d, 3 * c.h}, seed + 6);
  if (!c.lens.empty()) {
    std::vector<int32_t> l(c.lens.begin(), c.lens.end());
    in.lens = Tensor::FromVector(DType::kInt32, Shape({c.n}), l);
  }
  return in;
}

// Swaps the first two axes of a float tensor of rank 3 or 4.
Tensor SwapFirstAxes(const Tensor& t) {
  std::vector<int64_t> dims = t.shape().dims();
  const int64_t a = dims[0], b = dims[1];
  int64_t inner = 1;
  for (size_t i = 2; i < dims.size(); ++i) inner *= dims[i];
  std::vector<float> src = ToVector<float>(t), dst(src.size());
  for (int64_t i = 0; i < a; ++i) {
    for (int64_t j = 0; j < b; ++j) {
      for (int64_t e = 0; e < inner; ++e) {
        dst[(j * a + i) * inner + e] = src[(i * b + j) * inner + e];
      }
    }
  }
  std::swap(dims[0], dims[1]);
  return MakeTensor<float>(dims, dst);
}

// Y [T, D, N, H] (layout 1: [N, T, D, H]) → [T, D, N, H].
Tensor YToLayout0(const Tensor& y) {
  const std::vector<int64_t> d = y.shape().dims();  // [N, T, D, H]
  std::vector<float> src = ToVector<float>(y), dst(src.size());
  for (int64_t b = 0; b < d[0]; ++b) {
    for (int64_t t = 0; t < d[1]; ++t) {
      for (int64_t dd = 0; dd < d[2]; ++dd) {
        for (int64_t j = 0; j < d[3]; ++j) {
          dst[((t * d[2] + dd) * d[0] + b) * d[3] + j] =
              src[((b * d[1] + t) * d[2] + dd) * d[3] + j];
        }
      }
    }
  }
  return MakeTensor<float>({d[1], d[2], d[0], d[3]}, dst);
}

struct Outputs {
  Tensor y, yh, yc;  // Layout 0.
};

// ONNX's equations, one batch entry and one gate element at a time.
Outputs Reference(const Case& c, const Inputs& in) {
  const int64_t d_n = c.dirs(), g = c.gates(), h = c.h, n = c.n, t_n = c.t;
  std::vector<float> y(t_n * d_n * n * h, 0.0f), yh(d_n * n * h),
      yc(d_n * n * h);
  const std::vector<float> x = ToVector<float>(in.x), w = ToVector<float>(in.w),
                           r = ToVector<float>(in.r);
  auto get = [](const Tensor& t, int64_t i) {
    return t.valid() ? t.data<float>()[i] : 0.0f;
  };
  const int per_dir = c.op == "RNN" ? 1 : c.op == "GRU" ? 2 : 3;
  for (int64_t d = 0; d < d_n; ++d) {
    std::vector<Fn> f;
    if (c.ref_acts.empty()) {
      if (c.op == "RNN") f = {[](double v) { return std::tanh(v); }};
      if (c.op == "GRU") f = {Sigmoid, [](double v) { return std::tanh(v); }};
      if (c.op == "LSTM") {
        f = {Sigmoid, [](double v) { return std::tanh(v); },
             [](double v) { return std::tanh(v); }};
      }
    } else {
      f.assign(c.ref_acts.begin() +
                   (c.ref_acts.size() > size_t(per_dir) ? d * per_dir : 0),
               c.ref_acts.begin() + (c.ref_acts.size() > size_t(per_dir)
                                         ? (d + 1) * per_dir
                                         : per_dir));
    }
    auto clip = [&](double v) {
      return c.clip > 0 ? std::max<double>(-c.clip, std::min<double>(c.clip, v))
                        : v;
    };
    const bool reverse = c.direction == "reverse" || d == 1;
    for (int64_t b = 0; b < n; ++b) {
      const int64_t len = c.lens.empty() ? t_n : c.lens[b];
      std::vector<double> hv(h), cv(h);
      for (int64_t j = 0; j < h; ++j) {
        hv[j] = get(in.init_h, (d * n + b) * h + j);
        cv[j] = get(in.init_c, (d * n + b) * h + j);
      }
      // x·W_gᵀ + Wb_g (+ Rb_g) and h·R_gᵀ for gate gi, element j.
      auto xw = [&](int64_t t, int gi, int64_t j) {
        double s = get(in.b, d * 2 * g * h + gi * h + j);
        for (int64_t i = 0; i < c.k; ++i) {
          s += x[(t * n + b) * c.k + i] * w[((d * g + gi) * h + j) * c.k + i];
        }
        return s;
      };
      auto rh = [&](const std::vector<double>& hh, int gi, int64_t j) {
        double s = get(in.b, d * 2 * g * h + g * h + gi * h + j);
        for (int64_t i = 0; i < h; ++i) {
          s += hh[i] * r[((d * g + gi) * h + j) * h + i];
        }
        return s;
      };
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = reverse ? len - 1 - s : s;
        std::vector<double> nh(h), nc(h);
        if (c.op == "RNN") {
          for (int64_t j = 0; j < h; ++j) {
            nh[j] = f[0](clip(xw(t, 0, j) + rh(hv, 0, j)));
          }
        } else if (c.op == "GRU") {
          std::vector<double> z(h), rg(h), rhv(h);
          for (int64_t j = 0; j < h; ++j) {
            z[j] = f[0](clip(xw(t, 0, j) + rh(hv, 0, j)));
            rg[j] = f[0](clip(xw(t, 1, j) + rh(hv, 1, j)));
            rhv[j] = rg[j] * hv[j];
          }
          for (int64_t j = 0; j < h; ++j) {
            const double cand =
                c.lbr ? f[1](clip(xw(t, 2, j) + rg[j] * rh(hv, 2, j)))
                      : f[1](clip(xw(t, 2, j) + rh(rhv, 2, j)));
            nh[j] = (1 - z[j]) * cand + z[j] * hv[j];
          }
        } else {
          for (int64_t j = 0; j < h; ++j) {
            const double pi = get(in.p, d * 3 * h + j);
            const double po = get(in.p, d * 3 * h + h + j);
            const double pf = get(in.p, d * 3 * h + 2 * h + j);
            const double ig =
                f[0](clip(xw(t, 0, j) + rh(hv, 0, j) + pi * cv[j]));
            const double fg =
                c.input_forget
                    ? 1 - ig
                    : f[0](clip(xw(t, 2, j) + rh(hv, 2, j) + pf * cv[j]));
            const double cc = f[1](clip(xw(t, 3, j) + rh(hv, 3, j)));
            nc[j] = fg * cv[j] + ig * cc;
            const double og =
                f[0](clip(xw(t, 1, j) + rh(hv, 1, j) + po * nc[j]));
            nh[j] = og * f[2](nc[j]);
          }
          cv = nc;
        }
        hv = nh;
        for (int64_t j = 0; j < h; ++j) {
          y[((t * d_n + d) * n + b) * h + j] = static_cast<float>(hv[j]);
        }
      }
      for (int64_t j = 0; j < h; ++j) {
        yh[(d * n + b) * h + j] = static_cast<float>(hv[j]);
        yc[(d * n + b) * h + j] = static_cast<float>(cv[j]);
      }
    }
  }
  return {MakeTensor<float>({t_n, d_n, n, h}, y),
          MakeTensor<float>({d_n, n, h}, yh),
          MakeTensor<float>({d_n, n, h}, yc)};
}

Node CaseNode(const Case& c, bool y_used = true) {
  std::map<std::string, Attribute> attrs = {
      {"hidden_size", c.h}, {"direction", c.direction}, {"layout", c.layout}};
  if (c.lbr) attrs["linear_before_reset"] = int64_t{1};
  if (c.clip > 0) attrs["clip"] = c.clip;
  if (c.input_forget) attrs["input_forget"] = int64_t{1};
  if (!c.acts.empty()) attrs["activations"] = c.acts;
  if (!c.alphas.empty()) attrs["activation_alpha"] = c.alphas;
  if (!c.betas.empty()) attrs["activation_beta"] = c.betas;
  std::vector<std::string> ins = {"x",
                                  "w",
                                  "r",
                                  c.bias ? "b" : "",
                                  c.lens.empty() ? "" : "lens",
                                  c.initial ? "h0" : ""};
  std::vector<std::string> outs = {y_used ? "y" : "", "yh"};
  if (c.op == "LSTM") {
    ins.push_back(c.initial ? "c0" : "");
    ins.push_back(c.peephole ? "p" : "");
    outs.push_back("yc");
  }
  while (!ins.empty() && ins.back().empty()) ins.pop_back();
  return MakeNode(c.op, ins, outs, attrs);
}

// Runs the case on `path` and compares with the reference; returns the
// layout-0 outputs.
void CheckCase(const Case& c, RecurrentPath path, bool constants,
               const Outputs& want, const Inputs& in) {
  SCOPED_TRACE(absl::StrCat(c.Name(), " path ", static_cast<int>(path),
                            constants ? " constant weights" : ""));
  auto lay = [&](const Tensor& t) {
    return c.layout == 1 && t.valid() ? SwapFirstAxes(t) : t;
  };
  std::vector<Tensor> inputs = {lay(in.x), in.w,    in.r,
                                in.b,      in.lens, lay(in.init_h)};
  if (c.op == "LSTM") {
    inputs.push_back(lay(in.init_c));
    inputs.push_back(in.p);
  }
  const Node node = CaseNode(c);
  inputs.resize(node.inputs.size());
  RunKernelOptions opts;
  opts.output_dtypes.assign(node.outputs.size(), DType::kFloat32);
  if (constants) opts.constant_inputs = {1, 2, 3, 7};
  absl::StatusOr<std::vector<Tensor>> out =
      RunKernel(Registry(path), node, inputs, opts);
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor y = c.layout == 1 ? YToLayout0((*out)[0]) : (*out)[0];
  EXPECT_LT(MaxRelativeError(y, want.y), 1e-4);
  EXPECT_LT(MaxRelativeError(lay((*out)[1]), want.yh), 1e-4);
  if (c.op == "LSTM") {
    EXPECT_LT(MaxRelativeError(lay((*out)[2]), want.yc), 1e-4);
  }
}

bool DnnlFits(const Case& c) {
  return c.lens.empty() && c.clip == 0 && !c.input_forget && c.acts.empty();
}

void CheckAllPaths(const Case& c, uint32_t seed) {
  const Inputs in = MakeInputs(c, seed);
  const Outputs want = Reference(c, in);
  CheckCase(c, RecurrentPath::kLoop, false, want, in);
  CheckCase(c, RecurrentPath::kAuto, false, want, in);
  CheckCase(c, RecurrentPath::kAuto, true, want, in);
  if (DnnlFits(c)) {
    CheckCase(c, RecurrentPath::kDnnlOnly, false, want, in);
    CheckCase(c, RecurrentPath::kDnnlOnly, true, want, in);
  }
}

std::vector<Case> Cells() {
  std::vector<Case> cells;
  Case rnn;
  rnn.op = "RNN";
  cells.push_back(rnn);
  Case gru;
  gru.op = "GRU";
  cells.push_back(gru);
  gru.lbr = true;
  cells.push_back(gru);
  Case lstm;
  cells.push_back(lstm);
  lstm.peephole = true;
  cells.push_back(lstm);
  return cells;
}

TEST(RnnTest, EveryCellDirectionLayoutAndOption) {
  uint32_t seed = 100;
  for (Case c : Cells()) {
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      for (int64_t layout : {0, 1}) {
        c.direction = dir;
        c.layout = layout;
        // Bare: no bias, zero initial states, full length.
        c.bias = c.initial = false;
        c.lens.clear();
        CheckAllPaths(c, seed += 10);
        // Bias and initial states.
        c.bias = c.initial = true;
        CheckAllPaths(c, seed += 10);
        // Per-batch lengths (one empty, one full): the loop.
        c.lens = {3, 5, 0};
        CheckAllPaths(c, seed += 10);
        // sequence_lens given, all full: oneDNN still runs.
        c.lens = {5, 5, 5};
        const Inputs in = MakeInputs(c, seed += 10);
        CheckCase(c, RecurrentPath::kDnnlOnly, false, Reference(c, in), in);
        c.lens.clear();
      }
    }
  }
}

TEST(RnnTest, LargerShapesOnBothPaths) {
  for (Case c : Cells()) {
    c.t = 7, c.n = 5, c.k = 19, c.h = 37;
    c.bias = c.initial = true;
    c.direction = "bidirectional";
    CheckAllPaths(c, 7);
  }
}

// Bidirectional layout-0 runs with steps too small to split over threads
// run their two directions side by side (two unidirectional primitives, a
// thread each): the same outputs as the reference, for every cell, with
// bias, initial states and peepholes, on 1 to 4 kernel threads.
TEST(RnnTest, BidirectionalDirectionsSideBySide) {
  for (int threads : {1, 2, 4}) {
    testing::ScopedOmpThreads scoped(threads);
    uint32_t seed = 500;
    for (Case c : Cells()) {
      c.direction = "bidirectional";
      c.layout = 0;
      c.t = 6, c.n = 3, c.k = 7, c.h = 9;
      c.bias = c.initial = true;
      CheckAllPaths(c, seed += 10);
      c.bias = c.initial = false;
      CheckAllPaths(c, seed += 10);
    }
  }
}

TEST(RnnTest, ClipInputForgetAndActivations) {
  Case lstm;
  lstm.bias = lstm.initial = lstm.peephole = true;
  lstm.clip = 0.3f;
  CheckAllPaths(lstm, 1);
  lstm.clip = 0;
  lstm.input_forget = true;
  CheckAllPaths(lstm, 2);
  lstm.input_forget = false;
  // HardSigmoid takes alpha and beta, LeakyRelu alpha, ScaledTanh both:
  // consumed in order by the functions that use them.
  lstm.direction = "bidirectional";
  lstm.acts = {"HardSigmoid", "LeakyRelu", "ScaledTanh",
               "Sigmoid",     "Softsign",  "Tanh"};
  lstm.alphas = {0.3f, 0.05f, 1.5f};
  lstm.betas = {0.4f, 0.7f};
  lstm.ref_acts = {
      [](double v) { return std::max(0.0, std::min(1.0, 0.3 * v + 0.4)); },
      [](double v) { return v >= 0 ? v : 0.05 * v; },
      [](double v) { return 1.5 * std::tanh(0.7 * v); },
      Sigmoid,
      [](double v) { return v / (1 + std::fabs(v)); },
      [](double v) { return std::tanh(v); }};
  CheckAllPaths(lstm, 3);

  Case gru;
  gru.op = "GRU";
  gru.bias = true;
  gru.clip = 0.5f;
  gru.lbr = true;
  CheckAllPaths(gru, 4);
  gru.clip = 0;
  gru.acts = {"Sigmoid", "Elu"};
  gru.alphas = {0.8f};
  gru.ref_acts = {
      Sigmoid, [](double v) { return v >= 0 ? v : 0.8 * (std::exp(v) - 1); }};
  CheckAllPaths(gru, 5);

  // RNN with Relu runs on oneDNN (vanilla_rnn's eltwise_relu).
  Case rnn;
  rnn.op = "RNN";
  rnn.bias = true;
  rnn.direction = "reverse";
  rnn.acts = {"Relu"};
  rnn.ref_acts = {[](double v) { return v > 0 ? v : 0.0; }};
  const Inputs in = MakeInputs(rnn, 6);
  const Outputs want = Reference(rnn, in);
  CheckCase(rnn, RecurrentPath::kLoop, false, want, in);
  CheckCase(rnn, RecurrentPath::kDnnlOnly, true, want, in);
}

TEST(RnnTest, UnusedOutputsAndConcurrentRuns) {
  Case c;
  c.bias = c.initial = true;
  const Inputs in = MakeInputs(c, 9);
  const Outputs want = Reference(c, in);
  const Node node = CaseNode(c, /*y_used=*/false);
  RunKernelOptions opts;
  opts.output_dtypes.assign(3, DType::kFloat32);
  opts.constant_inputs = {1, 2, 3};
  opts.runs = 4;
  opts.threads = 2;
  absl::StatusOr<std::vector<Tensor>> out =
      RunKernel(CpuKernelRegistry(), node,
                {in.x, in.w, in.r, in.b, Tensor(), in.init_h, in.init_c}, opts);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE((*out)[0].valid());
  EXPECT_LT(MaxRelativeError((*out)[1], want.yh), 1e-4);
  EXPECT_LT(MaxRelativeError((*out)[2], want.yc), 1e-4);

  // Shapes known only at run time: the primitive is made on first use.
  opts.hide_input_shapes = true;
  opts.constant_inputs.clear();
  out =
      RunKernel(CpuKernelRegistry(), CaseNode(c),
                {in.x, in.w, in.r, in.b, Tensor(), in.init_h, in.init_c}, opts);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_LT(MaxRelativeError((*out)[0], want.y), 1e-4);
}

TEST(RnnTest, Errors) {
  Case c;
  const Inputs in = MakeInputs(c, 11);
  const std::vector<Tensor> inputs = {in.x, in.w, in.r};
  auto run = [&](const Node& node, std::vector<Tensor> ins,
                 RecurrentPath path = RecurrentPath::kAuto) {
    return RunKernel(Registry(path), node, ins).status();
  };
  Node bad = CaseNode(c);
  bad.attributes["direction"] = std::string("sideways");
  absl::Status st = run(bad, inputs);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("lstm_node"));

  bad = CaseNode(c);
  bad.attributes["activations"] =
      std::vector<std::string>{"Sigmoid", "Tanh", "Gelu"};
  st = run(bad, inputs);
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(st.message(), HasSubstr("activations"));

  bad = CaseNode(c);
  bad.attributes["clip"] = 1.0f;
  st = run(bad, inputs, RecurrentPath::kDnnlOnly);
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented);

  // W for another input size.
  st = run(CaseNode(c), {in.x, RandomTensor({1, 24, 3}, 1), in.r});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("W has shape"));

  // sequence_lens beyond the sequence.
  Case l = c;
  l.lens = {1, 6, 2};
  const Inputs li = MakeInputs(l, 12);
  st = run(CaseNode(l), {li.x, li.w, li.r, Tensor(), li.lens});
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("sequence_lens"));

  bad = CaseNode(c);
  bad.attributes["hidden_size"] = int64_t{1} << 40;
  st = run(bad, inputs);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("hidden_size"));

  // float64 is not supported.
  std::vector<double> xd(c.t * c.n * c.k, 0.5);
  st = run(CaseNode(c), {MakeTensor<double>({c.t, c.n, c.k}, xd), in.w, in.r});
  EXPECT_EQ(st.code(), absl::StatusCode::kUnimplemented);
}

// ReverseSequence (beside the recurrent ops, which reverse sequences the
// same way): each batch entry's first sequence_lens[b] steps reversed.
TEST(ReverseSequenceTest, BothAxesOrdersHandComputed) {
  // [T = 3, B = 2, 2]; lens {3, 1}: batch 0 reversed, batch 1 unchanged.
  const Tensor x =
      MakeTensor<float>({3, 2, 2}, {0, 1, 10, 11, 2, 3, 12, 13, 4, 5, 14, 15});
  const Tensor lens = MakeTensor<int64_t>({2}, {3, 1});
  auto out =
      RunKernel(CpuKernelRegistry(),
                MakeNode("ReverseSequence", {"x", "l"}, {"y"}), {x, lens});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(ToVector<float>((*out)[0]),
            (std::vector<float>{4, 5, 10, 11, 2, 3, 12, 13, 0, 1, 14, 15}));
  // batch_axis 0: [B = 2, T = 3]; lens {2, 0}.
  out = RunKernel(
      CpuKernelRegistry(),
      MakeNode("ReverseSequence", {"x", "l"}, {"y"},
               {{"batch_axis", int64_t{0}}, {"time_axis", int64_t{1}}}),
      {MakeTensor<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6}),
       MakeTensor<int64_t>({2}, {2, 0})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(ToVector<int32_t>((*out)[0]),
            (std::vector<int32_t>{2, 1, 3, 4, 5, 6}));
  // A length beyond the sequence, and equal axes.
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("ReverseSequence", {"x", "l"}, {"y"}),
                  {x, MakeTensor<int64_t>({2}, {4, 1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("sequence_lens"));
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("ReverseSequence", {"x", "l"}, {"y"},
                           {{"batch_axis", int64_t{0}}}),
                  {x, lens});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint::cpu
