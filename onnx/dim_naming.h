// Names for the dims ONNX's inference leaves unnamed: each op's output dims
// as expressions (core/dim_expr.h) of its inputs' named dims.
//
// ONNX 1.12 propagates a dim's name through the ops that keep it
// (elementwise ops, MatMul, Transpose...) but invents a fresh one ("unk__3")
// wherever arithmetic makes a new size: a convolution of an image `height`
// pixels high, a Reshape whose target holds a -1 or a dim read at run time,
// an Expand to a shape read from another value, a Resize. A value of such a
// dim cannot be sized at a network's bounds, so no memory is reserved for
// it. DeriveOutputDimNames gives each such dim the expression that computes
// it: `(height+1)/2` for a 3x3 stride-2 convolution padded by 1,
// `64*batch` for a Reshape of [batch, 8, 8, 7, 7, 96] to [-1, 49, 96],
// `12*batch` where the target's element is read as Shape(x)[1] * 12
// (shape_folding.h names that element). The fold (shape_folding.cc)
// writes them into the output's type, and ONNX carries them on.
//
// Internal to //onnx:onnx_importer. Thread-safe on distinct nodes.
#ifndef GLINT_ONNX_DIM_NAMING_H_
#define GLINT_ONNX_DIM_NAMING_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "onnx/fold_value.h"
#include "onnx/onnx_pb.h"

namespace glint::onnx_internal {

// What the naming reads of the graph around a node.
struct DimSource {
  // A value's shape where its rank is known (-1 for an unknown dim) and
  // the names of its unknown dims ("" where unnamed); nullopt where the
  // rank is not known.
  std::function<std::optional<Dims>(const std::string& value,
                                    std::vector<std::string>* names)>
      shape_of;
  // A value's folded contents (elements may be unknown and named), or null.
  std::function<const FoldValue*(const std::string& value)> find;
};

// The dims of `node`'s first output (of rank `rank`) as the node derives
// them from its inputs' dims and folded operands, one per dim: a size in
// decimal ("116": ONNX cannot read a Reshape target that holds a dim read
// at run time, so it knows none of its elements), an expression of named
// dims, or "" where it has none to give (the dim depends on data, or the
// op or its attributes are ones it does not follow). Every name is at most
// kMaxDimExprLength long; none is built on a name ONNX invented. Ops followed:
// Conv, MaxPool, AveragePool, LpPool (not in ceil_mode), Reshape, Expand, Tile,
// ConstantOfShape, Flatten, Resize and Upsample. `opset` is the model's opset
// of the default domain.
std::vector<std::string> DeriveOutputDimNames(const onnx::NodeProto& node,
                                              int rank, const DimSource& source,
                                              int64_t opset);

}  // namespace glint::onnx_internal

#endif  // GLINT_ONNX_DIM_NAMING_H_
