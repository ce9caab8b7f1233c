// Det (determinants of square matrices, by LU decomposition with partial
// pivoting in double precision), TfIdfVectorizer (n-gram counts of
// integer token sequences, with skips, weighted as TF, IDF or TF-IDF) and
// the CPU optimiser's glint.ChannelShuffle (optimize.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status_macros.h"
#include "devices/cpu/element_types.h"
#include "devices/cpu/kernel_util.h"
#include "optimizer/fused_ops.h"
#include "devices/cpu/register.h"

namespace glint::cpu {
namespace {

// -------------------------------------------------------------------- Det

// The determinant of the row-major m x m matrix `a` (overwritten).
double LuDeterminant(std::vector<double>& a, int64_t m) {
  double det = 1;
  for (int64_t k = 0; k < m; ++k) {
    int64_t pivot = k;
    for (int64_t r = k + 1; r < m; ++r) {
      if (std::abs(a[r * m + k]) > std::abs(a[pivot * m + k])) pivot = r;
    }
    if (a[pivot * m + k] == 0) return 0;
    if (pivot != k) {
      std::swap_ranges(a.begin() + k * m, a.begin() + (k + 1) * m,
                       a.begin() + pivot * m);
      det = -det;
    }
    const double d = a[k * m + k];
    det *= d;
    for (int64_t r = k + 1; r < m; ++r) {
      const double f = a[r * m + k] / d;
      if (f == 0) continue;
      for (int64_t c = k + 1; c < m; ++c) a[r * m + c] -= f * a[k * m + c];
    }
  }
  return det;
}

class DetKernel final : public KernelBase {
 public:
  DetKernel(const KernelSpec& spec, DType dtype)
      : KernelBase(spec), dtype_(dtype) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    const int rank = x->shape.rank();
    if (rank < 2 || x->shape.dim(rank - 1) != x->shape.dim(rank - 2)) {
      return InvalidArgument(node(), "X ", x->shape.ToString(),
                             " must be [..., M, M]");
    }
    const int64_t m = x->shape.dim(rank - 1);
    std::vector<int64_t> batch_dims(x->shape.dims().begin(),
                                    x->shape.dims().end() - 2);
    GLINT_ASSIGN_OR_RETURN(
        TensorView y,
        AllocateOutput(ctx, 0, Shape(batch_dims), dtype_, node()));
    const int64_t batch = y.num_elements();
    // With no matrices m is a bare dimension of an empty X (it may be
    // 2^20, making m * m 2^40): nothing may be sized by it.
    if (batch == 0) return absl::OkStatus();
    return VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      const S* px = x->as<const S>();
      S* py = y.as<S>();
      std::vector<double> a(m * m);
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t i = 0; i < m * m; ++i) {
          a[i] = Load<double>(px[b * m * m + i]);
        }
        py[b] = Store<S>(LuDeterminant(a, m));
      }
      return absl::OkStatus();
    });
  }

 private:
  DType dtype_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeDet(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kAllFloatDTypes));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return std::unique_ptr<Kernel>(new DetKernel(spec, dtype));
}

// -------------------------------------------------------- TfIdfVectorizer

enum class Weighting { kTf, kIdf, kTfIdf };

constexpr int64_t kMaxColumns = int64_t{1} << 24;

