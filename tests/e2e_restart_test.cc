// Nothing acknowledged is lost across a crash: glintd is SIGKILLed in the
// middle of a storm of AddNetwork and RemoveNetwork calls, restarted on the
// same --store_dir, and exactly the networks whose add was acknowledged and
// whose remove was not are back, computing the same outputs. (A call in
// flight at the kill may have landed or not; either is accepted.)
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/digest.h"
#include "devices/cpu/isa.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"
#include "proto/glint.grpc.pb.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace glint {
namespace {

using ::testing::HasSubstr;
using testing::GlintdProcess;

enum class State { kPresent, kAbsent, kUnknown };

// Network k is an MLP of input width 4 + k % 5, so outputs tell them apart.
int64_t Width(int k) { return 4 + k % 5; }

void ExpectComputes(GlintClient& client, const std::string& name, int k) {
  const int64_t in = Width(k);
  std::vector<float> x(in);
  for (int64_t i = 0; i < in; ++i) x[i] = 0.25f * static_cast<float>(i) - 0.5f;
  absl::StatusOr<std::vector<NamedTensor>> out = client.RunNetwork(
      name, {{"x", Tensor::FromVector(DType::kFloat32, Shape({1, in}), x)}});
  ASSERT_TRUE(out.ok()) << name << ": " << out.status();
  const std::vector<float> want = testing::MlpReference(x, 1, in, 3);
  ASSERT_EQ((*out)[0].tensor.num_elements(), 3) << name;
  for (int j = 0; j < 3; ++j) {
    EXPECT_NEAR((*out)[0].tensor.data<float>()[j], want[j], 1e-4) << name;
  }
}

TEST(RestartTest, AcknowledgedNetworksSurviveAKillNineAmidAddsAndRemoves) {
  const std::string store = testing::NewTempDir("store");
  const std::vector<std::string> args = {"--store_dir=" + store};
  absl::StatusOr<std::unique_ptr<GlintdProcess>> d = GlintdProcess::Start(args);
  ASSERT_TRUE(d.ok()) << d.status();
  const std::string address = (*d)->address();

  std::mutex mu;
  std::map<std::string, std::pair<State, int>> states;  // name -> state, k.
  std::atomic<int> acknowledged{0};
  std::vector<std::thread> clients;
  constexpr int kClients = 6;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      GlintClient client(GlintClient::CreateChannel(address), ClientOptions());
      for (int i = 0;; ++i) {
        const int k = t * 1000 + i;
        const std::string name = absl::StrCat("net_", t, "_", i % 12);
        // Re-adding a name removes it first; every third add is removed.
        bool remove_first;
        {
          std::lock_guard<std::mutex> lock(mu);
          remove_first =
              states.count(name) > 0 && states[name].first == State::kPresent;
          states[name].first = State::kUnknown;
        }
        if (remove_first) {
          if (!client.RemoveNetwork(name).ok()) return;  // Killed.
          std::lock_guard<std::mutex> lock(mu);
          states[name].first = State::kAbsent;
          ++acknowledged;
        }
        {
          std::lock_guard<std::mutex> lock(mu);
          states[name] = {State::kUnknown, k};
        }
        if (!client.AddNetwork(name, testing::MakeMlpModel(1, Width(k), 3))
                 .ok()) {
          return;
        }
        {
          std::lock_guard<std::mutex> lock(mu);
          states[name].first = State::kPresent;
          ++acknowledged;
        }
        if (i % 3 == 2) {
          {
            std::lock_guard<std::mutex> lock(mu);
            states[name].first = State::kUnknown;
          }
          if (!client.RemoveNetwork(name).ok()) return;
          std::lock_guard<std::mutex> lock(mu);
          states[name].first = State::kAbsent;
          ++acknowledged;
        }
      }
    });
  }
  // Kill once a good number of operations has been acknowledged.
  while (acknowledged.load() < 120) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_EQ(kill((*d)->pid(), SIGKILL), 0);
  for (std::thread& t : clients) t.join();
  d->reset();

  absl::StatusOr<std::unique_ptr<GlintdProcess>> again =
      GlintdProcess::Start(args);
  ASSERT_TRUE(again.ok()) << again.status();
  absl::StatusOr<std::vector<NetworkInfo>> listed =
      (*again)->client().ListNetworks();
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::map<std::string, const NetworkInfo*> back;
  for (const NetworkInfo& n : *listed) back[n.name] = &n;
  int present = 0;
  for (const auto& [name, state_k] : states) {
    const auto [state, k] = state_k;
    if (state == State::kPresent) {
      ++present;
      ASSERT_EQ(back.count(name), 1u) << name << " was acknowledged but lost";
      EXPECT_TRUE(back[name]->unavailable_reason.empty()) << name;
      ExpectComputes((*again)->client(), name, k);
    } else if (state == State::kAbsent) {
      EXPECT_EQ(back.count(name), 0u) << name << " was removed but is back";
    } else if (back.count(name) > 0) {
      ExpectComputes((*again)->client(), name, k);  // Landed before the kill.
    }
  }
  EXPECT_GT(present, 0);
  for (const auto& [name, info] : back) {
    EXPECT_EQ(states.count(name), 1u) << name << " was never added";
  }
}

