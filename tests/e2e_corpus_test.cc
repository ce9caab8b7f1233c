// The corpus of real exports through a real glintd (tests/corpus/): the
// architectures people export with PyTorch (Debian's torch 1.13 and
// torchvision 0.14, random weights from a fixed seed: torchvision's
// classification, detection and segmentation networks, a BERT-style
// encoder and a GPT-style decoder with dynamic batch and sequence axes, an
// LSTM tagger with a dynamic sequence) and graphs at opsets 18-23 built
// with onnx.helper for what newer exporters write. make_corpus.sh exports
// them into the test's temporary folder with their inputs and ONNX
// Runtime's outputs (npm's onnxruntime-node); each is added to glintd with
// its inputs' shapes, run, compared with ONNX Runtime output by output
// (largest difference at most 1e-4 of the output's largest magnitude;
// integers exactly) and removed. The table it prints is the corpus table
// of the issue "The models people export". A second test imports each
// export with dynamic axes in-process, as an add with no shape option
// does, and checks the names of its dims against ONNX's own inference at
// the corpus's fixed shapes (DynamicImportsNameEveryDimAsStaticOnesSizeIt).
//
// GLINT_CORPUS_DIR=DIR reuses a corpus made by `make_corpus.sh DIR`;
// GLINT_CORPUS_MODELS=a,b limits the run to those models.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/dim_expr.h"
#include "core/graph.h"
#include "gtest/gtest.h"
#include "onnx/onnx_importer.h"
#include "tests/corpus_util.h"
#include "tests/process_util.h"

