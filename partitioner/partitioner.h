// Splits a validated Graph into a DAG of partitions over logical devices
// (Glow's Partitioner; Cube's plan_ngpus × runtime_ngpus for replicas).
//
// Every strategy assigns each node, in the graph's topological order, to a
// logical device; partitions are then the maximal runs of consecutive nodes
// on one logical device, so partition edges always point forward and the
// DAG is acyclic by construction.
#ifndef GLINT_PARTITIONER_PARTITIONER_H_
#define GLINT_PARTITIONER_PARTITIONER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "api/types.h"
#include "core/dag.h"
#include "core/device_info.h"
#include "core/graph.h"

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

// --- Validators, each usable alone ----------------------------------------
// Partition edges point to earlier partitions only (acyclic, topological).
absl::Status ValidateAcyclic(const Dag& dag);
// Every value a partition consumes is a network input, one of its own
// constants, or an output of one of its parents.
absl::Status ValidateProducedBeforeConsumed(const Dag& dag);
// The partitions of each logical device fit its memory together.
absl::Status ValidateMemoryFits(const Dag& dag);
// Logical devices × replicas do not exceed `available_devices`, and every
// partition names a logical device of the plan.
absl::Status ValidateDeviceCount(const Dag& dag, int available_devices);
// No partition holds an op its logical device's type declares unsupported.
absl::Status ValidateOpsSupported(const Dag& dag);
// All of the above.
absl::Status ValidateDag(const Dag& dag, int available_devices);

// Graphviz DOT: partitions as clusters coloured by logical device, edges
// between partitions labelled with the bytes they carry per run.
std::string DagToDot(const Dag& dag, absl::string_view name);

}  // namespace glint

#endif  // GLINT_PARTITIONER_PARTITIONER_H_
