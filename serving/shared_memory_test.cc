#include "serving/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

using ::testing::HasSubstr;

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));
constexpr uint8_t kSentinel = 0xA5;

// A POSIX shared-memory object as a client would make it, mapped here too
// so that the test sees every byte glintd's side writes. Unlinked and
// unmapped by the destructor.
class TestObject {
 public:
  explicit TestObject(size_t bytes) : bytes_(bytes) {
    static std::atomic<int> counter{0};
    key_ = absl::StrCat("/glint_shm_test_", getpid(), "_", counter++);
    const int fd = shm_open(key_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    EXPECT_GE(fd, 0) << key_;
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
    data_ = static_cast<uint8_t*>(
        mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    EXPECT_NE(data_, MAP_FAILED);
    close(fd);
    std::memset(data_, kSentinel, bytes);
  }
  ~TestObject() {
    munmap(data_, bytes_);
    shm_unlink(key_.c_str());
  }

  const std::string& key() const { return key_; }
  uint8_t* data() { return data_; }
  size_t size() const { return bytes_; }
  // Every byte outside [begin, end) still holds kSentinel.
  bool UntouchedOutside(size_t begin, size_t end) const {
    for (size_t i = 0; i < bytes_; ++i) {
      if ((i < begin || i >= end) && data_[i] != kSentinel) return false;
    }
    return true;
  }
  void Shrink(size_t bytes) {
    const int fd = shm_open(key_.c_str(), O_RDWR, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
    close(fd);
  }

 private:
  std::string key_;
  size_t bytes_;
  uint8_t* data_ = nullptr;
};

// Whether the page holding `p` is mapped in this process.
bool IsMapped(const void* p) {
  unsigned char vec;
  void* page = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) /
                                       kPage * kPage);
  return mincore(page, kPage, &vec) == 0;
}

TEST(SharedMemoryRegistryTest, ViewsAreWindowsOfTheObject) {
  TestObject object(3 * kPage);
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.Register("r", object.key(), 100, 1000).ok());
  absl::StatusOr<SharedMemoryView> view =
      registry.View({"r", 10, 20}, "output 'y'");
  ASSERT_TRUE(view.ok()) << view.status();
  ASSERT_EQ(view->size(), 20u);
  std::memset(view->data(), 7, view->size());
  // Region offset 100 + window offset 10: the object's bytes 110..129.
  EXPECT_EQ(object.data()[110], 7);
  EXPECT_EQ(object.data()[129], 7);
  EXPECT_TRUE(object.UntouchedOutside(110, 130));

  absl::StatusOr<std::vector<SharedMemoryRegionInfo>> all =
      registry.Regions("");
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].name, "r");
  EXPECT_EQ((*all)[0].key, object.key());
  EXPECT_EQ((*all)[0].offset, 100u);
  EXPECT_EQ((*all)[0].byte_size, 1000u);
  EXPECT_EQ(registry.Regions("other").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(SharedMemoryRegistryTest, KeysWithoutASlashNameTheSameObject) {
  TestObject object(kPage);
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.Register("r", object.key().substr(1), 0, 64).ok());
  absl::StatusOr<SharedMemoryView> view = registry.View({"r", 0, 64}, "x");
  ASSERT_TRUE(view.ok()) << view.status();
  object.data()[3] = 42;
  EXPECT_EQ(view->data()[3], 42);
}

