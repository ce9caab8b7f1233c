// Shapes per request through a real glintd: real PyTorch exports with
// dynamic axes (tests/corpus: a BERT-style encoder and a GPT-style decoder,
// batch and sequence; an LSTM tagger, sequence; MobileNetV3, batch and
// image size) are each added once with no shape option and answer every
// shape the corpus has for them (NAME/ and NAME/shape_1..4, five each),
// compared with ONNX Runtime on the same inputs: one shape after another,
// then 64 runs of mixed shapes in flight at once. Each model is added three
// ways: on one device, split over two (load_balanced) and as two replicas.
// Metadata reports the dynamic dims as -1 with their bounds; a request over
// a bound, or with two sizes for one named dim, is INVALID_ARGUMENT naming
// the dim; and after a restart the restored network keeps its bounds and
// gives the same bytes. Statistics count the kernel builds of new shapes.
// With dynamic batching, requests of one shape
// merge and still get ONNX Runtime's outputs.
//
// GLINT_CORPUS_DIR=DIR reuses a corpus made by `make_corpus.sh DIR`.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "tests/corpus_util.h"
#include "tests/process_util.h"

namespace glint {
namespace {

using testing::CorpusModel;
using testing::GlintdProcess;

constexpr char kModels[] =
    "bert_encoder,gpt_decoder,lstm_tagger,mobilenet_v3_large";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One shape of one model: its inputs and ONNX Runtime's outputs.
struct ShapeCase {
  std::string label;  // "shape 2: input_ids [3, 32], ..."
  std::vector<NamedTensor> inputs;
  std::vector<Tensor> want;
};

struct Corpus {
  std::string dir;
  std::vector<CorpusModel> models;
};

// The corpus of kModels, made once for the whole test binary.
const Corpus& GetCorpus() {
  static const Corpus* corpus = [] {
    auto* c = new Corpus;
    const char* dir = std::getenv("GLINT_CORPUS_DIR");
    if (dir != nullptr && *dir != '\0') {
      c->dir = dir;
    } else {
      c->dir = testing::NewTempDir("shapes_corpus");
      absl::StatusOr<std::string> made =
          testing::MakeCorpus(c->dir, kModels, /*ort_time_iters=*/0);
      EXPECT_TRUE(made.ok()) << made.status();
    }
    absl::StatusOr<std::vector<CorpusModel>> all =
        testing::ReadCorpusManifest(c->dir);
    EXPECT_TRUE(all.ok()) << all.status();
    if (all.ok()) {
      for (CorpusModel& m : *all) {
        if (absl::StrContains(absl::StrCat(",", kModels, ","),
                              absl::StrCat(",", m.name, ","))) {
          c->models.push_back(std::move(m));
        }
      }
    }
    return c;
  }();
  return *corpus;
}

std::vector<ShapeCase> ReadCases(const std::string& dir,
                                 const CorpusModel& model) {
  std::vector<ShapeCase> cases;
  for (int s = 0; s <= static_cast<int>(model.shape_sets.size()); ++s) {
    absl::StatusOr<std::vector<NamedTensor>> inputs =
        testing::ReadCorpusInputs(dir, model, s);
    absl::StatusOr<std::vector<Tensor>> want =
        testing::ReadOrtOutputs(dir, model, s);
    EXPECT_TRUE(inputs.ok()) << inputs.status();
    EXPECT_TRUE(want.ok()) << want.status();
    if (!inputs.ok() || !want.ok()) return {};
    ShapeCase c;
    c.label = absl::StrCat(model.name, " shape ", s, ":");
    for (const NamedTensor& in : *inputs) {
      absl::StrAppend(&c.label, " ", in.name, in.tensor.shape().ToString());
    }
    c.inputs = *std::move(inputs);
    c.want = *std::move(want);
    cases.push_back(std::move(c));
  }
  return cases;
}

// Why `got` (a run's reply) differs from `c`'s reference; "" when it
// agrees within 1e-4 of each output's largest magnitude.
std::string Disagreement(const CorpusModel& model, const ShapeCase& c,
                         const absl::StatusOr<std::vector<NamedTensor>>& got) {
  if (!got.ok()) return got.status().ToString();
  for (size_t k = 0; k < model.outputs.size(); ++k) {
    const Tensor* out = nullptr;
    for (const NamedTensor& t : *got) {
      if (t.name == model.outputs[k]) out = &t.tensor;
    }
    if (out == nullptr) return absl::StrCat("no output '", model.outputs[k], "'");
    testing::Agreement a = testing::CompareWithReference(*out, c.want[k]);
    if (!a.ok) return absl::StrCat("output '", model.outputs[k], "': ", a.why);
  }
  return "";
}

// Runs every case in turn, then 64 runs cycling through the cases, all in
// flight at once.
void ExpectEveryShape(GlintClient& client, const std::string& network,
                      const CorpusModel& model,
                      const std::vector<ShapeCase>& cases) {
  for (const ShapeCase& c : cases) {
    EXPECT_EQ(Disagreement(model, c, client.RunNetwork(network, c.inputs)), "")
        << network << ", " << c.label;
  }
  constexpr int kInFlight = 64;
  absl::Mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int i = 0; i < kInFlight; ++i) {
    threads.emplace_back([&, i] {
      const ShapeCase& c = cases[i % cases.size()];
      std::string why =
          Disagreement(model, c, client.RunNetwork(network, c.inputs));
      if (!why.empty()) {
        absl::MutexLock lock(&mu);
        failures.push_back(absl::StrCat(c.label, ": ", why));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(failures.empty())
      << network << ": " << failures.size() << " of " << kInFlight
      << " concurrent runs failed; first: " << failures.front();
}

struct Layout {
  const char* suffix;
  AddNetworkOptions options;
};

std::vector<Layout> Layouts() {
  Layout one{"_1dev", {}};
  one.options.partition.strategy = PartitionStrategy::kWhole;
  Layout split{"_split2", {}};
  split.options.partition.strategy = PartitionStrategy::kLoadBalanced;
  split.options.partition.plan_devices = 2;
  Layout replicas{"_2replicas", {}};
  replicas.options.partition.replicas = 2;
  return {one, split, replicas};
}

TEST(E2eShapesPerRequestTest, OneAddServesEveryShapeAsOnnxRuntime) {
  const Corpus& corpus = GetCorpus();
  ASSERT_EQ(corpus.models.size(), 4u) << "the corpus lost models";
  absl::StatusOr<std::unique_ptr<GlintdProcess>> glintd = GlintdProcess::Start(
      {"--devices=sim:memory=2GiB,sim:memory=2GiB", "--store_dir=",
       "--log_level=warning"},
      absl::Seconds(60));
  ASSERT_TRUE(glintd.ok()) << glintd.status();
  GlintClient& client = (*glintd)->client();
  for (const CorpusModel& model : corpus.models) {
    SCOPED_TRACE(model.name);
    ASSERT_GE(model.shape_sets.size(), 4u);
    const std::vector<ShapeCase> cases = ReadCases(corpus.dir, model);
    ASSERT_EQ(cases.size(), model.shape_sets.size() + 1);
    const std::string bytes =
        ReadFile(absl::StrCat(corpus.dir, "/", model.file));
    for (const Layout& layout : Layouts()) {
      const std::string name = model.name + layout.suffix;
      absl::StatusOr<NetworkInfo> info =
          client.AddNetwork(name, bytes, layout.options);
      ASSERT_TRUE(info.ok()) << name << ": " << info.status();
      // Every input has a dynamic dim, reported as -1 with its bound.
      ASSERT_FALSE(info->dynamic_dims.empty());
      // Bounds no option gave start at kDefaultMaxDim and are lowered
      // until the devices can reserve a run at them (a leading batch dim
      // first, down to 8: BERT settles at batch 8, seq 1024 on 2 GiB);
      // every shape of the corpus is within them.
      for (const DynamicDim& d : info->dynamic_dims) {
        EXPECT_LE(d.max, kDefaultMaxDim);
        EXPECT_GE(d.max, d.axis == 0 ? 8 : 256) << d.Key();
        EXPECT_FALSE(d.name.empty()) << d.input << ":" << d.axis;
        for (const ValueInfo& in : info->inputs) {
          if (in.name == d.input) {
            EXPECT_EQ(in.shape.dim(d.axis), -1);
          }
        }
      }
      // Every output dim that is not fixed is one of those, by name: the
      // names reached the outputs through the whole network (Range,
      // reshapes, attention) and over glint.v1.
      for (const ValueInfo& out : info->outputs) {
        for (int axis = 0; axis < out.shape.rank(); ++axis) {
          if (out.shape.dim(axis) != Shape::kUnknownDim) continue;
          const std::string& dim = out.DimName(axis);
          bool an_input_dim = false;
          for (const DynamicDim& d : info->dynamic_dims) {
            an_input_dim = an_input_dim || (!dim.empty() && d.name == dim);
          }
          EXPECT_TRUE(an_input_dim)
              << name << ": output " << out.name << out.ShapeString();
        }
      }
      if (layout.options.partition.plan_devices == 2) {
        EXPECT_EQ(info->partitions.size(), 2u) << name;
      }
      // Every value is sized at the bounds by named dims (MobileNetV3's
      // activations by its convolutions' arithmetic, `(height+1)/2`...):
      // each partition's launch peak is reserved on its device, and no
      // value is left for runs to allocate beyond it.
      for (const PartitionInfo& p : info->partitions) {
        EXPECT_GT(p.launch_bytes, 0u) << name << " " << p.name;
        EXPECT_EQ(p.unsized_values, 0) << name << " " << p.name;
      }
      absl::StatusOr<std::vector<DeviceInfo>> devices = client.GetDevices();
      ASSERT_TRUE(devices.ok()) << devices.status();
      EXPECT_GT((*devices)[0].launch_reserved_bytes, 0u) << name;
      ExpectEveryShape(client, name, model, cases);
      if (model.name == "mobilenet_v3_large") {
        // Each new image size built its convolutions' primitives once, and
        // statistics say so (oneDNN convolutions on every CPU).
        absl::StatusOr<ServingStatistics> stats = client.GetStatistics(name);
        ASSERT_TRUE(stats.ok()) << stats.status();
        ASSERT_EQ(stats->networks.size(), 1u);
        EXPECT_GE(stats->networks[0].shape_builds, cases.size()) << name;
        EXPECT_GT(stats->networks[0].shape_build_time, absl::ZeroDuration());
      }
      EXPECT_TRUE(client.RemoveNetwork(name).ok());
    }
  }
  EXPECT_TRUE((*glintd)->CheckHealth(absl::Seconds(5)).ok());
}

// Dynamic batching with a dynamic dim beside the batch: requests of one
// shape merge (a sequence length, an image size), and every answer is
// ONNX Runtime's for the request alone. Every model whose inputs all lead
// with the batch (the LSTM tagger's is fixed at 1).
TEST(E2eShapesPerRequestTest, BatchingMergesRequestsOfOneShape) {
  const Corpus& corpus = GetCorpus();
  absl::StatusOr<std::unique_ptr<GlintdProcess>> glintd = GlintdProcess::Start(
      {"--devices=sim:memory=2GiB", "--store_dir=", "--log_level=warning"},
      absl::Seconds(60));
  ASSERT_TRUE(glintd.ok()) << glintd.status();
  GlintClient& client = (*glintd)->client();
  int batched_models = 0;
  for (const CorpusModel& model : corpus.models) {
    if (model.name == "lstm_tagger") continue;
    SCOPED_TRACE(model.name);
    const std::vector<ShapeCase> cases = ReadCases(corpus.dir, model);
    ASSERT_FALSE(cases.empty());
    AddNetworkOptions options;
    options.batching.max_batch_size = 8;
    options.batching.max_queue_delay = absl::Milliseconds(2);
    const std::string name = model.name + "_batched";
    absl::StatusOr<NetworkInfo> info = client.AddNetwork(
        name, ReadFile(absl::StrCat(corpus.dir, "/", model.file)), options);
    ASSERT_TRUE(info.ok()) << info.status();
    for (const ValueInfo& in : info->inputs) {
      EXPECT_EQ(in.shape.dim(0), 8) << in.name;  // Bound, not dynamic.
    }
    for (const DynamicDim& d : info->dynamic_dims) EXPECT_NE(d.axis, 0);
    ExpectEveryShape(client, name, model, cases);
    absl::StatusOr<ServingStatistics> stats = client.GetStatistics(name);
    ASSERT_TRUE(stats.ok()) << stats.status();
    ASSERT_EQ(stats->networks.size(), 1u);
    // 64 runs of 5 shapes in flight at once: some shared an execution.
    EXPECT_LT(stats->networks[0].execution_count,
              stats->networks[0].success_count);
    EXPECT_TRUE(client.RemoveNetwork(name).ok());
    ++batched_models;
  }
  EXPECT_EQ(batched_models, 3);
  EXPECT_TRUE((*glintd)->CheckHealth(absl::Seconds(5)).ok());
}

const CorpusModel* FindModel(const std::string& name) {
  for (const CorpusModel& m : GetCorpus().models) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

// Bounds given at AddNetwork hold every request to them, by the dim's
// name; an unknown key or a bound out of range is refused at AddNetwork.
TEST(E2eShapesPerRequestTest, BoundsAndNamedDimsAreEnforced) {
  const CorpusModel* bert = FindModel("bert_encoder");
  ASSERT_NE(bert, nullptr);
  const std::vector<ShapeCase> cases = ReadCases(GetCorpus().dir, *bert);
  ASSERT_GE(cases.size(), 5u);
  absl::StatusOr<std::unique_ptr<GlintdProcess>> glintd = GlintdProcess::Start(
      {"--devices=sim:memory=2GiB", "--store_dir=", "--log_level=warning"},
      absl::Seconds(60));
  ASSERT_TRUE(glintd.ok()) << glintd.status();
  GlintClient& client = (*glintd)->client();
  const std::string bytes =
      ReadFile(absl::StrCat(GetCorpus().dir, "/", bert->file));

  AddNetworkOptions bad;
  bad.max_dims["sequence"] = 16;
  absl::StatusOr<NetworkInfo> refused = client.AddNetwork("b", bytes, bad);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(refused.status().message(),
                                "max_dims names 'sequence'"))
      << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "batch, seq"))
      << refused.status();
  bad.max_dims = {{"seq", 0}};
  EXPECT_EQ(client.AddNetwork("b", bytes, bad).status().code(),
            absl::StatusCode::kInvalidArgument);

  AddNetworkOptions options;
  options.max_dims = {{"seq", 16}, {"batch", 4}};
  absl::StatusOr<NetworkInfo> info = client.AddNetwork("b", bytes, options);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->dynamic_dims.size(), 4u);  // Two inputs, batch and seq.
  for (const DynamicDim& d : info->dynamic_dims) {
    EXPECT_EQ(d.max, d.name == "seq" ? 16 : 4) << d.input << ":" << d.axis;
  }
  int within = 0;
  for (const ShapeCase& c : cases) {
    const Shape& shape = c.inputs[0].tensor.shape();  // input_ids [B, S]
    absl::StatusOr<std::vector<NamedTensor>> got =
        client.RunNetwork("b", c.inputs);
    if (shape.dim(0) <= 4 && shape.dim(1) <= 16) {
      ++within;
      EXPECT_EQ(Disagreement(*bert, c, got), "") << c.label;
    } else {
      EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument)
          << c.label;
      EXPECT_TRUE(absl::StrContains(got.status().message(), "over its bound"))
          << got.status();
    }
  }
  EXPECT_GE(within, 2);
  EXPECT_LE(within, 4);
  // input_ids [1, 8] with attention_mask [1, 64]: "seq" is one size.
  std::vector<NamedTensor> mixed = cases[1].inputs;
  ASSERT_EQ(mixed[0].tensor.shape(), Shape({1, 8}));
  mixed[1].tensor = cases[4].inputs[1].tensor;
  ASSERT_EQ(mixed[1].tensor.shape(), Shape({1, 64}));
  absl::StatusOr<std::vector<NamedTensor>> got = client.RunNetwork("b", mixed);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(got.status().message(), "('seq')"))
      << got.status();
  EXPECT_TRUE((*glintd)->CheckHealth(absl::Seconds(5)).ok());
}

