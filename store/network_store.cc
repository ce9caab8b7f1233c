#include "store/network_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/digest.h"
#include "core/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/stubs/common.h"
#include "google/protobuf/wire_format_lite.h"
#include "proto/store.pb.h"

namespace glint {
namespace {

constexpr absl::string_view kNetworkMagic = "GLINTNET";
constexpr absl::string_view kPlanMagic = "GLINTPLN";
// File formats (network_store.h): version 1 frames a payload, version 2
// (records only, the one Save writes) adds the network's name.
constexpr uint32_t kFramedVersion = 1;
constexpr uint32_t kNamedVersion = 2;
static_assert(kNamedVersion == kStoreRecordFormat);
constexpr uint32_t kRecordVersion = 1;  // NetworkRecord.format_version.
constexpr size_t kDigestSize = kSha256Size;
// Version 1: magic, version, payload length, payload digest.
constexpr size_t kHeaderSize = 8 + 4 + 8 + kDigestSize;
// Version 2: magic, version, name length, payload length, payload digest;
// then the name.
constexpr size_t kNamedHeaderSize = 8 + 4 + 4 + 8 + kDigestSize;

constexpr absl::string_view kNetworksDir = "networks";
constexpr absl::string_view kPlansDir = "plans";
constexpr absl::string_view kNetworkSuffix = ".net";
constexpr absl::string_view kPlanSuffix = ".plan";
constexpr absl::string_view kTempSuffix = ".tmp";

// Abseil 20220623 has no ErrnoToStatus. The codes follow what a caller can
// do about it: free space, fix permissions, or nothing.
absl::Status PosixError(absl::string_view op, absl::string_view path, int err) {
  std::string msg = absl::StrCat(op, " '", path, "': ", std::strerror(err));
  switch (err) {
    case ENOSPC:
    case EDQUOT:
    case EFBIG:  // Beyond RLIMIT_FSIZE or the file system's largest file.
      return absl::ResourceExhaustedError(msg);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(msg);
    case ENOENT:
      return absl::NotFoundError(msg);
    default:
      return absl::InternalError(msg);
  }
}

int OpenFile(const std::string& path, int flags, mode_t mode = 0) {
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

// Owns a file descriptor; closes it on scope exit unless released.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;

  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

  // Closes now and reports the error, which some file systems (NFS) use for
  // a failed write. Linux frees the descriptor even on EINTR: no retry.
  absl::Status Close(absl::string_view path) {
    if (::close(release()) != 0 && errno != EINTR) {
      return PosixError("close", path, errno);
    }
    return absl::OkStatus();
  }

 private:
  int fd_;
};

absl::Status WriteAll(int fd, absl::string_view data, absl::string_view path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return PosixError("write", path, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));  // Short writes loop.
  }
  return absl::OkStatus();
}

absl::Status Fsync(int fd, absl::string_view path) {
  int rc;
  do {
    rc = ::fsync(fd);
  } while (rc != 0 && errno == EINTR);
  return rc == 0 ? absl::OkStatus() : PosixError("fsync", path, errno);
}

// Makes the folder's entries (created, renamed, removed files) durable.
absl::Status SyncDir(const std::string& dir) {
  ScopedFd fd(OpenFile(dir, O_RDONLY | O_DIRECTORY));
  if (fd.get() < 0) return PosixError("open", dir, errno);
  return Fsync(fd.get(), dir);
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  ScopedFd fd(OpenFile(path, O_RDONLY));
  if (fd.get() < 0) return PosixError("open", path, errno);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return PosixError("stat", path, errno);
  // One byte beyond the size seen by fstat, so that EOF is read without a
  // resize in the usual case; the loop copes with a file that grew anyway.
  std::string contents(static_cast<size_t>(st.st_size) + 1, '\0');
  size_t size = 0;
  for (;;) {
    if (size == contents.size()) contents.resize(2 * size);
    ssize_t n = ::read(fd.get(), &contents[size], contents.size() - size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return PosixError("read", path, errno);
    }
    if (n == 0) break;
    size += static_cast<size_t>(n);
  }
  contents.resize(size);
  return contents;
}

