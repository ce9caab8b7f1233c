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
#include "client/tensor_file.h"
#include "core/device_info.h"
#include "core/half.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "runtime/host_manager.h"
#include "tests/test_util.h"

namespace glint {
namespace {

namespace fs = std::filesystem;

constexpr char kNodeDir[] = "/usr/share/libonnx-testdata/data/node";
constexpr char kExpectedFile[] = "tests/onnx_conformance_expected.txt";
constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;

enum class Outcome { kPass, kMismatch, kRefused };

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPass: return "PASS";
    case Outcome::kMismatch: return "MISMATCH";
    case Outcome::kRefused: return "REFUSED";
  }
  return "?";
}

struct CaseResult {
  Outcome outcome = Outcome::kRefused;
  std::string detail;  // Why it did not pass.
};

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// Element `i` of a floating tensor as double.
double FloatAt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32: return t.data<float>()[i];
    case DType::kFloat64: return t.data<double>()[i];
    case DType::kFloat16: return Float16ToFloat(t.data<uint16_t>()[i]);
    case DType::kBFloat16: return BFloat16ToFloat(t.data<uint16_t>()[i]);
    default: return 0;
  }
}

bool IsFloating(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat64 ||
         d == DType::kFloat16 || d == DType::kBFloat16;
}

// Empty when `actual` matches `expected` as ONNX's runner judges.
std::string Compare(const Tensor& actual, const Tensor& expected) {
  if (actual.dtype() != expected.dtype()) {
    return absl::StrCat("dtype ", DTypeName(actual.dtype()), " != expected ",
                        DTypeName(expected.dtype()));
  }
  if (actual.shape() != expected.shape()) {
    return absl::StrCat("shape ", actual.shape().ToString(), " != expected ",
                        expected.shape().ToString());
  }
  const int64_t n = expected.num_elements();
  if (IsFloating(expected.dtype())) {
    for (int64_t i = 0; i < n; ++i) {
      const double a = FloatAt(actual, i);
      const double e = FloatAt(expected, i);
      if (std::isnan(a) && std::isnan(e)) continue;
      if (a == e) continue;  // Equal infinities.
      if (!(std::fabs(a - e) <= kAtol + kRtol * std::fabs(e))) {
        return absl::StrCat("element ", i, ": ", a, " != expected ", e);
      }
    }
    return "";
  }
  if (actual.num_bytes() != expected.num_bytes() ||
      (n > 0 && std::memcmp(actual.raw_data(), expected.raw_data(),
                            expected.num_bytes()) != 0)) {
    return "values differ";
  }
  return "";
}

std::vector<fs::path> DataSets(const fs::path& dir) {
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() &&
        absl::StartsWith(e.path().filename().string(), "test_data_set_")) {
      sets.push_back(e.path());
    }
  }
  std::sort(sets.begin(), sets.end());
  return sets;
}

// Reads <prefix>_<i>.pb for i = 0, 1, ... while they exist.
absl::StatusOr<std::vector<NamedTensor>> ReadTensors(const fs::path& set,
                                                     const std::string& prefix) {
  std::vector<NamedTensor> tensors;
  for (int i = 0;; ++i) {
    const fs::path p = set / absl::StrCat(prefix, "_", i, ".pb");
    if (!fs::exists(p)) break;
    absl::StatusOr<NamedTensor> t = ReadTensorProtoFile(p.string());
    if (!t.ok()) return t.status();
    tensors.push_back(*std::move(t));
  }
  return tensors;
}

std::string StatusText(const absl::Status& s) {
  std::string text = s.ToString();
  std::replace(text.begin(), text.end(), '\n', ' ');
  if (text.size() > 300) text = text.substr(0, 300) + "...";
  return text;
}

