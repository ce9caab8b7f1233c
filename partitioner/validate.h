// Validators of a partitioned Dag, each usable alone: the partitioner runs
// them all on every plan it makes, and the provisioner reuses the device
// count check on the plans it is given.
#ifndef GLINT_PARTITIONER_VALIDATE_H_
#define GLINT_PARTITIONER_VALIDATE_H_

#include "absl/status/status.h"
#include "core/dag.h"

namespace glint {

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

}  // namespace glint

#endif  // GLINT_PARTITIONER_VALIDATE_H_