class TfIdfKernel final : public KernelBase {
 public:
  TfIdfKernel(const KernelSpec& spec, DType dtype, Weighting weighting,
              int64_t min_n, int64_t max_n, int64_t max_skip,
              std::map<std::vector<int64_t>, int64_t> columns,
              std::vector<float> column_weights, int64_t num_columns)
      : KernelBase(spec),
        dtype_(dtype),
        weighting_(weighting),
        min_n_(min_n),
        max_n_(max_n),
        max_skip_(max_skip),
        columns_(std::move(columns)),
        weights_(std::move(column_weights)),
        num_columns_(num_columns) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    const int rank = x->shape.rank();
    if (rank != 1 && rank != 2) {
      return InvalidArgument(node(), "X ", x->shape.ToString(),
                             " must be [C] or [N, C]");
    }
    const int64_t rows = rank == 2 ? x->shape.dim(0) : 1;
    const int64_t len = x->shape.dim(rank - 1);
    if (static_cast<double>(rows) * num_columns_ >
        static_cast<double>(int64_t{1} << 31)) {
      return InvalidArgument(node(), "output of ", rows, " x ", num_columns_,
                             " elements exceeds 2^31");
    }
    const Shape out_shape =
        rank == 2 ? Shape({rows, num_columns_}) : Shape({num_columns_});
    GLINT_ASSIGN_OR_RETURN(
        TensorView y,
        AllocateOutput(ctx, 0, out_shape, DType::kFloat32, node()));
    // No columns: the output is empty, and rows (a bare dimension of X
    // when its rows are empty) must not bound a loop.
    if (num_columns_ == 0) return absl::OkStatus();
    std::vector<int64_t> tokens(x->num_elements());
    if (dtype_ == DType::kInt32) {
      std::copy(x->as<const int32_t>(), x->as<const int32_t>() + tokens.size(),
                tokens.begin());
    } else {
      std::copy(x->as<const int64_t>(), x->as<const int64_t>() + tokens.size(),
                tokens.begin());
    }
    float* py = y.as<float>();
    std::vector<int64_t> counts(num_columns_);
    std::vector<int64_t> gram;
    for (int64_t r = 0; r < rows; ++r) {
      std::fill(counts.begin(), counts.end(), 0);
      const int64_t* row = tokens.data() + r * len;
      // Every skip distance sees the n-grams of its stride; 1-grams do
      // not depend on it, so they count in the first pass only (as
      // onnxruntime counts them).
      int64_t start_n = min_n_;
      // A stride of len or more fits no n-gram longer than 1. (Bounded
      // before adding 1: max_skip_count may be INT64_MAX.)
      const int64_t max_step =
          std::min(max_skip_, std::max<int64_t>(len - 2, 0)) + 1;
      for (int64_t step = 1; step <= max_step; ++step) {
        for (int64_t s = 0; s < len; ++s) {
          gram.clear();
          for (int64_t n = 1, at = s; n <= max_n_ && at < len;
               ++n, at += step) {
            gram.push_back(row[at]);
            if (n < start_n) continue;
            auto hit = columns_.find(gram);
            if (hit != columns_.end()) ++counts[hit->second];
          }
        }
        if (start_n == 1 && ++start_n > max_n_) break;
      }
      for (int64_t c = 0; c < num_columns_; ++c) {
        const float w = weights_.empty() ? 1.0f : weights_[c];
        float v = 0;
        switch (weighting_) {
          case Weighting::kTf:
            v = static_cast<float>(counts[c]);
            break;
          case Weighting::kIdf:
            v = counts[c] > 0 ? w : 0.0f;
            break;
          case Weighting::kTfIdf:
            v = static_cast<float>(counts[c]) * w;
            break;
        }
        py[r * num_columns_ + c] = v;
      }
    }
    return absl::OkStatus();
  }

 private:
  DType dtype_;
  Weighting weighting_;
  int64_t min_n_, max_n_, max_skip_;
  // Each pooled n-gram of a counted length → its output column.
  std::map<std::vector<int64_t>, int64_t> columns_;
  std::vector<float> weights_;  // Per output column; empty: all 1.
  int64_t num_columns_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeTfIdfVectorizer(
    const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
  const Node& n = *spec.node;
  const std::string node = n.Describe();
  if (n.HasAttribute("pool_strings") ||
      spec.inputs[0].dtype == DType::kString) {
    return Unimplemented(node,
                         "string n-grams (pool_strings, string "
                         "input) are not supported; int32/int64 tokens are");
  }
  GLINT_ASSIGN_OR_RETURN(
      DType dtype, SpecInputDType(spec, 0, {DType::kInt32, DType::kInt64}));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, DType::kFloat32).status());
  const std::string mode = n.GetString("mode", "");
  Weighting weighting;
  if (mode == "TF") {
    weighting = Weighting::kTf;
  } else if (mode == "IDF") {
    weighting = Weighting::kIdf;
  } else if (mode == "TFIDF") {
    weighting = Weighting::kTfIdf;
  } else {
    return InvalidArgument(node, "mode '", mode, "' (TF, IDF or TFIDF)");
  }
  const int64_t min_n = n.GetInt("min_gram_length", 0);
  const int64_t max_n = n.GetInt("max_gram_length", 0);
  const int64_t max_skip = n.GetInt("max_skip_count", 0);
  if (min_n < 1 || max_n < min_n) {
    return InvalidArgument(node, "gram lengths [", min_n, ", ", max_n,
                           "] must satisfy 1 <= min <= max");
  }
  const std::vector<int64_t> pool = n.GetInts("pool_int64s");
  const std::vector<int64_t> starts = n.GetInts("ngram_counts");
  const std::vector<int64_t> indexes = n.GetInts("ngram_indexes");
  const std::vector<float> weights = n.GetFloats("weights");
  const int64_t pool_size = static_cast<int64_t>(pool.size());
  if (max_skip < 0) {
    return InvalidArgument(node, "max_skip_count ", max_skip, " is negative");
  }
  // ngram_counts[i] is where the (i + 1)-grams start in the pool.
  int64_t ordinal = 0;
  int64_t num_columns = 0;
  std::map<std::vector<int64_t>, int64_t> columns;
  std::vector<std::pair<int64_t, int64_t>> ordinal_column;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t begin = starts[i];
    const int64_t end = i + 1 < starts.size() ? starts[i + 1] : pool_size;
    const int64_t size = static_cast<int64_t>(i) + 1;
    if (begin < 0 || end < begin || end > pool_size ||
        (end - begin) % size != 0) {
      return InvalidArgument(node, "ngram_counts ", i, " (", begin, " to ", end,
                             ") does not split pool_int64s of ", pool_size,
                             " into ", size, "-grams");
    }
    for (int64_t at = begin; at < end; at += size, ++ordinal) {
      if (ordinal >= static_cast<int64_t>(indexes.size())) {
        return InvalidArgument(node, "ngram_indexes has ", indexes.size(),
                               " entries; the pool has more n-grams");
      }
      const int64_t column = indexes[ordinal];
      // Output rows are num_columns wide: bounded so that a model cannot
      // make every run allocate gigabytes per row.
      if (column < 0 || column >= kMaxColumns) {
        return InvalidArgument(node, "ngram index ", column,
                               " is outside [0, 2^24)");
      }
      num_columns = std::max(num_columns, column + 1);
      ordinal_column.push_back({ordinal, column});
      if (size >= min_n && size <= max_n) {
        columns[std::vector<int64_t>(pool.begin() + at,
                                     pool.begin() + at + size)] = column;
      }
    }
  }
  if (ordinal != static_cast<int64_t>(indexes.size())) {
    return InvalidArgument(node, "ngram_indexes has ", indexes.size(),
                           " entries for ", ordinal, " pooled n-grams");
  }
  std::vector<float> column_weights;
  if (!weights.empty()) {
    if (weights.size() != indexes.size()) {
      return InvalidArgument(node, "weights has ", weights.size(),
                             " entries for ", indexes.size(), " n-grams");
    }
    column_weights.assign(num_columns, 0.0f);
    for (auto [k, column] : ordinal_column) column_weights[column] = weights[k];
  }
  // No pooled n-gram is longer than ngram_counts has sizes.
  const int64_t longest =
      std::min<int64_t>(max_n, static_cast<int64_t>(starts.size()));
  return std::unique_ptr<Kernel>(new TfIdfKernel(
      spec, dtype, weighting, min_n, longest, max_skip, std::move(columns),
      std::move(column_weights), num_columns));
}

