// Signal processing (opset 17): DFT (and DFT-20, whose axis is an input),
// STFT, the window generators HannWindow / HammingWindow / BlackmanWindow,
// and MelWeightMatrix.
//
// Complex values are ONNX's: a trailing dimension of 2 (real, imaginary);
// real signals have a trailing dimension of 1. Transforms compute in double
// whatever the element type: an iterative radix-2 FFT when the length is a
// power of two, a direct sum over a twiddle table up to 64 points, and
// Bluestein's chirp-z (power-of-two FFTs of a convolution) beyond.
#include <cmath>
#include <complex>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <vector>

#include "core/status_macros.h"
#include "devices/cpu/element_types.h"
#include "devices/cpu/kernel_util.h"
#include "devices/cpu/register.h"

namespace glint::cpu {
namespace {

using Complex = std::complex<double>;

// Generating ops refuse outputs above this many elements (README).
constexpr int64_t kMaxGeneratedElements = int64_t{1} << 31;

// ------------------------------------------------------------- transforms

void Transform(std::vector<Complex>& x, bool inverse);

// Lengths up to this take the direct sum; longer non-powers of two take
// Bluestein's algorithm (three power-of-two FFTs).
constexpr size_t kDirectMaxLength = 64;

// Bluestein: X[k] = conj(w[k]) * sum_j (x[j] conj(w[j])) w[k - j] with
// w[t] = e^{+-πi t²/n}, a convolution done with power-of-two FFTs.
void Bluestein(std::vector<Complex>& x, bool inverse) {
  const size_t n = x.size();
  size_t m = 1;
  while (m < 2 * n - 1) m <<= 1;
  const double sign = inverse ? 1.0 : -1.0;
  std::vector<Complex> chirp(n);
  for (size_t t = 0; t < n; ++t) {
    // t² mod 2n keeps the angle exact for large t.
    const uint64_t t2 = (static_cast<uint64_t>(t) * t) % (2 * n);
    chirp[t] = std::polar(1.0, sign * M_PI * static_cast<double>(t2) /
                                   static_cast<double>(n));
  }
  std::vector<Complex> a(m, 0.0), b(m, 0.0);
  for (size_t t = 0; t < n; ++t) a[t] = x[t] * chirp[t];
  b[0] = std::conj(chirp[0]);
  for (size_t t = 1; t < n; ++t) b[t] = b[m - t] = std::conj(chirp[t]);
  Transform(a, false);
  Transform(b, false);
  for (size_t i = 0; i < m; ++i) a[i] *= b[i];
  Transform(a, true);
  const double scale = 1.0 / static_cast<double>(m);
  for (size_t k = 0; k < n; ++k) x[k] = a[k] * chirp[k] * scale;
}

// In-place DFT of `x` (any length >= 1): X[k] = sum_j x[j] e^{-+2πi jk/n}
// (+ for inverse, without the 1/n factor).
void Transform(std::vector<Complex>& x, bool inverse) {
  const size_t n = x.size();
  if (n <= 1) return;
  const double sign = inverse ? 1.0 : -1.0;
  if ((n & (n - 1)) != 0 && n > kDirectMaxLength) {
    Bluestein(x, inverse);
    return;
  }
  if ((n & (n - 1)) == 0) {
    // Bit-reversal permutation, then butterflies.
    for (size_t i = 1, j = 0; i < n; ++i) {
      size_t bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(x[i], x[j]);
    }
    for (size_t len = 2; len <= n; len <<= 1) {
      const double angle = sign * 2.0 * M_PI / static_cast<double>(len);
      for (size_t i = 0; i < n; i += len) {
        for (size_t k = 0; k < len / 2; ++k) {
          const Complex w = std::polar(1.0, angle * static_cast<double>(k));
          const Complex u = x[i + k];
          const Complex v = x[i + k + len / 2] * w;
          x[i + k] = u + v;
          x[i + k + len / 2] = u - v;
        }
      }
    }
    return;
  }
  std::vector<Complex> twiddle(n);
  for (size_t j = 0; j < n; ++j) {
    twiddle[j] = std::polar(
        1.0, sign * 2.0 * M_PI * static_cast<double>(j) / static_cast<double>(n));
  }
  std::vector<Complex> out(n);
  for (size_t k = 0; k < n; ++k) {
    Complex sum = 0;
    size_t idx = 0;  // (j * k) mod n, kept without overflow.
    for (size_t j = 0; j < n; ++j) {
      sum += x[j] * twiddle[idx];
      idx += k;
      if (idx >= n) idx -= n;
    }
    out[k] = sum;
  }
  x.swap(out);
}

// Complex scratch values one transform of length `n` holds at once: the
// line itself plus, for Bluestein, the chirp and two padded buffers of the
// power of two m >= 2n - 1 (the direct sum adds a twiddle table and a copy).
int64_t TransformScratch(int64_t n) {
  if ((n & (n - 1)) == 0) return n;
  if (n <= static_cast<int64_t>(kDirectMaxLength)) return 3 * n;
  int64_t m = 1;
  while (m < 2 * n - 1) m <<= 1;
  return 2 * n + 2 * m;
}

// Transforms refuse lengths whose scratch (TransformScratch) would exceed
// 2^26 complex doubles (1 GiB): lengths up to 2^26 when a power of two,
// about 2^24 otherwise. The limit is on working memory, which a run-time
// dft_length or frame_length would otherwise choose freely (even for an
// empty signal).
constexpr int64_t kMaxTransformScratch = int64_t{1} << 26;

absl::Status CheckTransformLength(int64_t n, absl::string_view node) {
  // Compared first so that TransformScratch cannot overflow.
  if (n > kMaxTransformScratch || TransformScratch(n) > kMaxTransformScratch) {
    return InvalidArgument(node, "transform length ", n, " needs more than "
                           "2^26 complex values of working memory");
  }
  return absl::OkStatus();
}

// Product of `dims`, saturated at INT64_MAX (0 if any is 0).
int64_t SaturatingProduct(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims) {
    if (d == 0) return 0;
  }
  int64_t p = 1;
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(p, d, &p)) return INT64_MAX;
  }
  return p;
}