CaseResult RunCase(HostManager& host, const fs::path& dir,
                   const std::string& name) {
  absl::StatusOr<std::string> bytes = ReadFile(dir / "model.onnx");
  if (!bytes.ok()) return {Outcome::kRefused, StatusText(bytes.status())};
  onnx::ModelProto model;
  if (!model.ParseFromString(*bytes)) {
    return {Outcome::kRefused, "model.onnx does not parse"};
  }
  const std::vector<std::string> input_names =
      testing::RuntimeInputNames(model);
  std::vector<std::string> output_names;
  for (const auto& o : model.graph().output()) output_names.push_back(o.name());

  struct DataSet {
    std::vector<NamedTensor> inputs;
    std::vector<NamedTensor> outputs;
  };
  std::vector<DataSet> sets;
  for (const fs::path& set : DataSets(dir)) {
    DataSet ds;
    absl::StatusOr<std::vector<NamedTensor>> in = ReadTensors(set, "input");
    if (!in.ok()) {
      return {Outcome::kRefused, "input data: " + StatusText(in.status())};
    }
    absl::StatusOr<std::vector<NamedTensor>> out = ReadTensors(set, "output");
    if (!out.ok()) {
      return {Outcome::kRefused, "output data: " + StatusText(out.status())};
    }
    // Inputs pair with the runtime inputs by position (old cases' own
    // tensor names are unreliable); trailing optional inputs may be absent.
    if (in->size() > input_names.size() ||
        out->size() != output_names.size()) {
      return {Outcome::kRefused, "test data does not match the model's "
                                 "inputs/outputs"};
    }
    for (size_t i = 0; i < in->size(); ++i) (*in)[i].name = input_names[i];
    ds.inputs = *std::move(in);
    ds.outputs = *std::move(out);
    sets.push_back(std::move(ds));
  }
  if (sets.empty()) return {Outcome::kRefused, "no test data"};

  CaseResult result{Outcome::kPass, ""};
  std::string added;  // Network name currently added.
  std::map<std::string, Shape> bound;
  int version = 0;
  for (size_t s = 0; s < sets.size() && result.outcome == Outcome::kPass;
       ++s) {
    const DataSet& ds = sets[s];
    // Bind the inputs' shapes to this data set's; re-add when they change.
    AddNetworkOptions options;
    for (const NamedTensor& t : ds.inputs) {
      options.input_shapes[t.name] = t.tensor.shape();
    }
    if (added.empty() || options.input_shapes != bound) {
      if (!added.empty()) (void)host.RemoveNetwork(added);
      added = absl::StrCat(name, "#", version++);
      bound = options.input_shapes;
      absl::StatusOr<NetworkInfo> info = host.AddNetwork(added, *bytes, options);
      if (!info.ok()) {
        added.clear();
        return {Outcome::kRefused, "AddNetwork: " + StatusText(info.status())};
      }
      if (info->inputs.size() != ds.inputs.size()) {
        result = {Outcome::kRefused,
                  absl::StrCat("the network has ", info->inputs.size(),
                               " inputs, the data ", ds.inputs.size())};
        break;
      }
    }
    RunOptions run;
    run.deadline = absl::Now() + absl::Seconds(20);
    absl::StatusOr<std::vector<NamedTensor>> outputs =
        host.RunNetwork(added, ds.inputs, run);
    if (!outputs.ok()) {
      result = {Outcome::kRefused, "RunNetwork: " + StatusText(outputs.status())};
      break;
    }
    std::map<std::string, const Tensor*> by_name;
    for (const NamedTensor& t : *outputs) by_name[t.name] = &t.tensor;
    for (size_t i = 0; i < output_names.size(); ++i) {
      auto it = by_name.find(output_names[i]);
      if (it == by_name.end()) {
        result = {Outcome::kMismatch,
                  absl::StrCat("output '", output_names[i], "' missing")};
        break;
      }
      const std::string diff = Compare(*it->second, ds.outputs[i].tensor);
      if (!diff.empty()) {
        result = {Outcome::kMismatch,
                  absl::StrCat("data set ", s, " output '", output_names[i],
                               "': ", diff)};
        break;
      }
    }
  }
  if (!added.empty()) (void)host.RemoveNetwork(added);
  return result;
}

std::map<std::string, Outcome> ReadExpected(const std::string& path) {
  std::map<std::string, Outcome> expected;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> parts =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (parts.size() < 2) continue;
    Outcome o = Outcome::kRefused;
    if (parts[1] == "PASS") o = Outcome::kPass;
    if (parts[1] == "MISMATCH") o = Outcome::kMismatch;
    expected[parts[0]] = o;
  }
  return expected;
}

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

  std::vector<std::string> cases;
  for (const auto& e : fs::directory_iterator(kNodeDir)) {
    if (e.is_directory()) cases.push_back(e.path().filename().string());
  }
  std::sort(cases.begin(), cases.end());
  const std::string filter = Env("GLINT_CONFORMANCE_FILTER");
  const bool verbose = !Env("GLINT_CONFORMANCE_VERBOSE").empty();

  const std::map<std::string, Outcome> expected = ReadExpected(kExpectedFile);
  std::map<std::string, CaseResult> results;
  int counts[3] = {0, 0, 0};
  const absl::Time start = absl::Now();
  for (const std::string& name : cases) {
    if (!filter.empty() && !absl::StrContains(name, filter)) continue;
    const absl::Time t0 = absl::Now();
    CaseResult r = RunCase(**host, fs::path(kNodeDir) / name, name);
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