// --------------------------------------------------------- ChannelShuffle

// glint.ChannelShuffle (attribute groups = g): ShuffleNet's Reshape to
// [N, g, C/g, H, W], Transpose [0, 2, 1, 3, 4] and Reshape back to
// [N, C, H, W], fused by the CPU optimiser: output channel j * g + i is
// input channel i * (C / g) + j. As glint.ChannelShuffleChannelsLast, X is
// [N, H, W, C] and each pixel's channels are permuted so. float32.
class ChannelShuffleKernel final : public KernelBase {
 public:
  ChannelShuffleKernel(const KernelSpec& spec, int64_t groups,
                       bool channels_last)
      : KernelBase(spec), groups_(groups), channels_last_(channels_last) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, DType::kFloat32, node()));
    const int rank = x->shape.rank();
    if (rank < 2) {
      return InvalidArgument(node(), "X has shape ", x->shape.ToString(),
                             "; expected rank 2 or more");
    }
    const int64_t c = x->shape.dim(channels_last_ ? rank - 1 : 1);
    if (c % groups_ != 0) {
      return InvalidArgument(node(), c, " channels do not split into ",
                             groups_, " groups");
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, x->shape,
                                                        DType::kFloat32,
                                                        node()));
    if (y.num_elements() == 0) return absl::OkStatus();
    const float* in = x->as<const float>();
    float* out = y.as<float>();
    const int64_t g = groups_, per = c / g;
    if (channels_last_) {
      const int64_t rows = y.num_elements() / c;
      ParallelFor(rows, std::max<int64_t>(1, 4096 / c),
                  [&](int64_t begin, int64_t end) {
                    for (int64_t r = begin; r < end; ++r) {
                      const float* src = in + r * c;
                      float* dst = out + r * c;
                      for (int64_t i = 0; i < g; ++i) {
                        for (int64_t j = 0; j < per; ++j) {
                          dst[j * g + i] = src[i * per + j];
                        }
                      }
                    }
                  });
      return absl::OkStatus();
    }
    const int64_t plane = Product(x->shape.dims(), 2, rank);
    const int64_t planes = x->shape.dim(0) * c;
    ParallelFor(planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(plane, 1)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t p = begin; p < end; ++p) {
                    const int64_t image = p / c, oc = p % c;
                    const int64_t ic = (oc % g) * per + oc / g;
                    std::memcpy(out + p * plane, in + (image * c + ic) * plane,
                                plane * sizeof(float));
                  }
                });
    return absl::OkStatus();
  }

 private:
  int64_t groups_;
  bool channels_last_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeChannelShuffle(
    const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
  GLINT_RETURN_IF_ERROR(SpecInputDType(spec, 0, {DType::kFloat32}).status());
  const int64_t groups = spec.node->GetInt("groups", 0);
  if (groups < 1) {
    return InvalidArgument(spec.node->Describe(), "groups ", groups,
                           " must be positive");
  }
  return std::unique_ptr<Kernel>(new ChannelShuffleKernel(
      spec, groups, spec.node->op_type == kChannelsLastChannelShuffleOp));
}