TEST(SharedMemoryRegistryTest, ARegionLargerThanItsObjectIsRefused) {
  TestObject object(kPage);
  SharedMemoryRegistry registry;
  absl::Status s = registry.Register("r", object.key(), 0, kPage + 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("too small"));
  s = registry.Register("r", object.key(), kPage, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = registry.Register("r", object.key(), UINT64_MAX - 10, 100);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  s = registry.Register("r", object.key(), 0, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(registry.size(), 0);
  // The whole object fits.
  EXPECT_TRUE(registry.Register("r", object.key(), 0, kPage).ok());
}

TEST(SharedMemoryRegistryTest, WindowsOutsideTheRegionAreRefused) {
  TestObject object(2 * kPage);
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.Register("r", object.key(), 64, 256).ok());
  for (const SharedMemoryRef& ref :
       {SharedMemoryRef{"r", 257, 0}, SharedMemoryRef{"r", 300, 4},
        SharedMemoryRef{"r", 0, 257}, SharedMemoryRef{"r", 200, 57},
        SharedMemoryRef{"r", UINT64_MAX, 2},
        SharedMemoryRef{"r", 8, UINT64_MAX}}) {
    absl::StatusOr<SharedMemoryView> view = registry.View(ref, "input 'x'");
    EXPECT_EQ(view.status().code(), absl::StatusCode::kInvalidArgument)
        << ref.offset << "+" << ref.byte_size;
    EXPECT_THAT(view.status().message(), HasSubstr("input 'x'"));
  }
  // The edges themselves are inside.
  EXPECT_TRUE(registry.View({"r", 256, 0}, "x").ok());
  EXPECT_TRUE(registry.View({"r", 0, 256}, "x").ok());
  EXPECT_TRUE(registry.View({"r", 200, 56}, "x").ok());
}

TEST(SharedMemoryRegistryTest, UnregisteredNamesAreInvalidArgument) {
  TestObject object(kPage);
  SharedMemoryRegistry registry;
  absl::StatusOr<SharedMemoryView> view =
      registry.View({"nope", 0, 4}, "input 'x'");
  EXPECT_EQ(view.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(view.status().message(), HasSubstr("'nope'"));
  ASSERT_TRUE(registry.Register("r", object.key(), 0, 64).ok());
  ASSERT_TRUE(registry.Unregister("r").ok());
  EXPECT_EQ(registry.View({"r", 0, 4}, "x").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Unregister("r").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(registry.BorrowTensor({"r", 0, 4}, DType::kFloat32, Shape({1}),
                                  "x")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SharedMemoryRegistryTest, UnregisterAllOfDropsOnlyThatOwnersRegions) {
  TestObject object(kPage);
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.Register("o1", object.key(), 0, 64, "oip").ok());
  ASSERT_TRUE(registry.Register("o2", object.key(), 64, 64, "oip").ok());
  ASSERT_TRUE(registry.Register("g", object.key(), 0, 64, "glint").ok());
  // Names are shared by all owners.
  EXPECT_EQ(registry.Register("g", object.key(), 0, 64, "oip").code(),
            absl::StatusCode::kAlreadyExists);
  registry.UnregisterAllOf("oip");
  absl::StatusOr<std::vector<SharedMemoryRegionInfo>> left =
      registry.Regions("");
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ((*left)[0].name, "g");
  // A name freed by one owner may be taken by another, and is then its.
  ASSERT_TRUE(registry.Register("o1", object.key(), 0, 64, "glint").ok());
  registry.UnregisterAllOf("oip");
  EXPECT_EQ(registry.size(), 2);
  ASSERT_TRUE(registry.Unregister("g").ok());
  registry.UnregisterAllOf("glint");
  EXPECT_EQ(registry.size(), 0);
  ASSERT_TRUE(registry.Register("g", object.key(), 0, 64, "oip").ok());
  registry.UnregisterAll();
  EXPECT_EQ(registry.size(), 0);
}

TEST(SharedMemoryRegistryTest, NamesAndKeysAreValidated) {
  TestObject object(kPage);
  SharedMemoryRegistry registry;
  for (const std::string& name :
       {std::string(), std::string("a b"), std::string("tab\t"),
        std::string("nul\0x", 5), std::string("\xc3\xa9"),
        std::string(kMaxSharedMemoryNameBytes + 1, 'n')}) {
    EXPECT_EQ(registry.Register(name, object.key(), 0, 8).code(),
              absl::StatusCode::kInvalidArgument)
        << name;
  }
  for (const std::string& key :
       {std::string(), std::string("/"), std::string("//x"),
        std::string("a/b"), std::string("/.."), std::string("."),
        std::string("/dev/shm/x"), std::string("x\n"),
        std::string(kMaxSharedMemoryNameBytes, 'k')}) {
    EXPECT_EQ(registry.Register("r", key, 0, 8).code(),
              absl::StatusCode::kInvalidArgument)
        << key;
  }
  EXPECT_EQ(registry.Register("r", "/glint_shm_test_never_made", 0, 8).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(registry.size(), 0);
  ASSERT_TRUE(registry.Register("r", object.key(), 0, 8).ok());
  EXPECT_EQ(registry.Register("r", object.key(), 0, 8).code(),
            absl::StatusCode::kAlreadyExists);
}

TEST(SharedMemoryRegistryTest, TheRegionCountIsBounded) {
  TestObject object(kPage);
  SharedMemoryRegistryOptions options;
  options.max_regions = 3;
  SharedMemoryRegistry registry(options);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        registry.Register(absl::StrCat("r", i), object.key(), 0, 8).ok());
  }
  EXPECT_EQ(registry.Register("r3", object.key(), 0, 8).code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(registry.Unregister("r0").ok());
  EXPECT_TRUE(registry.Register("r3", object.key(), 0, 8).ok());
  registry.UnregisterAll();
  EXPECT_EQ(registry.size(), 0);
}

TEST(SharedMemoryRegistryTest, BorrowedTensorsAreTheMappingItself) {
  TestObject object(kPage);
  float* floats = reinterpret_cast<float*>(object.data() + 64);
  for (int i = 0; i < 6; ++i) floats[i] = static_cast<float>(i) + 0.5f;
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.Register("r", object.key(), 32, 512).ok());
  absl::StatusOr<Tensor> t = registry.BorrowTensor(
      {"r", 32, 24}, DType::kFloat32, Shape({2, 3}), "input 'x'");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->data<float>()[5], 5.5f);
  floats[5] = -1;  // No copy: the client's writes show through.
  EXPECT_EQ(t->data<float>()[5], -1.0f);

  // The window must be exactly the tensor's bytes.
  absl::StatusOr<Tensor> wrong = registry.BorrowTensor(
      {"r", 32, 28}, DType::kFloat32, Shape({2, 3}), "input 'x'");
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.status().message(), HasSubstr("24 bytes"));
  for (const auto& [dtype, shape] :
       std::vector<std::pair<DType, Shape>>{{DType::kUndefined, Shape({1})},
                                            {DType::kFloat32, Shape({-1, 3})},
                                            {DType::kFloat32, Shape({-2})}}) {
    EXPECT_EQ(registry.BorrowTensor({"r", 0, 4}, dtype, shape, "x")
                  .status()
                  .code(),
              absl::StatusCode::kInvalidArgument)
        << shape.ToString();
  }
}

