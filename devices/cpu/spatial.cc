#include "devices/cpu/spatial.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "devices/cpu/kernel_util.h"

namespace glint::cpu {
namespace {

absl::StatusOr<std::vector<int64_t>> ReadAxes(const Node& node,
                                              absl::string_view attr,
                                              int count, int64_t fallback,
                                              int64_t min_value) {
  std::vector<int64_t> v = node.GetInts(attr);
  if (v.empty()) return std::vector<int64_t>(count, fallback);
  if (static_cast<int>(v.size()) != count) {
    return InvalidArgument(node.Describe(), attr, " has ", v.size(),
                           " values; expected ", count);
  }
  for (int64_t x : v) {
    if (x < min_value) {
      return InvalidArgument(node.Describe(), attr, " [",
                             absl::StrJoin(v, ", "), "] has a value below ",
                             min_value);
    }
  }
  return v;
}

}  // namespace

absl::StatusOr<WindowAttrs> ParseWindowAttrs(const Node& node,
                                             int spatial_rank) {
  WindowAttrs a;
  if (node.HasAttribute("kernel_shape")) {
    GLINT_ASSIGN_OR_RETURN(
        a.kernel, ReadAxes(node, "kernel_shape", spatial_rank, 1, 1));
  }
  GLINT_ASSIGN_OR_RETURN(a.strides,
                         ReadAxes(node, "strides", spatial_rank, 1, 1));
  GLINT_ASSIGN_OR_RETURN(a.dilations,
                         ReadAxes(node, "dilations", spatial_rank, 1, 1));
  GLINT_ASSIGN_OR_RETURN(a.pads,
                         ReadAxes(node, "pads", 2 * spatial_rank, 0, 0));
  const std::string auto_pad = node.GetString("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET" || auto_pad.empty()) {
    a.auto_pad = AutoPad::kNotSet;
  } else if (auto_pad == "SAME_UPPER") {
    a.auto_pad = AutoPad::kSameUpper;
  } else if (auto_pad == "SAME_LOWER") {
    a.auto_pad = AutoPad::kSameLower;
  } else if (auto_pad == "VALID") {
    a.auto_pad = AutoPad::kValid;
  } else {
    return InvalidArgument(node.Describe(), "unknown auto_pad '", auto_pad,
                           "'");
  }
  a.ceil_mode = node.GetInt("ceil_mode", 0) != 0;
  return a;
}

absl::StatusOr<WindowGeometry> ComputeWindowGeometry(
    const std::vector<int64_t>& in, const WindowAttrs& a,
    absl::string_view node) {
  const int n = static_cast<int>(in.size());
  WindowGeometry g;
  g.out.resize(n);
  g.pad_begin.resize(n);
  g.pad_end.resize(n);
  for (int i = 0; i < n; ++i) {
    const int64_t s = a.strides[i];
    const int64_t ek = (a.kernel[i] - 1) * a.dilations[i] + 1;
    int64_t pb = 0;
    int64_t pe = 0;
    int64_t out = 0;
    switch (a.auto_pad) {
      case AutoPad::kNotSet:
      case AutoPad::kValid: {
        if (a.auto_pad == AutoPad::kNotSet) {
          pb = a.pads[i];
          pe = a.pads[n + i];
        }
        const int64_t span = in[i] + pb + pe - ek;
        if (span < 0) break;  // Reported below.
        if (a.ceil_mode) {
          out = (span + s - 1) / s + 1;
          // The last window must start inside the input or begin padding.
          if ((out - 1) * s >= in[i] + pb) --out;
        } else {
          out = span / s + 1;
        }
        break;
      }
      case AutoPad::kSameUpper:
      case AutoPad::kSameLower: {
        out = (in[i] + s - 1) / s;
        const int64_t total = std::max<int64_t>(0, (out - 1) * s + ek - in[i]);
        const int64_t small = total / 2;
        pb = a.auto_pad == AutoPad::kSameUpper ? small : total - small;
        pe = total - pb;
        break;
      }
    }
    if (out < 1) {
      return InvalidArgument(
          node, "window of extent ", ek, " (kernel ", a.kernel[i],
          ", dilation ", a.dilations[i], ") does not fit spatial axis ", i,
          " of size ", in[i], " with padding ", pb, "+", pe);
    }
    g.out[i] = out;
    g.pad_begin[i] = pb;
    g.pad_end[i] = pe;
  }
  return g;
}

absl::StatusOr<ConvGeometry> ComputeConvGeometry(const Shape& x,
                                                 const Shape& w,
                                                 const Shape* b,
                                                 const WindowAttrs& attrs,
                                                 int64_t group,
                                                 bool channels_last,
                                                 absl::string_view node) {
  const int sd = static_cast<int>(attrs.strides.size());
  if (x.rank() != sd + 2 || w.rank() != sd + 2) {
    return InvalidArgument(node, "expected X and W of rank ", sd + 2,
                           "; got ", x.ToString(), " and ", w.ToString());
  }
  ConvGeometry g;
  g.n = x.dim(0);
  g.c = channels_last ? x.dim(sd + 1) : x.dim(1);
  g.m = w.dim(0);
  g.group = group;
  if (g.c % group != 0 || w.dim(1) * group != g.c || g.m % group != 0) {
    return InvalidArgument(node, "X ", x.ToString(), " and W ", w.ToString(),
                           " do not match group=", group);
  }
  if (channels_last) {
    g.in.assign(x.dims().begin() + 1, x.dims().end() - 1);
  } else {
    g.in.assign(x.dims().begin() + 2, x.dims().end());
  }
  g.kernel.assign(w.dims().begin() + 2, w.dims().end());
  if (!attrs.kernel.empty() && attrs.kernel != g.kernel) {
    return InvalidArgument(node, "kernel_shape disagrees with W ",
                           w.ToString());
  }
  if (b != nullptr && (b->rank() != 1 || b->dim(0) != g.m)) {
    return InvalidArgument(node, "B has shape ", b->ToString(),
                           "; expected [", g.m, "]");
  }
  WindowAttrs a = attrs;
  a.kernel = g.kernel;
  GLINT_ASSIGN_OR_RETURN(g.window, ComputeWindowGeometry(g.in, a, node));
  std::vector<int64_t> out = {g.n};
  if (!channels_last) out.push_back(g.m);
  out.insert(out.end(), g.window.out.begin(), g.window.out.end());
  if (channels_last) out.push_back(g.m);
  g.out = Shape(out);
  return g;
}

}  // namespace glint::cpu