// ------------------------------------------ glint.ChannelGatherChannelsLast

// ShuffleNet's Concat -> channel shuffle -> Slices into the next unit's two
// halves, fused by the CPU optimiser (optimizer/optimize.h
// FuseChannelGather) into one pass that reads each input and writes each
// output once. Inputs X_i [N, spatial..., C_i] (float32, equal but for the
// last axis), concatenated along the channels to C = sum C_i, then
// shuffled in `groups` groups (shuffled channel k is concatenated channel
// (k % g) * (C / g) + k / g); output j is the shuffled channels
// [ranges[2j], ranges[2j + 1]).
class ChannelGatherKernel final : public KernelBase {
 public:
  ChannelGatherKernel(const KernelSpec& spec, int64_t groups,
                      std::vector<int64_t> ranges)
      : KernelBase(spec), groups_(groups), ranges_(std::move(ranges)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(std::vector<const TensorView*> xs,
                           GetChannelsLastConcatInputs(ctx, 0, node()));
    const int n = static_cast<int>(xs.size());
    const Shape& first = xs[0]->shape;
    const int rank = first.rank();
    int64_t total = 0;
    bool equal_split = n == groups_;
    for (const TensorView* x : xs) {
      total += x->shape.dim(rank - 1);
      equal_split =
          equal_split && x->shape.dim(rank - 1) == first.dim(rank - 1);
    }
    if (total % groups_ != 0) {
      return InvalidArgument(node(), total, " channels do not split into ",
                             groups_, " groups");
    }
    for (int64_t bound : ranges_) {
      if (bound > total) {
        return InvalidArgument(node(), "an output range ends at channel ",
                               bound, ", past the inputs' ", total);
      }
    }
    int64_t pixels = 1;
    for (int d = 0; d + 1 < rank; ++d) pixels *= first.dim(d);
    const int outputs = static_cast<int>(ranges_.size() / 2);
    std::vector<float*> ys(outputs);
    for (int j = 0; j < outputs; ++j) {
      std::vector<int64_t> dims = first.dims();
      dims[rank - 1] = ranges_[2 * j + 1] - ranges_[2 * j];
      GLINT_ASSIGN_OR_RETURN(
          TensorView y,
          AllocateOutput(ctx, j, Shape(dims), DType::kFloat32, node()));
      ys[j] = y.as<float>();
    }
    const int64_t per = total / groups_;
    std::vector<const float*> base(n);
    std::vector<int64_t> width(n);
    for (int i = 0; i < n; ++i) {
      base[i] = xs[i]->as<const float>();
      width[i] = xs[i]->shape.dim(rank - 1);
    }
    // The general path's table: each concatenated channel's input and its
    // channel there.
    std::vector<int> input_of;
    std::vector<int64_t> channel_of;
    if (!equal_split) {
      for (int i = 0; i < n; ++i) {
        for (int64_t c = 0; c < width[i]; ++c) {
          input_of.push_back(i);
          channel_of.push_back(c);
        }
      }
    }
    ParallelFor(pixels,
                std::max<int64_t>(1, 4096 / std::max<int64_t>(total, 1)),
                [&](int64_t begin, int64_t end) {
                  for (int64_t r = begin; r < end; ++r) {
                    for (int j = 0; j < outputs; ++j) {
                      const int64_t b = ranges_[2 * j], e = ranges_[2 * j + 1];
                      float* dst = ys[j] + r * (e - b);
                      if (equal_split) {
                        // Shuffled channel k is input k % g's channel k / g;
                        // every input's row r starts at r * per.
                        Interleave(base.data(), r * per, b, e, dst);
                      } else {
                        for (int64_t k = b; k < e; ++k) {
                          const int64_t src = (k % groups_) * per + k / groups_;
                          const int i = input_of[src];
                          *dst++ = base[i][r * width[i] + channel_of[src]];
                        }
                      }
                    }
                  }
                });
    return absl::OkStatus();
  }

