#include "store/network_store.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/digest.h"
#include "core/test_process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/store.pb.h"

namespace glint {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A folder of its own for the running test, not yet created.
std::string FreshDir() {
  const ::testing::TestInfo* test =
      ::testing::UnitTest::GetInstance()->current_test_info();
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/",
                                 test->test_suite_name(), ".", test->name());
  fs::remove_all(dir);
  return dir;
}

std::unique_ptr<NetworkStore> OpenStore(const std::string& dir) {
  absl::StatusOr<std::unique_ptr<NetworkStore>> store = NetworkStore::Open(dir);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

std::string NetworkFile(const NetworkStore& store, absl::string_view name) {
  return absl::StrCat(store.dir(), "/networks/", Sha256Hex(name), ".net");
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void WriteBytes(const std::string& path, absl::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), bytes.size());
  ASSERT_TRUE(out.good()) << path;
}

// Bytes that are not text (NULs, every byte value), `size` of them.
std::string Binary(size_t size, uint32_t seed) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) {
    seed = seed * 1664525u + 1013904223u;
    bytes[i] = static_cast<char>(seed >> 24);
  }
  return bytes;
}

// ASSERT_TRUE(Ok(status)) prints the status when it fails.
::testing::AssertionResult Ok(const absl::Status& status) {
  if (status.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << status;
}

// name -> network, of the entries that loaded; fails the test on others.
std::map<std::string, StoredNetwork> LoadGood(const NetworkStore& store) {
  std::map<std::string, StoredNetwork> networks;
  for (StoreEntry& entry : store.LoadAll()) {
    EXPECT_TRUE(entry.network.ok()) << entry.network.status();
    if (entry.network.ok()) {
      networks[entry.network->name] = *std::move(entry.network);
    }
  }
  return networks;
}

std::vector<std::string> Names(const std::vector<StoreEntry>& entries) {
  std::vector<std::string> names;
  for (const StoreEntry& entry : entries) {
    names.push_back(entry.network.ok() ? entry.network->name : "<error>");
  }
  return names;
}

TEST(Sha256HexTest, KnownVectors) {
  EXPECT_EQ(Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(NetworkStoreTest, RoundTripsSortedByName) {
  auto store = OpenStore(FreshDir());
  ASSERT_NE(store, nullptr);
  const std::vector<StoredNetwork> networks = {
      {"zeta", "model-z", "opts-z"},
      {"alpha", Binary(4 << 20, 1), Binary(100, 2)},  // A 4 MiB model.
      {"mid", "", ""},
  };
  for (const StoredNetwork& n : networks) ASSERT_TRUE(Ok(store->Save(n)));

  const std::vector<StoreEntry> entries = store->LoadAll();
  ASSERT_THAT(Names(entries), ElementsAre("alpha", "mid", "zeta"));
  std::map<std::string, StoredNetwork> loaded = LoadGood(*store);
  for (const StoredNetwork& n : networks) {
    EXPECT_TRUE(loaded[n.name].model == n.model) << n.name;  // 4 MiB: no dump.
    EXPECT_EQ(loaded[n.name].options, n.options) << n.name;
  }
  EXPECT_EQ(entries[0].file, NetworkFile(*store, "alpha"));
}

TEST(NetworkStoreTest, SaveReplacesAndDeleteRemoves) {
  auto store = OpenStore(FreshDir());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(Ok(store->Save({"a", "v1", "o1"})));
  ASSERT_TRUE(Ok(store->Save({"b", "b", ""})));
  ASSERT_TRUE(Ok(store->Save({"a", "v2", "o2"})));
  std::map<std::string, StoredNetwork> loaded = LoadGood(*store);
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded["a"].model, "v2");
  EXPECT_EQ(loaded["a"].options, "o2");

  ASSERT_TRUE(Ok(store->Delete("a")));
  EXPECT_THAT(Names(store->LoadAll()), ElementsAre("b"));
  absl::Status missing = store->Delete("a");
  EXPECT_TRUE(absl::IsNotFound(missing)) << missing;
  EXPECT_THAT(missing.message(), HasSubstr("'a'"));
  EXPECT_TRUE(absl::IsNotFound(store->Delete("never")));
}

TEST(NetworkStoreTest, LoadReadsOneRecordFromDisk) {
  std::unique_ptr<NetworkStore> store = OpenStore(FreshDir());
  ASSERT_NE(store, nullptr);
  const std::string model = Binary(1 << 20, 7);
  ASSERT_TRUE(Ok(store->Save({"big", model, "opts"})));
  ASSERT_TRUE(Ok(store->Save({"other", "x", ""})));
  absl::StatusOr<StoredNetwork> loaded = store->Load("big");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->name, "big");
  EXPECT_EQ(loaded->model, model);
  EXPECT_EQ(loaded->options, "opts");

  // A replaced record reads back as the new one: nothing is cached.
  ASSERT_TRUE(Ok(store->Save({"big", "v2", "o2"})));
  loaded = store->Load("big");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->model, "v2");

  ASSERT_TRUE(Ok(store->Delete("big")));
  EXPECT_TRUE(absl::IsNotFound(store->Load("big").status()));
  EXPECT_TRUE(absl::IsNotFound(store->Load("never").status()));

  // A damaged record is DATA_LOSS, not a wrong model.
  std::string bytes = ReadBytes(NetworkFile(*store, "other"));
  bytes.back() ^= 0x01;
  WriteBytes(NetworkFile(*store, "other"), bytes);
  absl::StatusOr<StoredNetwork> damaged = store->Load("other");
  EXPECT_TRUE(absl::IsDataLoss(damaged.status())) << damaged.status();
}

