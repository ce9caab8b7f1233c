// The REST endpoints without a socket: RestApi::Handle over an in-process
// HostManager, checking statuses, bodies and computed outputs.
#include "runtime/server/http/rest_api.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx/test_models.h"
#include "runtime/server/common/auth.h"

namespace glint {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using Kind = RestRoute::Kind;

TEST(ParseRestTargetTest, EveryEndpoint) {
  struct Case {
    const char* target;
    Kind kind;
    const char* model;
    const char* version;  // Null: none.
  };
  const Case cases[] = {
      {"/v2/health/live", Kind::kLive, "", nullptr},
      {"/v2/health/ready", Kind::kReady, "", nullptr},
      {"/v2", Kind::kServerMetadata, "", nullptr},
      {"/metrics", Kind::kMetrics, "", nullptr},
      {"/metrics?name[]=x", Kind::kMetrics, "", nullptr},
      {"/v2/models/mlp", Kind::kModelMetadata, "mlp", nullptr},
      {"/v2/models/mlp/versions/1", Kind::kModelMetadata, "mlp", "1"},
      {"/v2/models/mlp/ready", Kind::kModelReady, "mlp", nullptr},
      {"/v2/models/mlp/versions/7/ready", Kind::kModelReady, "mlp", "7"},
      {"/v2/models/mlp/infer", Kind::kModelInfer, "mlp", nullptr},
      {"/v2/models/mlp/versions/1/infer?x=1", Kind::kModelInfer, "mlp", "1"},
      // Names are segments: any character, percent-encoded.
      {"/v2/models/a%2Fb/ready", Kind::kModelReady, "a/b", nullptr},
      {"/v2/models/caf%C3%A9%20x+y", Kind::kModelMetadata, "caf\xc3\xa9 x+y",
       nullptr},
      // A model may be called like an endpoint; position decides.
      {"/v2/models/ready", Kind::kModelMetadata, "ready", nullptr},
      {"/v2/models/infer/infer", Kind::kModelInfer, "infer", nullptr},
      {"/v2/models/versions", Kind::kModelMetadata, "versions", nullptr},
  };
  for (const Case& c : cases) {
    absl::StatusOr<RestRoute> route = ParseRestTarget(c.target);
    ASSERT_TRUE(route.ok()) << c.target << ": " << route.status();
    EXPECT_EQ(route->kind, c.kind) << c.target;
    EXPECT_EQ(route->model, c.model) << c.target;
    EXPECT_EQ(route->version.has_value(), c.version != nullptr) << c.target;
    if (c.version != nullptr && route->version.has_value()) {
      EXPECT_EQ(*route->version, c.version) << c.target;
    }
  }
}

TEST(ParseRestTargetTest, UnknownPathsAreNotFound) {
  for (const char* target :
       {"", "/", "v2", "/v1", "/v2/", "/v2/health", "/v2/health/dead",
        "/v2/models", "/v2/models/", "/v2/models//ready", "/v2/models/m/",
        "/v2/models/m/versions", "/v2/models/m/versions/1/", "/v2/models/m/run",
        "/v2/models/m/ready/x", "/metrics/", "/V2/health/live",
        "/v2/models/m/versions/1/infer/x"}) {
    EXPECT_EQ(ParseRestTarget(target).status().code(),
              absl::StatusCode::kNotFound)
        << target;
  }
}

TEST(ParseRestTargetTest, MalformedEscapesAreInvalid) {
  for (const char* target : {"/v2/models/%", "/v2/models/a%2", "/v2/models/%zz",
                             "/v2/models/%2/ready"}) {
    EXPECT_EQ(ParseRestTarget(target).status().code(),
              absl::StatusCode::kInvalidArgument)
        << target;
  }
}

TEST(CheckRestHeadersTest, CompressedAndBinaryBodiesAreRefused) {
  HttpRequest request;
  EXPECT_TRUE(CheckRestHeaders(request).ok());
  request.content_encoding = "Identity";
  EXPECT_TRUE(CheckRestHeaders(request).ok());
  request.content_encoding = "gzip";
  EXPECT_EQ(CheckRestHeaders(request).code(), absl::StatusCode::kUnimplemented);
  request.content_encoding = "";
  request.inference_header_content_length = "120";
  EXPECT_EQ(CheckRestHeaders(request).code(), absl::StatusCode::kUnimplemented);
}

TEST(RestScopeTest, HealthAndMetricsAreOpen) {
  EXPECT_EQ(RestScope(Kind::kLive), Scope::kOpen);
  EXPECT_EQ(RestScope(Kind::kReady), Scope::kOpen);
  EXPECT_EQ(RestScope(Kind::kMetrics), Scope::kOpen);
  EXPECT_EQ(RestScope(Kind::kServerMetadata), Scope::kInfer);
  EXPECT_EQ(RestScope(Kind::kModelMetadata), Scope::kInfer);
  EXPECT_EQ(RestScope(Kind::kModelReady), Scope::kInfer);
  EXPECT_EQ(RestScope(Kind::kModelInfer), Scope::kInfer);
}

// The value of header `name` in `reply`, "" when absent.
std::string HeaderOf(const HttpReply& reply, const std::string& name) {
  for (const auto& [n, v] : reply.headers) {
    if (n == name) return v;
  }
  return "";
}

class RestApiTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(nullptr); }

  void Start(const Authorizer* authorizer) {
    DeviceConfig device;
    device.memory_bytes = 16 * kMiB;
    absl::StatusOr<std::unique_ptr<HostManager>> hm =
        HostManager::CreateFromConfigs(HostManagerOptions(), {device});
    ASSERT_TRUE(hm.ok()) << hm.status();
    host_manager_ = *std::move(hm);
    ASSERT_TRUE(host_manager_->AddNetwork("mlp", testing::MakeMlpModel(2, 4, 3),
                                          AddNetworkOptions())
                    .ok());
    RestApiOptions options;
    options.ready = [this] { return ready_; };
    options.authorizer = authorizer;
    api_ = std::make_unique<RestApi>(host_manager_.get(), std::move(options));
  }

  HttpReply Call(const std::string& method, const std::string& target,
                 const std::string& body = "",
                 const std::string& authorization = "") {
    HttpRequest request;
    request.method = method;
    request.target = target;
    request.body = body;
    request.authorization = authorization;
    request.peer = "127.0.0.1:1";
    return api_->Handle(request);
  }
  HttpReply Get(const std::string& target) { return Call("GET", target); }
  HttpReply Post(const std::string& target, const std::string& body) {
    return Call("POST", target, body);
  }

  // The error message of a failed reply (its body must be {"error": ...}).
  static std::string ErrorOf(const HttpReply& reply) {
    EXPECT_EQ(reply.content_type, "application/json");
    const json doc = json::parse(reply.body, nullptr, false);
    EXPECT_TRUE(doc.is_object() && doc.size() == 1 && doc.contains("error") &&
                doc["error"].is_string())
        << reply.body;
    return doc.is_object() && doc.contains("error") && doc["error"].is_string()
               ? doc["error"].get<std::string>()
               : "";
  }

  // An infer body for an input x[2, 4] (whatever x's length).
  static std::string InferBody(const std::vector<float>& x,
                               const std::string& extra = "") {
    return absl::StrCat(
        R"({"inputs": [{"name": "x", "shape": [2, 4], "datatype": "FP32", "data": [)",
        absl::StrJoin(x, ","), "]}]", extra, "}");
  }

  bool ready_ = true;
  std::unique_ptr<HostManager> host_manager_;
  std::unique_ptr<RestApi> api_;
};

