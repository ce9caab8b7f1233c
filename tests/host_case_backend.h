// The ONNX case runner's backend for a HostManager in this process
// (tests/onnx_case.h), shared by the in-process conformance tests.
#ifndef GLINT_TESTS_HOST_CASE_BACKEND_H_
#define GLINT_TESTS_HOST_CASE_BACKEND_H_

#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "runtime/host_manager.h"
#include "tests/onnx_case.h"

namespace glint::testing {

// Adds, runs (20 s deadline) and removes networks on a borrowed
// HostManager. Thread-compatible, as the runner uses it.
class HostCaseBackend final : public CaseBackend {
 public:
  explicit HostCaseBackend(HostManager& host) : host_(host) {}
  absl::StatusOr<NetworkInfo> Add(const std::string& name,
                                  const std::string& model,
                                  const AddNetworkOptions& options) override {
    return host_.AddNetwork(name, model, options);
  }
  absl::StatusOr<std::vector<NamedTensor>> Run(
      const std::string& name,
      const std::vector<NamedTensor>& inputs) override {
    RunOptions run;
    run.deadline = absl::Now() + absl::Seconds(20);
    return host_.RunNetwork(name, inputs, run);
  }
  void Remove(const std::string& name) override {
    (void)host_.RemoveNetwork(name);
  }

 private:
  HostManager& host_;
};

}  // namespace glint::testing

#endif  // GLINT_TESTS_HOST_CASE_BACKEND_H_