TEST(NetworkStoreTest, AnyUtf8NameWorks) {
  auto store = OpenStore(FreshDir());
  ASSERT_NE(store, nullptr);
  const std::vector<std::string> names = {
      "a/b",
      "../../etc/passwd",
      "..",
      "/",
      "with spaces ",
      "r\xC3\xA9seau \xE7\xBD\x91\xE7\xBB\x9C \xF0\x9F\x98\x80",  // é, 网络, 😀
      std::string(4096, 'n'),
  };
  for (const std::string& name : names) {
    ASSERT_TRUE(Ok(store->Save({name, "m:" + name, ""}))) << name;
  }
  std::map<std::string, StoredNetwork> loaded = LoadGood(*store);
  ASSERT_EQ(loaded.size(), names.size());
  for (const std::string& name : names) {
    EXPECT_EQ(loaded[name].model, "m:" + name);
  }
  // Nothing escaped the store's folders.
  EXPECT_EQ(std::distance(fs::directory_iterator(store->dir() + "/networks"),
                          fs::directory_iterator()),
            static_cast<long>(names.size()));
  for (const std::string& name : names) ASSERT_TRUE(Ok(store->Delete(name)));
  EXPECT_THAT(store->LoadAll(), IsEmpty());
}

TEST(NetworkStoreTest, RefusesNamesItCouldNotReadBack) {
  auto store = OpenStore(FreshDir());
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(store->Save({"", "m", ""})));
  // Protobuf writes a proto3 string that is not UTF-8 but refuses to parse
  // it: accepting it would lose the network at the next restart.
  absl::Status status = store->Save({"bad\xFF", "m", ""});
  EXPECT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("UTF-8"));
  EXPECT_THAT(store->LoadAll(), IsEmpty());
}

TEST(NetworkStoreTest, ReopenedStoreSeesWhatWasSaved) {
  const std::string dir = FreshDir() + "/nested/store";  // Parents too.
  auto store = OpenStore(dir);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(Ok(store->Save({"kept", "model", "options"})));
  ASSERT_TRUE(Ok(store->Save({"gone", "model", ""})));
  ASSERT_TRUE(Ok(store->SavePlan("kept", "plan")));
  ASSERT_TRUE(Ok(store->SavePlan("gone", "plan")));
  ASSERT_TRUE(Ok(store->Delete("gone")));  // Its plan stays until reopened.

  // One store per folder, in this process too.
  absl::StatusOr<std::unique_ptr<NetworkStore>> second =
      NetworkStore::Open(dir);
  EXPECT_TRUE(absl::IsFailedPrecondition(second.status())) << second.status();

  store.reset();
  store = OpenStore(dir);
  ASSERT_NE(store, nullptr);
  std::map<std::string, StoredNetwork> loaded = LoadGood(*store);
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded["kept"].model, "model");
  EXPECT_EQ(loaded["kept"].options, "options");
  absl::StatusOr<std::string> plan = store->LoadPlan("kept");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(*plan, "plan");
  EXPECT_TRUE(absl::IsNotFound(store->LoadPlan("gone").status()));
}

