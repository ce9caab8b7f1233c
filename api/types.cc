#include "api/types.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/text.h"

namespace glint {

absl::string_view PartitionStrategyName(PartitionStrategy strategy) {
  switch (strategy) {
    case PartitionStrategy::kAuto: return "auto";
    case PartitionStrategy::kWhole: return "whole";
    case PartitionStrategy::kMemory: return "memory";
    case PartitionStrategy::kLoadBalanced: return "load_balanced";
    case PartitionStrategy::kUser: return "user";
  }
  return "unknown";
}

absl::StatusOr<PartitionStrategy> ParsePartitionStrategy(
    absl::string_view name) {
  for (PartitionStrategy s :
       {PartitionStrategy::kAuto, PartitionStrategy::kWhole,
        PartitionStrategy::kMemory, PartitionStrategy::kLoadBalanced,
        PartitionStrategy::kUser}) {
    if (PartitionStrategyName(s) == name) return s;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown partition strategy '", Clip(name),
      "' (expected auto, whole, memory, load_balanced or user)"));
}

absl::StatusOr<PlanReuse> ParsePlanReuse(absl::string_view name) {
  for (PlanReuse reuse : {PlanReuse::kMatch, PlanReuse::kOverride,
                          PlanReuse::kMatchOrOverride, PlanReuse::kGraph}) {
    if (absl::EqualsIgnoreCase(name, PlanReuseName(reuse))) return reuse;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown plan reuse policy '", Clip(name),
      "' (expected match, override, moo or graph)"));
}

absl::string_view PlanReuseName(PlanReuse reuse) {
  switch (reuse) {
    case PlanReuse::kMatch:
      return "match";
    case PlanReuse::kOverride:
      return "override";
    case PlanReuse::kMatchOrOverride:
      return "moo";
    case PlanReuse::kGraph:
      return "graph";
  }
  return "moo";
}

std::string DynamicDim::Key() const {
  return name.empty() ? absl::StrCat(input, ":", axis) : name;
}

absl::Status ValidateDynamicBatching(const DynamicBatching& batching) {
  const int max = batching.max_batch_size;
  if (max < 0 || max > kMaxBatchSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("batching: max_batch_size ", max, " is not in 0..",
                     kMaxBatchSize, " (0 turns batching off)"));
  }
  if (batching.max_queue_delay < absl::ZeroDuration() ||
      batching.max_queue_delay > kMaxQueueDelay) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batching: max_queue_delay ",
        absl::FormatDuration(batching.max_queue_delay), " is not in 0..",
        absl::FormatDuration(kMaxQueueDelay)));
  }
  if (max == 0 && (batching.max_queue_delay > absl::ZeroDuration() ||
                   !batching.preferred_batch_sizes.empty())) {
    return absl::InvalidArgumentError(
        "batching: max_queue_delay and preferred_batch_sizes need a "
        "max_batch_size (batching is off without one)");
  }
  for (int size : batching.preferred_batch_sizes) {
    if (size < 1 || size > max) {
      return absl::InvalidArgumentError(
          absl::StrCat("batching: preferred batch size ", size,
                       " is not in 1..max_batch_size (", max, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace glint