// Sizes at the low edge: each dynamic dim at 0 (an empty batch, an empty
// sequence) and at 2, on every model. A size of 2 answers; a 0 either
// answers (empty outputs for an empty batch) or fails with a clear status;
// glintd stays up and then still answers a normal shape exactly.
TEST(E2eShapesPerRequestTest, EmptySizesNeverTakeGlintdDown) {
  absl::StatusOr<std::unique_ptr<GlintdProcess>> glintd = GlintdProcess::Start(
      {"--devices=sim:memory=2GiB", "--store_dir=", "--log_level=warning"},
      absl::Seconds(60));
  ASSERT_TRUE(glintd.ok()) << glintd.status();
  GlintClient& client = (*glintd)->client();
  for (const CorpusModel& model : GetCorpus().models) {
    SCOPED_TRACE(model.name);
    const std::vector<ShapeCase> cases = ReadCases(GetCorpus().dir, model);
    ASSERT_FALSE(cases.empty());
    AddNetworkOptions options;
    absl::StatusOr<NetworkInfo> info = client.AddNetwork(
        model.name,
        ReadFile(absl::StrCat(GetCorpus().dir, "/", model.file)), options);
    ASSERT_TRUE(info.ok()) << info.status();
    for (const DynamicDim& d : info->dynamic_dims) {
      for (int64_t size : {int64_t{0}, int64_t{2}}) {
        // Every input with a dim of this name (or this very dim) at `size`,
        // the other dims as in the first case; values 0 (valid token ids).
        std::vector<NamedTensor> inputs;
        for (const NamedTensor& in : cases[0].inputs) {
          std::vector<int64_t> dims = in.tensor.shape().dims();
          for (const DynamicDim& e : info->dynamic_dims) {
            if (e.input == in.name && (e.Key() == d.Key())) dims[e.axis] = size;
          }
          absl::StatusOr<Tensor> t =
              Tensor::Create(in.tensor.dtype(), Shape(dims));
          ASSERT_TRUE(t.ok());
          std::memset(t->raw_data(), 0, t->num_bytes());
          inputs.push_back({in.name, *std::move(t)});
        }
        absl::StatusOr<std::vector<NamedTensor>> got =
            client.RunNetwork(model.name, inputs);
        std::printf("%s %s=%lld: %s\n", model.name.c_str(), d.Key().c_str(),
                    static_cast<long long>(size),
                    got.ok() ? "ok" : got.status().ToString().c_str());
        // Every model computes a size of 2; a 0 may be refused, clearly.
        if (size > 0) {
          EXPECT_TRUE(got.ok()) << d.Key() << "=" << size << ": "
                                << got.status();
        }
        if (!got.ok()) {
          // A clear refusal, never a crash or an internal error.
          EXPECT_NE(got.status().code(), absl::StatusCode::kInternal)
              << d.Key() << "=" << size << ": " << got.status();
          EXPECT_NE(got.status().code(), absl::StatusCode::kUnavailable)
              << d.Key() << "=" << size << ": " << got.status();
        }
      }
    }
    EXPECT_EQ(Disagreement(model, cases.back(),
                           client.RunNetwork(model.name, cases.back().inputs)),
              "");
    EXPECT_TRUE(client.RemoveNetwork(model.name).ok());
  }
  EXPECT_TRUE((*glintd)->CheckHealth(absl::Seconds(5)).ok());
}