TEST(SharedMemoryRegistryTest, OutputsAreWrittenInsideTheirWindowOnly) {
  TestObject object(2 * kPage);
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.Register("r", object.key(), 1000, 2000).ok());
  Tensor y = Tensor::FromVector<float>(DType::kFloat32, Shape({4}),
                                       {1.0f, 2.0f, 3.0f, 4.0f});
  absl::StatusOr<SharedMemoryView> small = registry.View({"r", 8, 12}, "y");
  ASSERT_TRUE(small.ok());
  absl::Status s = CopyTensorToWindow(y, *small, "output 'y'");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("output 'y'"));
  EXPECT_TRUE(object.UntouchedOutside(0, 0));  // Nothing written at all.

  absl::StatusOr<SharedMemoryView> fits = registry.View({"r", 8, 100}, "y");
  ASSERT_TRUE(fits.ok());
  ASSERT_TRUE(CopyTensorToWindow(y, *fits, "output 'y'").ok());
  EXPECT_TRUE(object.UntouchedOutside(1008, 1024));
  float back[4];
  std::memcpy(back, object.data() + 1008, sizeof(back));
  EXPECT_EQ(back[3], 4.0f);
}

// The mapping is fenced by PROT_NONE pages: reading or writing one byte
// beside a page-aligned region faults instead of reaching other memory.
TEST(SharedMemoryRegistryDeathTest, GuardPagesFenceTheMapping) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TestObject object(4 * kPage);
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.Register("r", object.key(), kPage, 2 * kPage).ok());
  absl::StatusOr<SharedMemoryView> view = registry.View({"r", 0, 2 * kPage},
                                                        "x");
  ASSERT_TRUE(view.ok());
  volatile uint8_t* p = view->data();
  p[0] = 1;
  p[2 * kPage - 1] = 2;
  EXPECT_EQ(object.data()[kPage], 1);
  EXPECT_EQ(object.data()[3 * kPage - 1], 2);
  EXPECT_DEATH({ p[-1] = 3; }, "");
  EXPECT_DEATH({ (void)p[2 * kPage]; }, "");
  // The object's own neighbouring pages were never touched.
  EXPECT_TRUE(object.UntouchedOutside(kPage, 3 * kPage));
}