// A network's dynamic batching is part of what the store keeps: after a
// restart it is still batched, with the same options, and still computes.
TEST(RestartTest, DynamicBatchingSurvivesARestart) {
  const std::string store = testing::NewTempDir("store");
  const std::vector<std::string> args = {"--store_dir=" + store};
  AddNetworkOptions options;
  options.batching.max_batch_size = 8;
  options.batching.max_queue_delay = absl::Microseconds(250);
  options.batching.preferred_batch_sizes = {2, 4};
  {
    absl::StatusOr<std::unique_ptr<GlintdProcess>> d =
        GlintdProcess::Start(args);
    ASSERT_TRUE(d.ok()) << d.status();
    absl::StatusOr<NetworkInfo> added = (*d)->client().AddNetwork(
        "mlp", testing::MakeMlpModel(-1, 4, 3), options);
    ASSERT_TRUE(added.ok()) << added.status();
    EXPECT_EQ(added->batching.max_batch_size, 8);
  }  // Stopped.
  absl::StatusOr<std::unique_ptr<GlintdProcess>> again =
      GlintdProcess::Start(args);
  ASSERT_TRUE(again.ok()) << again.status();
  absl::StatusOr<NetworkInfo> info = (*again)->client().GetNetwork("mlp");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_TRUE(info->unavailable_reason.empty()) << info->unavailable_reason;
  EXPECT_EQ(info->batching.max_batch_size, 8);
  EXPECT_EQ(info->batching.max_queue_delay, absl::Microseconds(250));
  EXPECT_EQ(info->batching.preferred_batch_sizes, (std::vector<int>{2, 4}));
  EXPECT_EQ(info->inputs[0].shape, Shape({8, 4}));
  // A run of 3 rows, as batching allows (unbatched, the network would take
  // exactly its bound shape).
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i) x[i] = 0.25f * static_cast<float>(i) - 1.0f;
  absl::StatusOr<std::vector<NamedTensor>> out = (*again)->client().RunNetwork(
      "mlp", {{"x", Tensor::FromVector(DType::kFloat32, Shape({3, 4}), x)}});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<float> want = testing::MlpReference(x, 3, 4, 3);
  ASSERT_EQ((*out)[0].tensor.shape(), Shape({3, 3}));
  for (int j = 0; j < 9; ++j) {
    EXPECT_NEAR((*out)[0].tensor.data<float>()[j], want[j], 1e-4);
  }
}

