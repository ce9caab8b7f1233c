// NetworkStore: glintd's durable record of added networks, so that nothing
// is lost across a restart, and a blob store for compiled plans.
//
// Layout under the store's folder:
//   LOCK                          held (flock) while a NetworkStore is open
//   networks/<sha256(name)>.net   one NetworkRecord (proto/store.proto)
//   plans/<key>.plan              one plan blob
//   */*.tmp                       a write in progress; removed by Open
// A network's file is named by the digest of its name because names are
// arbitrary UTF-8 of any length ('/', "..", 4 KiB...); the name itself is
// inside the record.
//
// Each file is a 52-byte header then the payload:
//   magic "GLINTNET" or "GLINTPLN" (8 bytes), format version (uint32 LE, 1),
//   payload length (uint64 LE), SHA-256 of the payload (32 bytes).
// A reader checks all four, so a torn, truncated or bit-flipped file is
// reported as DATA_LOSS instead of being served.
//
// Durability: a write goes to a temp file in the same folder, which is
// fsynced, renamed over the final name, and then the folder is fsynced. A
// crash at any point leaves either the old file or the new one, never a mix;
// an OK return means the new one survives a power loss (as far as the disk
// honors fsync).
#ifndef GLINT_STORE_NETWORK_STORE_H_
#define GLINT_STORE_NETWORK_STORE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace glint {

struct StoredNetwork {
  std::string name;
  std::string model;    // ONNX bytes exactly as added.
  std::string options;  // Opaque to the store (caller-encoded).
};

struct StoreEntry {
  std::string file;  // Path of the record, for messages.
  // DATA_LOSS naming the file and why when its contents are corrupt; the
  // I/O error (e.g. PERMISSION_DENIED) when it cannot be read at all.
  absl::StatusOr<StoredNetwork> network;
};

// Thread-safe. Records of different names (plans of different keys) may be
// saved, loaded and deleted concurrently: each call touches only its own
// files and rename is atomic, so no lock is needed. The caller orders
// operations on one name. One process at a time: Open locks the folder.
class NetworkStore {
 public:
  // Opens the store in `dir`, creating it (and missing parents) and its
  // subfolders if needed, and removes temp files a crash left behind.
  // FAILED_PRECONDITION if another NetworkStore (in this process or another)
  // has `dir` open.
  static absl::StatusOr<std::unique_ptr<NetworkStore>> Open(std::string dir);

  ~NetworkStore();
  NetworkStore(const NetworkStore&) = delete;
  NetworkStore& operator=(const NetworkStore&) = delete;

  const std::string& dir() const { return dir_; }

  // Saves `network`, replacing a record of the same name. Durable when it
  // returns OK. INVALID_ARGUMENT for a name that is empty or not UTF-8, or a
  // record protobuf cannot encode (2 GiB or more).
  absl::Status Save(const StoredNetwork& network);

  // Deletes the record of `name`, durably when OK. NOT_FOUND if none.
  absl::Status Delete(absl::string_view name);

  // Every record, sorted by name, then the unusable ones sorted by file.
  // Never fails as a whole: a bad record is an entry with an error and does
  // not stop the others (nor does a folder that cannot be listed: that is
  // one entry naming the folder).
  std::vector<StoreEntry> LoadAll() const;

  // The record of `name`, read from disk on each call: glintd keeps no
  // copy of a model in memory once it is added, and reads it back only in
  // the rare case it is needed again (re-provisioning after a device
  // failure). NOT_FOUND if none; DATA_LOSS when corrupt.
  absl::StatusOr<StoredNetwork> Load(absl::string_view name) const;

  // Plan cache: opaque blobs by `key`, a lowercase hex digest the caller
  // computes ([0-9a-f]{1,128}; else INVALID_ARGUMENT). SavePlan replaces,
  // with the same durability as Save.
  absl::Status SavePlan(absl::string_view key, absl::string_view blob);
  // NOT_FOUND when absent, DATA_LOSS when corrupt.
  absl::StatusOr<std::string> LoadPlan(absl::string_view key) const;
  // NOT_FOUND when absent.
  absl::Status DeletePlan(absl::string_view key);

 private:
  NetworkStore(std::string dir, int lock_fd);

  // Writes `header` + `payload` to folder/file via a temp file; see above.
  absl::Status WriteDurably(const std::string& folder, absl::string_view file,
                            absl::string_view header,
                            absl::string_view payload);

  const std::string dir_;
  const int lock_fd_;                   // Holds the flock on dir_/LOCK.
  std::atomic<uint64_t> next_temp_{0};  // Makes temp names unique.
};

}  // namespace glint

#endif  // GLINT_STORE_NETWORK_STORE_H_
