// The parts of host_manager.h that need no runtime: its value types' helpers.
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runtime/host_manager.h"
#include "runtime/text.h"

namespace glint {

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

}  // namespace glint