TEST(NetworkStoreTest, OpenRefusesAFile) {
  const std::string dir = FreshDir();
  fs::create_directories(dir);
  WriteBytes(dir + "/file", "x");
  absl::StatusOr<std::unique_ptr<NetworkStore>> store =
      NetworkStore::Open(dir + "/file");
  EXPECT_TRUE(absl::IsFailedPrecondition(store.status())) << store.status();
  EXPECT_TRUE(absl::IsInvalidArgument(NetworkStore::Open("").status()));
}

TEST(NetworkStoreTest, SystemErrorsNameThePath) {
  auto store = OpenStore(FreshDir());
  ASSERT_NE(store, nullptr);
  fs::remove_all(store->dir() + "/networks");
  absl::Status status = store->Save({"n", "m", ""});
  EXPECT_TRUE(absl::IsNotFound(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(store->dir() + "/networks/"));
  EXPECT_THAT(status.message(), HasSubstr("No such file or directory"));
  // An unreadable folder is one entry, not a failure of LoadAll.
  std::vector<StoreEntry> entries = store->LoadAll();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].file, store->dir() + "/networks");
  EXPECT_TRUE(absl::IsNotFound(entries[0].network.status()));

  if (geteuid() == 0) return;  // Root ignores the mode below.
  fs::create_directories(store->dir() + "/networks");
  fs::permissions(store->dir() + "/networks",
                  fs::perms::owner_read | fs::perms::owner_exec);
  status = store->Save({"n", "m", ""});
  EXPECT_TRUE(absl::IsPermissionDenied(status)) << status;
}

void PutLittleEndian(std::string* dst, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    dst->push_back(static_cast<char>(value >> (8 * i)));
}

// `payload` in a valid version-1 header, as network_store.h lays it out
// (plans, and records written before format 2).
std::string Framed(absl::string_view magic, absl::string_view payload) {
  std::string file(magic);
  PutLittleEndian(&file, 1, 4);
  PutLittleEndian(&file, payload.size(), 8);
  absl::StrAppend(&file, absl::HexStringToBytes(Sha256Hex(payload)), payload);
  return file;
}

// `payload` in a valid version-2 record header naming `name`: files with
// good framing that the store would never write itself.
std::string NamedFramed(absl::string_view name, absl::string_view payload) {
  std::string file("GLINTNET");
  PutLittleEndian(&file, 2, 4);
  PutLittleEndian(&file, name.size(), 4);
  PutLittleEndian(&file, payload.size(), 8);
  absl::StrAppend(&file, absl::HexStringToBytes(Sha256Hex(payload)), name,
                  payload);
  return file;
}

// A NetworkRecord (proto/store.proto) encoded by hand: format_version,
// name, model. Short fields only (one-byte lengths).
std::string RecordBytes(uint32_t version, absl::string_view name,
                        absl::string_view model) {
  std::string bytes = {'\x08', static_cast<char>(version), '\x12',
                       static_cast<char>(name.size())};
  absl::StrAppend(&bytes, name, std::string(1, '\x1a'),
                  std::string(1, static_cast<char>(model.size())), model);
  return bytes;
}

// Where the name starts in a version 2 record file.
constexpr size_t kNameOffset = 8 + 4 + 4 + 8 + 32;

// Save writes the model field by hand after the others (not copying the
// model): protobuf's own parser must read the payload back exactly, at
// every length of the model's varint, empty options included.
TEST(NetworkStoreTest, RecordsParseAsNetworkRecords) {
  auto store = OpenStore(FreshDir());
  ASSERT_NE(store, nullptr);
  for (size_t size : {0, 1, 127, 128, 16383, 16384, 2097151, 2097152}) {
    const std::string model = Binary(size, 9);
    for (const std::string& options : {std::string(), std::string("opts")}) {
      ASSERT_TRUE(Ok(store->Save("net", model, options)));
      const std::string file = ReadBytes(NetworkFile(*store, "net"));
      ASSERT_GT(file.size(), kNameOffset + 3);
      store::v1::NetworkRecord record;
      ASSERT_TRUE(record.ParseFromString(file.substr(kNameOffset + 3))) << size;
      EXPECT_EQ(record.format_version(), 1u);
      EXPECT_EQ(record.name(), "net");
      EXPECT_TRUE(record.model() == model) << size;  // No dump of 2 MB.
      EXPECT_EQ(record.options(), options);
    }
  }
}

