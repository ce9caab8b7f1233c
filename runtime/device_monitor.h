// DeviceMonitor: the thread that looks for devices that died.
//
// A run that fails UNAVAILABLE, or finds every replica of its network on a
// dead device, asks for a check (RequestCheck, cheap, never blocking). The
// monitor's thread then reads each device's health and, if any is dead,
// hands the dead ones to the callback, which re-provisions the networks on
// them (HostManager::Reprovision). Checks asked for while one runs merge
// into one more.
//
// Thread-safe. The callback runs on the monitor's thread only, one call at
// a time, without the monitor's lock held.
#ifndef GLINT_RUNTIME_DEVICE_MONITOR_H_
#define GLINT_RUNTIME_DEVICE_MONITOR_H_

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "devices/device_manager.h"

namespace glint {

class DeviceMonitor {
 public:
  // The devices found dead by a check (every one dead now, also those
  // reported before: a network may have been placed on one in the moment
  // between its death and its discovery), and their names joined by ", ".
  using OnDead = std::function<void(
      const std::vector<const DeviceManager*>& dead, const std::string& names)>;

  // Starts the thread. `devices` are borrowed and outlive the monitor.
  DeviceMonitor(std::vector<const DeviceManager*> devices, OnDead on_dead);
  // Stop().
  ~DeviceMonitor();
  DeviceMonitor(const DeviceMonitor&) = delete;
  DeviceMonitor& operator=(const DeviceMonitor&) = delete;

  // Asks for a check.
  void RequestCheck() ABSL_LOCKS_EXCLUDED(mu_);

  // Ends the thread after the check in progress, if any; checks asked for
  // and not begun are dropped. Idempotent; not from the callback.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return check_requested_ || stop_;
  }

  const std::vector<const DeviceManager*> devices_;
  const OnDead on_dead_;
  absl::Mutex mu_;
  bool check_requested_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  // Devices found dead so far, so each death is logged once.
  absl::flat_hash_set<const DeviceManager*> reported_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;  // Started last by the constructor; joined by Stop.
};

}  // namespace glint

#endif  // GLINT_RUNTIME_DEVICE_MONITOR_H_
