// ONNX conformance: runs every case of ONNX's node tests (Debian's
// libonnx-testdata, data/node/) in-process through HostManager on one
// simulated device, and classifies each:
//
//   PASS      every test_data_set_* output matches (rtol 1e-3, atol 1e-7 as
//             ONNX's backend runner uses; NaN matches NaN; dtype and shape
//             must be equal);
//   MISMATCH  the network ran but some output differs;
//   REFUSED   AddNetwork or RunNetwork returned a status (code + message
//             are printed), or the case's data cannot be read.
//
// The committed tests/onnx_conformance_expected.txt lists every case with
// its expected class. The test fails when a case listed PASS no longer
// passes, so coverage only moves forward; newly passing cases are printed.
// To rewrite the file with today's results:
//
//   GLINT_CONFORMANCE_UPDATE=1 bazel run //tests:onnx_conformance_test
//
// (writes $BUILD_WORKSPACE_DIRECTORY/tests/onnx_conformance_expected.txt;
// GLINT_CONFORMANCE_WRITE=/some/path writes there instead). Set
// GLINT_CONFORMANCE_FILTER=substring to run only matching cases (the
// forward-only check is then limited to them).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/device_info.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "runtime/host_manager.h"
#include "tests/host_case_backend.h"
#include "tests/onnx_case.h"

namespace glint {
namespace {

namespace fs = std::filesystem;
using testing::CaseResult;
using testing::Outcome;
using testing::OutcomeName;

constexpr const char* kNodeDir = testing::kOnnxNodeDir;
constexpr const char* kExpectedFile = testing::kConformanceExpectedFile;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

TEST(OnnxConformanceTest, NodeCasesOnlyMoveForward) {
  if (!fs::exists(kNodeDir)) {
    GTEST_SKIP() << kNodeDir << " missing: is libonnx-testdata installed?";
  }
  DeviceConfig device;
  device.memory_bytes = 8ull << 30;
  absl::StatusOr<std::unique_ptr<HostManager>> host =
      HostManager::CreateFromConfigs({}, {device});
  ASSERT_TRUE(host.ok()) << host.status();

  const std::vector<std::string> cases = testing::ListOnnxNodeCases();
  testing::HostCaseBackend backend(**host);
  const std::string filter = Env("GLINT_CONFORMANCE_FILTER");
  const bool verbose = !Env("GLINT_CONFORMANCE_VERBOSE").empty();

  const std::map<std::string, Outcome> expected = testing::ReadExpectedOutcomes(kExpectedFile);
  std::map<std::string, CaseResult> results;
  int counts[3] = {0, 0, 0};
  const absl::Time start = absl::Now();
  for (const std::string& name : cases) {
    if (!filter.empty() && !absl::StrContains(name, filter)) continue;
    const absl::Time t0 = absl::Now();
    CaseResult r = testing::RunOnnxCase(
        backend, (fs::path(kNodeDir) / name).string(), name);
    const absl::Duration took = absl::Now() - t0;
    if (verbose || took > absl::Seconds(2)) {
      std::cout << name << " " << OutcomeName(r.outcome) << " ("
                << absl::FormatDuration(took) << ") " << r.detail << "\n";
    }
    ++counts[static_cast<int>(r.outcome)];
    results[name] = std::move(r);
  }

  std::vector<std::string> regressed, improved;
  for (const auto& [name, r] : results) {
    auto it = expected.find(name);
    const bool was_pass = it != expected.end() && it->second == Outcome::kPass;
    if (was_pass && r.outcome != Outcome::kPass) regressed.push_back(name);
    if (!was_pass && r.outcome == Outcome::kPass) improved.push_back(name);
  }
  for (const std::string& name : improved) {
    std::cout << "newly passing: " << name << "\n";
  }
  for (const std::string& name : regressed) {
    const CaseResult& r = results[name];
    ADD_FAILURE() << "regressed: " << name << " is now "
                  << OutcomeName(r.outcome) << ": " << r.detail;
  }
  std::cout << "ONNX node cases: " << results.size() << " run, " << counts[0]
            << " passed, " << counts[1] << " mismatched, " << counts[2]
            << " refused (" << absl::FormatDuration(absl::Now() - start)
            << ")\n";
  if (!improved.empty()) {
    std::cout << improved.size()
              << " newly passing; update the expected file with "
                 "GLINT_CONFORMANCE_UPDATE=1 bazel run "
                 "//tests:onnx_conformance_test\n";
  }

  // A detailed report next to the test's other outputs.
  std::string report_dir = Env("TEST_UNDECLARED_OUTPUTS_DIR");
  if (!report_dir.empty()) {
    std::ofstream report(fs::path(report_dir) / "onnx_conformance_report.txt");
    for (const auto& [name, r] : results) {
      report << name << " " << OutcomeName(r.outcome) << " " << r.detail
             << "\n";
    }
  }

  std::string write_path = Env("GLINT_CONFORMANCE_WRITE");
  if (write_path.empty() && !Env("GLINT_CONFORMANCE_UPDATE").empty() &&
      !Env("BUILD_WORKSPACE_DIRECTORY").empty()) {
    write_path = Env("BUILD_WORKSPACE_DIRECTORY") + "/" + kExpectedFile;
  }
  if (!write_path.empty()) {
    ASSERT_TRUE(filter.empty())
        << "refusing to write the expected file from a filtered run";
    std::ofstream out(write_path);
    out << "# ONNX node cases (libonnx-testdata data/node) through Glint: "
           "PASS, MISMATCH or REFUSED.\n"
           "# Generated by tests/onnx_conformance_test.cc "
           "(GLINT_CONFORMANCE_UPDATE=1 bazel run "
           "//tests:onnx_conformance_test).\n"
        << "# Totals: " << counts[0] << " passed, " << counts[1]
        << " mismatched, " << counts[2] << " refused.\n";
    for (const auto& [name, r] : results) {
      out << name << " " << OutcomeName(r.outcome) << "\n";
    }
    ASSERT_TRUE(out.good()) << "cannot write " << write_path;
    std::cout << "wrote " << write_path << "\n";
  }
}

// ONNX 1.12's shape inference reads out of bounds for a ConvTranspose
// whose weight has a lower rank than its input; the importer must refuse it
// before inference rather than crash.
TEST(OnnxConformanceTest, ConvTransposeWithLowRankWeightIsRefused) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("g");
  auto add_value = [](onnx::ValueInfoProto* v, const std::string& name,
                      std::vector<int64_t> dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  add_value(g->add_input(), "x", {1, 1, 3, 3});
  add_value(g->add_input(), "w", {1, 1, 3});
  g->add_output()->set_name("y");
  onnx::NodeProto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("x");
  relu->add_output("r");
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("ConvTranspose");
  n->add_input("r");
  n->add_input("w");
  n->add_output("y");
  DeviceConfig device;
  absl::StatusOr<std::unique_ptr<HostManager>> host =
      HostManager::CreateFromConfigs({}, {device});
  ASSERT_TRUE(host.ok()) << host.status();
  absl::StatusOr<NetworkInfo> info =
      (*host)->AddNetwork("ct", model.SerializeAsString(), {});
  EXPECT_EQ(info.status().code(), absl::StatusCode::kInvalidArgument)
      << info.status();
}

}  // namespace
}  // namespace glint