// Reads a scalar int32/int64 input.
absl::StatusOr<int64_t> ScalarInt(const KernelContext& ctx, int i,
                                  absl::string_view what,
                                  absl::string_view node) {
  GLINT_ASSIGN_OR_RETURN(std::vector<int64_t> v,
                         GetInputInt64s(ctx, i, DType::kUndefined, what, node));
  if (v.size() != 1) {
    return InvalidArgument(node, what, " must be a scalar");
  }
  return v[0];
}

absl::StatusOr<double> ScalarDouble(const KernelContext& ctx, int i,
                                    absl::string_view what,
                                    absl::string_view node) {
  GLINT_ASSIGN_OR_RETURN(const TensorView* t,
                         GetInput(ctx, i, DType::kUndefined, node));
  if (t->num_elements() != 1) {
    return InvalidArgument(node, what, " must be a scalar");
  }
  return LoadAsDoubles(*t)[0];
}

absl::Status CheckGenerated(int64_t elements, absl::string_view node) {
  if (elements > kMaxGeneratedElements) {
    return InvalidArgument(node, "output of ", elements,
                           " elements exceeds the limit of 2^31");
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------------- DFT

class DftKernel final : public KernelBase {
 public:
  // `axis_input`: DFT-20 reads the axis from input 2 (default -2, the last
  // signal axis) instead of the attribute.
  DftKernel(const KernelSpec& spec, DType dtype, int64_t axis, bool inverse,
            bool onesided, bool axis_input)
      : KernelBase(spec),
        dtype_(dtype),
        axis_(axis),
        inverse_(inverse),
        onesided_(onesided),
        axis_input_(axis_input) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x, GetInput(ctx, 0, dtype_, node()));
    const int rank = x->shape.rank();
    if (rank < 2) {
      return InvalidArgument(node(), "input must have rank >= 2, got ",
                             x->shape.ToString());
    }
    const int64_t parts = x->shape.dim(rank - 1);
    if (parts != 1 && parts != 2) {
      return InvalidArgument(node(), "last dimension must be 1 (real) or 2 "
                             "(complex), got ", x->shape.ToString());
    }
    int64_t axis_value = axis_;
    if (axis_input_ && ctx.num_inputs() > 2 && ctx.input(2) != nullptr) {
      GLINT_ASSIGN_OR_RETURN(axis_value, ScalarInt(ctx, 2, "axis", node()));
    }
    // Negative axes count from the back, the complex dimension included
    // (-2 is the last signal axis).
    const int64_t axis = axis_value < 0 ? axis_value + rank : axis_value;
    if (axis < 0 || axis >= rank - 1) {
      return InvalidArgument(node(), "axis ", axis_value, " is outside the "
                             "signal dimensions of ", x->shape.ToString());
    }
    const int64_t in_len = x->shape.dim(axis);
    int64_t n = in_len;
    if (ctx.num_inputs() > 1 && ctx.input(1) != nullptr) {
      GLINT_ASSIGN_OR_RETURN(n, ScalarInt(ctx, 1, "dft_length", node()));
      if (n < 1) {
        return InvalidArgument(node(), "dft_length must be positive, got ", n);
      }
    }
    if (onesided_ && parts == 2) {
      return InvalidArgument(node(), "onesided needs a real input");
    }
    const int64_t out_len = onesided_ ? n / 2 + 1 : n;
    const int64_t outer = Product(x->shape.dims(), 0, axis);
    const int64_t inner = Product(x->shape.dims(), axis + 1, rank - 1);
    std::vector<int64_t> out_dims = x->shape.dims();
    out_dims[axis] = out_len;
    out_dims[rank - 1] = 2;
    GLINT_RETURN_IF_ERROR(CheckTransformLength(n, node()));
    GLINT_RETURN_IF_ERROR(CheckGenerated(
        SaturatingProduct({outer, inner, out_len, 2}), node()));
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
        ctx, 0, Shape(out_dims), dtype_, node()));
    if (y.num_elements() == 0) return absl::OkStatus();
    const std::vector<double> xs = LoadAsDoubles(*x);
    std::vector<double> ys(static_cast<size_t>(y.num_elements()));
    const double scale = inverse_ ? 1.0 / static_cast<double>(n) : 1.0;
    std::vector<Complex> line(n);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          if (j >= in_len) {
            line[j] = 0;
            continue;
          }
          const int64_t at = ((o * in_len + j) * inner + i) * parts;
          line[j] = Complex(xs[at], parts == 2 ? xs[at + 1] : 0.0);
        }
        Transform(line, inverse_);
        for (int64_t k = 0; k < out_len; ++k) {
          const int64_t at = ((o * out_len + k) * inner + i) * 2;
          ys[at] = line[k].real() * scale;
          ys[at + 1] = line[k].imag() * scale;
        }
      }
    }
    StoreDoubles(ys, y);
    return absl::OkStatus();
  }

 private:
  DType dtype_;
  int64_t axis_;
  bool inverse_;
  bool onesided_;
  bool axis_input_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeDft(const KernelSpec& spec) {
  const bool axis_input = spec.opset_version == 0 || spec.opset_version >= 20;
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, axis_input ? 3 : 2));
  const std::string node = spec.node->Describe();
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kAllFloatDTypes));
  if (spec.has_input(1)) {
    GLINT_RETURN_IF_ERROR(
        SpecInputDType(spec, 1, {DType::kInt32, DType::kInt64}).status());
  }
  if (axis_input && spec.has_input(2)) {
    GLINT_RETURN_IF_ERROR(
        SpecInputDType(spec, 2, {DType::kInt32, DType::kInt64}).status());
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  const bool inverse = spec.node->GetInt("inverse", 0) != 0;
  const bool onesided = spec.node->GetInt("onesided", 0) != 0;
  if (inverse && onesided) {
    return Unimplemented(node, "an inverse onesided DFT is not supported");
  }
  return std::unique_ptr<Kernel>(new DftKernel(
      spec, dtype, axis_input ? -2 : spec.node->GetInt("axis", 1), inverse,
      onesided, axis_input));
}

