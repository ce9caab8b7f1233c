#include "client/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace glint {
namespace {

// Whether an object named `key` exists in /dev/shm.
bool Exists(const std::string& key) {
  const int fd = shm_open(key.c_str(), O_RDONLY, 0);
  if (fd < 0) return false;
  close(fd);
  return true;
}

TEST(SharedMemoryRegionTest, CreatesAZeroedMappingAndRemovesIt) {
  std::string key;
  {
    absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> region =
        SharedMemoryRegion::Create(10000);
    ASSERT_TRUE(region.ok()) << region.status();
    key = (*region)->key();
    EXPECT_EQ(key.front(), '/');
    EXPECT_EQ((*region)->size(), 10000u);
    for (size_t i = 0; i < 10000; ++i) ASSERT_EQ((*region)->data()[i], 0);
    (*region)->data()[9999] = 7;
    // Another mapping of the object sees the bytes.
    const int fd = shm_open(key.c_str(), O_RDONLY, 0);
    ASSERT_GE(fd, 0);
    struct stat st;
    ASSERT_EQ(fstat(fd, &st), 0);
    EXPECT_EQ(st.st_size, 10000);
    void* p = mmap(nullptr, 10000, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    ASSERT_NE(p, MAP_FAILED);
    EXPECT_EQ(static_cast<uint8_t*>(p)[9999], 7);
    munmap(p, 10000);
  }
  EXPECT_FALSE(Exists(key));
}

TEST(SharedMemoryRegionTest, UnlinkLeavesTheMappingUsable) {
  absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> region =
      SharedMemoryRegion::Create(4096);
  ASSERT_TRUE(region.ok());
  (*region)->Unlink();
  EXPECT_FALSE(Exists((*region)->key()));
  (*region)->data()[0] = 1;
  EXPECT_EQ((*region)->data()[0], 1);
  (*region)->Unlink();  // Idempotent.
}

TEST(SharedMemoryRegionTest, Errors) {
  EXPECT_EQ(SharedMemoryRegion::Create(0).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> a =
      SharedMemoryRegion::Create(64);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(SharedMemoryRegion::Create(64, (*a)->key()).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(SharedMemoryRegion::Create(64, "/a/b").status().code(),
            absl::StatusCode::kInvalidArgument);
  // Two fresh keys differ.
  absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> b =
      SharedMemoryRegion::Create(64);
  ASSERT_TRUE(b.ok());
  EXPECT_NE((*a)->key(), (*b)->key());
}

}  // namespace
}  // namespace glint
