#include "tests/corpus_util.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/npy.h"
#include "core/dtype.h"
#include "nlohmann/json.hpp"
#include "tests/process_util.h"

namespace glint::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Element `i` of a numeric tensor as a double.
double At(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32: return t.data<float>()[i];
    case DType::kFloat64: return t.data<double>()[i];
    case DType::kInt64: return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kInt32: return t.data<int32_t>()[i];
    case DType::kInt16: return t.data<int16_t>()[i];
    case DType::kInt8: return t.data<int8_t>()[i];
    case DType::kUInt8: return t.data<uint8_t>()[i];
    case DType::kUInt16: return t.data<uint16_t>()[i];
    case DType::kBool: return t.data<bool>()[i] ? 1 : 0;
    default: return std::nan("");
  }
}

bool IsFloat(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat64 ||
         d == DType::kFloat16 || d == DType::kBFloat16;
}

}  // namespace

absl::StatusOr<std::vector<CorpusModel>> ReadCorpusManifest(
    const std::string& dir) {
  std::ifstream in(dir + "/manifest.json");
  if (!in) return absl::NotFoundError(absl::StrCat("no ", dir, "/manifest.json"));
  json doc = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.contains("models") ||
      !doc["models"].is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, "/manifest.json is not a corpus manifest"));
  }
  std::vector<CorpusModel> models;
  for (const json& m : doc["models"]) {
    CorpusModel model;
    model.name = m.value("name", "");
    model.file = m.value("file", "");
    model.exporter = m.value("exporter", "");
    model.opset = m.value("opset", int64_t{0});
    model.nodes = m.value("nodes", int64_t{0});
    model.not_made = m.value("export_error", m.value("dropped", ""));
    if (m.contains("inputs")) {
      for (const json& i : m["inputs"]) {
        const std::string name = i.value("name", "");
        model.input_names.push_back(name);
        model.input_shapes[name] =
            Shape(i.value("shape", std::vector<int64_t>{}));
      }
    }
    if (m.contains("shape_sets")) {
      for (const json& set : m["shape_sets"]) {
        std::map<std::string, Shape> shapes;
        for (const json& i : set) {
          shapes[i.value("name", "")] =
              Shape(i.value("shape", std::vector<int64_t>{}));
        }
        model.shape_sets.push_back(std::move(shapes));
      }
    }
    if (m.contains("outputs")) {
      model.outputs = m["outputs"].get<std::vector<std::string>>();
    }
    if (model.name.empty()) {
      return absl::InvalidArgumentError("a manifest entry has no name");
    }
    models.push_back(std::move(model));
  }
  return models;
}

namespace {

// DIR/NAME/ or DIR/NAME/shape_S/.
std::string ModelDir(const std::string& dir, const CorpusModel& model,
                     int shape_set) {
  return shape_set > 0
             ? absl::StrCat(dir, "/", model.name, "/shape_", shape_set, "/")
             : absl::StrCat(dir, "/", model.name, "/");
}

}  // namespace

absl::StatusOr<std::vector<NamedTensor>> ReadCorpusInputs(
    const std::string& dir, const CorpusModel& model, int shape_set) {
  std::vector<NamedTensor> inputs;
  for (size_t k = 0; k < model.input_names.size(); ++k) {
    absl::StatusOr<Tensor> t = ReadNpyFile(
        absl::StrCat(ModelDir(dir, model, shape_set), "input_", k, ".npy"));
    if (!t.ok()) return t.status();
    inputs.push_back({model.input_names[k], *std::move(t)});
  }
  return inputs;
}

absl::StatusOr<std::vector<Tensor>> ReadOrtOutputs(const std::string& dir,
                                                   const CorpusModel& model,
                                                   int shape_set) {
  std::vector<Tensor> outputs;
  for (size_t k = 0; k < model.outputs.size(); ++k) {
    absl::StatusOr<Tensor> t = ReadNpyFile(absl::StrCat(
        ModelDir(dir, model, shape_set), "ort_output_", k, ".npy"));
    if (!t.ok()) return t.status();
    outputs.push_back(*std::move(t));
  }
  return outputs;
}

Agreement CompareWithReference(const Tensor& got, const Tensor& want,
                               double tolerance) {
  Agreement a;
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    a.why = absl::StrCat(DTypeName(got.dtype()), got.shape().ToString(),
                         " where ONNX Runtime gives ", DTypeName(want.dtype()),
                         want.shape().ToString());
    return a;
  }
  const int64_t n = want.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    a.max_magnitude = std::max(a.max_magnitude, std::fabs(At(want, i)));
  }
  bool nan_mismatch = false;
  for (int64_t i = 0; i < n; ++i) {
    const double g = At(got, i), w = At(want, i);
    if (std::isnan(g) || std::isnan(w)) {
      nan_mismatch = nan_mismatch || std::isnan(g) != std::isnan(w);
      continue;
    }
    a.max_abs_diff = std::max(a.max_abs_diff, std::fabs(g - w));
  }
  const double bound =
      IsFloat(want.dtype()) ? tolerance * std::max(a.max_magnitude, 1e-30) : 0;
  a.ok = !nan_mismatch && a.max_abs_diff <= bound;
  if (!a.ok) {
    a.why = nan_mismatch ? "NaN where ONNX Runtime has a number, or back"
                         : absl::StrCat("max abs difference ", a.max_abs_diff,
                                        " over ", bound);
  }
  return a;
}

absl::StatusOr<std::string> MakeCorpus(const std::string& out_dir,
                                       const std::string& models,
                                       int ort_time_iters) {
  // The script from the source tree: its node_modules lie beside it there,
  // not in the runfiles.
  std::error_code ec;
  const fs::path script =
      fs::canonical(RunfilePath("tests/corpus/make_corpus.sh"), ec);
  if (ec) return absl::NotFoundError("tests/corpus/make_corpus.sh not found");
  std::vector<std::string> argv = {
      "/usr/bin/env", absl::StrCat("ORT_TIME_ITERS=", ort_time_iters),
      "/bin/bash", script.string(), out_dir};
  if (!models.empty()) argv.push_back(models);
  absl::StatusOr<CommandResult> r = RunCommand(argv, absl::Minutes(30));
  if (!r.ok()) return r.status();
  const std::string output = r->stdout_text + r->stderr_text;
  if (r->exit_code != 0) {
    return absl::InternalError(
        absl::StrCat("make_corpus.sh failed (exit ", r->exit_code,
                     r->timed_out ? ", timed out" : "", "):\n", output));
  }
  return output;
}

}  // namespace glint::testing