TEST(NetworkStoreTest, CorruptRecordsAreListedAndNeverStopTheOthers) {
  auto store = OpenStore(FreshDir());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(Ok(store->Save({"good-a", "A", "oa"})));
  ASSERT_TRUE(Ok(store->Save({"good-b", Binary(1000, 3), ""})));
  // The bytes Save writes for `name`, to damage.
  auto written = [&store](const std::string& name) {
    EXPECT_TRUE(Ok(store->Save({name, Binary(1000, 4), "o"})));
    return ReadBytes(NetworkFile(*store, name));
  };

  // A file named for `name`, holding `contents`, the reason expected, and
  // whether the entry still names its network.
  struct Case {
    std::string name;
    std::string contents;
    std::string reason;
    bool named;
  };
  std::vector<Case> cases = {
      {"truncated", "", "truncated payload", true},
      {"torn-header", "", "truncated header (30 of 56 bytes)", false},
      {"torn-name", "", "truncated name (3 of 9 bytes)", false},
      {"flipped", "", "checksum mismatch", true},
      {"flipped-name", "", "whose file name differs", false},
      {"garbage", "garbage" + Binary(500, 5), "bad magic", false},
      {"wrong-magic", "", "bad magic", false},
      {"zero-length", "", "empty file", false},
      {"new-version", "", "unsupported format version 3", false},
      {"trailing", "", "1 bytes after the payload", true},
      {"unparseable", NamedFramed("unparseable", "\xFF\xFF\xFF"),
       "does not parse", true},
      {"record-v2", NamedFramed("record-v2", RecordBytes(2, "record-v2", "m")),
       "unsupported record version 2", true},
      // The header names the file's network, the record another.
      {"disagrees", NamedFramed("disagrees", RecordBytes(1, "other", "m")),
       "record names network 'other'", true},
      // Format 1 has no name outside its payload.
      {"v1-unparseable", Framed("GLINTNET", "\xFF\xFF\xFF"), "does not parse",
       false},
      // A good record of "template" under another name's file.
      {"renamed", written("template"), "record names network 'template'",
       false},
  };
  for (Case& c : cases) {
    if (!c.contents.empty() || c.name == "zero-length") continue;
    const std::string good = written(c.name);
    std::string& bytes = c.contents = good;
    if (c.name == "truncated") bytes.resize(good.size() - 10);
    if (c.name == "torn-header") bytes.resize(30);
    if (c.name == "torn-name") bytes.resize(kNameOffset + 3);
    if (c.name == "flipped") bytes.back() ^= 0x01;
    if (c.name == "flipped-name") bytes[kNameOffset] ^= 0x01;
    if (c.name == "wrong-magic") bytes[0] = 'X';
    if (c.name == "new-version") bytes[8] = 3;
    if (c.name == "trailing") bytes += "x";
  }
  ASSERT_TRUE(Ok(store->Delete("template")));
  for (const Case& c : cases) {
    WriteBytes(NetworkFile(*store, c.name), c.contents);
  }

  const std::vector<StoreEntry> entries = store->LoadAll();
  ASSERT_EQ(entries.size(), 2 + cases.size());
  ASSERT_EQ(Names(entries)[0], "good-a");  // Good ones first.
  ASSERT_EQ(Names(entries)[1], "good-b");
  EXPECT_EQ(entries[0].network->model, "A");
  EXPECT_EQ(entries[0].name, "good-a");
  EXPECT_EQ(entries[0].format_version, kStoreRecordFormat);
  EXPECT_EQ(entries[1].network->model, Binary(1000, 3));
  std::map<std::string, const StoreEntry*> by_file;
  for (size_t i = 2; i < entries.size(); ++i) {
    if (i > 2) {
      EXPECT_LT(entries[i - 1].file, entries[i].file);
    }
    by_file[entries[i].file] = &entries[i];
  }
  for (const Case& c : cases) {
    const std::string file = NetworkFile(*store, c.name);
    ASSERT_TRUE(by_file.count(file)) << c.name;
    const StoreEntry& entry = *by_file[file];
    const absl::Status& status = entry.network.status();
    EXPECT_TRUE(absl::IsDataLoss(status)) << c.name << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr(file)) << c.name;
    EXPECT_THAT(status.message(), HasSubstr(c.reason)) << c.name;
    EXPECT_EQ(entry.name, c.named ? c.name : "") << c.name;
  }

  // ForEachRecord gives the same entries, one at a time: by the name the
  // header gives, those naming none last by file.
  std::vector<StoreEntry> visited;
  store->ForEachRecord(
      [&visited](StoreEntry entry) { visited.push_back(std::move(entry)); });
  ASSERT_EQ(visited.size(), entries.size());
  for (size_t i = 1; i < visited.size(); ++i) {
    const StoreEntry& a = visited[i - 1];
    const StoreEntry& b = visited[i];
    EXPECT_TRUE(a.name.empty() ? b.name.empty() && a.file < b.file
                               : b.name.empty() || a.name < b.name)
        << a.file << " before " << b.file;
  }
  for (const StoreEntry& v : visited) {
    auto it =
        std::find_if(entries.begin(), entries.end(),
                     [&v](const StoreEntry& e) { return e.file == v.file; });
    ASSERT_NE(it, entries.end()) << v.file;
    EXPECT_EQ(v.name, it->name) << v.file;
    EXPECT_EQ(v.format_version, it->format_version) << v.file;
    EXPECT_EQ(v.network.status(), it->network.status()) << v.file;
    if (v.network.ok()) EXPECT_EQ(v.network->model, it->network->model);
  }
}

