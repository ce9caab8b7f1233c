// Fuzz target: AddNetworkStream's messages, as any client may send them,
// taken by ModelUpload (the call's state: model_upload.h) in order until
// one is refused, then the stream's end (Finish).
//
// Input: frames of a 2-byte little-endian length and that many bytes, each
// parsed as a v1::AddNetworkChunk (one that does not parse is skipped: gRPC
// would have refused it before glintd saw it).
//
// Checks, beyond no crash, leak or hang: what Finish gives back is exactly
// the model bytes of the messages taken, in order, with the first
// message's name (never empty); nothing over the limit or past a given
// model_size is ever taken; and the upload folder stays empty whatever
// happened (the file has no name).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_check.h"
#include "proto/glint.pb.h"
#include "runtime/server/grpc/model_upload.h"

namespace {

// Small, so that the limit is reached within libFuzzer's -max_len.
constexpr uint64_t kMaxBytes = 1024;

const std::string& UploadDir() {
  static const std::string* dir = [] {
    const char* tmp = std::getenv("TEST_TMPDIR");
    if (tmp == nullptr) tmp = std::getenv("TMPDIR");
    std::string path = absl::StrCat(tmp != nullptr ? tmp : "/tmp",
                                    "/add_network_stream_fuzzer.XXXXXX");
    if (mkdtemp(path.data()) == nullptr) std::abort();
    return new std::string(path);
  }();
  return *dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  glint::ModelUpload upload(UploadDir(), kMaxBytes);
  std::string taken;  // The model bytes of the messages taken.
  uint64_t declared = 0;
  bool refused = false;
  size_t i = 0;
  while (i + 2 <= size && !refused) {
    const size_t length = data[i] | (size_t{data[i + 1]} << 8);
    i += 2;
    const size_t n = length < size - i ? length : size - i;
    glint::v1::AddNetworkChunk chunk;
    const bool parsed = chunk.ParseFromArray(data + i, static_cast<int>(n));
    i += n;
    if (!parsed) continue;
    const bool first = upload.name().empty() && taken.empty();
    if (upload.Take(chunk).ok()) {
      if (first) declared = chunk.model_size();
      taken += chunk.model();
      FUZZ_CHECK(!upload.name().empty(), "taken without a name");
      FUZZ_CHECK(taken.size() <= kMaxBytes, "over the limit");
      FUZZ_CHECK(declared == 0 || taken.size() <= declared,
                 "past the model_size given");
      FUZZ_CHECK(upload.received() == taken.size(), "received miscounted");
    } else {
      refused = true;
    }
  }
  if (!refused) {
    absl::StatusOr<glint::ModelBytes> model = upload.Finish();
    if (model.ok()) {
      FUZZ_CHECK(model->view() == taken, "the file is not what was sent");
      FUZZ_CHECK(declared == 0 || taken.size() == declared,
                 "finished short of the model_size given");
    }
  }
  FUZZ_CHECK(std::filesystem::directory_iterator(UploadDir()) ==
                 std::filesystem::directory_iterator(),
             "an upload left a file");
  return 0;
}