// Names of the entries of `dir` that end with `suffix`.
absl::StatusOr<std::vector<std::string>> ListFiles(const std::string& dir,
                                                   absl::string_view suffix) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return PosixError("open", dir, errno);
  std::vector<std::string> names;
  int err;
  for (;;) {
    errno = 0;  // readdir returns null both at the end and on an error.
    const dirent* e = ::readdir(d);
    err = errno;
    if (e == nullptr) break;
    if (absl::EndsWith(e->d_name, suffix)) names.emplace_back(e->d_name);
  }
  ::closedir(d);
  if (err != 0) return PosixError("list", dir, err);
  return names;
}

// The folder holding `path`: "a/b" -> "a", "a//b/" -> "a", "b" -> ".",
// "/b" -> "/".
std::string Parent(absl::string_view path) {
  const size_t end = path.find_last_not_of('/');
  const size_t slash = end == absl::string_view::npos ? absl::string_view::npos
                                                      : path.rfind('/', end);
  if (slash == absl::string_view::npos) return ".";
  const size_t keep = path.find_last_not_of('/', slash);
  return keep == absl::string_view::npos
             ? "/"
             : std::string(path.substr(0, keep + 1));
}

// mkdir -p, syncing the parent of every folder it creates so that the new
// entry survives a crash before the first record is written into it.
absl::Status CreateDirs(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("'", dir, "' exists and is not a folder"));
  }
  if (errno != ENOENT) return PosixError("stat", dir, errno);
  const std::string parent = Parent(dir);
  GLINT_RETURN_IF_ERROR(CreateDirs(parent));
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return PosixError("create folder", dir, errno);
  }
  return SyncDir(parent);
}

void PutLittleEndian(std::string* dst, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    dst->push_back(static_cast<char>(value >> (8 * i)));
  }
}

uint64_t GetLittleEndian(absl::string_view src) {
  uint64_t value = 0;
  for (size_t i = src.size(); i-- > 0;) {
    value = (value << 8) | static_cast<unsigned char>(src[i]);
  }
  return value;
}

// The version 1 header of a plan file.
std::string Header(absl::string_view magic, absl::string_view payload) {
  std::string header(magic);
  PutLittleEndian(&header, kFramedVersion, 4);
  PutLittleEndian(&header, payload.size(), 8);
  header += Sha256(payload);
  return header;
}

// The version 2 header of a record file, with the name after it.
// `payload` is the record's encoding in pieces (see NetworkStore::Save).
std::string NamedHeader(
    absl::string_view name, absl::Span<const absl::string_view> payload,
    const std::function<void(size_t)>& after_piece = nullptr) {
  size_t size = 0;
  for (absl::string_view piece : payload) size += piece.size();
  std::string header(kNetworkMagic);
  PutLittleEndian(&header, kNamedVersion, 4);
  PutLittleEndian(&header, name.size(), 4);
  PutLittleEndian(&header, size, 8);
  header += Sha256OfPieces(payload, after_piece);
  header.append(name.data(), name.size());
  return header;
}

absl::Status Corrupt(absl::string_view path, absl::string_view why) {
  return absl::DataLossError(
      absl::StrCat("corrupt store file '", path, "': ", why));
}

// The format version of a file read from `path` whose magic is `magic`:
// checks the magic and that the version field is there.
absl::StatusOr<uint32_t> FormatVersion(absl::string_view file,
                                       absl::string_view magic,
                                       absl::string_view path) {
  if (file.empty()) return Corrupt(path, "empty file");
  // A file shorter than the magic must at least be a prefix of it.
  if (!absl::StartsWith(magic, file.substr(0, magic.size()))) {
    return Corrupt(path, absl::StrCat("bad magic (expected \"", magic, "\")"));
  }
  if (file.size() < magic.size() + 4) {
    return Corrupt(path,
                   absl::StrCat("truncated header (", file.size(), " bytes)"));
  }
  return static_cast<uint32_t>(GetLittleEndian(file.substr(8, 4)));
}

absl::Status TruncatedHeader(absl::string_view path, size_t size,
                             size_t expected) {
  return Corrupt(path, absl::StrCat("truncated header (", size, " of ",
                                    expected, " bytes)"));
}

