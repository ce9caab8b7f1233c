// Replays inputs through a libFuzzer target without libFuzzer: the main of
// every <target>_test (see fuzz.bzl), so the ordinary gcc build runs each
// committed seed and each past crasher on every CI run.
//
// Usage: <binary> PATH...   (files, or directories read recursively)
// Exits non-zero when no input ran: an empty or misplaced corpus must not
// pass silently. A crashing input crashes the process; the last "replay:"
// line on stderr names it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Optional in a target, as in libFuzzer.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv)
    __attribute__((weak));

namespace {

bool ReadFile(const std::string& path, std::vector<uint8_t>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in),
              std::istreambuf_iterator<char>());
  return !in.bad();
}

// Runs one file; false if it cannot be read.
bool Replay(const std::string& path) {
  std::vector<uint8_t> bytes;
  if (!ReadFile(path, &bytes)) {
    std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    return false;
  }
  std::fprintf(stderr, "replay: %s (%zu bytes)\n", path.c_str(), bytes.size());
  std::fflush(stderr);
  // A heap copy of exactly the input's size, as libFuzzer passes it, so
  // that a sanitizer build catches reads past the end; never a null pointer
  // for an empty input either.
  std::vector<uint8_t> copy(bytes.begin(), bytes.end());
  copy.reserve(1);
  LLVMFuzzerTestOneInput(copy.data(), copy.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  int ran = 0;
  int unreadable = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::error_code error;
    if (std::filesystem::is_directory(arg, error)) {
      std::vector<std::string> files;
      for (const auto& entry :
           std::filesystem::recursive_directory_iterator(arg, error)) {
        if (entry.is_regular_file()) files.push_back(entry.path().string());
      }
      // Sorted: the same order on every machine and run.
      std::sort(files.begin(), files.end());
      for (const std::string& f : files) {
        if (Replay(f)) ++ran; else ++unreadable;
      }
    } else if (Replay(arg.string())) {
      ++ran;
    } else {
      ++unreadable;
    }
  }
  std::printf("replayed %d inputs", ran);
  if (unreadable > 0) std::printf(", %d unreadable", unreadable);
  std::printf("\n");
  if (ran == 0) {
    std::fprintf(stderr, "replay: no input ran (usage: %s PATH...)\n",
                 argv[0]);
    return 1;
  }
  return unreadable == 0 ? 0 : 1;
}