 private:
  // Shuffled channels [b, e) of inputs that each hold C / g channels, the
  // row at `offset` of each: whole groups take one channel of every input
  // in turn.
  void Interleave(const float* const* base, int64_t offset, int64_t b,
                  int64_t e, float* dst) const {
    const int64_t g = groups_;
    auto in = [&](int64_t i) { return base[i] + offset; };
    int64_t k = b;
    for (; k < e && k % g != 0; ++k) *dst++ = in(k % g)[k / g];
    const int64_t whole = (e - k) / g;
    const int64_t j0 = k / g;
    if (g == 2) {
      const float* a = in(0) + j0;
      const float* c = in(1) + j0;
      for (int64_t j = 0; j < whole; ++j) {
        dst[2 * j] = a[j];
        dst[2 * j + 1] = c[j];
      }
      dst += 2 * whole;
    } else {
      for (int64_t j = 0; j < whole; ++j) {
        for (int64_t i = 0; i < g; ++i) *dst++ = in(i)[j0 + j];
      }
    }
    for (k += whole * g; k < e; ++k) *dst++ = in(k % g)[k / g];
  }

  const int64_t groups_;
  const std::vector<int64_t> ranges_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeChannelGather(
    const KernelSpec& spec) {
  const std::string node = spec.node->Describe();
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1 << 20));
  for (int i = 0; i < spec.node->num_inputs(); ++i) {
    GLINT_RETURN_IF_ERROR(SpecInputDType(spec, i, {DType::kFloat32}).status());
  }
  const int64_t groups = spec.node->GetInt("groups", 0);
  if (groups < 1) {
    return InvalidArgument(node, "groups ", groups, " must be positive");
  }
  std::vector<int64_t> ranges = spec.node->GetInts("ranges", {});
  if (ranges.size() != 2 * spec.node->outputs.size()) {
    return InvalidArgument(node, "has ", spec.node->outputs.size(),
                           " outputs but ", ranges.size(),
                           " range bounds; expected two per output");
  }
  for (size_t j = 0; j < spec.node->outputs.size(); ++j) {
    if (ranges[2 * j] < 0 || ranges[2 * j + 1] < ranges[2 * j]) {
      return InvalidArgument(node, "output ", j, "'s range [", ranges[2 * j],
                             ", ", ranges[2 * j + 1],
                             ") is not a range of channels");
    }
    GLINT_RETURN_IF_ERROR(
        SpecOutputDType(spec, static_cast<int>(j), DType::kFloat32).status());
  }
  return std::unique_ptr<Kernel>(
      new ChannelGatherKernel(spec, groups, std::move(ranges)));
}

}  // namespace

void RegisterMiscKernels(KernelRegistry* registry) {
  registry->Register("Det", MakeDet);
  registry->Register("TfIdfVectorizer", MakeTfIdfVectorizer);
  registry->Register(kChannelShuffleOp, MakeChannelShuffle);
  registry->Register(kChannelsLastChannelShuffleOp, MakeChannelShuffle);
  registry->Register(kChannelsLastChannelGatherOp, MakeChannelGather);
}

}  // namespace glint::cpu
