#include "optimizer/optimize.h"

#include "core/status_macros.h"

namespace glint {

absl::Status OptimizeGraph(Graph* graph, const RewriteBackend& backend) {
  // Before constant folding, which would turn the weights'
  // DequantizeLinear into float weights.
  GLINT_RETURN_IF_ERROR(FuseQuantizedOps(graph));
  GLINT_RETURN_IF_ERROR(FoldConstants(graph, backend));
  GLINT_RETURN_IF_ERROR(FuseTransposes(graph));
  GLINT_RETURN_IF_ERROR(FoldBatchNormIntoConv(graph));
  GLINT_RETURN_IF_ERROR(TrimDeadConvTaps(graph));
  GLINT_RETURN_IF_ERROR(FuseMatMulBias(graph));
  GLINT_RETURN_IF_ERROR(FuseMatMulScale(graph));
  GLINT_RETURN_IF_ERROR(FuseAttention(graph));
  GLINT_RETURN_IF_ERROR(FuseAttentionProjections(graph));
  GLINT_RETURN_IF_ERROR(FuseGelu(graph));
  GLINT_RETURN_IF_ERROR(FuseActivations(graph));
  GLINT_RETURN_IF_ERROR(FuseElementwiseChains(graph, backend));
  GLINT_RETURN_IF_ERROR(FuseChannelShuffle(graph));
  GLINT_RETURN_IF_ERROR(ConvertToChannelsLast(graph));
  // The region's reorders meet the model's own Transposes.
  GLINT_RETURN_IF_ERROR(FuseTransposes(graph));
  GLINT_RETURN_IF_ERROR(FuseResidualAdd(graph));
  // A Relu after a residual Add now follows the fused node.
  GLINT_RETURN_IF_ERROR(FuseActivations(graph));
  GLINT_RETURN_IF_ERROR(FuseConcatBatchNorm(graph));
  GLINT_RETURN_IF_ERROR(FuseChannelGather(graph));
  RemoveUnusedInitializers(graph);
  return graph->Validate();
}

}  // namespace glint
