// The ops the graph rewrites write (optimizer/optimize.h) and the CPU
// backend's kernels implement (devices/cpu/).
//
// Fused nodes use op types of the default domain that ONNX cannot name
// (they contain a '.'), registered only in the CPU kernel registry:
//
//   glint.FusedMatMul  alpha * MatMul(A, B) [+ bias] [+ Z] [-> activation]
//                      inputs A, B, optional bias with N elements (N = last
//                      dim of the result), optional Z of the result's
//                      shape; attributes "activation" and "alpha"
//                      (default 1).
//   glint.FusedGemm    Gemm with attribute "activation" (Relu/LeakyRelu).
//   glint.FusedConv    Conv [+ Z] with attribute "activation" (Relu/
//                      LeakyRelu, applied after Z) and "channels_last" (1: X,
//                      Y and Z are [N, spatial..., channels]); optional
//                      input 3, Z, of Y's shape.
//   glint.QLinearFusedConv, glint.QLinearFusedMatMul
//                      inputs x_q, x_scale, x_zero_point, w_q, w_scale,
//                      w_zero_point, y_scale, y_zero_point (both optional:
//                      absent, the output is float32), bias (optional,
//                      float32, real units); Conv's attributes and
//                      "channels_last" (as glint.FusedConv) or "transB"
//                      (W is [N, K]), "activation" (Relu). quant.cc.
//   glint.ElementwiseChain
//                      one float32 input through a sequence of elementwise
//                      steps in one pass: attribute "ops" (ONNX op names),
//                      "scalars" and "scalar_first" (for Add/Sub/Mul/Div:
//                      the constant operand and whether it comes first),
//                      and each step's own attributes as "<step>:<name>".
//   glint.Attention    multi-head scaled dot-product attention: inputs Q
//                      [B, S, H*D], K and V [B, T, H*D] (heads side by side
//                      in the last axis), or one input QKV [B, S, 3*H*D]
//                      (the three side by side); attributes "num_heads"
//                      (H) and "scale"; output [B, S, H*D], each head's
//                      softmax(scale * Q K^T) V in its own D columns.
//   glint.MaxPoolChannelsLast, glint.AveragePoolChannelsLast,
//   glint.GlobalAveragePoolChannelsLast
//                      the ONNX pools (same attributes; MaxPool without its
//                      Indices output) on [N, spatial..., channels].
//   glint.BatchNormChannelsLast
//                      BatchNormalization (inference) on [N, spatial...,
//                      channels]; attribute "activation" (Relu or none).
//   glint.ConcatBatchNormChannelsLast
//                      Concat along the last axis, then
//                      glint.BatchNormChannelsLast, in one pass: inputs
//                      scale, B, mean, var (constants, of the sum of the
//                      inputs' channels), then the inputs to concatenate
//                      (1 or more, [N, spatial..., C_i], float32);
//                      attributes "epsilon" and "activation" (Relu or
//                      none).
//   glint.ChannelShuffle, glint.ChannelShuffleChannelsLast
//                      ShuffleNet's channel shuffle (attribute "groups")
//                      on [N, C, spatial...] or [N, spatial..., C].
//   glint.ChannelGatherChannelsLast
//                      Concat along the last axis, channel shuffle in
//                      "groups" groups, then Slices of channels, in one
//                      pass: inputs [N, spatial..., C_i] (float32), output
//                      j the shuffled channels [ranges[2j], ranges[2j+1]).
//
// "activation" is an ONNX op name ("Relu", "LeakyRelu" with
// "activation_alpha", "Sigmoid", "Tanh", "Gelu"); see devices/cpu/dnnl_util.h.
#ifndef GLINT_OPTIMIZER_FUSED_OPS_H_
#define GLINT_OPTIMIZER_FUSED_OPS_H_

namespace glint {

inline constexpr char kFusedMatMulOp[] = "glint.FusedMatMul";
inline constexpr char kFusedGemmOp[] = "glint.FusedGemm";
inline constexpr char kFusedConvOp[] = "glint.FusedConv";
inline constexpr char kElementwiseChainOp[] = "glint.ElementwiseChain";
inline constexpr char kAttentionOp[] = "glint.Attention";
inline constexpr char kQLinearFusedConvOp[] = "glint.QLinearFusedConv";
inline constexpr char kQLinearFusedMatMulOp[] = "glint.QLinearFusedMatMul";
inline constexpr char kChannelsLastMaxPoolOp[] = "glint.MaxPoolChannelsLast";
inline constexpr char kChannelsLastAveragePoolOp[] =
    "glint.AveragePoolChannelsLast";
inline constexpr char kChannelsLastGlobalAveragePoolOp[] =
    "glint.GlobalAveragePoolChannelsLast";
inline constexpr char kChannelsLastBatchNormOp[] =
    "glint.BatchNormChannelsLast";
inline constexpr char kChannelsLastConcatBatchNormOp[] =
    "glint.ConcatBatchNormChannelsLast";
inline constexpr char kChannelShuffleOp[] = "glint.ChannelShuffle";
inline constexpr char kChannelsLastChannelGatherOp[] =
    "glint.ChannelGatherChannelsLast";
inline constexpr char kChannelsLastChannelShuffleOp[] =
    "glint.ChannelShuffleChannelsLast";

}  // namespace glint

#endif  // GLINT_OPTIMIZER_FUSED_OPS_H_