// Each record is read only when its turn comes: one deleted by an earlier
// visit is skipped, and a visit may use the store.
TEST(NetworkStoreTest, ForEachRecordReadsEachRecordInItsTurn) {
  auto store = OpenStore(FreshDir());
  ASSERT_NE(store, nullptr);
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_TRUE(Ok(store->Save({name, absl::StrCat("model-", name), ""})));
  }
  std::vector<std::string> seen;
  store->ForEachRecord([&](StoreEntry entry) {
    ASSERT_TRUE(entry.network.ok()) << entry.network.status();
    seen.push_back(entry.network->name);
    EXPECT_EQ(entry.network->model, absl::StrCat("model-", entry.name));
    if (entry.name == "a") {
      EXPECT_TRUE(Ok(store->Delete("b")));
      EXPECT_TRUE(store->Load("c").ok());
    }
  });
  EXPECT_THAT(seen, ElementsAre("a", "c"));
}

TEST(NetworkStoreTest, RecordsOfFormatOneLoadAndOpenRewritesThem) {
  const std::string dir = FreshDir();
  auto store = OpenStore(dir);
  ASSERT_NE(store, nullptr);
  WriteBytes(NetworkFile(*store, "old"),
             Framed("GLINTNET", RecordBytes(1, "old", "model")));
  std::string damaged = Framed("GLINTNET", RecordBytes(1, "damaged", "m"));
  damaged.back() ^= 0x01;
  WriteBytes(NetworkFile(*store, "damaged"), damaged);
  std::vector<StoreEntry> entries = store->LoadAll();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_THAT(entries[1].network.status().message(),
              HasSubstr("checksum mismatch"));
  EXPECT_EQ(entries[1].name, "");  // Format 1 cannot say.
  entries.pop_back();
  ASSERT_EQ(entries.size(), 1u);
  ASSERT_TRUE(entries[0].network.ok()) << entries[0].network.status();
  EXPECT_EQ(entries[0].network->model, "model");
  EXPECT_EQ(entries[0].name, "");  // Not from the header: there is none.
  EXPECT_EQ(entries[0].format_version, 1u);
  absl::StatusOr<StoredNetwork> loaded = store->Load("old");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->model, "model");

  // Opened again, the good one is in the current format; the damaged one
  // is left as it was, for LoadAll to report.
  store.reset();
  store = OpenStore(dir);
  ASSERT_NE(store, nullptr);
  entries = store->LoadAll();
  ASSERT_EQ(entries.size(), 2u);
  ASSERT_TRUE(entries[0].network.ok()) << entries[0].network.status();
  EXPECT_EQ(entries[0].network->model, "model");
  EXPECT_EQ(entries[0].format_version, kStoreRecordFormat);
  EXPECT_EQ(entries[0].name, "old");
  EXPECT_EQ(entries[1].format_version, 1u);
  EXPECT_EQ(ReadBytes(NetworkFile(*store, "damaged")), damaged);
}