// ------------------------------------------------------------------ STFT

class StftKernel final : public KernelBase {
 public:
  StftKernel(const KernelSpec& spec, DType dtype, bool onesided)
      : KernelBase(spec), dtype_(dtype), onesided_(onesided) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x, GetInput(ctx, 0, dtype_, node()));
    if (x->shape.rank() != 3 ||
        (x->shape.dim(2) != 1 && x->shape.dim(2) != 2)) {
      return InvalidArgument(node(), "signal must be [batch, length, 1 or 2], "
                             "got ", x->shape.ToString());
    }
    const int64_t batch = x->shape.dim(0), length = x->shape.dim(1);
    const int64_t parts = x->shape.dim(2);
    GLINT_ASSIGN_OR_RETURN(int64_t step,
                           ScalarInt(ctx, 1, "frame_step", node()));
    const TensorView* window =
        ctx.num_inputs() > 2 ? ctx.input(2) : nullptr;
    std::vector<double> w;
    int64_t frame = -1;
    if (window != nullptr) {
      GLINT_ASSIGN_OR_RETURN(window, GetInput(ctx, 2, dtype_, node()));
      if (window->shape.rank() != 1) {
        return InvalidArgument(node(), "window must be 1-D, got ",
                               window->shape.ToString());
      }
      w = LoadAsDoubles(*window);
      frame = static_cast<int64_t>(w.size());
    }
    if (ctx.num_inputs() > 3 && ctx.input(3) != nullptr) {
      GLINT_ASSIGN_OR_RETURN(int64_t fl,
                             ScalarInt(ctx, 3, "frame_length", node()));
      if (frame >= 0 && fl != frame) {
        return InvalidArgument(node(), "frame_length ", fl,
                               " differs from the window's length ", frame);
      }
      frame = fl;
    }
    if (frame < 0) {
      return InvalidArgument(node(), "needs a window or a frame_length");
    }
    if (frame < 1 || frame > length) {
      return InvalidArgument(node(), "frame length ", frame,
                             " is outside [1, ", length, "]");
    }
    if (step < 1) {
      return InvalidArgument(node(), "frame_step must be positive, got ",
                             step);
    }
    if (onesided_ && parts == 2) {
      return InvalidArgument(node(), "onesided needs a real signal");
    }
    GLINT_RETURN_IF_ERROR(CheckTransformLength(frame, node()));
    const int64_t frames = (length - frame) / step + 1;
    const int64_t bins = onesided_ ? frame / 2 + 1 : frame;
    GLINT_RETURN_IF_ERROR(CheckGenerated(
        SaturatingProduct({batch, frames, bins, 2}), node()));
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
        ctx, 0, Shape({batch, frames, bins, 2}), dtype_, node()));
    if (y.num_elements() == 0) return absl::OkStatus();
    const std::vector<double> xs = LoadAsDoubles(*x);
    std::vector<double> ys(static_cast<size_t>(y.num_elements()));
    std::vector<Complex> line(frame);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t f = 0; f < frames; ++f) {
        for (int64_t j = 0; j < frame; ++j) {
          const int64_t at = (b * length + f * step + j) * parts;
          const double scale = w.empty() ? 1.0 : w[j];
          line[j] = Complex(xs[at] * scale,
                            parts == 2 ? xs[at + 1] * scale : 0.0);
        }
        Transform(line, /*inverse=*/false);
        for (int64_t k = 0; k < bins; ++k) {
          const int64_t at = ((b * frames + f) * bins + k) * 2;
          ys[at] = line[k].real();
          ys[at + 1] = line[k].imag();
        }
      }
    }
    StoreDoubles(ys, y);
    return absl::OkStatus();
  }

 private:
  DType dtype_;
  bool onesided_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeStft(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, 4));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kAllFloatDTypes));
  GLINT_RETURN_IF_ERROR(
      SpecInputDType(spec, 1, {DType::kInt32, DType::kInt64}).status());
  if (spec.has_input(2)) {
    GLINT_ASSIGN_OR_RETURN(DType wt, SpecInputDType(spec, 2, kAllFloatDTypes));
    if (wt != dtype) {
      return InvalidArgument(spec.node->Describe(), "window dtype ",
                             DTypeName(wt), " differs from the signal's ",
                             DTypeName(dtype));
    }
  }
  if (spec.has_input(3)) {
    GLINT_RETURN_IF_ERROR(
        SpecInputDType(spec, 3, {DType::kInt32, DType::kInt64}).status());
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return std::unique_ptr<Kernel>(
      new StftKernel(spec, dtype, spec.node->GetInt("onesided", 1) != 0));
}

