// Window geometry of Conv and the pools: ONNX's kernel_shape, strides,
// dilations, pads, auto_pad and ceil_mode, turned into output sizes and
// explicit begin/end padding per spatial axis; and the one convolution
// geometry every Conv kernel (float and quantized) checks its shapes with.
#ifndef GLINT_DEVICES_CPU_SPATIAL_H_
#define GLINT_DEVICES_CPU_SPATIAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/graph.h"
#include "core/tensor.h"

namespace glint::cpu {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

struct WindowAttrs {
  std::vector<int64_t> kernel;     // Empty until known (Conv: from W).
  std::vector<int64_t> strides;    // One per spatial axis, >= 1.
  std::vector<int64_t> dilations;  // One per spatial axis, >= 1.
  std::vector<int64_t> pads;       // Begins then ends, >= 0.
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;
};

// Reads the attributes for `spatial_rank` axes, filling ONNX's defaults
// (stride 1, dilation 1, no padding); INVALID_ARGUMENT for wrong lengths or
// values, an unknown auto_pad. `kernel` comes from kernel_shape (left empty
// when the attribute is absent).
absl::StatusOr<WindowAttrs> ParseWindowAttrs(const Node& node,
                                             int spatial_rank);

struct WindowGeometry {
  std::vector<int64_t> out;        // Output size per spatial axis (>= 1).
  std::vector<int64_t> pad_begin;  // Effective padding per axis.
  std::vector<int64_t> pad_end;
};

// Output sizes for `in` (spatial sizes), per ONNX: with ceil_mode a window
// that would start in the end padding is dropped (as onnxruntime and
// PyTorch do); INVALID_ARGUMENT when the (dilated) window does not fit.
absl::StatusOr<WindowGeometry> ComputeWindowGeometry(
    const std::vector<int64_t>& in, const WindowAttrs& attrs,
    absl::string_view node);

// A convolution's shapes, as Conv, ConvInteger and QLinearConv (plain or
// fused) all see them.
struct ConvGeometry {
  int64_t n = 0, c = 0, m = 0, group = 1;
  std::vector<int64_t> in, kernel;  // Spatial sizes.
  WindowGeometry window;
  Shape out;
};

// X is [N, C, spatial...] ([N, spatial..., C] when `channels_last`), W is
// [M, C / group, kernel...] and B, when given, [M]; the window's strides,
// dilations and padding come from `attrs` (its kernel, when set, must be
// W's). INVALID_ARGUMENT naming `node` when ranks, channels, groups,
// kernel_shape or B disagree, or the window does not fit.
absl::StatusOr<ConvGeometry> ComputeConvGeometry(const Shape& x,
                                                 const Shape& w,
                                                 const Shape* b,
                                                 const WindowAttrs& attrs,
                                                 int64_t group,
                                                 bool channels_last,
                                                 absl::string_view node);

}  // namespace glint::cpu

#endif  // GLINT_DEVICES_CPU_SPATIAL_H_
