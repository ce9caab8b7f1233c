// That the policy makes freed memory leave the process: a freed block of
// weights' size, and heap blocks freed under a live one, stop counting in
// VmRSS once ReleaseFreeMemory has run.
#include "core/allocator_policy.h"

#include <cstdlib>  // Defines __GLIBC__, tested below.

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

int64_t RssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (!absl::StartsWith(line, "VmRSS:")) continue;
    int64_t kib = 0;
    absl::string_view v = absl::StripAsciiWhitespace(
        absl::StripSuffix(absl::string_view(line).substr(6), "kB"));
    return absl::SimpleAtoi(v, &kib) ? kib * 1024 : -1;
  }
  return -1;
}

constexpr int64_t kMiB = 1 << 20;

class AllocatorPolicyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ConfigureAllocatorForTensors(); }
};

TEST_F(AllocatorPolicyTest, FreedMemoryLeavesTheProcess) {
#if !defined(__GLIBC__) || defined(GLINT_SANITIZER)
  GTEST_SKIP() << "glibc's malloc only (sanitizers replace it)";
#else
  ReleaseFreeMemory();
  const int64_t before = RssBytes();
  ASSERT_GT(before, 0);
  // Blocks of 64 KiB (below the mmap threshold: from the heap) and of
  // 16 MiB (a weight), then a small block allocated after them all, which
  // stays live: without trimming, the heap below it could not shrink.
  std::vector<char*> blocks;
  for (int i = 0; i < 1024; ++i) {
    blocks.push_back(static_cast<char*>(std::malloc(64 << 10)));
  }
  for (int i = 0; i < 4; ++i) {
    blocks.push_back(static_cast<char*>(std::malloc(16 * kMiB)));
  }
  for (char* b : blocks) std::memset(b, 1, malloc_usable_size(b));
  char* pin = static_cast<char*>(std::malloc(64));
  std::memset(pin, 1, 64);
  const int64_t full = RssBytes();
  EXPECT_GE(full - before, 120 * kMiB);
  for (char* b : blocks) std::free(b);
  ReleaseFreeMemory();
  const int64_t after = RssBytes();
  EXPECT_LE(after - before, 8 * kMiB)
      << "before " << before << ", full " << full << ", after " << after;
  std::free(pin);
#endif
}

}  // namespace
}  // namespace glint
