// KServe v2 REST through curl against a real glintd: health, metadata,
// inference on ONNX node cases from Debian's libonnx-testdata (added over
// gRPC, run over HTTP with JSON tensors, compared with the cases' expected
// outputs), and the error statuses. curl (Debian's `curl`) is a client no
// one here wrote: what it sends and reads is plain HTTP/1.1.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/file_util.h"
#include "client/tensor_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx/onnx_pb.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace glint {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using ::testing::HasSubstr;
using testing::GlintdProcess;

constexpr char kNodeTests[] = "/usr/share/libonnx-testdata/data/node/";

struct CurlReply {
  int status = 0;
  std::string content_type;
  std::string body;
};

// The JSON body of a failed reply must be exactly {"error": "..."}.
std::string ErrorOf(const CurlReply& reply) {
  EXPECT_EQ(reply.content_type, "application/json") << reply.body;
  const json doc = json::parse(reply.body, nullptr, false);
  const bool ok = doc.is_object() && doc.size() == 1 &&
                  doc.contains("error") && doc["error"].is_string();
  EXPECT_TRUE(ok) << reply.body;
  return ok ? doc["error"].get<std::string>() : "";
}

// Tensors as a test-side JSON encoder writes them (independent of
// glintd's own converter): flat data, or nested along the shape.
json FlatData(const Tensor& t) {
  json data = json::array();
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (t.dtype()) {
      case DType::kFloat32: data.push_back(t.data<float>()[i]); break;
      case DType::kInt32: data.push_back(t.data<int32_t>()[i]); break;
      case DType::kInt64: data.push_back(t.data<int64_t>()[i]); break;
      case DType::kBool: data.push_back(t.data<uint8_t>()[i] != 0); break;
      default: ADD_FAILURE() << "no JSON form in this test: " << DTypeName(t.dtype());
    }
  }
  return data;
}

json Nest(const json& flat, const std::vector<int64_t>& dims, size_t level,
          size_t* next) {
  if (level == dims.size()) return flat[(*next)++];
  json out = json::array();
  for (int64_t i = 0; i < dims[level]; ++i) {
    out.push_back(Nest(flat, dims, level + 1, next));
  }
  return out;
}

const char* Datatype(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "FP32";
    case DType::kFloat64: return "FP64";
    case DType::kInt32: return "INT32";
    case DType::kInt64: return "INT64";
    case DType::kBool: return "BOOL";
    default: return "?";
  }
}

// An output of a reply, decoded by its datatype.
absl::StatusOr<Tensor> TensorOfOutput(const json& out) {
  const std::vector<int64_t> dims = out.at("shape").get<std::vector<int64_t>>();
  const json& data = out.at("data");
  const std::string datatype = out.at("datatype").get<std::string>();
  if (datatype == "FP32") {
    return Tensor::FromVector<float>(DType::kFloat32, Shape(dims),
                                     data.get<std::vector<float>>());
  }
  if (datatype == "FP64") {
    return Tensor::FromVector<double>(DType::kFloat64, Shape(dims),
                                      data.get<std::vector<double>>());
  }
  if (datatype == "INT64") {
    return Tensor::FromVector<int64_t>(DType::kInt64, Shape(dims),
                                       data.get<std::vector<int64_t>>());
  }
  if (datatype == "BOOL") {
    std::vector<uint8_t> bytes;
    for (const json& b : data) bytes.push_back(b.get<bool>() ? 1 : 0);
    return Tensor::FromVector<uint8_t>(DType::kBool, Shape(dims), bytes);
  }
  return absl::UnimplementedError("datatype " + datatype);
}

class RestTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<GlintdProcess>> d = GlintdProcess::Start({});
    if (!d.ok()) {
      start_error_ = new std::string(d.status().ToString());
      return;
    }
    daemon_ = d->release();
  }
  static void TearDownTestSuite() {
    if (daemon_ != nullptr) {
      absl::StatusOr<int> code = daemon_->Stop(SIGTERM, absl::Seconds(20));
      EXPECT_TRUE(code.ok()) << code.status();
      if (code.ok()) {
        EXPECT_EQ(*code, 0) << daemon_->Log();
      }
    }
    delete daemon_;
    daemon_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(daemon_, nullptr) << "glintd did not start: " << *start_error_;
    ASSERT_GT(daemon_->http_port(), 0);
    dir_ = testing::NewTempDir("curl");
  }

  // curl METHOD http://127.0.0.1:PORT<path> [with `body` as JSON].
  CurlReply Curl(const std::string& method, const std::string& path,
                 const std::string* body = nullptr) {
    const std::string out = dir_ + "/reply";
    std::vector<std::string> argv = {
        "/usr/bin/curl", "-sS", "--noproxy", "*", "-o", out,
        "-w", "%{http_code} %{content_type}", "-X", method};
    if (body != nullptr) {
      const std::string in = dir_ + "/request.json";
      std::ofstream(in, std::ios::binary) << *body;
      argv.insert(argv.end(), {"-H", "Content-Type: application/json",
                               "--data-binary", "@" + in});
    }
    if (method == "HEAD") argv = {argv[0], "-sS", "--noproxy", "*", "-I", "-o",
                                  out, "-w", "%{http_code} %{content_type}"};
    argv.push_back(
        absl::StrCat("http://127.0.0.1:", daemon_->http_port(), path));
    CurlReply reply;
    absl::StatusOr<testing::CommandResult> r =
        testing::RunCommand(argv, absl::Seconds(60));
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return reply;
    EXPECT_EQ(r->exit_code, 0) << "curl: " << r->stderr_text;
    const std::vector<std::string> status =
        absl::StrSplit(r->stdout_text, absl::MaxSplits(' ', 1));
    EXPECT_TRUE(absl::SimpleAtoi(status[0], &reply.status)) << r->stdout_text;
    if (status.size() > 1) reply.content_type = status[1];
    absl::StatusOr<std::string> text = ReadFileToString(out);
    if (text.ok()) reply.body = *text;
    return reply;
  }

  // Adds node case `name` over gRPC; fills its inputs (named as the
  // model's runtime inputs) and expected outputs.
  void AddCase(const std::string& name, std::vector<NamedTensor>* inputs,
               std::vector<NamedTensor>* expected) {
    const fs::path dir = fs::path(kNodeTests) / name;
    absl::StatusOr<std::string> bytes =
        ReadFileToString((dir / "model.onnx").string());
    ASSERT_TRUE(bytes.ok()) << bytes.status()
                            << " (is libonnx-testdata installed?)";
    onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(*bytes));
    const std::vector<std::string> names = testing::RuntimeInputNames(model);
    for (size_t i = 0; i < names.size(); ++i) {
      absl::StatusOr<NamedTensor> t = ReadTensorProtoFile(
          (dir / "test_data_set_0" / absl::StrCat("input_", i, ".pb"))
              .string());
      ASSERT_TRUE(t.ok()) << t.status();
      t->name = names[i];
      inputs->push_back(*std::move(t));
    }
    for (int i = 0; i < model.graph().output_size(); ++i) {
      absl::StatusOr<NamedTensor> t = ReadTensorProtoFile(
          (dir / "test_data_set_0" / absl::StrCat("output_", i, ".pb"))
              .string());
      ASSERT_TRUE(t.ok()) << t.status();
      t->name = model.graph().output(i).name();
      expected->push_back(*std::move(t));
    }
    absl::StatusOr<NetworkInfo> info =
        daemon_->client().AddNetwork(name, *std::move(bytes));
    ASSERT_TRUE(info.ok()) << info.status();
  }

  // {"inputs": [...]} with the first input nested, the others flat.
  static std::string InferBody(const std::vector<NamedTensor>& inputs,
                               const std::string& id = "") {
    json doc;
    doc["inputs"] = json::array();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i].tensor;
      json data = FlatData(t);
      if (i == 0 && t.shape().rank() > 1) {
        size_t next = 0;
        data = Nest(data, t.shape().dims(), 0, &next);
      }
      doc["inputs"].push_back({{"name", inputs[i].name},
                               {"shape", t.shape().dims()},
                               {"datatype", Datatype(t.dtype())},
                               {"data", data}});
    }
    if (!id.empty()) doc["id"] = id;
    return doc.dump();
  }

  static GlintdProcess* daemon_;
  static std::string* start_error_;
  std::string dir_;
};

GlintdProcess* RestTest::daemon_ = nullptr;
std::string* RestTest::start_error_ = nullptr;

TEST_F(RestTest, Health) {
  CurlReply live = Curl("GET", "/v2/health/live");
  EXPECT_EQ(live.status, 200);
  EXPECT_EQ(live.body, "");
  EXPECT_EQ(Curl("GET", "/v2/health/ready").status, 200);
  EXPECT_EQ(Curl("HEAD", "/v2/health/ready").status, 200);
}

TEST_F(RestTest, ServerMetadata) {
  const CurlReply reply = Curl("GET", "/v2");
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.content_type, "application/json");
  const json doc = json::parse(reply.body);
  EXPECT_EQ(doc["name"], "glint");
  EXPECT_TRUE(doc["version"].is_string());
  EXPECT_TRUE(doc["extensions"].is_array());
}

