#include "tests/onnx_case.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/tensor_file.h"
#include "core/half.h"
#include "onnx/onnx_pb.h"
#include "tests/test_util.h"

namespace glint {
namespace testing {
namespace {

namespace fs = std::filesystem;

constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;
// One bfloat16 step relative to the value (8 significant bits).
constexpr double kBFloat16Rtol = 1.0 / 128;

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  }
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

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
absl::StatusOr<std::vector<NamedTensor>> ReadTensors(
    const fs::path& set, const std::string& prefix) {
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

// ONNX 1.12 writes bfloat16 test tensors as uint16: the bits are right,
// the tag is not.
absl::Status RetagBFloat16(const onnx::ValueInfoProto* declared,
                           NamedTensor& t) {
  if (declared == nullptr || t.tensor.dtype() != DType::kUInt16 ||
      declared->type().tensor_type().elem_type() !=
          onnx::TensorProto::BFLOAT16) {
    return absl::OkStatus();
  }
  absl::StatusOr<Tensor> retagged = Tensor::FromBytes(
      DType::kBFloat16, t.tensor.shape(),
      absl::MakeConstSpan(static_cast<const uint8_t*>(t.tensor.raw_data()),
                          t.tensor.num_bytes()));
  if (!retagged.ok()) return retagged.status();
  t.tensor = *std::move(retagged);
  return absl::OkStatus();
}

// True when every node reading `name` reads it as CastLike's second
// operand, whose values are never read.
bool OnlyCastLikeTarget(const onnx::GraphProto& g, const std::string& name) {
  for (const onnx::NodeProto& n : g.node()) {
    for (int i = 0; i < n.input_size(); ++i) {
      if (n.input(i) == name && !(n.op_type() == "CastLike" && i == 1)) {
        return false;
      }
    }
  }
  return true;
}

// The castlike quirk (see OnnxCase): rewrites the declared static shape of
// a CastLike-target input to the data's. True when it changed the model.
bool RelaxCastLikeTarget(onnx::ModelProto& model, const NamedTensor& t) {
  onnx::GraphProto* g = model.mutable_graph();
  for (onnx::ValueInfoProto& v : *g->mutable_input()) {
    if (v.name() != t.name || !v.type().has_tensor_type() ||
        !v.type().tensor_type().has_shape()) {
      continue;
    }
    const onnx::TensorShapeProto& s = v.type().tensor_type().shape();
    bool contradicts = s.dim_size() != t.tensor.shape().rank();
    for (int d = 0; !contradicts && d < s.dim_size(); ++d) {
      contradicts = s.dim(d).has_dim_value() &&
                    s.dim(d).dim_value() != t.tensor.shape().dim(d);
    }
    if (!contradicts || !OnlyCastLikeTarget(*g, t.name)) return false;
    onnx::TensorShapeProto* shape =
        v.mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t dim : t.tensor.shape().dims()) {
      shape->add_dim()->set_dim_value(dim);
    }
    return true;
  }
  return false;
}

}  // namespace

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kPass: return "PASS";
    case Outcome::kMismatch: return "MISMATCH";
    case Outcome::kRefused: return "REFUSED";
  }
  return "?";
}

