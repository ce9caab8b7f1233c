// Glint's own shape inference, the part ONNX 1.12 lacks: the arithmetic
// exporters write to compute shapes (Shape → Gather → Unsqueeze → Concat
// → Reshape, Div for a head size, Range for a causal mask, Where/Equal for
// -1 handling) is evaluated wherever its inputs are known, and each node so
// evaluated becomes a Constant node holding its value, in place.
//
// ONNX's own inference reads Constant nodes as data, so after a fold it
// types the Reshape/Expand/Tile/Slice/ConstantOfShape/Range/Resize that
// consumed the value, and the values after them; the next fold can then
// read their shapes. InferTypes (onnx_inference.cc) alternates the two
// until nothing more folds. Rewriting in place (never adding or removing a
// node) keeps the model's structure, so the types the import helper sends
// back still match the model node by node; the importer then folds the
// same nodes in its own process, and the CPU backend's constant folding
// turns the Constant nodes into initializers: the shape arithmetic leaves
// the plan.
//
// What is "known": initializers and Constant values of at most
// kMaxFoldElements (fold_value.h) elements, and the dims of a value's
// shape that its type fixes (graph inputs are bound to fixed dims at
// import). A value may be known in part: Shape(x) of an [N, 1] x whose N
// depends on run-time data is [?, 1], and Gather(Shape(x), 1) is the
// constant 1. The ops that move elements (Gather, Slice, Concat,
// Unsqueeze, Squeeze, Reshape, Expand, Tile, Transpose, Cast) and Where
// carry unknown elements, integer arithmetic names them by the dims it
// computes on (fold_ops.h); a node is rewritten only when its whole value
// is known.
//
// Where a node makes a new size of named dims (a strided convolution, a
// Reshape of a target read at run time), the fold names its output's dims
// by that arithmetic (dim_naming.h), in place of the name ONNX invented
// for them, on that value and on every later value ONNX gave the invented
// name.
//
// An If whose condition folds takes one branch, and its outputs get that
// branch's types (libonnx merges both; exporters write branches of
// different ranks, which leaves the If's outputs without a rank). Inside
// Loop and Scan bodies, the shapes of values that may change from one
// iteration to the next (those computed from the body's own inputs) are
// not trusted; If branches and values read from outside the body are.
// Nothing is folded where ONNX's operator would fail (a Gather index out
// of range, an integer division by zero): the node stays and the kernel
// reports it at run time. Values a graph outputs are not folded.
//
// This file holds the driver: what each graph knows (initializers,
// Constant nodes, folded values, declared shapes), Shape and Size, the If
// typing and the walk over the graph and its subgraphs. The value the fold
// computes on is FoldValue (fold_value.h); the per-op evaluators are in
// fold_ops.h.
//
// Internal to //onnx:onnx_importer. Thread-safe on distinct protos.
#ifndef GLINT_ONNX_SHAPE_FOLDING_H_
#define GLINT_ONNX_SHAPE_FOLDING_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "onnx/fold_value.h"  // kMaxFoldElements
#include "onnx/onnx_pb.h"

namespace glint::onnx_internal {

// Folds every node of `graph` (and of its subgraphs) whose value is
// computable from what is known, rewriting each into a Constant node in
// place; gives each If whose condition is known its taken branch's output
// types. `opset` is the model's opset of the default domain. Returns how
// many nodes it rewrote or retyped.
absl::StatusOr<int> FoldShapeArithmetic(onnx::GraphProto* graph,
                                        int64_t opset);

// ONNX's inference names each unknown dim it cannot relate to another
// ("unk__0", "unk__1": where two dims it cannot tell equal meet in a
// broadcast, each Range of a computed length), and keeps a name once it
// is in a value's type, an exporter's too ("Gatherlabels_dim_0" on an
// output: it names no size). Before it infers again after a fold, the
// names no input's dims size are forgotten (invented ones, and the
// exporter's; in value_info and outputs, subgraphs too; never a graph
// input's), so that a name the fold learnt (a Range's length is `seq`, a
// NonZero's count at most its input's elements) propagates past where ONNX
// or the exporter wrote one that sizes nothing. The fold never names a dim
// by an invented name (it would come back as another on the next round,
// and the rounds would not end); a model's own dim named like one (tf2onnx
// writes unk__N) loses its name past the inputs.
void ForgetUnsizableDimNames(onnx::GraphProto* graph);

}  // namespace glint::onnx_internal

#endif  // GLINT_ONNX_SHAPE_FOLDING_H_