// Checks `payload`, all that follows the header, against the length and
// digest the header gives.
absl::Status CheckPayload(absl::string_view payload, uint64_t length,
                          absl::string_view digest, absl::string_view path) {
  if (payload.size() < length) {
    return Corrupt(path, absl::StrCat("truncated payload (", payload.size(),
                                      " of ", length, " bytes)"));
  }
  if (payload.size() > length) {
    return Corrupt(path, absl::StrCat(payload.size() - length,
                                      " bytes after the payload"));
  }
  if (Sha256(payload) != digest) return Corrupt(path, "checksum mismatch");
  return absl::OkStatus();
}

// The payload of a version 1 file read from `path`, after checking its
// header.
absl::StatusOr<absl::string_view> Unframe(absl::string_view file,
                                          absl::string_view magic,
                                          absl::string_view path) {
  GLINT_ASSIGN_OR_RETURN(uint32_t version, FormatVersion(file, magic, path));
  if (version != kFramedVersion) {
    return Corrupt(path, absl::StrCat("unsupported format version ", version));
  }
  if (file.size() < kHeaderSize) {
    return TruncatedHeader(path, file.size(), kHeaderSize);
  }
  const absl::string_view payload = file.substr(kHeaderSize);
  GLINT_RETURN_IF_ERROR(CheckPayload(payload,
                                     GetLittleEndian(file.substr(12, 8)),
                                     file.substr(20, kDigestSize), path));
  return payload;
}

std::string FileNameOf(absl::string_view name) {
  return absl::StrCat(Sha256Hex(name), kNetworkSuffix);
}

// A record file as far as it could be read: its name as soon as the header
// gives one that matches the file name, then the network or why not.
struct DecodedRecord {
  std::string name;
  uint32_t format_version = 0;
  absl::StatusOr<StoredNetwork> network = absl::UnknownError("not decoded");
};

// The payload of a version 2 record, setting `decoded.name` once it is
// known to be right.
absl::StatusOr<absl::string_view> UnframeNamed(absl::string_view file,
                                               absl::string_view path,
                                               absl::string_view file_name,
                                               DecodedRecord& decoded) {
  if (file.size() < kNamedHeaderSize) {
    return TruncatedHeader(path, file.size(), kNamedHeaderSize);
  }
  const uint64_t name_size = GetLittleEndian(file.substr(12, 4));
  const absl::string_view rest = file.substr(kNamedHeaderSize);
  if (rest.size() < name_size) {
    return Corrupt(path, absl::StrCat("truncated name (", rest.size(), " of ",
                                      name_size, " bytes)"));
  }
  const absl::string_view name = rest.substr(0, name_size);
  // Catches a damaged name, and a file copied or renamed by hand (it would
  // shadow another name).
  if (FileNameOf(name) != file_name) {
    return Corrupt(
        path, absl::StrCat("record names network '", absl::CHexEscape(name),
                           "', whose file name differs"));
  }
  decoded.name = std::string(name);
  const absl::string_view payload = rest.substr(name_size);
  GLINT_RETURN_IF_ERROR(CheckPayload(payload,
                                     GetLittleEndian(file.substr(16, 8)),
                                     file.substr(24, kDigestSize), path));
  return payload;
}

absl::StatusOr<StoredNetwork> DecodeRecord(absl::string_view payload,
                                           absl::string_view path,
                                           absl::string_view file_name) {
  store::v1::NetworkRecord record;
  if (payload.size() > INT_MAX ||
      !record.ParseFromArray(payload.data(),
                             static_cast<int>(payload.size()))) {
    return Corrupt(path, "record does not parse");
  }
  if (record.format_version() != kRecordVersion) {
    return Corrupt(path, absl::StrCat("unsupported record version ",
                                      record.format_version()));
  }
  // In version 1 the only check that the file is this network's; in
  // version 2 the header's name was checked already and the record's must
  // agree with it.
  if (FileNameOf(record.name()) != file_name) {
    return Corrupt(path, absl::StrCat("record names network '",
                                      absl::CHexEscape(record.name()),
                                      "', whose file name differs"));
  }
  return StoredNetwork{std::move(*record.mutable_name()),
                       std::move(*record.mutable_model()),
                       std::move(*record.mutable_options())};
}

