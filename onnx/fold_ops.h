// The per-op evaluators of Glint's shape folding (shape_folding.h): what
// an ONNX node of the default domain computes from operands the fold
// knows (fold_value.h). Arithmetic (Add, Sub, Mul, Div, Mod, Pow),
// comparisons, logic, unary math, Max/Min, Where, Cast, and the ops that
// move elements (Gather, Slice, Concat, Unsqueeze, Squeeze, Reshape,
// Expand, Tile, Transpose, Identity), Range, ReduceSum/Prod/Max/Min and
// ConstantOfShape. Shape and Size, which read a value's type rather than
// its elements, are evaluated by shape_folding.cc.
//
// The ops that move elements carry unknown elements; Where picks them
// (its condition known); integer Add, Sub, Mul and Div name the dims they
// compute on (a dim times 12 is the element `12*batch`: core/dim_expr.h);
// comparisons decide what a dim's being a size decides (never equal to
// -1). The others fold only complete operands. Nothing is folded where ONNX's
// operator would fail (a Gather index out of range, an integer division by
// zero).
//
// Internal to //onnx:onnx_importer. Thread-safe on distinct values (the
// op table is built once, on first use, and only read after).
#ifndef GLINT_ONNX_FOLD_OPS_H_
#define GLINT_ONNX_FOLD_OPS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "onnx/fold_value.h"
#include "onnx/onnx_pb.h"

namespace glint::onnx_internal {

// The value `node` (one output) computes from `inputs`, one per input of
// the node: inputs[i] is null where input i is absent (an empty name) or
// not known. A present operand that is not known refuses the fold; the
// older forms' operands given as attributes (Slice-1's starts/ends/axes,
// the axes of Unsqueeze/Squeeze before 13 and of the Reduce ops before
// 13/18) are read from `node`. `opset` is the model's opset of the default
// domain. nullopt where Glint does not fold it.
std::optional<FoldValue> FoldOp(const onnx::NodeProto& node,
                                const std::vector<const FoldValue*>& inputs,
                                int64_t opset);

}  // namespace glint::onnx_internal

#endif  // GLINT_ONNX_FOLD_OPS_H_
