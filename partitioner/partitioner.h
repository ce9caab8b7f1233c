// Splits a validated Graph into a DAG of partitions over logical devices.
//
// This first version places the whole network on one device when it fits
// (the design's first strategy); memory-constrained, load-balanced,
// user-defined, heterogeneous and replicated plans come next, behind the
// same entry point.
#ifndef GLINT_PARTITIONER_PARTITIONER_H_
#define GLINT_PARTITIONER_PARTITIONER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "runtime/dag.h"
#include "runtime/device_info.h"
#include "runtime/graph.h"

namespace glint {

struct PartitionOptions {
  // Reserved for the strategies to come; "auto" picks.
};

// Errors: RESOURCE_EXHAUSTED when no device can hold the network's weights,
// UNIMPLEMENTED when no device supports one of its ops, INVALID_ARGUMENT
// for an empty device list.
absl::StatusOr<Dag> Partition(const Graph& graph,
                              const std::vector<DeviceInfo>& devices,
                              const PartitionOptions& options = {});

// Validators, each usable alone.
// Every DAG edge points forward (acyclic, topologically ordered) and every
// value a partition consumes is produced by a parent or is a network input.
absl::Status ValidateDag(const Dag& dag);

}  // namespace glint

#endif  // GLINT_PARTITIONER_PARTITIONER_H_
