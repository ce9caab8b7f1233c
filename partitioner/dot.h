// Graphviz export of a partitioned Dag (`glint show --dot`).
#ifndef GLINT_PARTITIONER_DOT_H_
#define GLINT_PARTITIONER_DOT_H_

#include <string>

#include "absl/strings/string_view.h"
#include "core/dag.h"

namespace glint {

// Graphviz DOT: partitions as clusters coloured by logical device, edges
// between partitions labelled with the bytes they carry per run.
std::string DagToDot(const Dag& dag, absl::string_view name);

}  // namespace glint

#endif  // GLINT_PARTITIONER_DOT_H_