// --------------------------------------------------------------- windows

enum class WindowKind { kHann, kHamming, kBlackman };

class WindowKernel final : public KernelBase {
 public:
  WindowKernel(const KernelSpec& spec, WindowKind kind, bool periodic,
               DType out)
      : KernelBase(spec), kind_(kind), periodic_(periodic), out_(out) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(int64_t size, ScalarInt(ctx, 0, "size", node()));
    if (size < 0) {
      return InvalidArgument(node(), "size must not be negative, got ", size);
    }
    GLINT_RETURN_IF_ERROR(CheckGenerated(size, node()));
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
        ctx, 0, Shape({size}), out_, node()));
    // Symmetric windows span size - 1 intervals; a symmetric window of
    // one sample is the single value at n = 0 (the divisor is never used
    // with n != 0 there).
    const double span =
        static_cast<double>(periodic_ ? size : std::max<int64_t>(size - 1, 1));
    // Stored element by element: a scratch vector of doubles would be
    // twice a float output that may already be near the 2^31 cap.
    auto value = [&](int64_t n) {
      const double t = 2.0 * M_PI * static_cast<double>(n) / span;
      switch (kind_) {
        case WindowKind::kHann:
          return 0.5 - 0.5 * std::cos(t);
        case WindowKind::kHamming:
          return 25.0 / 46.0 - (1.0 - 25.0 / 46.0) * std::cos(t);
        case WindowKind::kBlackman:
          break;
      }
      return 0.42 - 0.5 * std::cos(t) + 0.08 * std::cos(2.0 * t);
    };
    (void)VisitDType(y.dtype, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      using C = ComputeType<S>;
      for (int64_t n = 0; n < size; ++n) {
        if constexpr (std::is_integral_v<C> && !std::is_same_v<C, bool>) {
          y.as<S>()[n] = Store<S>(static_cast<C>(std::nearbyint(value(n))));
        } else {
          y.as<S>()[n] = Store<S>(static_cast<C>(value(n)));
        }
      }
      return absl::OkStatus();
    });
    return absl::OkStatus();
  }

 private:
  WindowKind kind_;
  bool periodic_;
  DType out_;
};