TEST_F(RestApiTest, Health) {
  HttpReply live = Get("/v2/health/live");
  EXPECT_EQ(live.status, 200);
  EXPECT_EQ(live.body, "");
  EXPECT_EQ(Get("/v2/health/ready").status, 200);
  ready_ = false;
  const HttpReply not_ready = Get("/v2/health/ready");
  EXPECT_EQ(not_ready.status, 503);
  EXPECT_THAT(ErrorOf(not_ready), HasSubstr("not ready"));
  EXPECT_EQ(Get("/v2/health/live").status, 200);
  EXPECT_EQ(Call("HEAD", "/v2/health/live").status, 200);
}

TEST_F(RestApiTest, ServerAndModelMetadata) {
  const HttpReply server = Get("/v2");
  ASSERT_EQ(server.status, 200);
  EXPECT_EQ(json::parse(server.body)["name"], "glint");

  for (const char* target : {"/v2/models/mlp", "/v2/models/mlp/versions/1"}) {
    const HttpReply model = Get(target);
    ASSERT_EQ(model.status, 200) << model.body;
    EXPECT_EQ(model.content_type, "application/json");
    const json doc = json::parse(model.body);
    EXPECT_EQ(doc["name"], "mlp");
    EXPECT_EQ(doc["inputs"], json::parse(
                                 R"([{"name": "x", "datatype": "FP32", "shape": [2, 4]}])"));
    EXPECT_EQ(doc["outputs"][0]["name"], "y");
    EXPECT_EQ(doc["outputs"][0]["datatype"], "FP32");
  }
  const HttpReply unknown = Get("/v2/models/nope");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_THAT(ErrorOf(unknown), HasSubstr("nope"));
  const HttpReply version = Get("/v2/models/mlp/versions/2");
  EXPECT_EQ(version.status, 404);
  EXPECT_THAT(ErrorOf(version), HasSubstr("version"));
}

