// Compile-time graph rewrites (Glow's graph optimizer): work that would
// otherwise be repeated on every run is done once, when a partition is
// compiled for a backend. The passes fuse what a backend runs as one op
// (optimizer/fused_ops.h), fold constants, fold BatchNormalization into
// convolutions and quantize/dequantize pairs into int8 ops, and move
// convolution regions to channels last.
//
// The passes keep the graph's interface: its inputs, outputs and their names
// and types never change; only internal values and nodes are rewritten.
// They know graphs only; what they need of the backend that will run the
// result (evaluating a node for constant folding, which ops it chains)
// comes in a RewriteBackend. The CPU backend's is devices/cpu/cpu_rewrites.h.
//
// Thread-compatible: free functions over the graph they are given.
#ifndef GLINT_OPTIMIZER_OPTIMIZE_H_
#define GLINT_OPTIMIZER_OPTIMIZE_H_

#include <functional>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "optimizer/fused_ops.h"

namespace glint {

// What the passes need of the backend that will run the rewritten graph.
// A function left empty means the backend offers nothing there.
struct RewriteBackend {
  // Evaluates `node` of `graph`, every input of which is an initializer:
  // its outputs, one per node output (an empty output's entry unused), or
  // nullopt where it cannot or should not be folded (the node then stays a
  // node). Used by FoldConstants.
  std::function<std::optional<std::vector<Tensor>>(const Graph& graph,
                                                   const Node& node)>
      evaluate;
  // Ops glint.ElementwiseChain runs as a step on its one float input, and
  // ops it runs with a one-element constant operand (Add, Sub, Mul, Div).
  // Used by FuseElementwiseChains.
  std::function<bool(absl::string_view op)> chainable_unary;
  std::function<bool(absl::string_view op)> chainable_scalar;
};

// Runs every pass below, in order. The graph stays valid (Validate()) and
// computes the same outputs up to float rounding (BatchNormalization folded
// into Conv weights rounds differently).
absl::Status OptimizeGraph(Graph* graph, const RewriteBackend& backend);

// Nodes of the default domain whose inputs are all initializers (and whose
// outputs are not graph outputs) are evaluated once by the backend; their
// outputs become initializers. Nodes it does not evaluate are left alone.
absl::Status FoldConstants(Graph* graph, const RewriteBackend& backend);

// Conv (constant W and B) → BatchNormalization (inference, constant
// parameters) becomes one Conv with scaled weights and a shifted bias.
absl::Status FoldBatchNormIntoConv(Graph* graph);

// A 2-D Conv (constant weights, explicit pads, input of known height and
// width) whose outer kernel taps read only padding at every output
// position keeps the taps that read the input: the pads shrink to match,
// the output is the same. DeepLabV3's ASPP convolves a 10x10 map with 3x3
// kernels dilated 12, 24 and 36: only the centre tap ever reads it, so each
// is a 1x1 Conv (they were 62% of the network's time as 3x3s).
absl::Status TrimDeadConvTaps(Graph* graph);

// MatMul → Add(constant bias of N elements broadcast along the last axis)
// becomes glint.FusedMatMul with the bias as its third input.
absl::Status FuseMatMulBias(Graph* graph);

// MatMul (no bias yet) -> Mul or Div by a one-element constant (attention's
// 1/sqrt(d) scaling) becomes glint.FusedMatMul with "alpha".
absl::Status FuseMatMulScale(Graph* graph);

// Transpose(Transpose(x, p1), p2), the inner one read only by the outer,
// becomes Transpose(x, p1 ∘ p2): one pass instead of two (PyTorch writes
// k.transpose(1, 2).transpose(2, 3) for attention's K^T). A Transpose left
// with the identity permutation (and not a graph output) goes: its readers
// read its input. Runs again after ConvertToChannelsLast, where a region's
// reorder out of NHWC meets a model's own permute to NHWC (ConvNeXt).
absl::Status FuseTransposes(Graph* graph);

// Multi-head attention as exporters write it, every intermediate read once:
//   Qh = Transpose(Reshape(Q, [B, S, H, D]), [0, 2, 1, 3])
//   Kt = Transpose(Reshape(K, [B, T, H, D]), [0, 2, 3, 1])
//   Vh = Transpose(Reshape(V, [B, T, H, D]), [0, 2, 1, 3])
//   P  = Softmax(MatMul(Qh, Kt) [scaled: glint.FusedMatMul alpha], axis -1)
//   Y  = Reshape(Transpose(MatMul(P, Vh), [0, 2, 1, 3]), [B, S, H*D])
// becomes glint.Attention(Q, K, V): no transposed copies, and each head's
// scores stay in cache. Runs after FuseMatMulScale (the scale is alpha by
// then). Masked attention (an Add before the Softmax) stays as it is.
absl::Status FuseAttention(Graph* graph);

// glint.Attention whose Q, K and V are each MatMul(X, W_i) [+ b_i] of the
// same X with constant [K, E] weights (self-attention), read by nothing
// else, reads one packed QKV instead: a single MatMul with the weights side
// by side ([K, 3E]) and one wider GEMM instead of three narrow ones.
absl::Status FuseAttentionProjections(Graph* graph);

// GELU as exporters decompose it, 0.5 * x * (1 + Erf(x / sqrt(2))) (with
// x * (1/sqrt(2)) and any order of the two products), becomes one Gelu
// node (ONNX's opset-20 op; the CPU registry has it at every opset).
absl::Status FuseGelu(Graph* graph);

// MatMul / glint.FusedMatMul / Gemm / Conv → Relu or LeakyRelu becomes the
// fused op with that activation; MatMul / glint.FusedMatMul → Gelu (exact
// form) too.
absl::Status FuseActivations(Graph* graph);

// Chains of two or more float32 nodes the backend can chain (a unary op,
// or one with a one-element constant operand), each intermediate value
// read only by the next, become one glint.ElementwiseChain: one pass over
// memory instead of one per node. Runs after FuseGelu and FuseActivations,
// which make better use of the patterns they know.
absl::Status FuseElementwiseChains(Graph* graph,
                                   const RewriteBackend& backend);

// ShuffleNet's channel shuffle as exporters write it — Reshape of
// [N, C, H, W] to [N, g, C/g, H, W], Transpose [0, 2, 1, 3, 4], Reshape
// back to [N, C, H, W] (float32, static shapes, the intermediates read by
// nothing else) — becomes one glint.ChannelShuffle (groups g), which the
// channels-last region then takes in: one pass over memory instead of
// three, and no reorder out of and back into NHWC around it.
absl::Status FuseChannelShuffle(Graph* graph);

// 2-D convolutions (float32, static shapes) and what lies between them —
// pools, global average pools, unary activations, and elementwise binary
// ops on two equally shaped channels-last values — run channels last
// (NHWC): oneDNN's convolutions take that layout without reordering,
// where NCHW costs a reorder on the way in and out of every Conv. A
// Transpose enters the region where an NCHW value feeds a Conv and leaves
// it where a value is read outside or is a graph output; value names
// inside the region get the suffix "__nhwc", and the Transposes are named
// after the value they convert with the suffix kToNhwcSuffix or
// kToNchwSuffix (then "_N" if the name is taken).
absl::Status ConvertToChannelsLast(Graph* graph);
inline constexpr char kToNhwcSuffix[] = "__to_nhwc";
inline constexpr char kToNchwSuffix[] = "__to_nchw";

// Whether `node` is one of the layout reorders ConvertToChannelsLast
// inserts (a Transpose named with its suffixes), which profiles count
// apart from the model's own ops. A model's own Transpose named so would
// count too: the names are all a compiled partition has to go by.
bool IsLayoutReorder(const Node& node);

// A Concat along the channels of a channels-last region whose output only
// feeds a glint.BatchNormChannelsLast (DenseNet's pre-activation: every
// layer concatenates the block's features, then normalises and Relus them
// before its 1x1 Conv) becomes one glint.ConcatBatchNormChannelsLast: the
// inputs are normalised as they are gathered, one pass over memory instead
// of two, and the concatenation is never stored. The BatchNormalization's
// four parameters must be constants. Runs after the last FuseActivations,
// so the Relu is already in the BatchNormalization.
absl::Status FuseConcatBatchNorm(Graph* graph);

// A channels-last channel shuffle, with the Concat it alone reads and the
// channel Slices that alone read it (ShuffleNetV2: each unit concatenates
// its branches, shuffles, and the next unit chunks the result into two
// halves), becomes one glint.ChannelGatherChannelsLast: each output channel
// is copied from its input channel in one pass, where the three ops wrote
// and read every channel three times (they were 27% of ShuffleNet's time).
// Either side alone fuses too. Runs after ConvertToChannelsLast.
absl::Status FuseChannelGather(Graph* graph);

// MatMul / glint.FusedMatMul / Conv / glint.FusedConv without an activation
// whose output only feeds Add(output, Z), Z of the same shape (a residual
// connection), takes Z as its addend input: oneDNN adds it as the result is
// written. The fused node takes the Add's place in the order, as Z may be
// computed after the producer. Runs after ConvertToChannelsLast, so that
// the Add is already channels last where the Conv is; FuseActivations runs
// again after it, for the Relu that follows a ResNet block's Add.
absl::Status FuseResidualAdd(Graph* graph);

// The QDQ pattern of quantized models: DequantizeLinear(x_q) [per tensor]
// and DequantizeLinear(w_q constant) [per tensor or per output channel]
// -> Conv / MatMul (2-D weights) / Gemm (no transA, alpha = beta = 1),
// with a bias that is a float32 constant or DequantizeLinear of an int32
// constant, -> optional Relu -> optional QuantizeLinear [per tensor]
// becomes one glint.QLinearFusedConv / glint.QLinearFusedMatMul: an int8
// oneDNN primitive with the scales and zero points as its attributes (its
// output quantized, or float32 without the QuantizeLinear). The
// DequantizeLinear nodes go when nothing else reads them. Also
// DequantizeLinear -> MaxPool -> QuantizeLinear with equal parameters
// becomes MaxPool on the quantized values. Runs first: constant folding
// would otherwise dequantize the weights.
absl::Status FuseQuantizedOps(Graph* graph);

// Drops initializers that no node reads and that are not graph outputs.
void RemoveUnusedInitializers(Graph* graph);

}  // namespace glint

#endif  // GLINT_OPTIMIZER_OPTIMIZE_H_
