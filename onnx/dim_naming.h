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
  // Whether a name read from elsewhere (an If's branches' output types)
  // names a dim the naming may build on, as shape_of's names do.
  std::function<bool(const std::string& name)> usable_name;
  // Where the node is: "" in the model's graph, else the path of the bodies
  // around it (DataDependentTag).
  std::string scope;
};

// The tag of the sizes `node` decides from its data
// ("nonzero_3fa9c01b22d4e5f6"): the op and a hash of `scope` (the path of
// the bodies around the node, DimSource::scope) and output `output`'s name,
// the same in every import.
std::string DataDependentTag(const onnx::NodeProto& node, int output,
                             absl::string_view scope);

// The dims of output `output` of `node` (of rank `rank`) as the node
// derives them from its inputs' dims and folded operands, one per dim: a
// size in decimal ("116": ONNX cannot read a Reshape target that holds a dim
// read at run time, so it knows none of its elements), an expression of
// named dims, or "" where it has none to give (the op or its attributes are
// ones it does not follow). Every name is at most kMaxDimExprLength long;
// none is built on a name ONNX invented. Ops followed, on their first
// output: Conv, ConvTranspose, MaxPool, AveragePool, LpPool, Reshape, Pad,
// DepthToSpace, SpaceToDepth, Expand, Tile, ConstantOfShape, Flatten,
// Resize, Upsample, Concat, Gather and the elementwise ops that broadcast;
// on every output, Split into equal parts.
//
// A size the data decides is named as a bounded dim (core/dim_expr.h), the
// node's DataDependentTag at most a bound of the inputs' dims: NonZero's
// count (at most its input's elements), TopK's run-time k (at most the
// axis; both outputs), NonMaxSuppression's boxes (batches x classes x the
// most a class keeps), Compress's and Unique's counts (at most the
// elements, or the slices along the axis; every output of Unique), a
// Slice cut at run time (at most the input's dim), a Concat of such sizes
// (the sum of their bounds, where their sum is too long a name), a
// broadcast of two sizes that are not one name (at most the larger), each
// If output's dims where the branches differ (at most the larger), a pool
// in ceil_mode (at most the ceiling; the last window may be dropped) and a
// Resize by a scale that is no fraction of small terms (at most
// ceil(scale) times the dim). `opset` is the model's opset of the default
// domain.
std::vector<std::string> DeriveOutputDimNames(const onnx::NodeProto& node,
                                              int output, int rank,
                                              const DimSource& source,
                                              int64_t opset);

}  // namespace glint::onnx_internal

#endif  // GLINT_ONNX_DIM_NAMING_H_