absl::StatusOr<OnnxCase> ReadOnnxCase(const std::string& dir_name) {
  const fs::path dir(dir_name);
  absl::StatusOr<std::string> bytes = ReadFile(dir / "model.onnx");
  if (!bytes.ok()) return bytes.status();
  onnx::ModelProto model;
  if (!model.ParseFromString(*bytes)) {
    return absl::InvalidArgumentError("model.onnx does not parse");
  }
  const std::vector<std::string> input_names = RuntimeInputNames(model);
  std::map<std::string, const onnx::ValueInfoProto*> declared_inputs;
  for (const onnx::ValueInfoProto& v : model.graph().input()) {
    declared_inputs[v.name()] = &v;
  }
  OnnxCase c;
  for (const auto& o : model.graph().output()) {
    c.output_names.push_back(o.name());
  }
  bool relaxed = false;
  onnx::ModelProto repaired = model;
  for (const fs::path& set : DataSets(dir)) {
    OnnxCase::DataSet ds;
    absl::StatusOr<std::vector<NamedTensor>> in = ReadTensors(set, "input");
    if (!in.ok()) {
      return absl::Status(in.status().code(),
                          "input data: " + std::string(in.status().message()));
    }
    absl::StatusOr<std::vector<NamedTensor>> out = ReadTensors(set, "output");
    if (!out.ok()) {
      return absl::Status(out.status().code(),
                          "output data: " + std::string(out.status().message()));
    }
    if (in->size() > input_names.size() ||
        out->size() != c.output_names.size()) {
      return absl::InvalidArgumentError(
          "test data does not match the model's inputs/outputs");
    }
    for (size_t i = 0; i < in->size(); ++i) {
      NamedTensor& t = (*in)[i];
      t.name = input_names[i];
      auto it = declared_inputs.find(t.name);
      if (auto s = RetagBFloat16(
              it == declared_inputs.end() ? nullptr : it->second, t);
          !s.ok()) {
        return s;
      }
      relaxed |= RelaxCastLikeTarget(repaired, t);
    }
    for (size_t i = 0; i < out->size(); ++i) {
      if (auto s = RetagBFloat16(&model.graph().output(static_cast<int>(i)),
                                 (*out)[i]);
          !s.ok()) {
        return s;
      }
    }
    ds.inputs = *std::move(in);
    ds.outputs = *std::move(out);
    c.sets.push_back(std::move(ds));
  }
  if (c.sets.empty()) return absl::NotFoundError("no test data");
  c.model = relaxed ? repaired.SerializeAsString() : *std::move(bytes);
  return c;
}

std::string CompareOnnxOutput(const Tensor& actual, const Tensor& expected) {
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
    const double rtol =
        expected.dtype() == DType::kBFloat16 ? kBFloat16Rtol : kRtol;
    for (int64_t i = 0; i < n; ++i) {
      const double a = FloatAt(actual, i);
      const double e = FloatAt(expected, i);
      if (std::isnan(a) && std::isnan(e)) continue;
      if (a == e) continue;  // Equal infinities.
      if (!(std::fabs(a - e) <= kAtol + rtol * std::fabs(e))) {
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

CaseResult RunOnnxCase(CaseBackend& backend, const std::string& dir,
                       const std::string& name) {
  absl::StatusOr<OnnxCase> c = ReadOnnxCase(dir);
  if (!c.ok()) return {Outcome::kRefused, StatusText(c.status())};

  CaseResult result{Outcome::kPass, ""};
  std::string added;  // Network name currently added.
  std::map<std::string, Shape> bound;
  int version = 0;
  for (size_t s = 0; s < c->sets.size() && result.outcome == Outcome::kPass;
       ++s) {
    const OnnxCase::DataSet& ds = c->sets[s];
    // Bind the inputs' shapes to this data set's; re-add when they change.
    AddNetworkOptions options;
    for (const NamedTensor& t : ds.inputs) {
      options.input_shapes[t.name] = t.tensor.shape();
    }
    if (added.empty() || options.input_shapes != bound) {
      if (!added.empty()) backend.Remove(added);
      added = absl::StrCat(name, "#", version++);
      bound = options.input_shapes;
      absl::StatusOr<NetworkInfo> info = backend.Add(added, c->model, options);
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
    absl::StatusOr<std::vector<NamedTensor>> outputs =
        backend.Run(added, ds.inputs);
    if (!outputs.ok()) {
      result = {Outcome::kRefused,
                "RunNetwork: " + StatusText(outputs.status())};
      break;
    }
    std::map<std::string, const Tensor*> by_name;
    for (const NamedTensor& t : *outputs) by_name[t.name] = &t.tensor;
    for (size_t i = 0; i < c->output_names.size(); ++i) {
      auto it = by_name.find(c->output_names[i]);
      if (it == by_name.end()) {
        result = {Outcome::kMismatch,
                  absl::StrCat("output '", c->output_names[i], "' missing")};
        break;
      }
      const std::string diff = CompareOnnxOutput(*it->second, ds.outputs[i].tensor);
      if (!diff.empty()) {
        result = {Outcome::kMismatch,
                  absl::StrCat("data set ", s, " output '",
                               c->output_names[i], "': ", diff)};
        break;
      }
    }
  }
  if (!added.empty()) backend.Remove(added);
  return result;
}

std::vector<std::string> ListOnnxNodeCases() {
  std::vector<std::string> cases;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kOnnxNodeDir, ec)) {
    if (e.is_directory()) cases.push_back(e.path().filename().string());
  }
  std::sort(cases.begin(), cases.end());
  return cases;
}

std::map<std::string, Outcome> ReadExpectedOutcomes(const std::string& path) {
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

}  // namespace testing
}  // namespace glint