// Each case: added over gRPC, then metadata, readiness and inference over
// HTTP, outputs compared with the case's expected ones.
TEST_F(RestTest, NodeCasesInferOverHttp) {
  for (const char* name : {"test_add", "test_reshape_negative_dim",
                           "test_where_example", "test_equal"}) {
    SCOPED_TRACE(name);
    std::vector<NamedTensor> inputs, expected;
    AddCase(name, &inputs, &expected);
    if (HasFatalFailure()) return;

    const CurlReply meta = Curl("GET", absl::StrCat("/v2/models/", name));
    ASSERT_EQ(meta.status, 200) << meta.body;
    const json m = json::parse(meta.body);
    EXPECT_EQ(m["name"], name);
    EXPECT_EQ(m["versions"], json::parse("[\"1\"]"));
    ASSERT_EQ(m["inputs"].size(), inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      EXPECT_EQ(m["inputs"][i]["name"], inputs[i].name);
      EXPECT_EQ(m["inputs"][i]["datatype"], Datatype(inputs[i].tensor.dtype()));
      EXPECT_EQ(m["inputs"][i]["shape"].get<std::vector<int64_t>>(),
                inputs[i].tensor.shape().dims());
    }
    ASSERT_EQ(m["outputs"].size(), expected.size());
    EXPECT_EQ(m["outputs"][0]["name"], expected[0].name);

    EXPECT_EQ(Curl("GET", absl::StrCat("/v2/models/", name, "/ready")).status,
              200);

    const std::string body = InferBody(inputs, absl::StrCat("id-", name));
    const CurlReply reply =
        Curl("POST", absl::StrCat("/v2/models/", name, "/infer"), &body);
    ASSERT_EQ(reply.status, 200) << reply.body;
    EXPECT_EQ(reply.content_type, "application/json");
    const json doc = json::parse(reply.body);
    EXPECT_EQ(doc["model_name"], name);
    EXPECT_EQ(doc["id"], absl::StrCat("id-", name));
    ASSERT_EQ(doc["outputs"].size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      const json& out = doc["outputs"][i];
      EXPECT_EQ(out["name"], expected[i].name);
      EXPECT_EQ(out["datatype"], Datatype(expected[i].tensor.dtype()));
      absl::StatusOr<Tensor> got = TensorOfOutput(out);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(testing::CompareTensors(*got, expected[i].tensor), "")
          << "output " << expected[i].name;
    }
  }
}

TEST_F(RestTest, ErrorStatuses) {
  std::vector<NamedTensor> inputs, expected;
  AddCase("test_sub", &inputs, &expected);
  if (HasFatalFailure()) return;
  const std::string good = InferBody(inputs);

  // Unknown model: 404, for metadata, readiness and inference.
  CurlReply r = Curl("POST", "/v2/models/no_such_model/infer", &good);
  EXPECT_EQ(r.status, 404);
  EXPECT_THAT(ErrorOf(r), HasSubstr("no_such_model"));
  EXPECT_EQ(Curl("GET", "/v2/models/no_such_model").status, 404);
  EXPECT_EQ(Curl("GET", "/v2/models/no_such_model/ready").status, 404);
  EXPECT_EQ(Curl("GET", "/v2/models/test_sub/versions/2").status, 404);

  // Bad JSON: 400 with the parser's message.
  const std::string bad_json = "{\"inputs\": [ {\"name\": ";
  r = Curl("POST", "/v2/models/test_sub/infer", &bad_json);
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(ErrorOf(r), HasSubstr("not valid JSON"));

  // Well-formed JSON the network cannot take: 400 naming the input.
  json wrong = json::parse(good);
  wrong["inputs"][1]["shape"] = {60};
  const std::string wrong_shape = wrong.dump();
  r = Curl("POST", "/v2/models/test_sub/infer", &wrong_shape);
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(ErrorOf(r), HasSubstr(inputs[1].name));
  wrong = json::parse(good);
  wrong["inputs"][0]["data"] = json::array({1, 2, 3});
  const std::string wrong_size = wrong.dump();
  r = Curl("POST", "/v2/models/test_sub/infer", &wrong_size);
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(ErrorOf(r), HasSubstr("has 3"));

  // Wrong method, unknown path.
  r = Curl("GET", "/v2/models/test_sub/infer");
  EXPECT_EQ(r.status, 405);
  EXPECT_THAT(ErrorOf(r), HasSubstr("POST"));
  r = Curl("GET", "/v2/nothing/here");
  EXPECT_EQ(r.status, 404);
  ErrorOf(r);

  // After all of it the daemon still computes.
  r = Curl("POST", "/v2/models/test_sub/infer", &good);
  ASSERT_EQ(r.status, 200) << r.body;
  absl::StatusOr<Tensor> got =
      TensorOfOutput(json::parse(r.body)["outputs"][0]);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(testing::CompareTensors(*got, expected[0].tensor), "");
}

}  // namespace
}  // namespace glint