// The dtype an `output_datatype` attribute names (default float32).
absl::StatusOr<DType> OutputDatatype(const KernelSpec& spec) {
  const int64_t attr = spec.node->GetInt("output_datatype", 1);
  absl::StatusOr<DType> dtype = DTypeFromOnnx(static_cast<int32_t>(attr));
  if (!dtype.ok() || !(DTypeIn(*dtype, kNumericDTypes) ||
                        DTypeIn(*dtype, kAllFloatDTypes))) {
    return Unimplemented(spec.node->Describe(),
                         "unsupported output_datatype ", attr);
  }
  return SpecOutputDType(spec, 0, *dtype);
}

KernelFactory WindowFactory(WindowKind kind) {
  return [kind](const KernelSpec& spec)
             -> absl::StatusOr<std::unique_ptr<Kernel>> {
    GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
    GLINT_RETURN_IF_ERROR(
        SpecInputDType(spec, 0, {DType::kInt32, DType::kInt64}).status());
    GLINT_ASSIGN_OR_RETURN(DType out, OutputDatatype(spec));
    return std::unique_ptr<Kernel>(new WindowKernel(
        spec, kind, spec.node->GetInt("periodic", 1) != 0, out));
  };
}

// -------------------------------------------------------- MelWeightMatrix

// Triangular filters between num_mel_bins + 2 points equally spaced on the
// mel scale, as ONNX's reference (its test data and ONNX Runtime) computes
// them: the mel step divides the range by num_mel_bins + 2 and the points
// map to spectrogram bins floor((dft_length + 1) * hz / sample_rate).
class MelWeightMatrixKernel final : public KernelBase {
 public:
  MelWeightMatrixKernel(const KernelSpec& spec, DType out)
      : KernelBase(spec), out_(out) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(int64_t mel_bins,
                           ScalarInt(ctx, 0, "num_mel_bins", node()));
    GLINT_ASSIGN_OR_RETURN(int64_t dft_length,
                           ScalarInt(ctx, 1, "dft_length", node()));
    GLINT_ASSIGN_OR_RETURN(int64_t sample_rate,
                           ScalarInt(ctx, 2, "sample_rate", node()));
    GLINT_ASSIGN_OR_RETURN(double lower,
                           ScalarDouble(ctx, 3, "lower_edge_hertz", node()));
    GLINT_ASSIGN_OR_RETURN(double upper,
                           ScalarDouble(ctx, 4, "upper_edge_hertz", node()));
    if (mel_bins < 1 || dft_length < 1 || sample_rate < 1) {
      return InvalidArgument(node(), "num_mel_bins (", mel_bins,
                             "), dft_length (", dft_length,
                             ") and sample_rate (", sample_rate,
                             ") must be positive");
    }
    if (!(lower >= 0 && upper >= lower)) {
      return InvalidArgument(node(), "edges must satisfy 0 <= lower (", lower,
                             ") <= upper (", upper, ")");
    }
    const int64_t spectrogram_bins = dft_length / 2 + 1;
    if (mel_bins > kMaxGeneratedElements ||
        spectrogram_bins > kMaxGeneratedElements / mel_bins) {
      return CheckGenerated(kMaxGeneratedElements + 1, node());
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
        ctx, 0, Shape({spectrogram_bins, mel_bins}), out_, node()));
    auto to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
    const double low_mel = to_mel(lower), high_mel = to_mel(upper);
    const double step = (high_mel - low_mel) / static_cast<double>(mel_bins + 2);
    std::vector<int64_t> points(mel_bins + 2);
    for (int64_t i = 0; i < mel_bins + 2; ++i) {
      const double mel = static_cast<double>(i) * step + low_mel;
      const double hz = 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
      points[i] = static_cast<int64_t>(std::floor(
          static_cast<double>(dft_length + 1) * hz /
          static_cast<double>(sample_rate)));
    }
    std::vector<double> w(static_cast<size_t>(y.num_elements()), 0.0);
    auto set = [&](int64_t row, int64_t col, double v) {
      if (row >= 0 && row < spectrogram_bins) w[row * mel_bins + col] = v;
    };
    for (int64_t i = 0; i < mel_bins; ++i) {
      const int64_t left = points[i], center = points[i + 1],
                    right = points[i + 2];
      if (center == left) {
        set(center, i, 1.0);
      } else {
        for (int64_t j = std::max<int64_t>(left, 0);
             j <= std::min(center, spectrogram_bins - 1); ++j) {
          set(j, i, static_cast<double>(j - left) /
                        static_cast<double>(center - left));
        }
      }
      for (int64_t j = std::max<int64_t>(center, 0);
           j < std::min(right, spectrogram_bins); ++j) {
        set(j, i, static_cast<double>(right - j) /
                      static_cast<double>(right - center));
      }
    }
    StoreDoubles(w, y);
    return absl::OkStatus();
  }

 private:
  DType out_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeMelWeightMatrix(
    const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 5, 5));
  for (int i = 0; i < 3; ++i) {
    GLINT_RETURN_IF_ERROR(
        SpecInputDType(spec, i, {DType::kInt32, DType::kInt64}).status());
  }
  for (int i = 3; i < 5; ++i) {
    GLINT_RETURN_IF_ERROR(SpecInputDType(spec, i, kAllFloatDTypes).status());
  }
  GLINT_ASSIGN_OR_RETURN(DType out, OutputDatatype(spec));
  return std::unique_ptr<Kernel>(new MelWeightMatrixKernel(spec, out));
}

}  // namespace

void RegisterSignalKernels(KernelRegistry* registry) {
  registry->Register("DFT", MakeDft);
  registry->Register("STFT", MakeStft);
  registry->Register("HannWindow", WindowFactory(WindowKind::kHann));
  registry->Register("HammingWindow", WindowFactory(WindowKind::kHamming));
  registry->Register("BlackmanWindow", WindowFactory(WindowKind::kBlackman));
  registry->Register("MelWeightMatrix", MakeMelWeightMatrix);
}

}  // namespace glint::cpu