TEST_F(RestApiTest, ModelReady) {
  EXPECT_EQ(Get("/v2/models/mlp/ready").status, 200);
  EXPECT_EQ(Get("/v2/models/mlp/ready").body, "");
  EXPECT_EQ(Get("/v2/models/mlp/versions/1/ready").status, 200);
  EXPECT_EQ(Get("/v2/models/mlp/versions/3/ready").status, 404);
  EXPECT_EQ(Get("/v2/models/nope/ready").status, 404);

  // A restored network that no longer fits stays listed, unavailable.
  EXPECT_FALSE(host_manager_
                   ->RestoreNetwork("huge", testing::MakeMlpModel(1, 2048, 2048),
                                    AddNetworkOptions())
                   .ok());
  const HttpReply huge = Get("/v2/models/huge/ready");
  EXPECT_EQ(huge.status, 503);
  EXPECT_THAT(ErrorOf(huge), HasSubstr("unavailable"));
  const HttpReply run = Post("/v2/models/huge/infer", InferBody(std::vector<float>(8, 1.0f)));
  EXPECT_EQ(run.status, 503) << run.body;
}

TEST_F(RestApiTest, InferComputesTheReference) {
  const std::vector<float> x = {1, 2, 3, 4, -1, 0.5, 2, -3};
  const HttpReply reply =
      Post("/v2/models/mlp/infer",
           InferBody(x, R"(, "id": "req-7", "outputs": [{"name": "y"}])"));
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.content_type, "application/json");
  const json doc = json::parse(reply.body);
  EXPECT_EQ(doc["model_name"], "mlp");
  EXPECT_EQ(doc["id"], "req-7");
  ASSERT_EQ(doc["outputs"].size(), 1u);
  const json& y = doc["outputs"][0];
  EXPECT_EQ(y["name"], "y");
  EXPECT_EQ(y["datatype"], "FP32");
  EXPECT_EQ(y["shape"], json::parse("[2, 3]"));
  const std::vector<float> expected = testing::MlpReference(x, 2, 4, 3);
  const std::vector<float> got = y["data"].get<std::vector<float>>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], 1e-5) << i;
  }

  // The same through the versioned path, with nested data.
  const HttpReply nested = Post(
      "/v2/models/mlp/versions/1/infer",
      R"({"inputs": [{"name": "x", "shape": [2, 4], "datatype": "FP32",
          "data": [[1, 2, 3, 4], [-1, 0.5, 2, -3]]}]})");
  ASSERT_EQ(nested.status, 200) << nested.body;
  EXPECT_EQ(json::parse(nested.body)["outputs"][0]["data"], y["data"]);

  // An output asked for twice is a bad request, as on every API.
  const HttpReply twice = Post(
      "/v2/models/mlp/infer",
      InferBody(x, R"(, "outputs": [{"name": "y"}, {"name": "y"}])"));
  EXPECT_EQ(twice.status, 400) << twice.body;
  EXPECT_NE(twice.body.find("output 'y' is requested twice"),
            std::string::npos)
      << twice.body;
  EXPECT_FALSE(json::parse(nested.body).contains("id"));
}

