#include "devices/device_spec.h"

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

TEST(ShareHostCoresTest, HostDevicesSplitTheCoresUnlessTheySayOtherwise) {
  absl::StatusOr<std::vector<DeviceConfig>> configs = ParseDeviceSpec(
      "sim*2,sim:threads=5,faulty:kill_at_launch=3,faulty:inner=other,sim");
  ASSERT_TRUE(configs.ok()) << configs.status();
  ShareHostCores(16, &*configs);
  // sim, sim, faulty (wrapping sim) and the last sim: 16 / 4 each.
  EXPECT_EQ((*configs)[0].params.at("threads"), "4");
  EXPECT_EQ((*configs)[1].params.at("threads"), "4");
  EXPECT_EQ((*configs)[2].params.at("threads"), "5");  // Given.
  EXPECT_EQ((*configs)[3].params.at("threads"), "4");
  EXPECT_EQ((*configs)[4].params.count("threads"), 0u);  // Not a host one.
  EXPECT_EQ((*configs)[5].params.at("threads"), "4");
  // More devices than cores: one thread each, never zero.
  absl::StatusOr<std::vector<DeviceConfig>> many = ParseDeviceSpec("sim*8");
  ASSERT_TRUE(many.ok());
  ShareHostCores(2, &*many);
  for (const DeviceConfig& c : *many) EXPECT_EQ(c.params.at("threads"), "1");
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