// A model saved from a mapped file (an upload) is read in windows whose
// pages go once read: saving it leaves it no more resident than before.
TEST(NetworkStoreTest, SavingAMappedModelDoesNotMakeItResident) {
  auto store = OpenStore(FreshDir());
  ASSERT_NE(store, nullptr);
  const std::string model = Binary(size_t{96} << 20, 17);
  const std::string path = FreshTestDir("mapped-save") + "/model.onnx";
  {
    std::ofstream file(path, std::ios::binary);
    file << model;
    ASSERT_TRUE(file.good());
  }
  absl::StatusOr<ModelBytes> mapped = ModelBytes::MapFile(path);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  const int64_t before = ResidentFileBytes();
  ASSERT_GE(before, 0);
  ASSERT_TRUE(Ok(store->Save("mapped", *mapped, "options")));
  EXPECT_LT(ResidentFileBytes() - before, int64_t{8} << 20)
      << "the saved model stayed resident";
  absl::StatusOr<StoredNetwork> loaded = store->Load("mapped");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->model == model) << "the record is not the model";
  EXPECT_EQ(loaded->options, "options");
}

// A full disk, as the kernel reports it: a write beyond RLIMIT_FSIZE fails
// with EFBIG (SIGXFSZ ignored, as glintd does), ENOSPC's sibling.
TEST(NetworkStoreTest, AFullDiskFailsTheSaveAndLeavesTheStoreAsItWas) {
  auto store = OpenStore(FreshDir());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(Ok(store->Save({"small", "m", "o"})));
  ASSERT_TRUE(Ok(store->Save({"big", "old", ""})));
  ASSERT_TRUE(Ok(store->SavePlan("small", "plan")));

  absl::Status network, plan;
  ASSERT_TRUE(WithFileSizeLimit(64 << 10, [&] {
                network = store->Save({"big", Binary(1 << 20, 8), ""});
                plan = store->SavePlan("small", Binary(1 << 20, 9));
              }).ok());

  EXPECT_TRUE(absl::IsResourceExhausted(network)) << network;
  EXPECT_THAT(network.message(), HasSubstr("File too large"));
  EXPECT_TRUE(absl::IsResourceExhausted(plan)) << plan;
  // As it was: the old records and plan, no temp file.
  std::map<std::string, StoredNetwork> loaded = LoadGood(*store);
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded["big"].model, "old");
  EXPECT_EQ(*store->LoadPlan("small"), "plan");
  for (const char* folder : {"/networks", "/plans"}) {
    for (const auto& file : fs::directory_iterator(store->dir() + folder)) {
      EXPECT_FALSE(absl::EndsWith(file.path().string(), ".tmp")) << file.path();
    }
  }
}

TEST(NetworkStoreTest, OpenRemovesLeftoverTempFilesAndLoadAllIgnoresThem) {
  const std::string dir = FreshDir();
  fs::create_directories(dir + "/networks");
  fs::create_directories(dir + "/plans");
  const std::vector<std::string> temps = {
      dir + "/networks/" + Sha256Hex("x") + ".net.3.tmp",
      dir + "/networks/junk.tmp",
      dir + "/plans/abc.plan.0.tmp",
  };
  for (const std::string& temp : temps) WriteBytes(temp, "half a record");
  auto store = OpenStore(dir);
  ASSERT_NE(store, nullptr);
  for (const std::string& temp : temps) EXPECT_FALSE(fs::exists(temp)) << temp;

  ASSERT_TRUE(Ok(store->Save({"x", "m", ""})));
  WriteBytes(temps[0], "a write in progress");
  EXPECT_THAT(Names(store->LoadAll()), ElementsAre("x"));
}

