// The type-and-shape inference functions of the schemas that
// newer_opsets.cc registers for ONNX opsets 18 to 23 (newer_opsets.h),
// written from the ONNX operator specification: each reads the node's
// input types and shapes (and constant inputs, where ONNX's data
// propagation gives them) and writes its outputs' through libonnx's
// InferenceContext, failing with fail_shape_inference where the node is
// malformed.
//
// Internal to //onnx:onnx_importer. Thread-safe on distinct values (each
// call reads and writes only its own InferenceContext; none keeps state).
#ifndef GLINT_ONNX_NEWER_OPSETS_INFERENCE_H_
#define GLINT_ONNX_NEWER_OPSETS_INFERENCE_H_

#include "onnx/defs/shape_inference.h"

namespace glint::onnx_internal {

// Output 0 gets input 0's type and shape (unary and normalization ops).
void PropagateFirst(onnx::InferenceContext& ctx);

// Reduce*-18 and later: axes are input 1.
void InferReduce(onnx::InferenceContext& ctx);
// Split-18: `split` input or `num_outputs` (the last chunk smaller).
void InferSplit(onnx::InferenceContext& ctx);
// Pad-18: pads for `axes` (input 3) or for every axis.
void InferPad(onnx::InferenceContext& ctx);
// Resize-18/19: scales or sizes for `axes`, keep_aspect_ratio_policy.
void InferResize(onnx::InferenceContext& ctx);
// The spatial output size of a pooling window (AveragePool-19, LpPool-18).
void InferPool(onnx::InferenceContext& ctx);
// Col2Im-18: [N, C * prod(block_shape), L] -> [N, C, image_shape...].
void InferCol2Im(onnx::InferenceContext& ctx);
// CenterCropPad-18: `shape` (input 1) on `axes`.
void InferCenterCropPad(onnx::InferenceContext& ctx);
// Two inputs broadcast numpy-style (the Bitwise ops).
void InferBroadcast(onnx::InferenceContext& ctx);
// Cast-19/21: the `to` type, input 0's shape.
void InferCast(onnx::InferenceContext& ctx);
// CastLike-19/21: input 1's type, input 0's shape.
void InferCastLike(onnx::InferenceContext& ctx);
// DFT-20: axis (input 2, default -2) and dft_length (input 1) as inputs.
void InferDft(onnx::InferenceContext& ctx);
// AffineGrid-20: theta [N, 2, 3] or [N, 3, 4], size [N, C, H, W(, D)].
void InferAffineGrid(onnx::InferenceContext& ctx);
// Attention-23: Y and the optional present_key/value, qk_matmul_output.
void InferAttention(onnx::InferenceContext& ctx);
// QuantizeLinear-19/21: the zero point's type (else output_dtype, else
// UINT8), input 0's shape.
void InferQuantizeLinear(onnx::InferenceContext& ctx);
// DequantizeLinear-19/21: the scale's type, input 0's shape.
void InferDequantizeLinear(onnx::InferenceContext& ctx);
// RMSNormalization-23: the scale's type, input 0's shape.
void InferRMSNormalization(onnx::InferenceContext& ctx);

}  // namespace glint::onnx_internal

#endif  // GLINT_ONNX_NEWER_OPSETS_INFERENCE_H_