namespace glint {
namespace {

using testing::CorpusModel;
using testing::GlintdProcess;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// GLINT_CORPUS_MODELS, and whether `model` is one of them (all when unset).
bool Selected(const CorpusModel& model) {
  const std::string only = Env("GLINT_CORPUS_MODELS");
  return only.empty() ||
         absl::StrCat(",", only, ",")
                 .find(absl::StrCat(",", model.name, ",")) != std::string::npos;
}

// The corpus folder, made once for the test binary (both tests read it).
const std::string& CorpusDir() {
  static const std::string* const dir = [] {
    auto* d = new std::string(Env("GLINT_CORPUS_DIR"));
    if (d->empty()) {
      *d = testing::NewTempDir("corpus");
      const absl::Time start = absl::Now();
      absl::StatusOr<std::string> made = testing::MakeCorpus(
          *d, Env("GLINT_CORPUS_MODELS"), /*ort_time_iters=*/0);
      EXPECT_TRUE(made.ok()) << made.status();
      std::printf("corpus made in %.0f s\n",
                  absl::ToDoubleSeconds(absl::Now() - start));
    }
    return d;
  }();
  return *dir;
}

TEST(E2eCorpusTest, EveryExportMatchesOnnxRuntimeThroughGlintd) {
  const std::string& dir = CorpusDir();
  absl::StatusOr<std::vector<CorpusModel>> models =
      testing::ReadCorpusManifest(dir);
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_GE(models->size(), 30u) << "the corpus lost models";

  absl::StatusOr<std::unique_ptr<GlintdProcess>> glintd =
      GlintdProcess::Start({"--devices=sim:memory=8GiB", "--store_dir=",
                            "--log_level=warning"},
                           absl::Seconds(60));
  ASSERT_TRUE(glintd.ok()) << glintd.status();
  // A client of its own: the harness bounds a call by 180 s under the
  // sanitizers, and adding the corpus's largest network (ViT-B/16, 346 MB)
  // took longer than that under TSan on 2 cores.
  ClientOptions options;
  options.rpc_timeout = absl::Minutes(15);
  absl::StatusOr<std::unique_ptr<GlintClient>> connected =
      GlintClient::Connect((*glintd)->address(), options);
  ASSERT_TRUE(connected.ok()) << connected.status();
  GlintClient& client = **connected;

  std::printf("%-34s %-11s %5s %5s %-5s %10s %9s\n", "model", "exporter",
              "opset", "nodes", "match", "max_diff", "relative");
  std::vector<std::string> failed, not_made;
  int matched = 0;
  for (const CorpusModel& model : *models) {
    if (!Selected(model)) continue;
    if (model.file.empty()) {
      // The exporter (or ONNX Runtime) refused it: said, not failed.
      std::printf("%-34s not made: %s\n", model.name.c_str(),
                  model.not_made.c_str());
      not_made.push_back(model.name);
      continue;
    }
    SCOPED_TRACE(model.name);
    auto fail = [&](const std::string& why) {
      ADD_FAILURE() << model.name << ": " << why;
      std::printf("%-34s %-11s %5lld %5lld FAIL  %s\n", model.name.c_str(),
                  model.exporter.c_str(), static_cast<long long>(model.opset),
                  static_cast<long long>(model.nodes), why.c_str());
      failed.push_back(model.name);
    };
    absl::StatusOr<std::vector<NamedTensor>> inputs =
        testing::ReadCorpusInputs(dir, model);
    absl::StatusOr<std::vector<Tensor>> want =
        testing::ReadOrtOutputs(dir, model);
    if (!inputs.ok() || !want.ok()) {
      fail(absl::StrCat("corpus files: ",
                        (inputs.ok() ? want.status() : inputs.status())
                            .ToString()));
      continue;
    }
    AddNetworkOptions options;
    options.input_shapes = model.input_shapes;
    absl::StatusOr<NetworkInfo> added = client.AddNetwork(
        model.name, ReadFile(absl::StrCat(dir, "/", model.file)), options);
    if (!added.ok()) {
      fail(absl::StrCat("AddNetwork: ", added.status().ToString()));
      continue;
    }
    // Every value of a launch is sized at the bounds and reserved, the
    // sizes the data decides (NonZero's, the boxes NMS keeps) at theirs.
    for (const PartitionInfo& p : added->partitions) {
      EXPECT_EQ(p.unsized_values, 0) << p.name;
    }
    std::map<std::string, int64_t> bounds;
    for (const DynamicDim& d : added->dynamic_dims) {
      if (!d.name.empty()) bounds[d.name] = d.max;
    }
    absl::StatusOr<std::vector<NamedTensor>> got =
        client.RunNetwork(model.name, *inputs);
    if (!got.ok()) {
      fail(absl::StrCat("RunNetwork: ", got.status().ToString()));
    } else {
      double worst_diff = 0, worst_rel = 0;
      std::string why;
      for (size_t k = 0; k < model.outputs.size() && why.empty(); ++k) {
        const Tensor* out = nullptr;
        for (const NamedTensor& t : *got) {
          if (t.name == model.outputs[k]) out = &t.tensor;
        }
        if (out == nullptr) {
          why = absl::StrCat("no output '", model.outputs[k], "'");
          break;
        }
        testing::Agreement a = testing::CompareWithReference(*out, (*want)[k]);
        worst_diff = std::max(worst_diff, a.max_abs_diff);
        worst_rel = std::max(
            worst_rel, a.max_magnitude > 0 ? a.max_abs_diff / a.max_magnitude
                                           : a.max_abs_diff);
        if (!a.ok) why = absl::StrCat("output '", model.outputs[k], "': ", a.why);
        // The memory reserved for it covers what ONNX Runtime computed:
        // the boxes a detector keeps are at most their bound.
        for (const ValueInfo& info : added->outputs) {
          if (info.name != model.outputs[k] || !why.empty()) continue;
          const std::optional<uint64_t> bound = info.BytesWithin(bounds);
          if (!bound.has_value() || *bound < (*want)[k].num_bytes()) {
            why = absl::StrCat("output '", info.name, "' ", info.ShapeString(),
                               " is sized ", bound.value_or(0),
                               " bytes at the bounds; ONNX "
                               "Runtime's is ",
                               (*want)[k].num_bytes());
          }
        }
      }
      if (!why.empty()) {
        fail(why);
      } else {
        ++matched;
        std::printf("%-34s %-11s %5lld %5lld %-5s %10.2e %9.2e\n",
                    model.name.c_str(), model.exporter.c_str(),
                    static_cast<long long>(model.opset),
                    static_cast<long long>(model.nodes), "yes", worst_diff,
                    worst_rel);
      }
    }
    EXPECT_TRUE(client.RemoveNetwork(model.name).ok());
    std::fflush(stdout);
  }
  std::printf("%d matched ONNX Runtime, %zu failed (%s), %zu not made (%s)\n",
              matched, failed.size(), absl::StrJoin(failed, ", ").c_str(),
              not_made.size(), absl::StrJoin(not_made, ", ").c_str());
  // The daemon computed every model and is still serving.
  EXPECT_TRUE((*glintd)->CheckHealth(absl::Seconds(5)).ok());
}

// Every dim a dynamic import of a real export names (ONNX's, and those the
// importer derives: a convolution's `(height+1)/2`, a window partition's
// `64*batch`) is, at each shape the corpus runs the model at, the size
// ONNX's inference gives that value when the inputs are fixed to it (at
// least that size, for a size the data decides: its name is its bound).
// And every value of every export, the detectors' boxes too, has a name or
// a size for each dim, so the memory reserved for a network's bounds covers
// it. In-process imports: the oracle is ONNX itself, on the same file.
TEST(E2eCorpusTest, DynamicImportsNameEveryDimAsStaticOnesSizeIt) {
  const std::string& dir = CorpusDir();
  absl::StatusOr<std::vector<CorpusModel>> models =
      testing::ReadCorpusManifest(dir);
  ASSERT_TRUE(models.ok()) << models.status();
  int models_checked = 0;
  for (const CorpusModel& model : *models) {
    if (!Selected(model) || model.file.empty()) continue;
    SCOPED_TRACE(model.name);
    const std::string bytes = ReadFile(absl::StrCat(dir, "/", model.file));
    absl::StatusOr<Graph> dynamic = ImportOnnxModel(bytes);
    ASSERT_TRUE(dynamic.ok()) << dynamic.status();
    std::map<std::string, int64_t> bounds;
    for (const ValueInfo& in : dynamic->inputs) {
      for (int axis = 0; axis < in.shape.rank(); ++axis) {
        if (!in.DimName(axis).empty()) bounds[in.DimName(axis)] = 8;
      }
    }
    std::vector<std::string> unsized;
    for (const auto& [name, v] : dynamic->values) {
      if (!v.BytesWithin(bounds).has_value()) {
        unsized.push_back(absl::StrCat(name, v.ShapeString()));
      }
    }
    EXPECT_TRUE(unsized.empty())
        << unsized.size() << " values no bound sizes, e.g. " << unsized.front();
    if (bounds.empty()) continue;  // Static inputs: no name to check.
    ++models_checked;
    std::vector<std::map<std::string, Shape>> shape_sets = {model.input_shapes};
    shape_sets.insert(shape_sets.end(), model.shape_sets.begin(),
                      model.shape_sets.end());
    // And at a batch of 3 (most exports come at batch 1 alone, where a
    // product of the batch by itself would pass for the batch).
    std::map<std::string, Shape> batch3 = model.input_shapes;
    for (const ValueInfo& in : dynamic->inputs) {
      auto it = batch3.find(in.name);
      if (it != batch3.end() && it->second.rank() > 0 &&
          in.shape.rank() == it->second.rank() && !in.DimName(0).empty()) {
        std::vector<int64_t> dims = it->second.dims();
        dims[0] = 3;
        it->second = Shape(dims);
      }
    }
    shape_sets.push_back(batch3);
    int checked = 0;
    for (const auto& shapes : shape_sets) {
      // The named dims' sizes in this set, from the inputs that carry them.
      std::map<std::string, int64_t> sizes;
      for (const ValueInfo& in : dynamic->inputs) {
        auto it = shapes.find(in.name);
        if (it == shapes.end() || it->second.rank() != in.shape.rank()) {
          continue;
        }
        for (int axis = 0; axis < in.shape.rank(); ++axis) {
          if (!in.DimName(axis).empty()) {
            sizes[in.DimName(axis)] = it->second.dim(axis);
          }
        }
      }
      ImportOptions options;
      options.input_shapes = shapes;
      absl::StatusOr<Graph> fixed = ImportOnnxModel(bytes, options);
      ASSERT_TRUE(fixed.ok()) << fixed.status();
      for (const auto& [name, v] : dynamic->values) {
        const ValueInfo* s = fixed->FindValue(name);
        if (s == nullptr || !v.shape.has_rank() ||
            s->shape.rank() != v.shape.rank()) {
          continue;
        }
        for (int axis = 0; axis < v.shape.rank(); ++axis) {
          const std::string& dim = v.DimName(axis);
          if (s->shape.dim(axis) < 0) continue;  // Data-dependent.
          if (v.shape.dim(axis) >= 0) {
            // Known in both (a Reshape's -1 worked out as ShuffleNet's 116).
            EXPECT_EQ(v.shape.dim(axis), s->shape.dim(axis))
                << name << v.ShapeString() << " axis " << axis;
            continue;
          }
          if (dim.empty() || !EvaluateDim(dim, bounds).has_value()) {
            continue;  // A name ONNX invented, or the exporter gave.
          }
          if (IsDataDependentDim(dim)) {
            EXPECT_GE(EvaluateDim(dim, sizes).value_or(-1), s->shape.dim(axis))
                << name << v.ShapeString() << " axis " << axis;
          } else {
            EXPECT_EQ(EvaluateDim(dim, sizes), s->shape.dim(axis))
                << name << v.ShapeString() << " axis " << axis;
          }
          ++checked;
        }
      }
    }
    std::printf(
        "%-34s %4zu named dims checked at %zu shapes, %zu values "
        "unsized\n",
        model.name.c_str(), static_cast<size_t>(checked), shape_sets.size(),
        unsized.size());
    EXPECT_GT(checked, 0);
  }
  EXPECT_GE(models_checked, 10) << "the corpus lost its dynamic exports";
}

}  // namespace
}  // namespace glint
