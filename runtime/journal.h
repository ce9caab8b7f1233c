// NetworkJournal: where HostManager keeps added networks (and their cached
// plans) so that they survive a restart. glintd backs it with its
// NetworkStore (serving/network_journal.h); an embedding program may
// bring its own or none.
#ifndef GLINT_RUNTIME_JOURNAL_H_
#define GLINT_RUNTIME_JOURNAL_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "api/types.h"
#include "core/model_bytes.h"

namespace glint {

// A network's plan as the plan cache keeps it: the costly, derived parts of
// an AddNetwork (the seed's "generated code"), replayed when a network is
// added again for the same model, options, user_config and devices.
struct CachedPlan {
  std::string key;  // What it was made for (see AddNetworkOptions::reuse).
  std::string inferred_types;  // ONNX inference's reply (RunOnnxInference).
  std::string strategy;
  std::vector<int> assignment;              // Dag::assignment.
  std::vector<std::vector<int>> placement;  // ExecutableNetwork::placement.
};

// Keeps added networks across restarts (glintd backs it with its
// NetworkStore). HostManager calls it with the network's name held, so the
// calls for one name never overlap; it must be thread-safe across names.
class NetworkJournal {
 public:
  virtual ~NetworkJournal() = default;
  // Makes the network durable before AddNetwork acknowledges it; an error
  // fails the AddNetwork, which then leaves no trace.
  // `onnx_model` may be a mapped file: a journal that copies it should
  // drop its pages as it goes (ModelBytes::EvictRange), as the store does.
  virtual absl::Status Record(absl::string_view name,
                              const ModelBytes& onnx_model,
                              const AddNetworkOptions& options) = 0;
  // Forgets it (and its cached plan) durably before RemoveNetwork
  // acknowledges; an error fails the RemoveNetwork, which then leaves the
  // network serving.
  virtual absl::Status Erase(absl::string_view name) = 0;

  // Whether LoadModel gives back what Record was given. Then HostManager
  // keeps no copy of an added network's model in memory (a model is as big
  // as its weights, which the devices already hold) and reads it back only
  // to re-provision the network after a device failure.
  virtual bool KeepsModels() const { return false; }
  // The model recorded for `name`; NOT_FOUND once erased. Called only when
  // KeepsModels().
  virtual absl::StatusOr<std::string> LoadModel(absl::string_view name) {
    return absl::UnimplementedError("this journal keeps no models");
  }

  // The plan cache: NOT_FOUND when no plan is kept for `name`. A journal
  // without one keeps nothing.
  virtual absl::StatusOr<CachedPlan> LoadPlan(absl::string_view name) {
    return absl::NotFoundError("no plan cache");
  }
  virtual absl::Status SavePlan(absl::string_view name,
                                const CachedPlan& plan) {
    return absl::OkStatus();
  }
};

}  // namespace glint

#endif  // GLINT_RUNTIME_JOURNAL_H_