TEST_F(RestApiTest, InferErrorsMapToHttpStatuses) {
  const std::vector<float> x(8, 1.0f);
  struct Case {
    std::string target;
    std::string body;
    int status;
    const char* message;
  };
  const Case cases[] = {
      {"/v2/models/nope/infer", InferBody(x), 404, "nope"},
      {"/v2/models/mlp/versions/9/infer", InferBody(x), 404, "version"},
      {"/v2/models/mlp/infer", "{not json", 400, "not valid JSON"},
      {"/v2/models/mlp/infer", "", 400, "not valid JSON"},
      {"/v2/models/mlp/infer", InferBody({1, 2, 3}), 400, "has 3"},
      // Well-formed, but not what the network takes.
      {"/v2/models/mlp/infer",
       R"({"inputs": [{"name": "x", "shape": [4, 2], "datatype": "FP32", "data": [1,2,3,4,5,6,7,8]}]})",
       400, "x"},
      {"/v2/models/mlp/infer",
       R"({"inputs": [{"name": "x", "shape": [2, 4], "datatype": "FP64", "data": [1,2,3,4,5,6,7,8]}]})",
       400, "x"},
      {"/v2/models/mlp/infer", R"({"inputs": []})", 400, "x"},
      {"/v2/models/mlp/infer", InferBody(x, R"(, "outputs": [{"name": "zz"}])"),
       400, "zz"},
      {"/v2/models/mlp/infer",
       R"({"inputs": [{"name": "x", "shape": [2, 4], "datatype": "BYTES", "data": []}]})",
       501, "BYTES"},
      // A deadline that has passed before the run starts.
      {"/v2/models/mlp/infer", InferBody(x, R"(, "parameters": {"timeout": 1})"),
       504, ""},
  };
  for (const Case& c : cases) {
    const HttpReply reply = Post(c.target, c.body);
    EXPECT_EQ(reply.status, c.status) << c.target << " " << c.body << " -> "
                                      << reply.body;
    EXPECT_THAT(ErrorOf(reply), HasSubstr(c.message)) << c.body;
  }
  // The network still computes afterwards.
  EXPECT_EQ(Post("/v2/models/mlp/infer", InferBody(x)).status, 200);
}

TEST_F(RestApiTest, WrongMethodsAndPaths) {
  HttpReply reply = Get("/v2/models/mlp/infer");
  EXPECT_EQ(reply.status, 405);
  EXPECT_EQ(HeaderOf(reply, "Allow"), "POST");
  EXPECT_THAT(ErrorOf(reply), HasSubstr("POST"));
  reply = Post("/v2/health/live", "");
  EXPECT_EQ(reply.status, 405);
  EXPECT_EQ(HeaderOf(reply, "Allow"), "GET");
  EXPECT_EQ(Call("DELETE", "/v2/models/mlp").status, 405);
  reply = Get("/v3/anything");
  EXPECT_EQ(reply.status, 404);
  EXPECT_THAT(ErrorOf(reply), HasSubstr("/v3/anything"));
  EXPECT_EQ(Get("/v2/models/%zz").status, 400);
}

