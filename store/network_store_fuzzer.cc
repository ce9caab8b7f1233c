// Fuzz target: the bytes of a record file, as a crash, a bad disk or a hand
// edit may leave it, read back by NetworkStore (LoadAll and Load).
//
// Checks, beyond no crash: the file is one entry, never hidden and never
// more; what loads is the network the file is named for, and saved again it
// reads back the same (in the current format); what does not load is
// DATA_LOSS, naming the file, with the network's name only where the file
// gives it right; Load agrees with LoadAll.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/digest.h"
#include "fuzz/fuzz_check.h"
#include "store/network_store.h"

namespace {

constexpr char kName[] = "fuzzed network";

// One store for the whole run, in a fresh folder under $TMPDIR.
glint::NetworkStore& Store() {
  static glint::NetworkStore* store = [] {
    const char* tmp = std::getenv("TEST_TMPDIR");
    if (tmp == nullptr) tmp = std::getenv("TMPDIR");
    std::string dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp",
                                   "/network_store_fuzzer.XXXXXX");
    if (mkdtemp(dir.data()) == nullptr) std::abort();
    absl::StatusOr<std::unique_ptr<glint::NetworkStore>> opened =
        glint::NetworkStore::Open(dir);
    FUZZ_CHECK(opened.ok(), opened.status().ToString());
    return opened->release();
  }();
  return *store;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  glint::NetworkStore& store = Store();
  const std::string path =
      absl::StrCat(store.dir(), "/networks/", glint::Sha256Hex(kName), ".net");
  {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(reinterpret_cast<const char*>(data),
               static_cast<std::streamsize>(size));
    if (!file.good()) std::abort();
  }

  std::vector<glint::StoreEntry> entries = store.LoadAll();
  FUZZ_CHECK(entries.size() == 1, absl::StrCat(entries.size(), " entries"));
  glint::StoreEntry& entry = entries[0];
  FUZZ_CHECK(entry.file == path, entry.file);
  // The restore's way (one at a time, ordered by the header's name) reads
  // the same entry, whatever the bytes.
  int visits = 0;
  store.ForEachRecord([&](glint::StoreEntry visited) {
    ++visits;
    FUZZ_CHECK(visited.file == entry.file && visited.name == entry.name &&
                   visited.format_version == entry.format_version &&
                   visited.network.status() == entry.network.status() &&
                   (!visited.network.ok() ||
                    visited.network->model == entry.network->model),
               "ForEachRecord differs from LoadAll");
  });
  FUZZ_CHECK(visits == 1, absl::StrCat(visits, " visits"));
  absl::StatusOr<glint::StoredNetwork> loaded = store.Load(kName);
  if (!entry.network.ok()) {
    const absl::Status& error = entry.network.status();
    FUZZ_CHECK(absl::IsDataLoss(error), error.ToString());
    FUZZ_CHECK(absl::StrContains(error.message(), path), error.ToString());
    FUZZ_CHECK(entry.name.empty() || entry.name == kName, entry.name);
    FUZZ_CHECK(loaded.status() == error, loaded.status().ToString());
  } else {
    const glint::StoredNetwork& network = *entry.network;
    FUZZ_CHECK(network.name == kName, network.name);
    FUZZ_CHECK(entry.format_version == 1 ||
                   entry.format_version == glint::kStoreRecordFormat,
               absl::StrCat(entry.format_version));
    FUZZ_CHECK(entry.name == (entry.format_version == 1 ? "" : kName),
               entry.name);
    FUZZ_CHECK(loaded.ok(), loaded.status().ToString());
    FUZZ_CHECK(
        loaded->model == network.model && loaded->options == network.options,
        "Load differs from LoadAll");
    // Saved again: the same network, now in the current format.
    const absl::Status saved = store.Save(network);
    FUZZ_CHECK(saved.ok(), saved.ToString());
    const std::vector<glint::StoreEntry> again = store.LoadAll();
    FUZZ_CHECK(again.size() == 1 && again[0].network.ok() &&
                   again[0].name == kName &&
                   again[0].format_version == glint::kStoreRecordFormat &&
                   again[0].network->model == network.model &&
                   again[0].network->options == network.options,
               "a saved record does not read back");
  }
  return 0;
}
