// Hand-computed and naive-reference checks of DFT, STFT, the window
// generators and MelWeightMatrix (signal.cc).
#include <cmath>
#include <complex>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::Pointwise;
using testing::MakeNode;
using testing::MakeTensor;
using testing::RunKernel;
using testing::RunKernelOptions;
using testing::ToVector;

// Naive DFT of complex `x` as interleaved (re, im) floats.
std::vector<float> NaiveDft(const std::vector<std::complex<double>>& x,
                            bool inverse, int64_t out_len) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> out;
  for (int64_t k = 0; k < out_len; ++k) {
    std::complex<double> s = 0;
    for (int64_t j = 0; j < n; ++j) {
      s += x[j] * std::polar(1.0, (inverse ? 2 : -2) * M_PI * j * k / n);
    }
    if (inverse) s /= static_cast<double>(n);
    out.push_back(static_cast<float>(s.real()));
    out.push_back(static_cast<float>(s.imag()));
  }
  return out;
}

TEST(SignalTest, DftOfRealSignal) {
  auto out = RunKernel(CpuKernelRegistry(), MakeNode("DFT", {"x"}, {"y"}),
                       {MakeTensor<float>({1, 4, 1}, {1, 2, 3, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({1, 4, 2}));
  EXPECT_THAT(ToVector<float>((*out)[0]),
              Pointwise(FloatNear(1e-5), std::vector<float>{10, 0, -2, 2, -2, 0, -2, -2}));
  auto one = RunKernel(CpuKernelRegistry(),
                       MakeNode("DFT", {"x"}, {"y"}, {{"onesided", int64_t{1}}}),
                       {MakeTensor<float>({1, 4, 1}, {1, 2, 3, 4})});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ((*one)[0].shape(), Shape({1, 3, 2}));
  EXPECT_THAT(ToVector<float>((*one)[0]),
              Pointwise(FloatNear(1e-5), std::vector<float>{10, 0, -2, 2, -2, 0}));
}

TEST(SignalTest, DftLengthPadsAndTruncates) {
  auto pad = RunKernel(CpuKernelRegistry(), MakeNode("DFT", {"x", "n"}, {"y"}),
                       {MakeTensor<float>({1, 2, 1}, {1, 2}),
                        MakeTensor<int64_t>({}, {4})});
  ASSERT_TRUE(pad.ok()) << pad.status();
  EXPECT_THAT(ToVector<float>((*pad)[0]),
              Pointwise(FloatNear(1e-5), std::vector<float>{3, 0, 1, -2, -1, 0, 1, 2}));
  auto cut = RunKernel(CpuKernelRegistry(), MakeNode("DFT", {"x", "n"}, {"y"}),
                       {MakeTensor<float>({1, 4, 1}, {1, 2, 3, 4}),
                        MakeTensor<int32_t>({}, {2})});
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_THAT(ToVector<float>((*cut)[0]),
              Pointwise(FloatNear(1e-5), std::vector<float>{3, 0, -1, 0}));
}

TEST(SignalTest, DftOfOddLengthComplexAlongAxisAndInverse) {
  // [1, 2 rows, 6 columns, complex], transformed along axis 2.
  std::vector<float> x;
  std::vector<std::vector<std::complex<double>>> rows(2);
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 6; ++c) {
      const double re = std::sin(r * 6 + c), im = std::cos(3.0 * c - r);
      rows[r].emplace_back(re, im);
      x.push_back(static_cast<float>(re));
      x.push_back(static_cast<float>(im));
    }
  }
  for (int inverse = 0; inverse < 2; ++inverse) {
    auto out = RunKernel(
        CpuKernelRegistry(),
        MakeNode("DFT", {"x"}, {"y"},
                 {{"axis", int64_t{2}}, {"inverse", int64_t{inverse}}}),
        {MakeTensor<float>({1, 2, 6, 2}, x)});
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<float> want = NaiveDft(rows[0], inverse, 6);
    const std::vector<float> second = NaiveDft(rows[1], inverse, 6);
    want.insert(want.end(), second.begin(), second.end());
    EXPECT_THAT(ToVector<float>((*out)[0]), Pointwise(FloatNear(1e-4), want));
  }
}

TEST(SignalTest, DftPowerOfTwoMatchesNaiveInDouble) {
  std::vector<double> x;
  std::vector<std::complex<double>> c;
  for (int i = 0; i < 64; ++i) {
    x.push_back(std::cos(0.3 * i) + 0.01 * i);
    c.emplace_back(x.back(), 0);
  }
  auto out = RunKernel(CpuKernelRegistry(), MakeNode("DFT", {"x"}, {"y"}),
                       {MakeTensor<double>({1, 64, 1}, x)});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<float> want = NaiveDft(c, false, 64);
  const std::vector<double> got = ToVector<double>((*out)[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4);
}

TEST(SignalTest, DftOfLongOddLengthsMatchesNaive) {
  // 100 and 401 points: Bluestein's path (and the inverse).
  for (int n : {100, 401}) {
    std::vector<double> x;
    std::vector<std::complex<double>> c;
    for (int i = 0; i < n; ++i) {
      x.push_back(std::sin(0.7 * i) + 0.001 * i * i);
      x.push_back(std::cos(1.3 * i));
      c.emplace_back(x[2 * i], x[2 * i + 1]);
    }
    for (int inverse = 0; inverse < 2; ++inverse) {
      auto out = RunKernel(
          CpuKernelRegistry(),
          MakeNode("DFT", {"x"}, {"y"}, {{"inverse", int64_t{inverse}}}),
          {MakeTensor<double>({1, n, 2}, x)});
      ASSERT_TRUE(out.ok()) << out.status();
      const std::vector<float> want = NaiveDft(c, inverse, n);
      const std::vector<double> got = ToVector<double>((*out)[0]);
      ASSERT_EQ(got.size(), want.size());
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        worst = std::max(worst, std::abs(got[i] - want[i]) /
                                    std::max(1.0, std::abs(double{want[i]})));
      }
      EXPECT_LT(worst, 1e-5) << n << " points, inverse " << inverse;
    }
  }
}

TEST(SignalTest, DftRefusesMalformedNodes) {
  auto bad = RunKernel(CpuKernelRegistry(), MakeNode("DFT", {"x"}, {"y"}),
                       {MakeTensor<float>({1, 2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("DFT"));
  auto inv = RunKernel(CpuKernelRegistry(),
                       MakeNode("DFT", {"x"}, {"y"},
                                {{"inverse", int64_t{1}},
                                 {"onesided", int64_t{1}}}),
                       {MakeTensor<float>({1, 2, 1}, {1, 2})});
  EXPECT_EQ(inv.status().code(), absl::StatusCode::kUnimplemented);
  auto len = RunKernel(CpuKernelRegistry(), MakeNode("DFT", {"x", "n"}, {"y"}),
                       {MakeTensor<float>({1, 2, 1}, {1, 2}),
                        MakeTensor<int64_t>({}, {0})});
  EXPECT_EQ(len.status().code(), absl::StatusCode::kInvalidArgument);
  auto axis = RunKernel(CpuKernelRegistry(),
                        MakeNode("DFT", {"x"}, {"y"}, {{"axis", int64_t{2}}}),
                        {MakeTensor<float>({1, 2, 1}, {1, 2})});
  EXPECT_EQ(axis.status().code(), absl::StatusCode::kInvalidArgument);
}

// Run-time lengths choose working memory: the kernel must refuse lengths
// whose scratch is beyond its limit, even on an empty signal, rather than
// allocate it (these cases allocated 32 GiB to 16 TiB before).
TEST(SignalTest, DftRefusesLengthsBeyondTheWorkingMemoryLimit) {
  const int64_t kHuge = int64_t{1} << 40;
  auto empty = RunKernel(CpuKernelRegistry(), MakeNode("DFT", {"x", "n"}, {"y"}),
                         {MakeTensor<float>({0, 1, 1}, {}),
                          MakeTensor<int64_t>({}, {int64_t{1} << 31})});
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument)
      << empty.status();
  // Output 2^31 - 2 elements (under the output cap); Bluestein's buffers
  // would need about 120 GiB.
  auto odd = RunKernel(CpuKernelRegistry(), MakeNode("DFT", {"x", "n"}, {"y"}),
                       {MakeTensor<float>({1, 1, 1}, {1}),
                        MakeTensor<int64_t>({}, {(int64_t{1} << 30) - 1})});
  EXPECT_EQ(odd.status().code(), absl::StatusCode::kInvalidArgument)
      << odd.status();
  EXPECT_THAT(std::string(odd.status().message()), ::testing::HasSubstr("DFT"));
  auto wide = RunKernel(CpuKernelRegistry(), MakeNode("DFT", {"x"}, {"y"}),
                        {MakeTensor<float>({0, kHuge, 1}, {})});
  EXPECT_EQ(wide.status().code(), absl::StatusCode::kInvalidArgument)
      << wide.status();
  // An empty signal with a length inside the limit is an empty result.
  auto fine = RunKernel(CpuKernelRegistry(), MakeNode("DFT", {"x", "n"}, {"y"}),
                        {MakeTensor<float>({0, 3, 1}, {}),
                         MakeTensor<int64_t>({}, {1000})});
  ASSERT_TRUE(fine.ok()) << fine.status();
  EXPECT_EQ((*fine)[0].shape(), Shape({0, 1000, 2}));
}

TEST(SignalTest, StftRefusesFramesBeyondTheWorkingMemoryLimit) {
  const int64_t kHuge = int64_t{1} << 40;
  auto huge = RunKernel(
      CpuKernelRegistry(), MakeNode("STFT", {"x", "step", "", "len"}, {"y"}),
      {MakeTensor<float>({0, kHuge, 1}, {}), MakeTensor<int64_t>({}, {1}),
       Tensor(), MakeTensor<int64_t>({}, {kHuge})});
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument)
      << huge.status();
  EXPECT_THAT(std::string(huge.status().message()), ::testing::HasSubstr("STFT"));
  // A 512 KiB signal whose frames are inside the limit but whose output,
  // (2^16 + 1) frames x (2^15 + 1) bins x 2, is over the 2^31 cap.
  auto many = RunKernel(
      CpuKernelRegistry(), MakeNode("STFT", {"x", "step", "", "len"}, {"y"}),
      {MakeTensor<float>({1, 1 << 17, 1}, std::vector<float>(1 << 17, 1.0f)),
       MakeTensor<int64_t>({}, {1}), Tensor(),
       MakeTensor<int64_t>({}, {1 << 16})});
  EXPECT_EQ(many.status().code(), absl::StatusCode::kInvalidArgument)
      << many.status();
}

TEST(SignalTest, StftFramesWithAndWithoutWindow) {
  std::vector<float> signal(10);
  for (int i = 0; i < 10; ++i) signal[i] = static_cast<float>(i * i % 7);
  const std::vector<float> window = {0.5f, 1.0f, 0.25f, 2.0f};
  for (bool windowed : {false, true}) {
    Node node = windowed ? MakeNode("STFT", {"s", "step", "w"}, {"y"})
                         : MakeNode("STFT", {"s", "step", "", "len"}, {"y"});
    std::vector<Tensor> inputs = {MakeTensor<float>({1, 10, 1}, signal),
                                  MakeTensor<int64_t>({}, {3})};
    if (windowed) {
      inputs.push_back(MakeTensor<float>({4}, window));
    } else {
      inputs.push_back(Tensor());
      inputs.push_back(MakeTensor<int64_t>({}, {4}));
    }
    auto out = RunKernel(CpuKernelRegistry(), node, inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    // frames = (10 - 4) / 3 + 1 = 3, onesided bins = 3.
    EXPECT_EQ((*out)[0].shape(), Shape({1, 3, 3, 2}));
    std::vector<float> want;
    for (int f = 0; f < 3; ++f) {
      std::vector<std::complex<double>> frame;
      for (int j = 0; j < 4; ++j) {
        frame.emplace_back(signal[f * 3 + j] * (windowed ? window[j] : 1.0), 0);
      }
      const std::vector<float> d = NaiveDft(frame, false, 3);
      want.insert(want.end(), d.begin(), d.end());
    }
    EXPECT_THAT(ToVector<float>((*out)[0]), Pointwise(FloatNear(1e-4), want));
  }
  auto mismatch = RunKernel(
      CpuKernelRegistry(), MakeNode("STFT", {"s", "step", "w", "len"}, {"y"}),
      {MakeTensor<float>({1, 10, 1}, signal), MakeTensor<int64_t>({}, {3}),
       MakeTensor<float>({4}, window), MakeTensor<int64_t>({}, {5})});
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kInvalidArgument);
  auto step = RunKernel(
      CpuKernelRegistry(), MakeNode("STFT", {"s", "step", "w"}, {"y"}),
      {MakeTensor<float>({1, 10, 1}, signal), MakeTensor<int64_t>({}, {0}),
       MakeTensor<float>({4}, window)});
  EXPECT_EQ(step.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SignalTest, StftTwoSidedOfComplexSignal) {
  const std::vector<float> s = {1, 0, 0, 1, -1, 2, 3, -1};  // 4 complex.
  auto out = RunKernel(
      CpuKernelRegistry(),
      MakeNode("STFT", {"s", "step", "", "len"}, {"y"}, {{"onesided", int64_t{0}}}),
      {MakeTensor<float>({1, 4, 2}, s), MakeTensor<int32_t>({}, {2}), Tensor(),
       MakeTensor<int32_t>({}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  // Frames {1, i} and {-1+2i, 3-i}: sums and differences.
  EXPECT_THAT(ToVector<float>((*out)[0]),
              Pointwise(FloatNear(1e-5), std::vector<float>{1, 1, 1, -1, 2, 1, -4, 3}));
}

TEST(SignalTest, Windows) {
  auto run = [](const char* op, int64_t size, int64_t periodic,
                int64_t dtype = 1) {
    RunKernelOptions options;
    options.output_dtypes = {dtype == 1    ? DType::kFloat32
                             : dtype == 11 ? DType::kFloat64
                                           : DType::kUndefined};
    return RunKernel(CpuKernelRegistry(),
                     MakeNode(op, {"n"}, {"y"},
                              {{"periodic", periodic},
                               {"output_datatype", dtype}}),
                     {MakeTensor<int64_t>({}, {size})}, options);
  };
  auto hann = run("HannWindow", 4, 1);
  ASSERT_TRUE(hann.ok()) << hann.status();
  EXPECT_THAT(ToVector<float>((*hann)[0]),
              Pointwise(FloatNear(1e-6), std::vector<float>{0, 0.5f, 1, 0.5f}));
  auto hann_sym = run("HannWindow", 5, 0);
  ASSERT_TRUE(hann_sym.ok()) << hann_sym.status();
  EXPECT_THAT(ToVector<float>((*hann_sym)[0]),
              Pointwise(FloatNear(1e-6), std::vector<float>{0, 0.5f, 1, 0.5f, 0}));
  auto hamming = run("HammingWindow", 4, 1);
  ASSERT_TRUE(hamming.ok()) << hamming.status();
  EXPECT_THAT(ToVector<float>((*hamming)[0]),
              Pointwise(FloatNear(1e-6),
                        std::vector<float>{4.0f / 46, 25.0f / 46, 1, 25.0f / 46}));
  auto blackman = run("BlackmanWindow", 3, 0, /*double=*/11);
  ASSERT_TRUE(blackman.ok()) << blackman.status();
  EXPECT_THAT(ToVector<double>((*blackman)[0]),
              Pointwise(DoubleNear(1e-12), std::vector<double>{0, 1, 0}));
  EXPECT_EQ(run("HannWindow", -1, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(run("HannWindow", 4, 1, /*string=*/8).status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST(SignalTest, MelWeightMatrixMatchesOnnxReference) {
  RunKernelOptions options;
  options.output_dtypes = {DType::kFloat32};
  // ONNX's test case: 8 mel bins, dft_length 16, 8192 Hz, 0..4096 Hz.
  auto out = RunKernel(
      CpuKernelRegistry(),
      MakeNode("MelWeightMatrix", {"m", "n", "r", "lo", "hi"}, {"y"}),
      {MakeTensor<int32_t>({}, {8}), MakeTensor<int32_t>({}, {16}),
       MakeTensor<int32_t>({}, {8192}), MakeTensor<float>({}, {0}),
       MakeTensor<float>({}, {4096})},
      options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({9, 8}));
  std::vector<float> want(72, 0.0f);
  for (auto [row, col] : std::vector<std::pair<int, int>>{
           {0, 0}, {0, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 5}, {4, 6}, {5, 7}}) {
    want[row * 8 + col] = 1;
  }
  EXPECT_THAT(ToVector<float>((*out)[0]), Pointwise(FloatNear(1e-6), want));
  auto bad = RunKernel(
      CpuKernelRegistry(),
      MakeNode("MelWeightMatrix", {"m", "n", "r", "lo", "hi"}, {"y"}),
      {MakeTensor<int32_t>({}, {0}), MakeTensor<int32_t>({}, {16}),
       MakeTensor<int32_t>({}, {8192}), MakeTensor<float>({}, {0}),
       MakeTensor<float>({}, {4096})},
      options);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint::cpu
