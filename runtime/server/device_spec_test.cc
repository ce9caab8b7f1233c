#include "runtime/server/device_spec.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

using ::testing::HasSubstr;

TEST(ParseByteSizeTest, Units) {
  EXPECT_EQ(*ParseByteSize("4096"), 4096u);
  EXPECT_EQ(*ParseByteSize("10B"), 10u);
  EXPECT_EQ(*ParseByteSize("2KiB"), 2048u);
  EXPECT_EQ(*ParseByteSize("512MiB"), 512u << 20);
  EXPECT_EQ(*ParseByteSize("2GiB"), uint64_t{2} << 30);
  EXPECT_EQ(*ParseByteSize("3KB"), 3000u);
  EXPECT_EQ(*ParseByteSize("5MB"), 5000000u);
  EXPECT_EQ(*ParseByteSize("1GB"), 1000000000u);
}

TEST(ParseByteSizeTest, Errors) {
  for (const char* bad : {"", "GiB", "-1GiB", "1.5GiB", "12TiB", "1 G",
                          "99999999999999999999", "17179869184GiB"}) {
    absl::StatusOr<uint64_t> r = ParseByteSize(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ParseDeviceSpecTest, Default) {
  absl::StatusOr<std::vector<DeviceConfig>> c =
      ParseDeviceSpec(kDefaultDeviceSpec);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 2u);
  for (const DeviceConfig& d : *c) {
    EXPECT_EQ(d.type, "sim");
    EXPECT_EQ(d.memory_bytes, 2 * kGiB);
    EXPECT_TRUE(d.name.empty());
    EXPECT_TRUE(d.params.empty());
  }
}

TEST(ParseDeviceSpecTest, SeveralEntriesAndParams) {
  absl::StatusOr<std::vector<DeviceConfig>> c = ParseDeviceSpec(
      "sim:memory=512MiB, sim*2:memory=4GiB:compute_gflops=100,fast");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->size(), 4u);
  EXPECT_EQ((*c)[0].memory_bytes, 512 * kMiB);
  EXPECT_TRUE((*c)[0].params.empty());
  EXPECT_EQ((*c)[1].memory_bytes, 4 * kGiB);
  EXPECT_EQ((*c)[1].params.at("compute_gflops"), "100");
  EXPECT_EQ((*c)[2].params.at("compute_gflops"), "100");
  EXPECT_EQ((*c)[3].type, "fast");
  // Without memory= the DeviceConfig default applies.
  EXPECT_EQ((*c)[3].memory_bytes, DeviceConfig().memory_bytes);
}

TEST(ParseDeviceSpecTest, ErrorsNameTheEntry) {
  struct Case {
    const char* spec;
    const char* needle;
  };
  for (const Case& c : {
           Case{"", "empty"},
           Case{"sim,,sim", "empty entry"},
           Case{"sim*0", "'sim*0'"},
           Case{"sim*x:memory=1GiB", "'sim*x:memory=1GiB'"},
           Case{"sim*2000", "bad count"},
           Case{"sim:memory=lots", "'sim:memory=lots'"},
           Case{"sim:memory=0", "memory must be > 0"},
           Case{"sim:memory=1GiB:memory=2GiB", "twice"},
           Case{"sim:k=1:k=2", "'k' given twice"},
           Case{"sim:novalue", "expected key=value"},
           Case{"*2", "missing device type"},
           Case{"s/m", "bad device type"},
       }) {
    absl::StatusOr<std::vector<DeviceConfig>> r = ParseDeviceSpec(c.spec);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
        << c.spec;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.needle))
        << c.spec;
  }
}

}  // namespace
}  // namespace glint
