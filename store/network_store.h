// NetworkStore: glintd's durable record of added networks, so that nothing
// is lost across a restart, and a blob store for compiled plans.
//
// Layout under the store's folder:
//   LOCK                          held (flock) while a NetworkStore is open
//   networks/<sha256(name)>.net   one NetworkRecord (proto/store.proto)
//   plans/<sha256(name)>.plan     the plan blob of that network, if any
//   */*.tmp                       a write in progress; removed by Open
// A network's files are named by the digest of its name because names are
// arbitrary UTF-8 of any length ('/', "..", 4 KiB...). A plan belongs to a
// record: Open removes plans whose network has no record (which a crash
// between the two deletions of a remove leaves behind).
//
// A record file (format version 2) is a 56-byte header, the network's name,
// then the payload:
//   magic "GLINTNET" (8 bytes), format version (uint32 LE, 2), name length
//   (uint32 LE), payload length (uint64 LE), SHA-256 of the payload (32).
// The name comes before the payload and outside its checksum so that a
// record whose payload is damaged still tells which network it was: its
// name is checked against the file name (the digest of the name), which no
// flipped bit survives. A plan file (and a record written before version
// 2) has no name: a 52-byte header (magic "GLINTPLN" or "GLINTNET",
// version 1, payload length, digest) then the payload. A reader checks
// every field, so a torn, truncated or bit-flipped file is reported as
// DATA_LOSS instead of being served.
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
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/model_bytes.h"

namespace glint {

struct StoredNetwork {
  std::string name;
  std::string model;    // ONNX bytes exactly as added.
  std::string options;  // Opaque to the store (caller-encoded).
};

struct StoreEntry {
  std::string file;  // Path of the record, for messages.
  // The network's name whenever the file tells it, also when the rest is
  // corrupt (so that the network can be listed as unavailable rather than
  // vanish); empty when the file cannot say (its header is damaged, it is
  // an old record without the name outside its payload, or it cannot be
  // read at all).
  std::string name;
  // DATA_LOSS naming the file and why when its contents are corrupt; the
  // I/O error (e.g. PERMISSION_DENIED) when it cannot be read at all.
  absl::StatusOr<StoredNetwork> network;
  // The record's file format (0 when unreadable). Open rewrites good
  // records of an older one, so LoadAll sees one only if that failed.
  uint32_t format_version = 0;
};

// The format Save writes; StoreEntry::format_version below it is older.
inline constexpr uint32_t kStoreRecordFormat = 2;

// Thread-safe. Records (and plans) of different names may be
// saved, loaded and deleted concurrently: each call touches only its own
// files and rename is atomic, so no lock is needed. The caller orders
// operations on one name. One process at a time: Open locks the folder.
class NetworkStore {
 public:
  // Opens the store in `dir`, creating it (and missing parents) and its
  // subfolders if needed, removes what a crash left behind (temp files;
  // plans whose network has no record) and rewrites good records of format
  // 1 in the current format, so that from then on they name their network
  // even if damaged. FAILED_PRECONDITION if another NetworkStore (in this
  // process or another) has `dir` open. glintd opens its store before it
  // serves, so these rewrites never race a client's add or remove.
  static absl::StatusOr<std::unique_ptr<NetworkStore>> Open(std::string dir);

  ~NetworkStore();
  NetworkStore(const NetworkStore&) = delete;
  NetworkStore& operator=(const NetworkStore&) = delete;

  const std::string& dir() const { return dir_; }

  // Saves `network`, replacing a record of the same name. Durable when it
  // returns OK; otherwise the store is as it was (the temp file is
  // removed). INVALID_ARGUMENT for a name that is empty or not UTF-8, or a
  // record protobuf cannot encode (2 GiB or more); RESOURCE_EXHAUSTED when
  // the disk is full or the file exceeds a quota or size limit.
  absl::Status Save(const StoredNetwork& network);
  // The same from the caller's bytes, which it writes without copying them
  // (the journal's add: the model is the request's or an upload's file). A
  // mapped model is read in windows whose pages are dropped once read
  // (ModelBytes::EvictRange), so saving it does not make it resident.
  absl::Status Save(absl::string_view name, const ModelBytes& model,
                    absl::string_view options);

  // Deletes the record of `name`, durably when OK. NOT_FOUND if none.
  absl::Status Delete(absl::string_view name);

  // Every record, sorted by name, then the unusable ones sorted by file.
  // Never fails as a whole: a bad record is an entry with an error (and its
  // name when the file still tells it) and does not stop the others (nor
  // does a folder that cannot be listed: that is one entry naming the
  // folder).
  std::vector<StoreEntry> LoadAll() const;

  // The entries LoadAll gives, one at a time: each record is read when its
  // turn comes and handed to `visit`, so that restoring a store of many
  // large models never holds more than one of them (LoadAll holds them
  // all). The order comes from the records' headers: by the network name
  // they give, then those whose header names none (format 1, damaged) by
  // file; a named record that turns out corrupt keeps its place. A record
  // deleted before its turn is skipped. `visit` may call this store's
  // other methods.
  void ForEachRecord(const std::function<void(StoreEntry)>& visit) const;

  // The record of `name`, read from disk on each call: glintd keeps no
  // copy of a model in memory once it is added, and reads it back only in
  // the rare case it is needed again (re-provisioning after a device
  // failure). NOT_FOUND if none; DATA_LOSS when corrupt.
  absl::StatusOr<StoredNetwork> Load(absl::string_view name) const;

  // Plan cache: one opaque blob per network, by the network's name. It is
  // the caller's to save a plan only for a recorded network; one whose
  // record is missing at the next Open is removed.
  // SavePlan replaces, with the same durability as Save (RESOURCE_EXHAUSTED
  // on a full disk).
  absl::Status SavePlan(absl::string_view name, absl::string_view blob);
  // NOT_FOUND when absent, DATA_LOSS when corrupt.
  absl::StatusOr<std::string> LoadPlan(absl::string_view name) const;
  // NOT_FOUND when absent.
  absl::Status DeletePlan(absl::string_view name);

 private:
  NetworkStore(std::string dir, int lock_fd);

  // Open's rewrite of format-1 records. Best effort: a record it cannot
  // rewrite still loads.
  void UpgradeRecords();

  // Writes `header` and then the pieces of `payload` to folder/file via a
  // temp file; see above. `after_piece` (when set) is called with each
  // piece's index once it is written.
  absl::Status WriteDurably(
      const std::string& folder, absl::string_view file,
      absl::string_view header, absl::Span<const absl::string_view> payload,
      const std::function<void(size_t index)>& after_piece = nullptr);

  const std::string dir_;
  const int lock_fd_;                   // Holds the flock on dir_/LOCK.
  std::atomic<uint64_t> next_temp_{0};  // Makes temp names unique.
};

}  // namespace glint

#endif  // GLINT_STORE_NETWORK_STORE_H_