// A bf16 network through glintd: it computes in bfloat16 (close to the
// float32 network, not equal), and after a restart on the same store it is
// still bf16 and computes the same bytes. A precision glintd does not know
// is INVALID_ARGUMENT at the glint.v1 edge.
TEST(RestartTest, PrecisionSurvivesARestart) {
  const std::string store = testing::NewTempDir("store");
  const std::vector<std::string> args = {"--store_dir=" + store};
  const std::string model = testing::MakeDeepMlpModel(1, 64, 4);
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = 0.05f * static_cast<float>(i) - 1.5f;
  const std::vector<NamedTensor> inputs = {
      {"x", Tensor::FromVector(DType::kFloat32, Shape({1, 64}), x)}};
  AddNetworkOptions bf16;
  bf16.precision = Precision::kBFloat16;
  Tensor before;
  {
    absl::StatusOr<std::unique_ptr<GlintdProcess>> d =
        GlintdProcess::Start(args);
    ASSERT_TRUE(d.ok()) << d.status();
    GlintClient& client = (*d)->client();
    absl::StatusOr<NetworkInfo> added = client.AddNetwork("b", model, bf16);
    ASSERT_TRUE(added.ok()) << added.status();
    EXPECT_EQ(added->precision, Precision::kBFloat16);
    ASSERT_TRUE(client.AddNetwork("f", model, AddNetworkOptions()).ok());
    absl::StatusOr<std::vector<NamedTensor>> b = client.RunNetwork("b", inputs);
    ASSERT_TRUE(b.ok()) << b.status();
    absl::StatusOr<std::vector<NamedTensor>> f = client.RunNetwork("f", inputs);
    ASSERT_TRUE(f.ok()) << f.status();
    before = (*b)[0].tensor;
    const Tensor& want = (*f)[0].tensor;
    ASSERT_EQ(before.shape(), want.shape());
    // glintd runs on this CPU: without bfloat16 kernels (AVX2) bf16
    // computes float32's bytes (devices/cpu/isa.h), with them it differs.
    EXPECT_EQ(std::memcmp(before.raw_data(), want.raw_data(),
                          want.num_bytes()) != 0,
              CpuComputesBFloat16())
        << "bf16 kernels on this CPU: " << CpuComputesBFloat16();
    for (int64_t i = 0; i < want.num_elements(); ++i) {
      const float w = want.data<float>()[i];
      EXPECT_NEAR(before.data<float>()[i], w,
                  0.05f * std::max(1.0f, std::fabs(w)));
    }

    v1::AddNetworkRequest request;
    request.set_name("bad");
    request.set_model(model);
    request.mutable_options()->set_precision("fp16");
    v1::AddNetworkResponse response;
    grpc::ClientContext context;
    grpc::Status s = v1::HostManager::NewStub(GlintClient::CreateChannel(
                                            (*d)->address()))
                         ->AddNetwork(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("fp32 (the default), bf16"));
  }  // Stopped.
  absl::StatusOr<std::unique_ptr<GlintdProcess>> again =
      GlintdProcess::Start(args);
  ASSERT_TRUE(again.ok()) << again.status();
  absl::StatusOr<NetworkInfo> info = (*again)->client().GetNetwork("b");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_TRUE(info->unavailable_reason.empty()) << info->unavailable_reason;
  EXPECT_EQ(info->precision, Precision::kBFloat16);
  absl::StatusOr<NetworkInfo> f = (*again)->client().GetNetwork("f");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->precision, Precision::kFloat32);
  absl::StatusOr<std::vector<NamedTensor>> after =
      (*again)->client().RunNetwork("b", inputs);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ((*after)[0].tensor.shape(), before.shape());
  EXPECT_EQ(std::memcmp((*after)[0].tensor.raw_data(), before.raw_data(),
                        before.num_bytes()),
            0);
}

