// ModelRepository: glintd's --model_repository, a folder in Triton's layout
//
//   REPO/NAME/VERSION/model.onnx      VERSION: a positive decimal number
//   REPO/NAME/config.json             optional: Triton's ModelConfig in JSON
//                                     (TritonModelConfigFromJson: Glint's
//                                     placement options and Triton's fields)
//
// served through a HostManager. The newest version of each model serves
// (Triton's default version policy, "latest 1"). A model is loaded with
// HostManager::ReplaceNetwork, so a new version replaces the old one
// without a gap: runs in flight finish on the version they started on, and
// a version that fails to load (unreadable, not ONNX, a bad config) leaves
// the old one serving, with the reason in the log and in Index().
//
// The repository is read-only to glintd, so several daemons can share one
// (a volume mounted read-only into each replica). Its networks are not
// journaled in --store_dir: the repository is their durable source, and a
// restarted daemon loads them from it again.
//
// Control modes (Triton's --model-control-mode):
//   none      Sync() once at start; RepositoryModelLoad/Unload keep their
//             bytes-in-the-request behaviour.
//   explicit  nothing loads at start; Load(NAME)/Unload(NAME) (through
//             RepositoryModelLoad/Unload without a file) load a model of the
//             repository, or reload it from disk, and unload it.
//   poll      Sync() at start and every --repository_poll_secs: new models
//             load, changed ones (a new version folder, a rewritten
//             model.onnx or config.json) reload, removed ones unload.
//
// config.pbtxt (Triton's text format) is not read: a model that has one and
// no config.json fails to load with INVALID_ARGUMENT saying so, rather than
// serving without the settings it asks for.
//
// Thread-safe. Loads and unloads are serialised (op_mu_ is held across the
// HostManager call on purpose: one repository operation at a time, so a
// poll and an explicit load never race on a name); the state behind mu_ is
// never held while calling out.
#ifndef GLINT_SERVING_MODEL_REPOSITORY_H_
#define GLINT_SERVING_MODEL_REPOSITORY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "runtime/host_manager.h"

namespace glint {

enum class ModelControlMode { kNone, kExplicit, kPoll };

// "none", "explicit" or "poll"; INVALID_ARGUMENT otherwise.
absl::StatusOr<ModelControlMode> ParseModelControlMode(absl::string_view text);

// One model as the repository holds it on disk: its newest version.
struct RepositoryModel {
  std::string name;
  int64_t version = 0;
  std::string model_path;   // REPO/NAME/VERSION/model.onnx
  std::string config_path;  // REPO/NAME/config.json, or empty.
  // Set when the folder has config.pbtxt and no config.json (not read).
  bool has_pbtxt_only = false;
  // Version, sizes and modification times of the model and config files:
  // a model whose fingerprint changed is reloaded by a poll.
  std::string fingerprint;
};

// The models of `dir`, sorted by name. Folders that are not models (no
// numeric version folder holding a model.onnx, a name that is not a valid
// network name) are skipped, each with a line in `skipped` if given.
// NOT_FOUND / FAILED_PRECONDITION when `dir` is missing or not a folder.
absl::StatusOr<std::vector<RepositoryModel>> ScanModelRepository(
    const std::string& dir, std::vector<std::string>* skipped = nullptr);

struct ModelRepositoryOptions {
  std::string dir;
  ModelControlMode mode = ModelControlMode::kNone;
};

// What a Sync() did.
struct RepositorySyncReport {
  int loaded = 0;     // New models now serving.
  int reloaded = 0;   // Models whose new version now serves.
  int unloaded = 0;   // Models gone from the repository, removed.
  int failed = 0;     // Loads that failed (the old version, if any, serves).
  int unchanged = 0;
};

// A model of Index(): Triton's RepositoryIndex entry.
struct RepositoryIndexEntry {
  std::string name;
  int64_t version = 0;  // The serving version; the newest on disk if none.
  // "READY" (serving `version`), "UNAVAILABLE" (its last load failed and
  // no version serves) or "UNLOADED" (in the repository, not loaded).
  std::string state;
  std::string reason;  // Why the last load failed (also when an older
                       // version still serves), else empty.
};

class ModelRepository {
 public:
  // `host` is borrowed and must outlive this object.
  ModelRepository(HostManager* host, ModelRepositoryOptions options);

  ModelRepository(const ModelRepository&) = delete;
  ModelRepository& operator=(const ModelRepository&) = delete;

  const ModelRepositoryOptions& options() const { return options_; }

  // Brings the HostManager in line with the repository: loads new models,
  // reloads changed ones, unloads the ones it loaded that are gone. A model
  // whose load failed is tried again only once its files change. The scan's
  // error (the folder is gone) if the repository cannot be read; nothing is
  // unloaded then.
  absl::StatusOr<RepositorySyncReport> Sync();

  // Loads (or reloads, whatever changed) model `name` from the repository.
  // NOT_FOUND if the repository has no such model; the load's error
  // otherwise (the old version, if any, keeps serving).
  absl::Status Load(absl::string_view name);

  // Unloads model `name`, loaded from the repository, once its runs end.
  // NOT_FOUND if it is not loaded from the repository.
  absl::Status Unload(absl::string_view name);

  // Whether `name` is a network this repository loaded (and still serves).
  bool IsLoaded(absl::string_view name) const;

  // Every model of the repository and every model it loaded, by name.
  std::vector<RepositoryIndexEntry> Index() const;

 private:
  struct State {
    std::string loaded_fingerprint;  // Empty: not loaded.
    int64_t loaded_version = 0;
    std::string failed_fingerprint;  // The files of the last failed load.
    std::string reason;
  };

  // Loads `model` (op_mu_ held), recording the outcome.
  absl::Status LoadLocked(const RepositoryModel& model)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(op_mu_);
  absl::Status UnloadLocked(absl::string_view name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(op_mu_);

  HostManager* const host_;
  const ModelRepositoryOptions options_;
  // Serialises loads and unloads; taken before mu_, never inside it.
  absl::Mutex op_mu_;
  mutable absl::Mutex mu_;
  std::map<std::string, State> states_ ABSL_GUARDED_BY(mu_);
  // The last scan's view of the disk, for Index().
  std::vector<RepositoryModel> on_disk_ ABSL_GUARDED_BY(mu_);
};

}  // namespace glint

#endif  // GLINT_SERVING_MODEL_REPOSITORY_H_
