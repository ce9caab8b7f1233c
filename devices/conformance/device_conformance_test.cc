// The device conformance suite: the contract of docs/ARCHITECTURE.md (Devices)
// and issue 3, written once and run against every registered device type.
//
// The parameters come from ConformanceConfigs(), which enumerates the
// registry: a newly registered type without a configuration here fails the
// suite (add one below), so no device type escapes it.
//
// Blocking is done with gates (items that wait until the test opens them)
// and events, never with sleeps. The one poll (priorities) waits for an
// observable state of the device, bounded by a deadline.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/graph.h"
#include "devices/device_guard.h"
#include "devices/device_manager.h"
#include "devices/device_registry.h"
#include "devices/fault/fault_injecting_device.h"
#include "devices/stream_internal.h"
#include "gtest/gtest.h"

namespace glint {

using devices_internal::StreamInternal;

namespace {

// --- Configurations ---------------------------------------------------------

// Small enough that filling a device to its last byte is cheap.
constexpr uint64_t kMemoryBytes = 16 * kMiB;

struct ConformanceConfig {
  std::string label;    // Test-name suffix.
  DeviceConfig config;  // Type, capacity and parameters.
  // False for a registered type this suite has no configuration for: its
  // tests fail, so that whoever adds a type adds it here too.
  bool known = true;
};

void PrintTo(const ConformanceConfig& c, std::ostream* os) { *os << c.label; }

DeviceConfig MakeConfig(std::string type,
                        std::map<std::string, std::string> params = {}) {
  DeviceConfig config;
  config.type = std::move(type);
  config.memory_bytes = kMemoryBytes;
  config.params = std::move(params);
  return config;
}

std::string TestName(std::string s) {
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

void RegisterAllTypes() {
  RegisterBuiltinDeviceTypes();
  absl::Status s = RegisterFaultInjectingDeviceType(DeviceRegistry::Global());
  if (!s.ok()) ADD_FAILURE() << s;
}

// One or more configurations per registered device type.
std::vector<ConformanceConfig> ConformanceConfigs() {
  RegisterAllTypes();
  std::vector<ConformanceConfig> configs;
  for (const std::string& type : DeviceRegistry::Global().Types()) {
    if (type == "sim") {
      configs.push_back({"sim", MakeConfig(type)});
      // Timing model fast enough to keep the suite quick.
      configs.push_back({"sim_timed", MakeConfig(type, {{"compute_gflops", "50"},
                                                        {"link_gbps", "10"},
                                                        {"link_latency_us",
                                                         "20"}})});
    } else if (type == "faulty") {
      configs.push_back({"faulty_passthrough", MakeConfig(type)});
    } else {
      configs.push_back(
          {TestName(type) + "_unconfigured", MakeConfig(type), false});
    }
  }
  return configs;
}

// --- Helpers ----------------------------------------------------------------

// y = Relu(x + b), b = [1, -1, 1, -1, ...], over n float32 elements. Only
// element-wise kernels: the oneDNN ones run on OpenMP threads that the
// sanitizers cannot see.
Graph ReluGraph(int64_t n) {
  Graph g;
  g.opset_version = 13;
  g.inputs = {{"x", DType::kFloat32, Shape({n})}};
  g.outputs = {{"y", DType::kFloat32, Shape({n})}};
  std::vector<float> b(n);
  for (int64_t i = 0; i < n; ++i) b[i] = i % 2 == 0 ? 1.0f : -1.0f;
  g.initializers["b"] = Tensor::FromVector<float>(DType::kFloat32, Shape({n}), b);
  g.nodes = {Node{"add", "Add", "", {"x", "b"}, {"t"}, {}},
             Node{"relu", "Relu", "", {"t"}, {"y"}, {}}};
  for (const char* v : {"x", "b", "t", "y"}) {
    g.values[v] = {v, DType::kFloat32, Shape({n})};
  }
  return g;
}

std::vector<float> ReluExpected(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = std::max(0.0f, x[i] + (i % 2 == 0 ? 1.0f : -1.0f));
  }
  return y;
}

Tensor HostTensor(const std::vector<float>& v) {
  return Tensor::FromVector<float>(DType::kFloat32,
                                   Shape({static_cast<int64_t>(v.size())}), v);
}

std::vector<float> Values(const Tensor& t) {
  if (t.raw_data() == nullptr) return {};
  return std::vector<float>(t.data<float>(),
                            t.data<float>() + t.num_elements());
}

std::vector<float> Iota(int n, float start) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = start + static_cast<float>(i) * 0.5f;
  return v;
}

// Stream items that block until the test opens the gate. Opened when
// destroyed, so that a failing test does not leave a device's Stop() (which
// joins its stream workers) waiting for ever; declare gates after devices.
class Gate {
 public:
  Gate() : state_(std::make_shared<State>()) {}
  ~Gate() { Open(); }
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  void Open() {
    absl::MutexLock lock(&state_->mu);
    state_->open = true;
  }

  // Work that notifies `started` (if any), then waits for Open(). Holds the
  // gate's state, so it may outlive the Gate.
  StreamWork Blocker(absl::Notification* started = nullptr) {
    return [state = state_, started] {
      if (started != nullptr) started->Notify();
      absl::MutexLock lock(&state->mu);
      state->mu.Await(absl::Condition(&state->open));
      return absl::OkStatus();
    };
  }

 private:
  struct State {
    absl::Mutex mu;
    bool open ABSL_GUARDED_BY(mu) = false;
  };
  std::shared_ptr<State> state_;
};

// A parameter value that parses back to exactly `v`.
std::string Decimal(double v) { return absl::StrFormat("%.17g", v); }

// Waits, bounded, until `done` holds: for device state that has no event
// (such as an engine being held), polled every 100 µs.
bool PollUntil(const std::function<bool()>& done,
               absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Microseconds(100));
  }
  return true;
}

class DeviceConformanceTest
    : public ::testing::TestWithParam<ConformanceConfig> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(GetParam().known)
        << "device type '" << GetParam().config.type
        << "' is registered but the conformance suite has no configuration "
           "for it: add one in ConformanceConfigs()";
  }

  // A device of the parameter's configuration, with `params` overriding
  // its parameters; created by name through the global registry.
  std::unique_ptr<DeviceManager> NewDevice(
      int id, const std::map<std::string, std::string>& params = {}) {
    DeviceConfig config = GetParam().config;
    for (const auto& [key, value] : params) config.params[key] = value;
    absl::StatusOr<std::unique_ptr<DeviceManager>> device =
        DeviceRegistry::Global().Create(id, config);
    EXPECT_TRUE(device.ok()) << device.status();
    return device.ok() ? *std::move(device) : nullptr;
  }

  std::shared_ptr<const CompiledFunction> Compile(DeviceManager& device,
                                                  int64_t n) {
    auto compiled = device.backend().Compile(ReluGraph(n));
    EXPECT_TRUE(compiled.ok()) << compiled.status();
    return compiled.ok() ? *compiled : nullptr;
  }

  std::unique_ptr<LoadedFunction> LoadRelu(DeviceManager& device, int64_t n) {
    std::shared_ptr<const CompiledFunction> compiled = Compile(device, n);
    if (compiled == nullptr) return nullptr;
    auto loaded = device.Load(compiled);
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    return loaded.ok() ? *std::move(loaded) : nullptr;
  }
};

// --- Registry and guard -----------------------------------------------------

