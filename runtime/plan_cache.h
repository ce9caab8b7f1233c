// The plan cache: what an AddNetwork may replay from the plan kept for a
// network (CachedPlan, in the journal) instead of deriving it again.
//
// A plan is kept under a key that spells out everything it depends on: the
// model's bytes, the add's options and the healthy devices (PlanKey). An
// add whose key matches may reuse ONNX inference's reply and the
// partitioning, as AddNetworkOptions::reuse allows (ChoosePlan).
//
// Pure functions; thread-safe.
#ifndef GLINT_RUNTIME_PLAN_CACHE_H_
#define GLINT_RUNTIME_PLAN_CACHE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "api/types.h"
#include "core/device_info.h"
#include "runtime/journal.h"

namespace glint {

// The key of a plan of `onnx_model` added with `options` onto the devices
// `healthy` (those a build would plan for, in the HostManager's order): a
// SHA-256 hex digest.
std::string PlanKey(absl::string_view onnx_model,
                    const AddNetworkOptions& options,
                    const std::vector<DeviceInfo>& healthy);

// What an add replays from the kept plan.
struct PlanChoice {
  std::optional<CachedPlan> cached;  // The kept plan, if any was readable.
  bool reuse_types = false;  // Replay ONNX inference's reply.
  bool reuse_plan = false;   // Replay the assignment and placement.
};

// Decides, for an add of network `name` under `key` and `reuse`, from the
// journal's answer `kept` (NOT_FOUND when nothing is kept; another error is
// logged and planning starts anew). FAILED_PRECONDITION when reuse is MATCH
// and a plan made for something else is kept.
absl::StatusOr<PlanChoice> ChoosePlan(absl::string_view name,
                                      absl::string_view key, PlanReuse reuse,
                                      absl::StatusOr<CachedPlan> kept);

}  // namespace glint

#endif  // GLINT_RUNTIME_PLAN_CACHE_H_
