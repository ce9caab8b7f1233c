#include "runtime/plan_cache.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/digest.h"
#include "core/logging.h"
#include "core/text.h"

namespace glint {

std::string PlanKey(absl::string_view onnx_model,
                    const AddNetworkOptions& options,
                    const std::vector<DeviceInfo>& healthy) {
  // Everything a plan depends on, spelled out; its digest is the key. v2:
  // inputs' symbolic dims stay dynamic (v1 bound them to 1), so a v1 plan's
  // inferred types describe another graph.
  std::string what =
      absl::StrCat("glint-plan-v2;model=", Sha256Hex(onnx_model));
  for (const auto& [input, shape] : options.input_shapes) {
    absl::StrAppend(&what, ";shape:", input, "=", shape.ToString());
  }
  // max_dims is not part of it: the plan is made at the smallest request
  // (op_cost.h), whatever the bounds, so a new bound reuses the plan.
  const PartitionOptions& p = options.partition;
  absl::StrAppend(&what, ";strategy=", static_cast<int>(p.strategy),
                  ";plan_devices=", p.plan_devices, ";replicas=", p.replicas);
  for (const UserPlacement& rule : p.user_plan) {
    absl::StrAppend(&what, ";place:", rule.pattern, "=", rule.logical_device);
  }
  absl::StrAppend(&what, ";user_config=", options.user_config);
  // Only the size matters to the plan: the network is compiled at it.
  if (options.batching.max_batch_size > 0) {
    absl::StrAppend(&what, ";batch=", options.batching.max_batch_size);
  }
  // Not part of the partitioning, but of what was compiled: a network
  // re-added at another precision must not match the plan made before.
  if (options.precision != Precision::kFloat32) {
    absl::StrAppend(&what, ";precision=", PrecisionName(options.precision));
  }
  for (const DeviceInfo& info : healthy) {
    absl::StrAppend(&what, ";device:", info.id, ",", info.type, ",",
                    info.memory_bytes, ",", info.compute_flops, ",",
                    info.link_bytes_per_second, ",",
                    absl::StrJoin(info.unsupported_ops, "+"));
  }
  return Sha256Hex(what);
}

absl::StatusOr<PlanChoice> ChoosePlan(absl::string_view name,
                                      absl::string_view key, PlanReuse reuse,
                                      absl::StatusOr<CachedPlan> kept) {
  PlanChoice choice;
  if (kept.ok()) {
    choice.cached = *std::move(kept);
  } else if (!absl::IsNotFound(kept.status())) {
    GLINT_LOG_WARN("the cached plan of '{}' is unusable ({}); planning anew",
                   Clip(name), kept.status().ToString());
  }
  const bool match = choice.cached.has_value() && choice.cached->key == key;
  if (reuse == PlanReuse::kMatch && choice.cached.has_value() && !match) {
    return absl::FailedPreconditionError(absl::StrCat(
        "network '", Clip(name),
        "' has a cached plan made for another model, options, user_config "
        "or device set, and reuse is MATCH; add it with reuse MOO or "
        "OVERRIDE to plan it anew"));
  }
  choice.reuse_types = match && reuse != PlanReuse::kOverride;
  choice.reuse_plan = match && (reuse == PlanReuse::kMatch ||
                                reuse == PlanReuse::kMatchOrOverride);
  return choice;
}

}  // namespace glint