TEST(SharedMemoryRegistryTest, UnregisterWhileARunHoldsTheRegionIsSafe) {
  auto object = std::make_unique<TestObject>(kPage);
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.Register("r", object->key(), 0, kPage).ok());
  absl::StatusOr<Tensor> input = registry.BorrowTensor(
      {"r", 0, 16}, DType::kInt32, Shape({4}), "input 'x'");
  ASSERT_TRUE(input.ok());
  absl::StatusOr<SharedMemoryView> output = registry.View({"r", 64, 16}, "y");
  ASSERT_TRUE(output.ok());
  const void* mapped = input->raw_data();

  // The client unregisters and even deletes its object mid-run.
  ASSERT_TRUE(registry.Unregister("r").ok());
  object.reset();
  EXPECT_EQ(registry.View({"r", 0, 16}, "x").status().code(),
            absl::StatusCode::kInvalidArgument);
  // The run still reads its input and writes its output.
  EXPECT_EQ(input->data<int32_t>()[3],
            static_cast<int32_t>(0xA5A5A5A5u));
  Tensor y = Tensor::FromVector<int32_t>(DType::kInt32, Shape({4}),
                                         {1, 2, 3, 4});
  EXPECT_TRUE(CopyTensorToWindow(y, *output, "y").ok());
  EXPECT_TRUE(IsMapped(mapped));

  // Once the run lets go, the mapping goes.
  Tensor copy = *input;
  *input = Tensor();
  EXPECT_TRUE(IsMapped(mapped));
  copy = Tensor();
  *output = SharedMemoryView();
  EXPECT_FALSE(IsMapped(mapped));
}

TEST(SharedMemoryRegistryTest, AShrunkObjectIsNoticedBeforeAnyAccess) {
  TestObject object(2 * kPage);
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.Register("r", object.key(), 0, 2 * kPage).ok());
  object.Shrink(kPage);
  absl::StatusOr<SharedMemoryView> view = registry.View({"r", 0, 8}, "x");
  EXPECT_EQ(view.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(view.status().message(), HasSubstr("shrunk"));
}

// Many clients registering, running and unregistering at once (run under
// TSan in CI's concurrency subset).
TEST(SharedMemoryRegistryTest, ConcurrentClients) {
  TestObject object(kPage);
  SharedMemoryRegistry registry;
  ASSERT_TRUE(registry.Register("shared", object.key(), 0, kPage).ok());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const std::string name = absl::StrCat("c", t, "_", i);
        if (!registry.Register(name, object.key(), 0, 64).ok()) ++failures;
        absl::StatusOr<Tensor> x = registry.BorrowTensor(
            {name, 0, 64}, DType::kUInt8, Shape({64}), "x");
        absl::StatusOr<Tensor> s = registry.BorrowTensor(
            {"shared", 64, 64}, DType::kUInt8, Shape({64}), "s");
        if (!x.ok() || !s.ok() || x->data<uint8_t>()[0] != kSentinel) {
          ++failures;
        }
        if (!registry.Unregister(name).ok()) ++failures;
        if (!registry.Regions("").ok()) ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(registry.size(), 1);
}

}  // namespace
}  // namespace glint