DecodedRecord DecodeNetwork(absl::string_view file, absl::string_view path,
                            absl::string_view file_name) {
  DecodedRecord decoded;
  absl::StatusOr<uint32_t> version = FormatVersion(file, kNetworkMagic, path);
  if (!version.ok()) {
    decoded.network = version.status();
    return decoded;
  }
  decoded.format_version = *version;
  absl::StatusOr<absl::string_view> payload =
      *version == kNamedVersion
          ? UnframeNamed(file, path, file_name, decoded)
          : Unframe(file, kNetworkMagic, path);  // Version 1, or refused.
  decoded.network =
      payload.ok() ? DecodeRecord(*payload, path, file_name) : payload.status();
  return decoded;
}

// Up to `size` bytes of the file open as `fd` from `offset`; fewer at its
// end or on an error.
std::string ReadAt(int fd, uint64_t offset, size_t size) {
  std::string bytes(size, '\0');
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, &bytes[done], size - done,
                              static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

// The network's name as the header of the record at `path` gives it,
// reading the header alone (not the model): empty when it gives none that
// matches the file name (a format-1 record, a damaged header, a file that
// cannot be read). DecodeNetwork checks the same and more.
std::string NameInHeader(const std::string& path, absl::string_view file_name) {
  ScopedFd fd(OpenFile(path, O_RDONLY));
  if (fd.get() < 0) return "";
  const std::string header = ReadAt(fd.get(), 0, kNamedHeaderSize);
  if (header.size() < kNamedHeaderSize ||
      !absl::StartsWith(header, kNetworkMagic) ||
      GetLittleEndian(absl::string_view(header).substr(8, 4)) !=
          kNamedVersion) {
    return "";
  }
  const uint64_t name_size =
      GetLittleEndian(absl::string_view(header).substr(12, 4));
  // A damaged length (up to 4 GiB) must not size an allocation: the name
  // lies within the file or the header is wrong (fuzz regression
  // oom-header-name-size-past-the-file).
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 ||
      static_cast<uint64_t>(st.st_size) < kNamedHeaderSize ||
      name_size > static_cast<uint64_t>(st.st_size) - kNamedHeaderSize) {
    return "";
  }
  std::string name = ReadAt(fd.get(), kNamedHeaderSize, name_size);
  if (name.size() != name_size || FileNameOf(name) != file_name) return "";
  return name;
}

absl::Status RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return PosixError("remove", path, errno);
  }
  return absl::OkStatus();
}

// Removes the plans whose network has no record. Best effort: a plan left
// costs disk space, nothing else, so an error here never stops a store from
// opening. Unsynced, like the temp files: if the unlink is lost, the next
// Open removes them again.
void RemoveOrphanPlans(const std::string& dir) {
  const std::string plans = absl::StrCat(dir, "/", kPlansDir);
  absl::StatusOr<std::vector<std::string>> files =
      ListFiles(plans, kPlanSuffix);
  if (!files.ok()) return;
  for (const std::string& file : *files) {
    const absl::string_view digest =
        absl::string_view(file).substr(0, file.size() - kPlanSuffix.size());
    const std::string record =
        absl::StrCat(dir, "/", kNetworksDir, "/", digest, kNetworkSuffix);
    struct stat st;
    if (::stat(record.c_str(), &st) != 0 && errno == ENOENT) {
      RemoveFile(absl::StrCat(plans, "/", file)).IgnoreError();
    }
  }
}

// The format version field of the record at `path`, reading only the
// header's first 12 bytes; 0 when it cannot be read.
uint32_t FormatVersionOf(const std::string& path) {
  ScopedFd fd(OpenFile(path, O_RDONLY));
  if (fd.get() < 0) return 0;
  char header[12];
  size_t size = 0;
  while (size < sizeof(header)) {
    const ssize_t n = ::read(fd.get(), header + size, sizeof(header) - size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0;
    size += static_cast<size_t>(n);
  }
  return static_cast<uint32_t>(
      GetLittleEndian(absl::string_view(header + 8, 4)));
}

std::string PlanFileOf(absl::string_view name) {
  return absl::StrCat(Sha256Hex(name), kPlanSuffix);
}

}  // namespace