// The bounds are part of the durable network: a restarted glintd restores
// the GPT decoder with them and answers every shape with the same bytes.
TEST(E2eShapesPerRequestTest, RestartKeepsBoundsAndBytes) {
  const CorpusModel* gpt = FindModel("gpt_decoder");
  ASSERT_NE(gpt, nullptr);
  const std::vector<ShapeCase> cases = ReadCases(GetCorpus().dir, *gpt);
  ASSERT_GE(cases.size(), 5u);
  const std::string store = testing::NewTempDir("shapes_store");
  const std::vector<std::string> args = {
      "--devices=sim:memory=2GiB", absl::StrCat("--store_dir=", store),
      "--log_level=warning"};
  AddNetworkOptions options;
  options.max_dims = {{"seq", 100}};
  std::vector<std::vector<NamedTensor>> before;
  {
    absl::StatusOr<std::unique_ptr<GlintdProcess>> glintd =
        GlintdProcess::Start(args, absl::Seconds(60));
    ASSERT_TRUE(glintd.ok()) << glintd.status();
    ASSERT_TRUE((*glintd)
                    ->client()
                    .AddNetwork("gpt",
                                ReadFile(absl::StrCat(GetCorpus().dir, "/",
                                                      gpt->file)),
                                options)
                    .ok());
    for (const ShapeCase& c : cases) {
      absl::StatusOr<std::vector<NamedTensor>> got =
          (*glintd)->client().RunNetwork("gpt", c.inputs);
      ASSERT_EQ(Disagreement(*gpt, c, got), "") << c.label;
      before.push_back(*std::move(got));
    }
    ASSERT_TRUE((*glintd)->Stop(SIGTERM, absl::Seconds(30)).ok());
  }
  absl::StatusOr<std::unique_ptr<GlintdProcess>> glintd =
      GlintdProcess::Start(args, absl::Seconds(60));
  ASSERT_TRUE(glintd.ok()) << glintd.status();
  absl::StatusOr<NetworkInfo> info = (*glintd)->client().GetNetwork("gpt");
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->dynamic_dims.size(), 2u);
  EXPECT_EQ(info->dynamic_dims[1].name, "seq");
  EXPECT_EQ(info->dynamic_dims[1].max, 100);
  for (size_t i = 0; i < cases.size(); ++i) {
    absl::StatusOr<std::vector<NamedTensor>> got =
        (*glintd)->client().RunNetwork("gpt", cases[i].inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), before[i].size());
    for (size_t k = 0; k < got->size(); ++k) {
      const Tensor& a = (*got)[k].tensor;
      const Tensor& b = before[i][k].tensor;
      ASSERT_EQ(a.shape(), b.shape()) << cases[i].label;
      EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.num_bytes()), 0)
          << cases[i].label;
    }
  }
}

}  // namespace
}  // namespace glint
