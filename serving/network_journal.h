// glintd's durability: HostManager's NetworkJournal over a NetworkStore
// (options kept as glint.v1.AddNetworkOptions), and the restore at start.
#ifndef GLINT_SERVING_NETWORK_JOURNAL_H_
#define GLINT_SERVING_NETWORK_JOURNAL_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "runtime/host_manager.h"
#include "store/network_store.h"

namespace glint {

// Thread-safe (NetworkStore is, and HostManager never overlaps calls for
// one name). Borrows the store.
class StoreJournal : public NetworkJournal {
 public:
  explicit StoreJournal(NetworkStore* store) : store_(store) {}

  absl::Status Record(absl::string_view name, const ModelBytes& onnx_model,
                      const AddNetworkOptions& options) override;
  // A name the store does not hold is already forgotten: OK. Its cached
  // plan goes too.
  absl::Status Erase(absl::string_view name) override;
  // The store holds every recorded model: read back from disk on demand
  // (NetworkStore::Load), never cached.
  bool KeepsModels() const override { return true; }
  absl::StatusOr<std::string> LoadModel(absl::string_view name) override;
  // Plans live in the store's plan blobs, under the digest of the name.
  absl::StatusOr<CachedPlan> LoadPlan(absl::string_view name) override;
  absl::Status SavePlan(absl::string_view name,
                        const CachedPlan& plan) override;

 private:
  NetworkStore* const store_;
};

struct RestoreReport {
  int restored = 0;
  // Records that came back unavailable: listed by name with the reason
  // (a model that no longer imports or fits, a corrupt record).
  int unavailable = 0;
  // Records that do not even tell their network's name (a damaged header,
  // or a damaged record of format 1, from before the store named them):
  // logged with the file and reason.
  int unreadable = 0;
};

// Re-adds every network `store` holds to `host` (HostManager::
// RestoreNetwork), each independently: one that fails is listed with its
// reason (HostManager::RestoreUnavailable when its record is corrupt but
// names it) and never stops the others.
RestoreReport RestoreNetworks(const NetworkStore& store, HostManager& host);

}  // namespace glint

#endif  // GLINT_SERVING_NETWORK_JOURNAL_H_