NetworkStore::NetworkStore(std::string dir, int lock_fd)
    : dir_(std::move(dir)), lock_fd_(lock_fd) {}

NetworkStore::~NetworkStore() { ::close(lock_fd_); }  // Drops the flock.

absl::StatusOr<std::unique_ptr<NetworkStore>> NetworkStore::Open(
    std::string dir) {
  if (dir.empty()) return absl::InvalidArgumentError("store folder is empty");
  GLINT_RETURN_IF_ERROR(CreateDirs(dir));
  // Open deletes temp files, which would break a live store's writes; and
  // two writers of one name would race. Hence one store per folder. flock
  // belongs to the open file, so this also refuses a second Open in-process,
  // and the kernel drops it when the process dies.
  const std::string lock_path = absl::StrCat(dir, "/LOCK");
  ScopedFd lock(OpenFile(lock_path, O_RDWR | O_CREAT, 0644));
  if (lock.get() < 0) return PosixError("open", lock_path, errno);
  if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return PosixError("lock", lock_path, errno);
    return absl::FailedPreconditionError(absl::StrCat(
        "store '", dir, "' is open elsewhere (", lock_path, " is locked)"));
  }
  for (absl::string_view sub : {kNetworksDir, kPlansDir}) {
    const std::string folder = absl::StrCat(dir, "/", sub);
    GLINT_RETURN_IF_ERROR(CreateDirs(folder));
    // Writes a crash cut short. Unsynced: if the unlink is lost, the next
    // Open removes them again.
    GLINT_ASSIGN_OR_RETURN(std::vector<std::string> temps,
                           ListFiles(folder, kTempSuffix));
    for (const std::string& temp : temps) {
      GLINT_RETURN_IF_ERROR(RemoveFile(absl::StrCat(folder, "/", temp)));
    }
  }
  RemoveOrphanPlans(dir);
  std::unique_ptr<NetworkStore> store(
      new NetworkStore(std::move(dir), lock.release()));
  store->UpgradeRecords();
  return store;
}

void NetworkStore::UpgradeRecords() {
  const std::string folder = absl::StrCat(dir_, "/", kNetworksDir);
  absl::StatusOr<std::vector<std::string>> files =
      ListFiles(folder, kNetworkSuffix);
  if (!files.ok()) return;
  for (const std::string& file : *files) {
    const std::string path = absl::StrCat(folder, "/", file);
    if (FormatVersionOf(path) != kFramedVersion) continue;
    absl::StatusOr<std::string> contents = ReadFile(path);
    if (!contents.ok()) continue;
    DecodedRecord decoded = DecodeNetwork(*contents, path, file);
    contents->clear();  // A model's worth of bytes: not twice at once.
    contents->shrink_to_fit();
    // A damaged one stays as it is, for LoadAll to report; one that cannot
    // be rewritten (a full disk) stays in format 1, which still loads.
    if (decoded.network.ok()) Save(*decoded.network).IgnoreError();
  }
}

absl::Status NetworkStore::WriteDurably(
    const std::string& folder, absl::string_view file, absl::string_view header,
    absl::Span<const absl::string_view> payload,
    const std::function<void(size_t)>& after_piece) {
  const std::string path = absl::StrCat(folder, "/", file);
  // Unique, so that concurrent writes of one file do not share a temp.
  const std::string temp =
      absl::StrCat(path, ".", next_temp_.fetch_add(1), kTempSuffix);
  ScopedFd fd(OpenFile(temp, O_WRONLY | O_CREAT | O_TRUNC, 0644));
  if (fd.get() < 0) return PosixError("create", temp, errno);
  absl::Status status = WriteAll(fd.get(), header, temp);
  for (size_t i = 0; i < payload.size() && status.ok(); ++i) {
    status = WriteAll(fd.get(), payload[i], temp);
    if (after_piece) after_piece(i);
  }
  if (status.ok()) status = Fsync(fd.get(), temp);
  if (status.ok()) status = fd.Close(temp);
  if (status.ok() && ::rename(temp.c_str(), path.c_str()) != 0) {
    status = PosixError(absl::StrCat("rename '", temp, "' to"), path, errno);
  }
  if (!status.ok()) {
    ::unlink(temp.c_str());  // Frees the space, e.g. after ENOSPC.
    return status;
  }
  return SyncDir(folder);  // Makes the rename itself durable.
}