TEST(NetworkStoreTest, Plans) {
  auto store = OpenStore(FreshDir());
  ASSERT_NE(store, nullptr);
  const std::string blob = Binary(1 << 20, 6);
  ASSERT_TRUE(Ok(store->SavePlan("net", "old")));
  ASSERT_TRUE(Ok(store->SavePlan("net", blob)));
  ASSERT_TRUE(Ok(store->SavePlan("../other", "")));  // Any name.
  absl::StatusOr<std::string> loaded = store->LoadPlan("net");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, blob);
  loaded = store->LoadPlan("../other");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, "");

  EXPECT_TRUE(absl::IsNotFound(store->LoadPlan("never").status()));
  EXPECT_THAT(store->LoadPlan("never").status().message(),
              HasSubstr("'never'"));
  EXPECT_TRUE(absl::IsNotFound(store->DeletePlan("never")));

  // A plan file is checked like a record.
  const std::string path =
      store->dir() + "/plans/" + Sha256Hex("net") + ".plan";
  std::string bytes = ReadBytes(path);
  bytes[bytes.size() / 2] ^= 0x40;
  WriteBytes(path, bytes);
  loaded = store->LoadPlan("net");
  EXPECT_TRUE(absl::IsDataLoss(loaded.status())) << loaded.status();
  EXPECT_THAT(loaded.status().message(), HasSubstr("checksum mismatch"));
  WriteBytes(path, Framed("GLINTNET", "network magic"));
  EXPECT_THAT(store->LoadPlan("net").status().message(),
              HasSubstr("bad magic"));

  ASSERT_TRUE(Ok(store->DeletePlan("net")));
  EXPECT_TRUE(absl::IsNotFound(store->LoadPlan("net").status()));
  // Plans are not networks.
  EXPECT_THAT(store->LoadAll(), IsEmpty());
}

TEST(NetworkStoreTest, OpenRemovesPlansWhoseNetworkHasNoRecord) {
  const std::string dir = FreshDir();
  auto store = OpenStore(dir);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(Ok(store->Save({"kept", "m", ""})));
  ASSERT_TRUE(Ok(store->SavePlan("kept", "plan")));
  // A crash between a remove's two deletions, and a plan of no network.
  ASSERT_TRUE(Ok(store->Save({"removed", "m", ""})));
  ASSERT_TRUE(Ok(store->SavePlan("removed", "plan")));
  ASSERT_TRUE(Ok(store->Delete("removed")));
  ASSERT_TRUE(Ok(store->SavePlan("never-recorded", "plan")));
  WriteBytes(dir + "/plans/junk.plan", "not even a digest");
  // A corrupt record is still a record: its plan stays.
  ASSERT_TRUE(Ok(store->Save({"corrupt", "m", ""})));
  ASSERT_TRUE(Ok(store->SavePlan("corrupt", "plan")));
  WriteBytes(NetworkFile(*store, "corrupt"), "garbage");

  store.reset();
  store = OpenStore(dir);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->LoadPlan("kept").ok());
  EXPECT_TRUE(store->LoadPlan("corrupt").ok());
  EXPECT_TRUE(absl::IsNotFound(store->LoadPlan("removed").status()));
  EXPECT_TRUE(absl::IsNotFound(store->LoadPlan("never-recorded").status()));
  EXPECT_FALSE(fs::exists(dir + "/plans/junk.plan"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir + "/plans"),
                          fs::directory_iterator()),
            2);
}

TEST(NetworkStoreTest, ConcurrentSavesAndDeletesOfDistinctNames) {
  auto store = OpenStore(FreshDir());
  ASSERT_NE(store, nullptr);
  constexpr int kThreads = 8;
  constexpr int kNamesPerThread = 12;
  // Name i of each thread is saved, then deleted (i % 3 == 0), replaced
  // (i % 3 == 1) or kept (i % 3 == 2).
  auto name = [](int t, int i) { return absl::StrCat("t", t, "/n", i); };
  std::vector<std::vector<absl::Status>> errors(kThreads);
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      auto check = [&](absl::Status s) {
        if (!s.ok()) errors[t].push_back(std::move(s));
      };
      for (int i = 0; i < kNamesPerThread; ++i) {
        check(store->Save({name(t, i), Binary(4096, t * 100 + i), "v1"}));
        if (i % 3 == 0) check(store->Delete(name(t, i)));
        if (i % 3 == 1) check(store->Save({name(t, i), "replaced", "v2"}));
      }
    });
  }
  // Reads race the writers: a record is seen whole or not at all.
  std::atomic<bool> done{false};
  std::vector<absl::Status> read_errors;
  std::thread reader([&] {
    while (!done.load()) {
      for (StoreEntry& entry : store->LoadAll()) {
        if (!entry.network.ok()) read_errors.push_back(entry.network.status());
      }
    }
  });
  for (std::thread& w : writers) w.join();
  done = true;
  reader.join();
  for (const auto& thread_errors : errors) {
    EXPECT_THAT(thread_errors, IsEmpty());
  }
  EXPECT_THAT(read_errors, IsEmpty());

  std::map<std::string, StoredNetwork> loaded = LoadGood(*store);
  std::map<std::string, std::string> want;  // name -> model
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kNamesPerThread; ++i) {
      if (i % 3 == 1) want[name(t, i)] = "replaced";
      if (i % 3 == 2) want[name(t, i)] = Binary(4096, t * 100 + i);
    }
  }
  ASSERT_EQ(loaded.size(), want.size());
  for (const auto& [n, model] : want) EXPECT_EQ(loaded[n].model, model) << n;
}

