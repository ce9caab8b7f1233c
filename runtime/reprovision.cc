#include "runtime/reprovision.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace glint {

absl::StatusOr<RebuiltNetwork> RebuildOnHealthyDevices(
    const NetworkEntry& entry, const NetworkBuilder& builder,
    NetworkJournal* journal) {
  // The model: the entry's copy, or read back from the journal when it
  // keeps it (see HostManager::Add), held only for the rebuild.
  absl::string_view model = entry.model;
  std::string read_back;
  if (entry.model.empty() && journal != nullptr && journal->KeepsModels()) {
    absl::StatusOr<std::string> kept = journal->LoadModel(entry.info.name);
    if (!kept.ok()) {
      return absl::Status(kept.status().code(),
                          absl::StrCat("its model cannot be read back: ",
                                       kept.status().message()));
    }
    read_back = *std::move(kept);
    model = read_back;
  }
  AddNetworkOptions options = entry.options;
  RebuiltNetwork rebuilt;
  absl::StatusOr<std::unique_ptr<ExecutableNetwork>> built =
      absl::UnavailableError("not tried");
  for (int replicas = std::max(1, options.partition.replicas); replicas >= 1;
       --replicas) {
    options.partition.replicas = replicas;
    built = builder.Build(entry.info.name, model, options, &rebuilt.info);
    if (built.ok() || !absl::IsResourceExhausted(built.status())) break;
  }
  if (!built.ok()) return built.status();
  rebuilt.executable = *std::move(built);
  absl::StatusOr<std::map<int, std::shared_ptr<ExecutableNetwork>>> smaller =
      builder.BuildSmaller(entry.info.name, model, options);
  if (!smaller.ok()) return smaller.status();
  rebuilt.smaller = *std::move(smaller);
  return rebuilt;
}

}  // namespace glint