absl::Status NetworkStore::Save(const StoredNetwork& network) {
  return Save(network.name, network.model, network.options);
}

absl::Status NetworkStore::Save(absl::string_view name,
                                const ModelBytes& model_bytes,
                                absl::string_view options) {
  const absl::string_view model = model_bytes.view();
  if (name.empty()) {
    return absl::InvalidArgumentError("network name is empty");
  }
  // NetworkRecord.name is a proto3 string: protobuf would write other bytes
  // but refuse to parse them back, so the record would come back DATA_LOSS
  // after a restart. This is the very check its parser applies.
  if (!google::protobuf::internal::IsStructurallyValidUTF8(
          name.data(), static_cast<int>(name.size()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "network name '", absl::CHexEscape(name), "' is not valid UTF-8"));
  }
  // The record without its model, then the model as field 3 written by
  // hand from the caller's bytes: protobuf would copy them twice (into the
  // record, then into its encoding), and a model is the largest thing
  // glintd holds while it adds one. A parser takes fields in any order.
  store::v1::NetworkRecord record;
  record.set_format_version(kRecordVersion);
  record.set_name(std::string(name));
  record.set_options(std::string(options));
  const std::string fields = record.SerializeAsString();
  // The model field's key and length, as protobuf writes them.
  using google::protobuf::internal::WireFormatLite;
  uint8_t key[16];  // A tag (at most 5 bytes) and a varint64 (at most 10).
  uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(
      model.size(),
      google::protobuf::io::CodedOutputStream::WriteTagToArray(
          WireFormatLite::MakeTag(store::v1::NetworkRecord::kModelFieldNumber,
                                  WireFormatLite::WIRETYPE_LENGTH_DELIMITED),
          key));
  const absl::string_view model_key(reinterpret_cast<const char*>(key),
                                    end - key);
  const uint64_t size = fields.size() + model_key.size() + model.size();
  if (size > static_cast<uint64_t>(INT_MAX)) {  // As protobuf's limit.
    return absl::InvalidArgumentError(
        absl::StrCat("network '", name, "' cannot be stored: ", size,
                     " bytes (the limit is 2 GiB)"));
  }
  // The model in windows, each dropped once read when it is a mapped file:
  // the checksum and the write each read it once, and neither makes it
  // resident beside the network the add has built from it.
  constexpr size_t kWindowBytes = size_t{64} << 20;
  constexpr size_t kFirstWindow = 2;  // After the fields and the model's key.
  std::vector<absl::string_view> payload = {fields, model_key};
  for (size_t offset = 0; offset < model.size(); offset += kWindowBytes) {
    payload.push_back(model.substr(offset, kWindowBytes));
  }
  const auto evict = [&](size_t i) {
    if (i >= kFirstWindow) {
      model_bytes.EvictRange((i - kFirstWindow) * kWindowBytes,
                             payload[i].size());
    }
  };
  return WriteDurably(absl::StrCat(dir_, "/", kNetworksDir), FileNameOf(name),
                      NamedHeader(name, payload, evict), payload, evict);
}

absl::Status NetworkStore::Delete(absl::string_view name) {
  const std::string folder = absl::StrCat(dir_, "/", kNetworksDir);
  const std::string path = absl::StrCat(folder, "/", FileNameOf(name));
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(
          absl::StrCat("no stored network '", name, "'"));
    }
    return PosixError("remove", path, errno);
  }
  return SyncDir(folder);
}

std::vector<StoreEntry> NetworkStore::LoadAll() const {
  // The same reading as the restore's, with every entry kept: the good
  // ones by name, then the others by file.
  std::vector<StoreEntry> good, bad;
  ForEachRecord([&good, &bad](StoreEntry entry) {
    (entry.network.ok() ? good : bad).push_back(std::move(entry));
  });
  std::sort(good.begin(), good.end(),
            [](const StoreEntry& a, const StoreEntry& b) {
              return a.network->name < b.network->name;
            });
  std::sort(
      bad.begin(), bad.end(),
      [](const StoreEntry& a, const StoreEntry& b) { return a.file < b.file; });
  std::move(bad.begin(), bad.end(), std::back_inserter(good));
  return good;
}