TEST(DeviceConformanceSetupTest, EveryRegisteredTypeHasAConfiguration) {
  std::vector<ConformanceConfig> configs = ConformanceConfigs();
  for (const std::string& type : DeviceRegistry::Global().Types()) {
    bool covered = false;
    for (const ConformanceConfig& c : configs) {
      covered |= c.known && c.config.type == type;
    }
    EXPECT_TRUE(covered) << "no conformance configuration for '" << type
                         << "'";
  }
}

TEST_P(DeviceConformanceTest, RegistryCreatesTheTypeByName) {
  const std::string& type = GetParam().config.type;
  EXPECT_TRUE(DeviceRegistry::Global().IsRegistered(type));
  std::vector<std::string> types = DeviceRegistry::Global().Types();
  EXPECT_TRUE(std::is_sorted(types.begin(), types.end()));
  EXPECT_NE(std::find(types.begin(), types.end(), type), types.end());

  auto devices = DeviceRegistry::Global().CreateAll(
      {GetParam().config, GetParam().config});
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 2u);
  for (int i = 0; i < 2; ++i) {
    DeviceManager& d = *(*devices)[i];
    EXPECT_EQ(d.id(), i);
    DeviceInfo info = d.GetDeviceInfo();
    EXPECT_EQ(info.id, i);
    // The kind placement targets: the registered type, except that a fault
    // wrapper reports the type it wraps (so drills mix with real devices).
    EXPECT_EQ(info.type,
              type == FaultInjectingDevice::kTypeName ? "sim" : type);
    EXPECT_FALSE(info.name.empty());
    EXPECT_EQ(info.memory_bytes, kMemoryBytes);
    EXPECT_EQ(info.available_memory_bytes, kMemoryBytes);
    EXPECT_EQ(d.AvailableMemory(), kMemoryBytes);
  }

  DeviceConfig unknown = GetParam().config;
  unknown.type = "no_such_device_type";
  EXPECT_EQ(DeviceRegistry::Global().Create(0, unknown).status().code(),
            absl::StatusCode::kNotFound);
  // CreateAll fails as a whole on one unknown type.
  EXPECT_EQ(DeviceRegistry::Global()
                .CreateAll({GetParam().config, unknown})
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

TEST_P(DeviceConformanceTest, RegistryErrors) {
  DeviceRegistry registry;  // Not the global one: this test registers.
  auto factory = [](int id, const DeviceConfig& config) {
    return DeviceRegistry::Global().Create(id, config);
  };
  EXPECT_EQ(registry.Register("", factory).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(registry.Types().empty());
  ASSERT_TRUE(registry.Register("mine", factory).ok());
  EXPECT_EQ(registry.Register("mine", factory).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.Types(), std::vector<std::string>{"mine"});
  // The global registry refuses a second registration of this type too.
  EXPECT_EQ(DeviceRegistry::Global()
                .Register(GetParam().config.type, factory)
                .code(),
            absl::StatusCode::kAlreadyExists);
  DeviceConfig config = GetParam().config;  // Not registered in `registry`.
  EXPECT_EQ(registry.Create(0, config).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(DeviceConformanceTest, AProgramCanRegisterItsOwnType) {
  // A program embedding Glint wraps this device type as its own "custom"
  // type; a glintd-style configuration then names it.
  DeviceRegistry registry;
  const DeviceConfig inner = GetParam().config;
  ASSERT_TRUE(registry
                  .Register("custom",
                            [inner](int id, const DeviceConfig& config)
                                -> absl::StatusOr<
                                    std::unique_ptr<DeviceManager>> {
                              DeviceConfig c = inner;
                              c.name = config.name;
                              c.memory_bytes = config.memory_bytes;
                              return DeviceRegistry::Global().Create(id, c);
                            })
                  .ok());
  DeviceConfig named;
  named.type = "custom";
  named.name = "my-accelerator";
  named.memory_bytes = 4096;
  auto devices = registry.CreateAll({named});
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 1u);
  DeviceManager& d = *(*devices)[0];
  EXPECT_EQ(d.GetDeviceInfo().name, "my-accelerator");
  EXPECT_EQ(d.GetDeviceInfo().memory_bytes, 4096u);
  auto buffer = d.Allocate(4096);
  EXPECT_TRUE(buffer.ok()) << buffer.status();
}

TEST_P(DeviceConformanceTest, DeviceCountNeverFails) {
  EXPECT_EQ(DeviceCount({}), 0);
  std::vector<DeviceManager*> none;
  EXPECT_EQ(DeviceCount(none), 0);
  auto a = NewDevice(0), b = NewDevice(1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::vector<DeviceManager*> two = {a.get(), b.get()};
  EXPECT_EQ(DeviceCount(two), 2);
}

TEST_P(DeviceConformanceTest, GuardRestoresNestedScopes) {
  auto a = NewDevice(0), b = NewDevice(1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::vector<DeviceManager*> devices = {a.get(), b.get()};
  ASSERT_EQ(DeviceGuard::Current(), nullptr);
  ASSERT_EQ(DeviceGuard::CurrentIndex(), -1);
  {
    auto outer = DeviceGuard::Create(devices, 0);
    ASSERT_TRUE(outer.ok()) << outer.status();
    EXPECT_EQ(DeviceGuard::Current(), a.get());
    EXPECT_EQ(DeviceGuard::CurrentIndex(), 0);
    {
      auto inner = DeviceGuard::Create(devices, 1);
      ASSERT_TRUE(inner.ok());
      EXPECT_EQ(DeviceGuard::Current(), b.get());
      EXPECT_EQ(DeviceGuard::CurrentIndex(), 1);
      {
        auto same = DeviceGuard::Create(devices, 1);  // Re-entering is fine.
        ASSERT_TRUE(same.ok());
        EXPECT_EQ(DeviceGuard::Current(), b.get());
      }
      EXPECT_EQ(DeviceGuard::Current(), b.get());
    }
    EXPECT_EQ(DeviceGuard::Current(), a.get());
    EXPECT_EQ(DeviceGuard::CurrentIndex(), 0);
    // The current device is per thread.
    DeviceManager* seen = a.get();
    std::thread([&seen] { seen = DeviceGuard::Current(); }).join();
    EXPECT_EQ(seen, nullptr);
  }
  EXPECT_EQ(DeviceGuard::Current(), nullptr);
  EXPECT_EQ(DeviceGuard::CurrentIndex(), -1);
}

TEST_P(DeviceConformanceTest, GuardRestoresOnEarlyReturnAndWhenMoved) {
  auto a = NewDevice(0), b = NewDevice(1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::vector<DeviceManager*> devices = {a.get(), b.get()};
  auto outer = DeviceGuard::Create(devices, 0);
  ASSERT_TRUE(outer.ok());

  // Early return from inside a loop and a nested scope.
  auto find = [&](int stop_at) -> int {
    for (int i = 0; i < 10; ++i) {
      auto g = DeviceGuard::Create(devices, 1);
      if (!g.ok()) return -2;
      if (i == stop_at) return DeviceGuard::CurrentIndex();
    }
    return -3;
  };
  EXPECT_EQ(find(3), 1);
  EXPECT_EQ(DeviceGuard::Current(), a.get());

  // A moved guard restores once, when the guard it moved into goes.
  {
    absl::StatusOr<DeviceGuard> made = DeviceGuard::Create(devices, 1);
    ASSERT_TRUE(made.ok());
    {
      DeviceGuard moved(std::move(*made));
      made = absl::CancelledError("drop the moved-from guard");
      EXPECT_EQ(DeviceGuard::Current(), b.get());  // It restored nothing.
      DeviceGuard moved_again(std::move(moved));
      EXPECT_EQ(DeviceGuard::Current(), b.get());
    }
    EXPECT_EQ(DeviceGuard::Current(), a.get());
  }
  EXPECT_EQ(DeviceGuard::CurrentIndex(), 0);
}

TEST_P(DeviceConformanceTest, GuardRefusesAnInvalidIndexAndChangesNothing) {
  auto a = NewDevice(0), b = NewDevice(1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::vector<DeviceManager*> devices = {a.get(), b.get()};
  auto guard = DeviceGuard::Create(devices, 1);
  ASSERT_TRUE(guard.ok());
  for (int bad : {-1, 2, 1000}) {
    EXPECT_EQ(DeviceGuard::Create(devices, bad).status().code(),
              absl::StatusCode::kOutOfRange)
        << bad;
    EXPECT_EQ(DeviceGuard::Current(), b.get());
    EXPECT_EQ(DeviceGuard::CurrentIndex(), 1);
  }
  EXPECT_EQ(DeviceGuard::Create({}, 0).status().code(),
            absl::StatusCode::kOutOfRange);
  std::vector<DeviceManager*> with_hole = {a.get(), nullptr};
  EXPECT_EQ(DeviceGuard::Create(with_hole, 1).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(DeviceGuard::Current(), b.get());
}

// --- Memory and copies ------------------------------------------------------

TEST_P(DeviceConformanceTest, MemoryFillsToTheLastByte) {
  auto device = NewDevice(0);
  ASSERT_NE(device, nullptr);
  const uint64_t cap = device->GetDeviceInfo().memory_bytes;
  ASSERT_EQ(device->AvailableMemory(), cap);
  EXPECT_EQ(device->Allocate(cap + 1).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(device->AvailableMemory(), cap);

  const uint64_t half = cap / 2, quarter = cap / 4;
  auto a = device->Allocate(half);
  auto b = device->Allocate(quarter);
  auto c = device->Allocate(cap - half - quarter);  // To the last byte.
  ASSERT_TRUE(a.ok() && b.ok() && c.ok())
      << a.status() << b.status() << c.status();
  EXPECT_EQ(device->AvailableMemory(), 0u);
  EXPECT_EQ(device->GetDeviceInfo().available_memory_bytes, 0u);
  EXPECT_EQ(device->Allocate(1).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ((*c)->size(), cap - half - quarter);

  b->reset();  // Free; the same amount fits again, one more byte does not.
  EXPECT_EQ(device->AvailableMemory(), quarter);
  EXPECT_EQ(device->Allocate(quarter + 1).status().code(),
            absl::StatusCode::kResourceExhausted);
  auto again = device->Allocate(quarter);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(device->Allocate(1).status().code(),
            absl::StatusCode::kResourceExhausted);

  a->reset();
  c->reset();
  again->reset();
  EXPECT_EQ(device->AvailableMemory(), cap);
  auto all = device->Allocate(cap);
  EXPECT_TRUE(all.ok()) << all.status();
}

// Launch reservations overlap (launches run one at a time): the largest
// alive counts as used, each goes back when destroyed, and one that does
// not fit beside the allocations is RESOURCE_EXHAUSTED.
TEST_P(DeviceConformanceTest, LaunchReservationsCountTheLargestAlive) {
  auto device = NewDevice(0);
  ASSERT_NE(device, nullptr);
  const uint64_t cap = device->GetDeviceInfo().memory_bytes;
  auto big = device->ReserveLaunchMemory(cap / 4);
  auto small = device->ReserveLaunchMemory(cap / 8);
  ASSERT_TRUE(big.ok() && small.ok()) << big.status() << small.status();
  EXPECT_EQ((*big)->bytes(), cap / 4);
  EXPECT_EQ(device->AvailableMemory(), cap - cap / 4);
  EXPECT_EQ(device->GetDeviceInfo().launch_reserved_bytes, cap / 4);
  auto rest = device->Allocate(cap - cap / 4);
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(device->ReserveLaunchMemory(cap / 4 + 1).status().code(),
            absl::StatusCode::kResourceExhausted);
  auto same = device->ReserveLaunchMemory(cap / 4);  // Within the largest.
  ASSERT_TRUE(same.ok()) << same.status();
  rest->reset();
  big->reset();
  same->reset();
  EXPECT_EQ(device->AvailableMemory(), cap - cap / 8);
  small->reset();
  EXPECT_EQ(device->AvailableMemory(), cap);
  EXPECT_EQ(device->GetDeviceInfo().launch_reserved_bytes, 0u);
}

TEST_P(DeviceConformanceTest, HostAccessToDeviceMemoryIsCaught) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // Devices run threads.
  auto device = NewDevice(0);
  ASSERT_NE(device, nullptr);
  auto buffer = device->Allocate(4096);
  ASSERT_TRUE(buffer.ok());
  const void* address = (*buffer)->device_address();
  ASSERT_NE(address, nullptr);
  EXPECT_DEATH(
      {
        // A component reading device memory instead of copying it.
        volatile const char* p = static_cast<volatile const char*>(address);
        volatile char c = *p;
        (void)c;
      },
      "");
}

TEST_P(DeviceConformanceTest, CopiesAreEnqueuedOnTheStream) {
  auto device = NewDevice(0);
  ASSERT_NE(device, nullptr);
  Tensor x = HostTensor({1, 2, 3});
  DeviceTensor dx;
  Tensor back;
  Gate gate;
  Stream* s = *device->AcquireStream();
  StreamInternal::Enqueue(*s, gate.Blocker());
  device->CopyToDevice(*s, &x, &dx);
  device->CopyToHost(*s, &dx, &back);
  // Nothing moved yet: data moves only when the stream runs the copies.
  EXPECT_EQ(dx.buffer, nullptr);
  EXPECT_EQ(back.raw_data(), nullptr);
  EXPECT_EQ(device->AvailableMemory(), kMemoryBytes);
  EXPECT_FALSE(s->Query());
  gate.Open();
  ASSERT_TRUE(s->Synchronize().ok());
  EXPECT_EQ(Values(back), std::vector<float>({1, 2, 3}));
  EXPECT_EQ(device->AvailableMemory(), kMemoryBytes - 12);
  device->ReleaseStream(s);
}

TEST_P(DeviceConformanceTest, CopiesAndLaunchesRunInOrderOnOneStream) {
  auto a = NewDevice(0), b = NewDevice(1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  constexpr int kN = 64;
  std::unique_ptr<LoadedFunction> relu = LoadRelu(*a, kN);
  ASSERT_NE(relu, nullptr);
  const std::vector<float> x1 = Iota(kN, -10), x2 = Iota(kN, 3);
  Tensor h1 = HostTensor(x1), h2 = HostTensor(x2);
  DeviceTensor dx, dy1, dy2, peer;
  Tensor y1, y2, x_after, from_peer;
  Stream* s = *a->AcquireStream();
  // H2D x1, launch, D2H; then overwrite the same buffer with x2 and do it
  // again: any reordering shows in the results.
  a->CopyToDevice(*s, &h1, &dx);
  a->Launch(*s, *relu, {&dx}, {&dy1});
  a->CopyToHost(*s, &dy1, &y1);
  a->CopyToDevice(*s, &h2, &dx);
  a->Launch(*s, *relu, {&dx}, {&dy2});
  a->CopyToHost(*s, &dy2, &y2);
  a->CopyToHost(*s, &dx, &x_after);
  Event done;
  s->Record(done);
  // Device → device: b pulls dy2 once a has produced it.
  Stream* t = *b->AcquireStream();
  t->Wait(done);
  b->CopyFromPeer(*t, &dy2, &peer);
  b->CopyToHost(*t, &peer, &from_peer);
  ASSERT_TRUE(s->Synchronize().ok());
  ASSERT_TRUE(t->Synchronize().ok());
  EXPECT_EQ(Values(y1), ReluExpected(x1));
  EXPECT_EQ(Values(y2), ReluExpected(x2));
  EXPECT_EQ(Values(x_after), x2);
  EXPECT_EQ(Values(from_peer), ReluExpected(x2));
  ASSERT_NE(peer.buffer, nullptr);
  EXPECT_EQ(peer.buffer->device_id(), b->id());
  EXPECT_EQ(b->AvailableMemory(), kMemoryBytes - kN * sizeof(float));
  a->ReleaseStream(s);
  b->ReleaseStream(t);
}

// --- Streams and events -----------------------------------------------------

TEST_P(DeviceConformanceTest, DefaultNewAndPooledStreams) {
  auto device = NewDevice(3);
  ASSERT_NE(device, nullptr);
  Stream& def = device->default_stream();
  EXPECT_EQ(&def, &device->default_stream());
  EXPECT_EQ(def.device_id(), 3);
  EXPECT_EQ(def.priority(), DeviceManager::kDefaultStreamPriority);
  EXPECT_TRUE(def.Query());

  for (int priority : {-2, 0, 7}) {
    auto s = device->CreateStream(priority);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ((*s)->priority(), priority);
    EXPECT_EQ((*s)->device_id(), 3);
    EXPECT_NE(s->get(), &def);
    EXPECT_TRUE((*s)->Synchronize().ok());
  }

  // The pool: distinct streams while held, reused once released.
  auto p1 = device->AcquireStream(), p2 = device->AcquireStream();
  ASSERT_TRUE(p1.ok() && p2.ok());
  EXPECT_NE(*p1, *p2);
  EXPECT_NE(*p1, &def);
  EXPECT_EQ((*p1)->priority(), DeviceManager::kDefaultStreamPriority);
  EXPECT_EQ((*p1)->device_id(), 3);
  device->ReleaseStream(*p1);
  device->ReleaseStream(*p2);
  auto p3 = device->AcquireStream(), p4 = device->AcquireStream();
  ASSERT_TRUE(p3.ok() && p4.ok());
  EXPECT_TRUE((*p3 == *p1 && *p4 == *p2) || (*p3 == *p2 && *p4 == *p1));
  Tensor x = HostTensor({5});
  DeviceTensor dx;
  Tensor back;
  device->CopyToDevice(**p3, &x, &dx);
  device->CopyToHost(**p3, &dx, &back);
  ASSERT_TRUE((*p3)->Synchronize().ok());
  EXPECT_EQ(Values(back), std::vector<float>{5});
  device->ReleaseStream(*p3);
  device->ReleaseStream(*p4);
}

TEST_P(DeviceConformanceTest, StreamRunsItemsStrictlyInOrder) {
  auto device = NewDevice(0);
  ASSERT_NE(device, nullptr);
  auto s = device->CreateStream(0);
  ASSERT_TRUE(s.ok());
  std::vector<int> order;  // Touched only by the stream's items.
  for (int i = 0; i < 200; ++i) {
    StreamInternal::Enqueue(**s, [&order, i] {
      order.push_back(i);
      return absl::OkStatus();
    });
  }
  ASSERT_TRUE((*s)->Synchronize().ok());
  ASSERT_EQ(order.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(order[i], i);
}

TEST_P(DeviceConformanceTest, QueryIsFalseWhileAnItemRuns) {
  auto device = NewDevice(0);
  ASSERT_NE(device, nullptr);
  Gate gate;
  absl::Notification started;
  Stream& s = device->default_stream();
  EXPECT_TRUE(s.Query());
  StreamInternal::Enqueue(s, gate.Blocker(&started));
  started.WaitForNotification();
  // The queue is empty, but the item has not finished.
  EXPECT_FALSE(s.Query());
  gate.Open();
  ASSERT_TRUE(s.Synchronize().ok());
  EXPECT_TRUE(s.Query());
}

TEST_P(DeviceConformanceTest, SynchronizeBlocksUntilEverythingIsDone) {
  auto device = NewDevice(0);
  ASSERT_NE(device, nullptr);
  Gate gate;
  std::atomic<bool> finished{false};
  Stream* s = *device->AcquireStream();
  StreamInternal::Enqueue(*s, gate.Blocker());
  StreamInternal::Enqueue(*s, [&finished] {
    finished = true;
    return absl::OkStatus();
  });
  // Still blocked: Synchronize waits (here up to its deadline).
  EXPECT_EQ(s->Synchronize(absl::Now() + absl::Milliseconds(20)).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(finished);
  std::thread opener([&gate] { gate.Open(); });
  EXPECT_TRUE(s->Synchronize().ok());
  EXPECT_TRUE(finished);  // Synchronize returned only after the last item.
  EXPECT_TRUE(s->Query());
  opener.join();
  device->ReleaseStream(s);
}

TEST_P(DeviceConformanceTest, RecordCapturesTheWorkEnqueuedSoFar) {
  auto device = NewDevice(0);
  ASSERT_NE(device, nullptr);
  Gate first, second;
  Stream* s = *device->AcquireStream();
  Event e;
  EXPECT_TRUE(e.Query());  // Never recorded.
  EXPECT_TRUE(e.Synchronize().ok());
  StreamInternal::Enqueue(*s, first.Blocker());
  s->Record(e);
  // After the record: not part of it.
  StreamInternal::Enqueue(*s, second.Blocker());
  EXPECT_FALSE(e.Query());
  EXPECT_EQ(e.Synchronize(absl::Now() + absl::Milliseconds(10)).code(),
            absl::StatusCode::kDeadlineExceeded);
  first.Open();
  EXPECT_TRUE(e.Synchronize().ok());  // Though `second` is still closed.
  EXPECT_TRUE(e.Query());
  EXPECT_FALSE(s->Query());
  second.Open();
  EXPECT_TRUE(s->Synchronize().ok());
  device->ReleaseStream(s);
}

TEST_P(DeviceConformanceTest, ReRecordingMakesANewVersionAndWaitsKeepTheirs) {
  auto device = NewDevice(0);
  ASSERT_NE(device, nullptr);
  Gate gate;
  Stream* a = *device->AcquireStream();
  Stream* b = *device->AcquireStream();
  Stream* c = *device->AcquireStream();
  Event e;
  a->Record(e);  // Version 1: nothing before it.
  ASSERT_TRUE(e.Synchronize().ok());
  c->Wait(e);  // Captures version 1.
  StreamInternal::Enqueue(*b, gate.Blocker());
  b->Record(e);  // Version 2: blocked until the gate opens.
  EXPECT_FALSE(e.Query());
  bool ran = false;
  StreamInternal::Enqueue(*c, [&ran] {
    ran = true;
    return absl::OkStatus();
  });
  // Would never finish if c's wait had moved to version 2.
  EXPECT_TRUE(c->Synchronize().ok());
  EXPECT_TRUE(ran);
  EXPECT_FALSE(e.Query());
  // A wait made now takes version 2.
  c->Wait(e);
  EXPECT_FALSE(c->Query());
  gate.Open();
  EXPECT_TRUE(c->Synchronize().ok());
  EXPECT_TRUE(e.Query());
  for (Stream* s : {a, b, c}) device->ReleaseStream(s);
}

TEST_P(DeviceConformanceTest, WaitOnANeverRecordedEventIsANoOp) {
  auto device = NewDevice(0);
  ASSERT_NE(device, nullptr);
  Stream* s = *device->AcquireStream();
  Event never;
  s->Wait(never);
  EXPECT_TRUE(s->Query());  // Nothing was enqueued.
  bool ran = false;
  StreamInternal::Enqueue(*s, [&ran] {
    ran = true;
    return absl::OkStatus();
  });
  EXPECT_TRUE(s->Synchronize().ok());
  EXPECT_TRUE(ran);
  EXPECT_TRUE(never.Query());
  device->ReleaseStream(s);
}

TEST_P(DeviceConformanceTest, WaitNeverBlocksTheHost) {
  auto a = NewDevice(0), b = NewDevice(1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  Gate gate;
  Stream* sa = *a->AcquireStream();
  Stream* sb = *b->AcquireStream();
  StreamInternal::Enqueue(*sa, gate.Blocker());
  Event e;
  sa->Record(e);
  // If either Wait blocked, this test would never reach Open().
  sb->Wait(e);
  sa->Wait(e);  // Even on the recording stream itself.
  EXPECT_FALSE(e.Query());
  EXPECT_FALSE(sb->Query());
  gate.Open();
  EXPECT_TRUE(sb->Synchronize().ok());
  EXPECT_TRUE(sa->Synchronize().ok());
  a->ReleaseStream(sa);
  b->ReleaseStream(sb);
}

TEST_P(DeviceConformanceTest, CrossDeviceWaitOrdersWork) {
  auto a = NewDevice(0), b = NewDevice(1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  Gate gate;
  std::atomic<int> produced{0};
  int seen = -1;
  Tensor x = HostTensor({4, 5, 6});
  DeviceTensor on_a, on_b;
  Tensor back;
  Stream* sa = *a->AcquireStream();
  Stream* sb = *b->AcquireStream();
  StreamInternal::Enqueue(*sa, gate.Blocker());
  a->CopyToDevice(*sa, &x, &on_a);
  StreamInternal::Enqueue(*sa, [&produced] {
    produced = 42;
    return absl::OkStatus();
  });
  Event e;
  sa->Record(e);
  sb->Wait(e);
  StreamInternal::Enqueue(*sb, [&] {
    seen = produced.load();
    return absl::OkStatus();
  });
  b->CopyFromPeer(*sb, &on_a, &on_b);
  b->CopyToHost(*sb, &on_b, &back);
  // b has nothing to run until a gets there.
  EXPECT_EQ(sb->Synchronize(absl::Now() + absl::Milliseconds(10)).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(on_b.buffer, nullptr);
  gate.Open();
  ASSERT_TRUE(sb->Synchronize().ok());
  EXPECT_EQ(seen, 42);
  EXPECT_EQ(Values(back), std::vector<float>({4, 5, 6}));
  EXPECT_TRUE(e.Query());
  a->ReleaseStream(sa);
  b->ReleaseStream(sb);
}

TEST_P(DeviceConformanceTest, ElapsedTimeErrorsAndMeasurement) {
  auto a = NewDevice(0), b = NewDevice(1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const EventOptions timed{.enable_timing = true};
  auto elapsed_code = [](const Event& x, const Event& y) {
    return Event::ElapsedMillis(x, y).status().code();
  };
  Stream* sa = *a->AcquireStream();
  Stream* sb = *b->AcquireStream();

  Event untimed, start(timed), end(timed);
  sa->Record(untimed);
  sa->Record(start);
  ASSERT_TRUE(sa->Synchronize().ok());
  // Not timing-enabled (either side).
  EXPECT_EQ(elapsed_code(untimed, start), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(elapsed_code(start, untimed), absl::StatusCode::kFailedPrecondition);
  // Not recorded.
  EXPECT_EQ(elapsed_code(start, end), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(elapsed_code(end, start), absl::StatusCode::kFailedPrecondition);
  // Recorded but not complete.
  {
    Gate gate;
    StreamInternal::Enqueue(*sa, gate.Blocker());
    sa->Record(end);
    EXPECT_EQ(elapsed_code(start, end), absl::StatusCode::kFailedPrecondition);
    gate.Open();
    ASSERT_TRUE(sa->Synchronize().ok());
  }
  // Different devices.
  Event on_b(timed);
  sb->Record(on_b);
  ASSERT_TRUE(sb->Synchronize().ok());
  EXPECT_EQ(elapsed_code(start, on_b), absl::StatusCode::kFailedPrecondition);

  // Positive: an item that takes 5 ms (simulated work, not synchronisation)
  // between two records.
  sa->Record(start);
  StreamInternal::Enqueue(*sa, [] {
    absl::SleepFor(absl::Milliseconds(5));
    return absl::OkStatus();
  });
  sa->Record(end);
  ASSERT_TRUE(end.Synchronize().ok());
  absl::StatusOr<double> ms = Event::ElapsedMillis(start, end);
  ASSERT_TRUE(ms.ok()) << ms.status();
  EXPECT_GE(*ms, 5.0);
  EXPECT_LT(*ms, 5000.0);
  absl::StatusOr<double> back = Event::ElapsedMillis(end, start);
  ASSERT_TRUE(back.ok());
  EXPECT_DOUBLE_EQ(*back, -*ms);
  a->ReleaseStream(sa);
  b->ReleaseStream(sb);
}

TEST_P(DeviceConformanceTest, ErrorsAreStickyAndTravelAcrossDevices) {
  auto a = NewDevice(0), b = NewDevice(1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  Stream* sa = *a->AcquireStream();
  Stream* sb = *b->AcquireStream();
  Stream* healthy = *a->AcquireStream();
  std::atomic<int> ran_after{0};
  auto count = [&ran_after] {
    ++ran_after;
    return absl::OkStatus();
  };
  // A real failure: copying out of a tensor that has no buffer.
  DeviceTensor empty;
  Tensor out, x = HostTensor({1, 2}), out_b;
  DeviceTensor dx, on_b;
  a->CopyToHost(*sa, &empty, &out);
  StreamInternal::Enqueue(*sa, count);  // Skipped.
  a->CopyToDevice(*sa, &x, &dx);        // Skipped.
  Event e;
  sa->Record(e);  // Carries the error.
  sb->Wait(e);
  StreamInternal::Enqueue(*sb, count);  // Skipped: b's stream fails too.
  b->CopyFromPeer(*sb, &dx, &on_b);     // Skipped.
  b->CopyToHost(*sb, &on_b, &out_b);    // Skipped.

  const absl::Status sa_status = sa->Synchronize();
  EXPECT_EQ(sa_status.code(), absl::StatusCode::kInternal) << sa_status;
  EXPECT_EQ(e.Synchronize(), sa_status);
  EXPECT_TRUE(e.Query());
  EXPECT_EQ(sb->Synchronize(), sa_status);
  EXPECT_EQ(sb->status(), sa_status);
  EXPECT_EQ(ran_after, 0);
  EXPECT_EQ(dx.buffer, nullptr);
  EXPECT_EQ(on_b.buffer, nullptr);
  // Later items are skipped too, until the owner clears the error.
  StreamInternal::Enqueue(*sa, count);
  EXPECT_EQ(sa->Synchronize(), sa_status);
  EXPECT_EQ(ran_after, 0);

  // Errors are per stream: another stream of the failed device is fine.
  StreamInternal::Enqueue(*healthy, count);
  EXPECT_TRUE(healthy->Synchronize().ok());
  EXPECT_EQ(ran_after, 1);

  // An error raised by a stream item travels the same way.
  ASSERT_TRUE(sa->ClearError().ok());
  ASSERT_TRUE(sb->ClearError().ok());
  EXPECT_TRUE(sa->status().ok());
  StreamInternal::Enqueue(*sa, [] { return absl::DataLossError("boom"); });
  sa->Record(e);
  sb->Wait(e);
  StreamInternal::Enqueue(*sb, count);
  EXPECT_EQ(sb->Synchronize().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ran_after, 1);

  // Cleared, both work again. sb finishing says sa's event completed, not
  // that sa is idle, and ClearError wants an idle stream: wait for it.
  EXPECT_EQ(sa->Synchronize().code(), absl::StatusCode::kDataLoss);
  ASSERT_TRUE(sa->ClearError().ok());
  ASSERT_TRUE(sb->ClearError().ok());
  a->CopyToDevice(*sa, &x, &dx);
  sa->Record(e);
  sb->Wait(e);
  b->CopyFromPeer(*sb, &dx, &on_b);
  b->CopyToHost(*sb, &on_b, &out_b);
  EXPECT_TRUE(sb->Synchronize().ok());
  EXPECT_EQ(Values(out_b), std::vector<float>({1, 2}));
  for (Stream* s : {sa, healthy}) a->ReleaseStream(s);
  b->ReleaseStream(sb);
}

// Views of the shared stream (OpenSharedStream) are what runs use: their
// work is interleaved on the device, but each keeps its own errors.
TEST_P(DeviceConformanceTest, SharedStreamViewsKeepTheirErrorsApart) {
  auto a = NewDevice(0), b = NewDevice(1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  constexpr int kN = 8;
  std::unique_ptr<LoadedFunction> relu = LoadRelu(*a, kN);
  ASSERT_NE(relu, nullptr);
  auto failing = a->OpenSharedStream({}), healthy = a->OpenSharedStream({});
  auto waits_failing = b->OpenSharedStream({});
  auto waits_healthy = b->OpenSharedStream({});
  ASSERT_TRUE(failing.ok() && healthy.ok() && waits_failing.ok() &&
              waits_healthy.ok());
  EXPECT_NE(failing->get(), healthy->get());
  EXPECT_EQ((*failing)->device_id(), 0);
  EXPECT_EQ((*failing)->priority(), DeviceManager::kDefaultStreamPriority);
  const std::vector<float> xf = Iota(kN, -3), xh = Iota(kN, -1);
  Tensor hf = HostTensor(xf), hh = HostTensor(xh), yf, yh, from_b, out;
  DeviceTensor dxf, dyf, dxh, dyh, empty, on_b_f, on_b_h;
  // Interleaved: the failing view's first item fails.
  a->CopyToHost(**failing, &empty, &out);  // A real failure: no buffer.
  a->CopyToDevice(**healthy, &hh, &dxh);
  a->CopyToDevice(**failing, &hf, &dxf);            // Skipped.
  a->Launch(**healthy, *relu, {&dxh}, {&dyh});
  a->Launch(**failing, *relu, {&dxf}, {&dyf});      // Skipped.
  a->CopyToHost(**failing, &dyf, &yf);              // Skipped.
  a->CopyToHost(**healthy, &dyh, &yh);
  Event failed_done, healthy_done;
  (*failing)->Record(failed_done);
  (*healthy)->Record(healthy_done);
  (*waits_failing)->Wait(failed_done);
  b->CopyFromPeer(**waits_failing, &dyf, &on_b_f);  // Skipped.
  (*waits_healthy)->Wait(healthy_done);
  b->CopyFromPeer(**waits_healthy, &dyh, &on_b_h);
  b->CopyToHost(**waits_healthy, &on_b_h, &from_b);

  const absl::Status failure = (*failing)->Synchronize();
  EXPECT_EQ(failure.code(), absl::StatusCode::kInternal) << failure;
  ASSERT_TRUE((*healthy)->Synchronize().ok());
  EXPECT_EQ(Values(yh), ReluExpected(xh));
  EXPECT_EQ(dxf.buffer, nullptr);
  EXPECT_EQ(dyf.buffer, nullptr);
  EXPECT_EQ(yf.raw_data(), nullptr);
  EXPECT_EQ(failed_done.Synchronize(), failure);
  EXPECT_TRUE(healthy_done.Synchronize().ok());
  // On the other device the error reaches the view that waited on it only.
  EXPECT_EQ((*waits_failing)->Synchronize(), failure);
  EXPECT_EQ(on_b_f.buffer, nullptr);
  ASSERT_TRUE((*waits_healthy)->Synchronize().ok());
  EXPECT_EQ(Values(from_b), ReluExpected(xh));
  EXPECT_TRUE((*healthy)->status().ok());
  EXPECT_TRUE((*waits_healthy)->status().ok());

  // Its owner clears the failed view, which then works again.
  ASSERT_TRUE((*failing)->ClearError().ok());
  a->CopyToDevice(**failing, &hf, &dxf);
  a->Launch(**failing, *relu, {&dxf}, {&dyf});
  a->CopyToHost(**failing, &dyf, &yf);
  ASSERT_TRUE((*failing)->Synchronize().ok());
  EXPECT_EQ(Values(yf), ReluExpected(xf));
}

TEST_P(DeviceConformanceTest, ASharedViewsWorkCheckStopsOnlyItsWork) {
  auto device = NewDevice(0);
  ASSERT_NE(device, nullptr);
  constexpr int kN = 4;
  std::unique_ptr<LoadedFunction> relu = LoadRelu(*device, kN);
  ASSERT_NE(relu, nullptr);
  SharedStreamOptions unwanted;
  unwanted.work_check = [] { return absl::CancelledError("not wanted"); };
  auto refused = device->OpenSharedStream(unwanted);
  auto refused_launch = device->OpenSharedStream(unwanted);
  auto wanted = device->OpenSharedStream({});
  ASSERT_TRUE(refused.ok() && refused_launch.ok() && wanted.ok());
  const std::vector<float> xs = Iota(kN, -1);
  Tensor x = HostTensor(xs), y_refused, y_wanted;
  DeviceTensor dx, dy_refused, dy_wanted;
  device->CopyToDevice(**wanted, &x, &dx);
  Event copied;
  (*wanted)->Record(copied);
  // A refused copy moves no bytes: the caller's memory keeps its values.
  Tensor untouched = HostTensor(std::vector<float>(kN, 42.0f));
  Tensor copied_back;
  (*refused)->Wait(copied);
  device->CopyToHostInto(**refused, &dx, untouched, &copied_back);
  // A refused launch never computes.
  (*refused_launch)->Wait(copied);
  device->Launch(**refused_launch, *relu, {&dx}, {&dy_refused});
  device->CopyToHost(**refused_launch, &dy_refused, &y_refused);
  device->Launch(**wanted, *relu, {&dx}, {&dy_wanted});
  device->CopyToHost(**wanted, &dy_wanted, &y_wanted);
  EXPECT_EQ((*refused)->Synchronize().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ((*refused_launch)->Synchronize().code(),
            absl::StatusCode::kCancelled);
  ASSERT_TRUE((*wanted)->Synchronize().ok());
  EXPECT_EQ(Values(untouched), std::vector<float>(kN, 42.0f));
  EXPECT_EQ(dy_refused.buffer, nullptr);  // It never computed.
  EXPECT_EQ(y_refused.raw_data(), nullptr);
  EXPECT_EQ(Values(y_wanted), ReluExpected(xs));
}

TEST_P(DeviceConformanceTest, ClearErrorRefusesWhileWorkIsPending) {
  auto device = NewDevice(0);
  ASSERT_NE(device, nullptr);
  Gate gate;
  Stream* s = *device->AcquireStream();
  StreamInternal::Enqueue(*s, [] { return absl::AbortedError("first"); });
  // Skipped, but pending until it is reached.
  StreamInternal::Enqueue(*s, gate.Blocker());
  ASSERT_EQ(s->Synchronize().code(), absl::StatusCode::kAborted);
  // Everything finished: the error can be cleared.
  ASSERT_TRUE(s->ClearError().ok());
  StreamInternal::Enqueue(*s, gate.Blocker());
  EXPECT_EQ(s->ClearError().code(), absl::StatusCode::kFailedPrecondition);
  gate.Open();
  EXPECT_TRUE(s->Synchronize().ok());
  device->ReleaseStream(s);
}

TEST_P(DeviceConformanceTest, StopFailsPendingWorkAndNeverHangs) {
  auto victim = NewDevice(0), other = NewDevice(1);
  ASSERT_NE(victim, nullptr);
  ASSERT_NE(other, nullptr);
  std::unique_ptr<LoadedFunction> relu = LoadRelu(*victim, 4);
  ASSERT_NE(relu, nullptr);
  Tensor x = HostTensor({1, 2, 3, 4}), y;
  DeviceTensor dx, dy;
  Gate gate;
  // The victim's stream is blocked on another device's event, with copies
  // and a launch queued behind the wait.
  Stream* blocker = *other->AcquireStream();
  StreamInternal::Enqueue(*blocker, gate.Blocker());
  Event never_yet;
  blocker->Record(never_yet);
  auto owned = victim->CreateStream(1);
  ASSERT_TRUE(owned.ok());
  Stream* pooled = *victim->AcquireStream();
  auto view = victim->OpenSharedStream({});
  ASSERT_TRUE(view.ok());
  std::atomic<int> ran{0};
  for (Stream* s :
       {owned->get(), pooled, &victim->default_stream(), view->get()}) {
    s->Wait(never_yet);
    StreamInternal::Enqueue(*s, [&ran] {
      ++ran;
      return absl::OkStatus();
    });
  }
  victim->CopyToDevice(*pooled, &x, &dx);
  victim->Launch(*pooled, *relu, {&dx}, {&dy});
  victim->CopyToHost(*pooled, &dy, &y);
  Event after;
  pooled->Record(after);
  // A stream of the other device waits on the victim.
  Stream* waiter = *other->AcquireStream();
  waiter->Wait(after);

  victim->Stop();  // Must return although the work can never run.
  victim->Stop();  // Idempotent.
  for (Stream* s :
       {owned->get(), pooled, &victim->default_stream(), view->get()}) {
    EXPECT_EQ(s->Synchronize().code(), absl::StatusCode::kUnavailable);
    EXPECT_TRUE(s->Query());
  }
  EXPECT_EQ(after.Synchronize().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(waiter->Synchronize().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ran, 0);
  EXPECT_EQ(dx.buffer, nullptr);
  EXPECT_EQ(y.raw_data(), nullptr);

  // Later calls fail fast; waits on the stopped device return an error.
  EXPECT_EQ(victim->Allocate(8).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(victim->AcquireStream().status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(victim->CreateStream(0).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(victim->OpenSharedStream({}).status().code(),
            absl::StatusCode::kUnavailable);
  // A view opened before keeps failing fast.
  victim->CopyToDevice(**view, &x, &dx);
  EXPECT_EQ((*view)->Synchronize().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(victim->Load(Compile(*victim, 4)).status().code(),
            absl::StatusCode::kUnavailable);
  victim->CopyToDevice(*pooled, &x, &dx);
  Event later;
  pooled->Record(later);
  EXPECT_EQ(later.Synchronize().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(pooled->Synchronize().code(), absl::StatusCode::kUnavailable);
  Stream* waiter2 = *other->AcquireStream();
  waiter2->Wait(later);
  EXPECT_EQ(waiter2->Synchronize().code(), absl::StatusCode::kUnavailable);

  // The other device is unaffected.
  gate.Open();
  EXPECT_TRUE(blocker->Synchronize().ok());
  for (Stream* s : {blocker, waiter, waiter2}) {
    (void)s->ClearError();
    other->ReleaseStream(s);
  }
}

TEST_P(DeviceConformanceTest, HigherPriorityLaunchOvertakesAQueuedOne) {
  // Every launch of this device holds its compute engine for at least
  // 100 ms (by the timing model), so that one holds the engine while the
  // others queue for it.
  auto probe = NewDevice(0);
  ASSERT_NE(probe, nullptr);
  std::shared_ptr<const CompiledFunction> compiled = Compile(*probe, 4);
  ASSERT_NE(compiled, nullptr);
  ASSERT_GT(compiled->flops(), 0);
  ASSERT_GT(compiled->arena_bytes(), 0u);
  constexpr double kLaunchSeconds = 0.1;
  auto device = NewDevice(
      0, {{"compute_gflops", Decimal(compiled->flops() / kLaunchSeconds / 1e9)}});
  ASSERT_NE(device, nullptr);
  auto s0 = device->CreateStream(0);
  auto low = device->CreateStream(-1);
  auto high = device->CreateStream(1);
  ASSERT_TRUE(s0.ok() && low.ok() && high.ok());
  Tensor x = HostTensor({1, 2, 3, 4});
  DeviceTensor dx;
  device->CopyToDevice(**s0, &x, &dx);
  ASSERT_TRUE((*s0)->Synchronize().ok());

  for (int attempt = 0;; ++attempt) {
    ASSERT_LT(attempt, 3) << "the first launch never held the engine long "
                             "enough for the others to queue behind it";
    // Loaded afresh each attempt: it holds exactly one execution arena, so
    // every concurrent launch beyond the first allocates one, observably.
    auto loaded = device->Load(compiled);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    DeviceTensor y0, y_low, y_high;
    const EventOptions timed{.enable_timing = true};
    Event first_done(timed), low_done(timed), high_done(timed);
    const uint64_t idle = device->AvailableMemory();
    const uint64_t output_bytes = 4 * sizeof(float);
    // 1. The first launch takes the engine: its output is allocated while
    //    it holds it.
    device->Launch(**s0, **loaded, {&dx}, {&y0});
    (*s0)->Record(first_done);
    ASSERT_TRUE(PollUntil(
        [&] { return device->AvailableMemory() <= idle - output_bytes; }));
    // 2. A low-priority launch queues, then a high-priority one. Each
    //    allocates its execution arena just before it queues for the engine.
    const uint64_t engaged = device->AvailableMemory();
    device->Launch(**low, **loaded, {&dx}, {&y_low});
    (*low)->Record(low_done);
    ASSERT_TRUE(PollUntil([&] {
      return device->AvailableMemory() <= engaged - compiled->arena_bytes();
    }));
    device->Launch(**high, **loaded, {&dx}, {&y_high});
    (*high)->Record(high_done);
    ASSERT_TRUE(PollUntil([&] {
      return device->AvailableMemory() <=
             engaged - 2 * compiled->arena_bytes();
    }));
    // Both queue behind the first launch if it still holds the engine.
    const bool valid = !first_done.Query();
    for (auto* s : {&*s0, &*low, &*high}) {
      ASSERT_TRUE((**s).Synchronize().ok());
    }
    if (!valid) continue;  // The host was too slow to observe; try again.
    absl::StatusOr<double> first_to_high =
        Event::ElapsedMillis(first_done, high_done);
    absl::StatusOr<double> high_to_low =
        Event::ElapsedMillis(high_done, low_done);
    ASSERT_TRUE(first_to_high.ok() && high_to_low.ok());
    EXPECT_GT(*first_to_high, 0) << "the first launch was overtaken";
    EXPECT_GT(*high_to_low, 0)
        << "the earlier-queued low-priority launch ran first";
    break;
  }
}

TEST_P(DeviceConformanceTest, MoreUrgentSharedViewsLaunchFirst) {
  // Every launch of this device takes 200 ms (by the timing model): the
  // first holds the compute thread while the others are enqueued.
  auto probe = NewDevice(0);
  ASSERT_NE(probe, nullptr);
  std::shared_ptr<const CompiledFunction> compiled = Compile(*probe, 4);
  ASSERT_NE(compiled, nullptr);
  ASSERT_GT(compiled->flops(), 0);
  constexpr double kLaunchSeconds = 0.2;
  auto device = NewDevice(
      0, {{"compute_gflops", Decimal(compiled->flops() / kLaunchSeconds / 1e9)}});
  ASSERT_NE(device, nullptr);
  auto loaded = device->Load(compiled);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto open = [&](int priority) {
    SharedStreamOptions options;
    options.priority = priority;
    return device->OpenSharedStream(std::move(options));
  };
  auto first = open(0), low = open(-1), mid = open(0), high = open(1);
  ASSERT_TRUE(first.ok() && low.ok() && mid.ok() && high.ok());
  Tensor x = HostTensor({1, 2, 3, 4});
  DeviceTensor dx;
  device->CopyToDevice(**first, &x, &dx);
  ASSERT_TRUE((*first)->Synchronize().ok());
  for (int attempt = 0;; ++attempt) {
    ASSERT_LT(attempt, 3) << "the first launch never held the device long "
                             "enough for the others to be enqueued";
    const EventOptions timed{.enable_timing = true};
    Event first_done(timed), low_done(timed), mid_done(timed),
        high_done(timed);
    DeviceTensor y0, y_low, y_mid, y_high;
    const uint64_t idle = device->AvailableMemory();
    device->Launch(**first, **loaded, {&dx}, {&y0});
    (*first)->Record(first_done);
    // The first launch computes once its output is allocated (not before:
    // until it starts, a more urgent launch would rightly go first).
    ASSERT_TRUE(PollUntil([&] {
      return device->AvailableMemory() <= idle - 4 * sizeof(float);
    }));
    // Enqueued in the order low, mid, high while the first computes.
    device->Launch(**low, **loaded, {&dx}, {&y_low});
    (*low)->Record(low_done);
    device->Launch(**mid, **loaded, {&dx}, {&y_mid});
    (*mid)->Record(mid_done);
    device->Launch(**high, **loaded, {&dx}, {&y_high});
    (*high)->Record(high_done);
    const bool valid = !first_done.Query();
    for (auto* s : {&*first, &*low, &*mid, &*high}) {
      ASSERT_TRUE((**s).Synchronize().ok());
    }
    if (!valid) continue;  // The host was too slow; try again.
    auto after = [](const Event& a, const Event& b) {
      absl::StatusOr<double> ms = Event::ElapsedMillis(a, b);
      return ms.ok() && *ms > 0;
    };
    EXPECT_TRUE(after(first_done, high_done)) << "the first was overtaken";
    EXPECT_TRUE(after(high_done, mid_done)) << "high did not go first";
    EXPECT_TRUE(after(mid_done, low_done)) << "mid did not go before low";
    break;
  }
}

TEST_P(DeviceConformanceTest, TimingModelIsNeverBeaten) {
  auto device = NewDevice(0);
  ASSERT_NE(device, nullptr);
  const DeviceInfo info = device->GetDeviceInfo();
  constexpr int kN = 16384;  // 64 KiB.
  std::unique_ptr<LoadedFunction> relu = LoadRelu(*device, kN);
  ASSERT_NE(relu, nullptr);
  const std::vector<float> xs = Iota(kN, -100);
  Tensor x = HostTensor(xs), y;
  DeviceTensor dx, dy;
  const EventOptions timed{.enable_timing = true};
  Event t0(timed), t1(timed), t2(timed), t3(timed);
  Stream* s = *device->AcquireStream();
  s->Record(t0);
  device->CopyToDevice(*s, &x, &dx);
  s->Record(t1);
  device->Launch(*s, *relu, {&dx}, {&dy});
  s->Record(t2);
  device->CopyToHost(*s, &dy, &y);
  s->Record(t3);
  ASSERT_TRUE(s->Synchronize().ok());
  EXPECT_EQ(Values(y), ReluExpected(xs));
  const double h2d = *Event::ElapsedMillis(t0, t1);
  const double launch = *Event::ElapsedMillis(t1, t2);
  const double d2h = *Event::ElapsedMillis(t2, t3);
  const double bytes = kN * sizeof(float);
  if (info.link_bytes_per_second > 0) {
    double latency_ms = 0;
    auto it = GetParam().config.params.find("link_latency_us");
    if (it != GetParam().config.params.end()) {
      ASSERT_TRUE(absl::SimpleAtod(it->second, &latency_ms));
      latency_ms /= 1000;
    }
    const double copy_ms = bytes / info.link_bytes_per_second * 1e3 + latency_ms;
    EXPECT_GE(h2d, copy_ms);
    EXPECT_GE(d2h, copy_ms);
  }
  if (info.compute_flops > 0) {
    EXPECT_GE(launch, relu->function().flops() / info.compute_flops * 1e3);
  }
  // Without a model nothing is asserted about speed.
  device->ReleaseStream(s);
}

TEST_P(DeviceConformanceTest, SlowDeviceAndSlowLinkFollowTheModel) {
  // A device made deliberately slow: 20 ms per launch and per copy.
  auto probe = NewDevice(0);
  ASSERT_NE(probe, nullptr);
  constexpr int kN = 1024;
  std::shared_ptr<const CompiledFunction> compiled = Compile(*probe, kN);
  ASSERT_NE(compiled, nullptr);
  constexpr double kSeconds = 0.02;
  const double bytes = kN * sizeof(float);
  auto device = NewDevice(
      0, {{"compute_gflops", absl::StrCat(compiled->flops() / kSeconds / 1e9)},
          {"link_gbps", absl::StrCat(bytes / kSeconds / 1e9)},
          {"link_latency_us", "0"}});
  ASSERT_NE(device, nullptr);
  auto loaded = device->Load(compiled);
  ASSERT_TRUE(loaded.ok());
  Tensor x = HostTensor(Iota(kN, 0)), y;
  DeviceTensor dx, dy;
  Stream* s = *device->AcquireStream();
  const absl::Time start = absl::Now();
  device->CopyToDevice(*s, &x, &dx);
  device->Launch(*s, **loaded, {&dx}, {&dy});
  device->CopyToHost(*s, &dy, &y);
  ASSERT_TRUE(s->Synchronize().ok());
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(60));
  EXPECT_EQ(Values(y), ReluExpected(Iota(kN, 0)));
  device->ReleaseStream(s);
}

INSTANTIATE_TEST_SUITE_P(
    AllDeviceTypes, DeviceConformanceTest,
    ::testing::ValuesIn(ConformanceConfigs()),
    [](const ::testing::TestParamInfo<ConformanceConfig>& info) {
      return info.param.label;
    });

}  // namespace
}  // namespace glint