TEST_F(RestApiTest, MetricsShowStatisticsAndDevices) {
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Post("/v2/models/mlp/infer", InferBody(std::vector<float>(8, i)))
                  .status,
              200);
  }
  ASSERT_EQ(Post("/v2/models/mlp/infer", R"({"inputs": []})").status, 400);
  const HttpReply reply = Get("/metrics");
  ASSERT_EQ(reply.status, 200);
  EXPECT_EQ(reply.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_THAT(reply.body,
              HasSubstr("nv_inference_request_success{model=\"mlp\","
                        "version=\"1\"} 3\n"));
  EXPECT_THAT(reply.body,
              HasSubstr("nv_inference_request_failure{model=\"mlp\","
                        "version=\"1\"} 1\n"));
  EXPECT_THAT(reply.body,
              HasSubstr("nv_inference_exec_count{model=\"mlp\","
                        "version=\"1\"} 3\n"));
  EXPECT_THAT(reply.body,
              HasSubstr("glint_device_memory_total_bytes{device=\"sim:0\"} "
                        "16777216\n"));
  EXPECT_THAT(reply.body,
              HasSubstr("glint_device_loaded_partitions{device=\"sim:0\"} 1\n"));
}

constexpr char kInferToken[] = "infer-token-0123456789";
constexpr char kAdminToken[] = "admin-token-0123456789";

// With tokens: health and /metrics stay open, the rest needs the infer
// scope; 401 (and WWW-Authenticate) without a known token, 403 without the
// scope.
TEST_F(RestApiTest, TokensGuardAllButHealthAndMetrics) {
  absl::StatusOr<std::unique_ptr<Authorizer>> authorizer = Authorizer::Parse(
      absl::StrCat(kInferToken, " infer\n", kAdminToken, " admin\n"));
  ASSERT_TRUE(authorizer.ok()) << authorizer.status();
  api_.reset();
  host_manager_.reset();
  Start(authorizer->get());
  const std::string infer = absl::StrCat("Bearer ", kInferToken);
  const std::string admin = absl::StrCat("Bearer ", kAdminToken);
  const std::string body = InferBody(std::vector<float>(8, 1.0f));

  for (const char* open : {"/v2/health/live", "/v2/health/ready", "/metrics"}) {
    EXPECT_EQ(Get(open).status, 200) << open;
  }
  for (const char* guarded :
       {"/v2", "/v2/models/mlp", "/v2/models/mlp/ready", "/v2/models/nope"}) {
    const HttpReply anonymous = Get(guarded);
    EXPECT_EQ(anonymous.status, 401) << guarded;
    EXPECT_EQ(HeaderOf(anonymous, "WWW-Authenticate"), "Bearer realm=\"glintd\"");
    EXPECT_THAT(ErrorOf(anonymous), HasSubstr("Bearer"));
    EXPECT_EQ(Call("GET", guarded, "", "Bearer unknown-token-0123456789").status,
              401)
        << guarded;
    EXPECT_EQ(Call("GET", guarded, "", admin).status, 403) << guarded;
  }
  EXPECT_EQ(Call("GET", "/v2/models/mlp", "", infer).status, 200);
  EXPECT_EQ(Call("GET", "/v2/models/nope", "", infer).status, 404);

  EXPECT_EQ(Post("/v2/models/mlp/infer", body).status, 401);
  const HttpReply denied = Call("POST", "/v2/models/mlp/infer", body, admin);
  EXPECT_EQ(denied.status, 403);
  EXPECT_THAT(ErrorOf(denied), HasSubstr("infer"));
  EXPECT_EQ(Call("POST", "/v2/models/mlp/infer", body, infer).status, 200);
  // The scheme is case-insensitive, as RFC 7235 says.
  EXPECT_EQ(Call("POST", "/v2/models/mlp/infer", body,
                 absl::StrCat("bearer ", kInferToken))
                .status,
            200);
  // A path that names nothing is 404 whoever asks.
  EXPECT_EQ(Get("/v2/nothing").status, 404);

  // Admit decides without the body: what the server checks before reading.
  HttpRequest head;
  head.method = "POST";
  head.target = "/v2/models/mlp/infer";
  std::optional<HttpReply> refused = api_->Admit(head);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 401);
  head.authorization = infer;
  EXPECT_FALSE(api_->Admit(head).has_value());
}

}  // namespace
}  // namespace glint
