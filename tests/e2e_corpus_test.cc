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
// of the issue "The models people export".
//
// GLINT_CORPUS_DIR=DIR reuses a corpus made by `make_corpus.sh DIR`;
// GLINT_CORPUS_MODELS=a,b limits the run to those models.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
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

TEST(E2eCorpusTest, EveryExportMatchesOnnxRuntimeThroughGlintd) {
  std::string dir = Env("GLINT_CORPUS_DIR");
  const std::string only = Env("GLINT_CORPUS_MODELS");
  if (dir.empty()) {
    dir = testing::NewTempDir("corpus");
    const absl::Time start = absl::Now();
    absl::StatusOr<std::string> made =
        testing::MakeCorpus(dir, only, /*ort_time_iters=*/0);
    ASSERT_TRUE(made.ok()) << made.status();
    std::printf("corpus made in %.0f s\n",
                absl::ToDoubleSeconds(absl::Now() - start));
  }
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
    if (!only.empty() && absl::StrCat(",", only, ",").find(absl::StrCat(
                             ",", model.name, ",")) == std::string::npos) {
      continue;
    }
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

}  // namespace
}  // namespace glint
