// Splits a validated Graph into a DAG of partitions over logical devices
// (Glow's Partitioner; Cube's plan_ngpus × runtime_ngpus for replicas).
//
// Every strategy assigns each node, in the graph's topological order, to a
// logical device; partitions are then the maximal runs of consecutive nodes
// on one logical device, so partition edges always point forward and the
// DAG is acyclic by construction.
//
// The validators (validate.h) and the DOT export (dot.h) have their own
// files and targets; this header includes both for its callers.
#ifndef GLINT_PARTITIONER_PARTITIONER_H_
#define GLINT_PARTITIONER_PARTITIONER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "api/types.h"
#include "core/dag.h"
#include "core/device_info.h"
#include "core/graph.h"
#include "partitioner/dot.h"
#include "partitioner/validate.h"

namespace glint {

// Cost-model rates for devices without a timing model (DeviceInfo rates of
// 0 mean "as fast as the host"): nominal figures so balancing still weighs
// compute against transfers sensibly.
inline constexpr double kNominalFlops = 100e9;
inline constexpr double kNominalLinkBytesPerSecond = 10e9;

// Errors: INVALID_ARGUMENT for bad options (replicas < 1, a user plan that
// misses a node or names a device out of range); RESOURCE_EXHAUSTED when
// the network does not fit (saying what was needed) or too few devices
// exist for plan_devices × replicas (saying how many are needed);
// UNIMPLEMENTED when no device supports an op (naming op and node).
absl::StatusOr<Dag> Partition(const Graph& graph,
                              const std::vector<DeviceInfo>& devices,
                              const PartitionOptions& options = {});

}  // namespace glint

#endif  // GLINT_PARTITIONER_PARTITIONER_H_
