#include "runtime/device_monitor.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "devices/fault/fault_injecting_device.h"
#include "devices/sim/sim_device.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

std::unique_ptr<FaultInjectingDevice> MakeDevice(int id) {
  DeviceConfig config;
  config.memory_bytes = 1 << 20;
  config.name = "sim:" + std::to_string(id);
  auto sim = SimDevice::Create(id, config);
  EXPECT_TRUE(sim.ok()) << sim.status();
  return std::make_unique<FaultInjectingDevice>(
      std::unique_ptr<DeviceManager>(*std::move(sim)));
}

// What the monitor reported, for the test's thread to wait on.
class Reports {
 public:
  DeviceMonitor::OnDead Callback() {
    return [this](const std::vector<const DeviceManager*>& dead,
                  const std::string& names) {
      absl::MutexLock lock(&mu_);
      dead_.push_back(dead);
      names_.push_back(names);
    };
  }
  // Blocks until `n` reports came.
  void Await(size_t n) {
    absl::MutexLock lock(&mu_);
    want_ = n;
    mu_.Await(absl::Condition(this, &Reports::Enough));
  }
  std::vector<std::vector<const DeviceManager*>> dead() {
    absl::MutexLock lock(&mu_);
    return dead_;
  }
  std::vector<std::string> names() {
    absl::MutexLock lock(&mu_);
    return names_;
  }

 private:
  bool Enough() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return dead_.size() >= want_;
  }

  absl::Mutex mu_;
  size_t want_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::vector<const DeviceManager*>> dead_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> names_ ABSL_GUARDED_BY(mu_);
};

TEST(DeviceMonitorTest, ACheckReportsTheDeadDevicesByName) {
  auto a = MakeDevice(0);
  auto b = MakeDevice(1);
  auto c = MakeDevice(2);
  Reports reports;
  DeviceMonitor monitor({a.get(), b.get(), c.get()}, reports.Callback());
  b->Kill();
  c->Kill();
  monitor.RequestCheck();
  reports.Await(1);
  EXPECT_EQ(reports.dead()[0],
            (std::vector<const DeviceManager*>{b.get(), c.get()}));
  EXPECT_EQ(reports.names()[0], "sim:1, sim:2");
  // A later check reports them again (a network may have been placed on
  // one in the moment before it was found dead).
  monitor.RequestCheck();
  reports.Await(2);
  EXPECT_EQ(reports.dead()[1].size(), 2u);
  monitor.Stop();
}

TEST(DeviceMonitorTest, ACheckThatFindsEveryDeviceHealthyReportsNothing) {
  auto a = MakeDevice(0);
  auto b = MakeDevice(1);
  Reports reports;
  DeviceMonitor monitor({a.get(), b.get()}, reports.Callback());
  // The check asked for first runs before or after the death: either way
  // the first report is of `b` alone, never an empty one.
  monitor.RequestCheck();
  b->Kill();
  monitor.RequestCheck();
  reports.Await(1);
  EXPECT_EQ(reports.dead()[0], (std::vector<const DeviceManager*>{b.get()}));
  EXPECT_EQ(reports.names()[0], "sim:1");
}

TEST(DeviceMonitorTest, StopEndsAnIdleMonitorAndIsIdempotent) {
  auto a = MakeDevice(0);
  Reports reports;
  DeviceMonitor monitor({a.get()}, reports.Callback());
  monitor.Stop();
  monitor.Stop();
  // Checks asked for after the stop are never run.
  a->Kill();
  monitor.RequestCheck();
  EXPECT_TRUE(reports.dead().empty());
}

}  // namespace
}  // namespace glint