// --- Crash test: a child saves in a loop and is SIGKILLed mid-way. ---

constexpr int kCrashNames = 4;

// Save number i writes name i % kCrashNames, alternating (per name) a small
// and a large model whose bytes belong to that name; options hold i.
std::string CrashName(uint32_t i) {
  return absl::StrCat("crash-", i % kCrashNames);
}
std::string CrashModel(uint32_t i) {
  const size_t size = (i / kCrashNames) % 2 == 0 ? 1000 : 256 * 1024;
  std::string model;
  while (model.size() < size) absl::StrAppend(&model, CrashName(i), "|");
  model.resize(size);
  return model;
}

// Never returns: saves from `first` on, writing each acknowledged number to
// `ack_fd`, until killed.
[[noreturn]] void CrashChild(const std::string& dir, uint32_t first,
                             int ack_fd) {
  absl::StatusOr<std::unique_ptr<NetworkStore>> store = NetworkStore::Open(dir);
  if (!store.ok()) _exit(2);
  for (uint32_t i = first;; ++i) {
    if (!(*store)->Save({CrashName(i), CrashModel(i), absl::StrCat(i)}).ok()) {
      _exit(3);
    }
    if (write(ack_fd, &i, sizeof(i)) != sizeof(i)) _exit(4);
  }
}

// Reads one acknowledged save number; false at end of file.
bool ReadAck(int fd, uint32_t* i) {
  char* p = reinterpret_cast<char*>(i);
  size_t got = 0;
  while (got < sizeof(*i)) {
    ssize_t n = read(fd, p + got, sizeof(*i) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += n;
  }
  return true;
}

TEST(NetworkStoreTest, AcknowledgedSavesSurviveSigkill) {
  const std::string dir = FreshDir();
  std::map<std::string, uint32_t> last_acked;  // name -> save number
  uint32_t next = 0;
  for (int round = 0; round < 20; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      CrashChild(dir, next, fds[1]);
    }
    close(fds[1]);
    // Kill it once it has acknowledged some saves, while it is mid-loop;
    // a count that changes each round moves where in a save the kill lands.
    uint32_t i = 0;
    for (int acks = 0; acks < 5 + round; ++acks) {
      ASSERT_TRUE(ReadAck(fds[0], &i)) << "the child died early";
      last_acked[CrashName(i)] = i;
    }
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int wstatus = 0;
    ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL)
        << "child status " << wstatus;
    while (ReadAck(fds[0], &i)) {  // Acks still in the pipe count too.
      last_acked[CrashName(i)] = i;
    }
    close(fds[0]);

    auto store = OpenStore(dir);
    ASSERT_NE(store, nullptr);
    std::map<std::string, StoredNetwork> loaded = LoadGood(*store);
    ASSERT_EQ(loaded.size(), last_acked.size());
    for (const auto& [name, acked] : last_acked) {
      const StoredNetwork& n = loaded[name];
      // The acknowledged save, or the one after it the kill interrupted
      // (the child saves one at a time).
      uint32_t saved = 0;
      ASSERT_TRUE(absl::SimpleAtoi(n.options, &saved)) << name;
      EXPECT_GE(saved, acked) << name;
      EXPECT_LE(saved, i + 1) << name;
      EXPECT_EQ(CrashName(saved), name);
      EXPECT_TRUE(n.model == CrashModel(saved)) << name << " save " << saved;
    }
    next = i + 1;
    // Open removed the temp file the kill may have left.
    for (const fs::directory_entry& e :
         fs::directory_iterator(dir + "/networks")) {
      EXPECT_EQ(e.path().extension(), ".net") << e.path();
    }
  }
}

}  // namespace
}  // namespace glint