void NetworkStore::ForEachRecord(
    const std::function<void(StoreEntry)>& visit) const {
  const std::string folder = absl::StrCat(dir_, "/", kNetworksDir);
  absl::StatusOr<std::vector<std::string>> files =
      ListFiles(folder, kNetworkSuffix);
  if (!files.ok()) {
    visit(StoreEntry{folder, "", files.status()});
    return;
  }
  // The order, from the headers alone: a record's header names its network
  // in a few bytes, ahead of the model.
  struct Pending {
    std::string file;
    std::string name;  // Empty: the header names none.
  };
  std::vector<Pending> pending;
  for (const std::string& file : *files) {
    pending.push_back(
        {file, NameInHeader(absl::StrCat(folder, "/", file), file)});
  }
  std::sort(pending.begin(), pending.end(),
            [](const Pending& a, const Pending& b) {
              if (a.name.empty() != b.name.empty()) return b.name.empty();
              return a.name != b.name ? a.name < b.name : a.file < b.file;
            });
  for (const Pending& p : pending) {
    std::string path = absl::StrCat(folder, "/", p.file);
    absl::StatusOr<std::string> contents = ReadFile(path);
    if (absl::IsNotFound(contents.status())) continue;  // Deleted meanwhile.
    DecodedRecord decoded;
    if (contents.ok()) {
      decoded = DecodeNetwork(*contents, path, p.file);
      contents->clear();  // A model's worth: not beside the visit's copy.
      contents->shrink_to_fit();
    } else {
      decoded.network = contents.status();
    }
    visit(StoreEntry{std::move(path), std::move(decoded.name),
                     std::move(decoded.network), decoded.format_version});
  }
}

absl::StatusOr<StoredNetwork> NetworkStore::Load(
    absl::string_view name) const {
  const std::string file = FileNameOf(name);
  const std::string path = absl::StrCat(dir_, "/", kNetworksDir, "/", file);
  absl::StatusOr<std::string> contents = ReadFile(path);
  if (absl::IsNotFound(contents.status())) {
    return absl::NotFoundError(absl::StrCat("no stored network '", name, "'"));
  }
  if (!contents.ok()) return contents.status();
  GLINT_ASSIGN_OR_RETURN(StoredNetwork network,
                         DecodeNetwork(*contents, path, file).network);
  if (network.name != name) {  // A digest collision: not this network.
    return absl::NotFoundError(absl::StrCat("no stored network '", name, "'"));
  }
  return network;
}

absl::Status NetworkStore::SavePlan(absl::string_view name,
                                    absl::string_view blob) {
  return WriteDurably(absl::StrCat(dir_, "/", kPlansDir), PlanFileOf(name),
                      Header(kPlanMagic, blob), {blob});
}

absl::StatusOr<std::string> NetworkStore::LoadPlan(
    absl::string_view name) const {
  const std::string path =
      absl::StrCat(dir_, "/", kPlansDir, "/", PlanFileOf(name));
  absl::StatusOr<std::string> contents = ReadFile(path);
  if (absl::IsNotFound(contents.status())) {
    return absl::NotFoundError(
        absl::StrCat("no cached plan for network '", name, "'"));
  }
  if (!contents.ok()) return contents.status();
  GLINT_RETURN_IF_ERROR(Unframe(*contents, kPlanMagic, path).status());
  contents->erase(0, kHeaderSize);  // In place: plans can be large.
  return contents;
}

absl::Status NetworkStore::DeletePlan(absl::string_view name) {
  const std::string folder = absl::StrCat(dir_, "/", kPlansDir);
  const std::string path = absl::StrCat(folder, "/", PlanFileOf(name));
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(
          absl::StrCat("no cached plan for network '", name, "'"));
    }
    return PosixError("remove", path, errno);
  }
  return SyncDir(folder);
}

}  // namespace glint