// Every file under `dir`, relative to it, sorted.
std::vector<std::string> FilesUnder(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) {
      files.push_back(std::filesystem::relative(e.path(), dir).string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A record whose payload is damaged on disk (a flipped byte) comes back
// listed by name, UNAVAILABLE with the reason, on glint.v1 and in `glint
// list`, until it is removed; the other networks serve as before.
TEST(RestartTest, ACorruptRecordIsListedUnavailableUntilRemoved) {
  const std::string store = testing::NewTempDir("store");
  const std::vector<std::string> args = {"--store_dir=" + store};
  {
    absl::StatusOr<std::unique_ptr<GlintdProcess>> d =
        GlintdProcess::Start(args);
    ASSERT_TRUE(d.ok()) << d.status();
    for (int k : {0, 1}) {
      ASSERT_TRUE((*d)->client()
                      .AddNetwork(absl::StrCat("net", k),
                                  testing::MakeMlpModel(1, Width(k), 3))
                      .ok());
    }
  }  // Stopped.
  const std::string record =
      absl::StrCat(store, "/networks/", Sha256Hex("net1"), ".net");
  {
    std::fstream file(record, std::ios::binary | std::ios::in | std::ios::out);
    ASSERT_TRUE(file.good()) << record;
    file.seekg(-20, std::ios::end);  // Inside the model's bytes.
    char byte = 0;
    file.read(&byte, 1);
    file.seekp(-20, std::ios::end);
    byte ^= 0x10;
    file.write(&byte, 1);
    ASSERT_TRUE(file.good());
  }

  absl::StatusOr<std::unique_ptr<GlintdProcess>> d = GlintdProcess::Start(args);
  ASSERT_TRUE(d.ok()) << d.status();
  GlintClient& client = (*d)->client();
  absl::StatusOr<std::vector<NetworkInfo>> listed = client.ListNetworks();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].name, "net0");
  EXPECT_TRUE((*listed)[0].unavailable_reason.empty());
  EXPECT_EQ((*listed)[1].name, "net1");
  EXPECT_THAT((*listed)[1].unavailable_reason, HasSubstr("checksum mismatch"));
  EXPECT_THAT((*listed)[1].unavailable_reason, HasSubstr(record));
  ExpectComputes(client, "net0", 0);
  absl::StatusOr<std::vector<NamedTensor>> out = client.RunNetwork(
      "net1", {{"x", Tensor::FromVector(DType::kFloat32, Shape({1, Width(1)}),
                                        std::vector<float>(Width(1), 1.0f))}});
  EXPECT_TRUE(absl::IsUnavailable(out.status())) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("checksum mismatch"));

  absl::StatusOr<testing::CommandResult> cli =
      testing::RunCommand({testing::RunfilePath("client/glint"),
                           "--server=" + (*d)->address(), "list"},
                          absl::Seconds(30));
  ASSERT_TRUE(cli.ok()) << cli.status();
  EXPECT_EQ(cli->exit_code, 0) << cli->stderr_text;
  EXPECT_THAT(cli->stdout_text, HasSubstr("network net1\n  UNAVAILABLE: "));

  // Removed, it is gone for good; the name takes a new network.
  ASSERT_TRUE(client.RemoveNetwork("net1").ok());
  EXPECT_FALSE(std::filesystem::exists(record));
  ASSERT_TRUE(
      client.AddNetwork("net1", testing::MakeMlpModel(1, Width(1), 3)).ok());
  ExpectComputes(client, "net1", 1);
}

// A full disk while a network is added, as the kernel reports it to glintd
// (writes past `prlimit --fsize` fail with EFBIG): AddNetwork fails
// RESOURCE_EXHAUSTED, glintd keeps serving, and the store is as it was:
// no temp file, no plan of the failed network, and the restart restores
// exactly what was there.
TEST(RestartTest, AFullDiskFailsAnAddAndLeavesTheStoreAsItWas) {
  const std::string store = testing::NewTempDir("store");
  const std::vector<std::string> args = {"--store_dir=" + store};
  std::vector<std::string> before;
  {
    absl::StatusOr<std::unique_ptr<GlintdProcess>> d =
        GlintdProcess::Start(args, absl::Seconds(30), ClientOptions(),
                             {"/usr/bin/prlimit", "--fsize=1048576"});
    ASSERT_TRUE(d.ok()) << d.status();
    GlintClient& client = (*d)->client();
    ASSERT_TRUE(
        client.AddNetwork("small", testing::MakeMlpModel(1, Width(0), 3)).ok());
    before = FilesUnder(store);
    // 4 MiB of weights, beyond the 1 MiB a file may have.
    absl::StatusOr<NetworkInfo> big =
        client.AddNetwork("big", testing::MakeDeepMlpModel(1, 512, 4));
    EXPECT_TRUE(absl::IsResourceExhausted(big.status())) << big.status();
    EXPECT_THAT(big.status().message(), HasSubstr("File too large"));
    EXPECT_EQ(FilesUnder(store), before);
    ASSERT_TRUE((*d)->CheckHealth(absl::Seconds(10)).ok());
    ExpectComputes(client, "small", 0);
    absl::StatusOr<std::vector<NetworkInfo>> listed = client.ListNetworks();
    ASSERT_TRUE(listed.ok()) << listed.status();
    ASSERT_EQ(listed->size(), 1u);
  }
  absl::StatusOr<std::unique_ptr<GlintdProcess>> again =
      GlintdProcess::Start(args);
  ASSERT_TRUE(again.ok()) << again.status();
  absl::StatusOr<std::vector<NetworkInfo>> listed =
      (*again)->client().ListNetworks();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].name, "small");
  EXPECT_TRUE((*listed)[0].unavailable_reason.empty());
  ExpectComputes((*again)->client(), "small", 0);
  // And now that the disk has room, the add succeeds.
  EXPECT_TRUE((*again)
                  ->client()
                  .AddNetwork("big", testing::MakeDeepMlpModel(1, 512, 4))
                  .ok());
}

}  // namespace
}  // namespace glint
