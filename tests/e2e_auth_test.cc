// glintd with TLS, mutual TLS and scoped bearer tokens, end to end. The
// certificates are made by the `openssl` command at test time: a CA, a
// server certificate for 127.0.0.1 and localhost, a client certificate,
// and a second, untrusted CA with a client certificate of its own.
#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"
#include "tests/process_util.h"

namespace glint::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kInferToken[] = "infer-7c1f0b9e2d8a4e63b5a1";
constexpr char kAdminToken[] = "admin-3e9d2a6c0f1b48d7a2c4";
constexpr char kBothToken[] = "ops-5b8e1c7a9d2f4036e1b7";

constexpr int64_t kIn = 6;
constexpr int64_t kOut = 3;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Runs `openssl ARGS...`; false (and a test failure) on a non-zero exit.
bool OpenSsl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<CommandResult> r = RunCommand(argv, absl::Seconds(60));
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return false;
  EXPECT_EQ(r->exit_code, 0) << absl::StrJoin(argv, " ") << "\n"
                             << r->stderr_text;
  return r->exit_code == 0;
}

// The files of the test's PKI and tokens, made once per test binary.
struct Pki {
  std::string dir;
  std::string ca_crt, server_crt, server_key, client_crt, client_key;
  std::string rogue_ca_crt, rogue_client_crt, rogue_client_key;
  std::string tokens;  // --auth_tokens file.
  std::string infer_token_file, admin_token_file;
};

class E2eAuthTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pki_ = new Pki();
    Pki& p = *pki_;
    p.dir = NewTempDir("pki");
    const std::string config = p.dir + "/openssl.cnf";
    // Our own config, so that nothing depends on the system's openssl.cnf.
    WriteFile(config, R"([req]
distinguished_name = dn
x509_extensions = ca
prompt = no
[dn]
CN = glint test
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
[client]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = clientAuth
)");
    const auto ca = [&](const std::string& name, const std::string& cn) {
      return OpenSsl({"req", "-x509", "-config", config, "-newkey", "ec",
               "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
               p.dir + "/" + name + ".key", "-out", p.dir + "/" + name + ".crt",
               "-days", "2", "-subj", "/CN=" + cn});
    };
    // A key and a certificate signed by `ca_name` with `extensions`.
    const auto leaf = [&](const std::string& name, const std::string& ca_name,
                          const std::string& extensions,
                          const std::string& cn) {
      const std::string base = p.dir + "/" + name;
      return OpenSsl({"req", "-new", "-config", config, "-newkey", "ec", "-pkeyopt",
               "ec_paramgen_curve:P-256", "-nodes", "-keyout", base + ".key",
               "-out", base + ".csr", "-subj", "/CN=" + cn}) &&
             OpenSsl({"x509", "-req", "-in", base + ".csr", "-CA",
               p.dir + "/" + ca_name + ".crt", "-CAkey",
               p.dir + "/" + ca_name + ".key", "-set_serial",
               std::to_string(std::hash<std::string>()(name) % 100000 + 2),
               "-days", "2", "-extfile", config, "-extensions", extensions,
               "-out", base + ".crt"});
    };
    pki_ok_ = ca("ca", "glint test CA") &&
              leaf("server", "ca", "server", "localhost") &&
              leaf("client", "ca", "client", "glint test client") &&
              ca("rogue_ca", "rogue CA") &&
              leaf("rogue_client", "rogue_ca", "client", "rogue client");
    p.ca_crt = p.dir + "/ca.crt";
    p.rogue_ca_crt = p.dir + "/rogue_ca.crt";
    p.server_crt = p.dir + "/server.crt";
    p.server_key = p.dir + "/server.key";
    p.client_crt = p.dir + "/client.crt";
    p.client_key = p.dir + "/client.key";
    p.rogue_client_crt = p.dir + "/rogue_client.crt";
    p.rogue_client_key = p.dir + "/rogue_client.key";

    p.tokens = p.dir + "/tokens";
    WriteFile(p.tokens, absl::StrCat("# e2e_auth_test\n", kInferToken,
                                     "  infer\n", kAdminToken, "  admin\n",
                                     kBothToken, "  infer,admin\n"));
    chmod(p.tokens.c_str(), 0600);
    p.infer_token_file = p.dir + "/infer.token";
    WriteFile(p.infer_token_file, absl::StrCat(kInferToken, "\n"));
    p.admin_token_file = p.dir + "/admin.token";
    WriteFile(p.admin_token_file, absl::StrCat(kAdminToken, "\n"));
  }

  static void TearDownTestSuite() {
    delete pki_;
    pki_ = nullptr;
  }

  void SetUp() override {
    ASSERT_TRUE(pki_ok_) << "making the certificates with openssl failed";
  }

  static const Pki& pki() { return *pki_; }

  // Trusts the test CA; `token` as given.
  static ClientOptions TlsClient(const std::string& token) {
    ClientOptions options;
    options.tls_ca_file = pki().ca_crt;
    options.token = token;
    options.connect_timeout = absl::Seconds(10);
    options.rpc_timeout = absl::Seconds(30);
    return options;
  }

  // A client that does not wait for the connection: its calls fail with
  // the channel's error instead of Connect's timeout.
  static std::unique_ptr<GlintClient> ClientOf(const std::string& address,
                                               const ClientOptions& options) {
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
        GlintClient::OpenChannel(address, options);
    EXPECT_TRUE(channel.ok()) << channel.status();
    if (!channel.ok()) return nullptr;
    return std::make_unique<GlintClient>(*std::move(channel), options);
  }

  static std::vector<float> Input() {
    std::vector<float> x(kIn);
    for (int64_t i = 0; i < kIn; ++i) x[i] = 0.5f * static_cast<float>(i) - 1;
    return x;
  }

  static void ExpectMlpOutput(
      const absl::StatusOr<std::vector<NamedTensor>>& out) {
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 1u);
    const Tensor& y = (*out)[0].tensor;
    ASSERT_EQ(y.num_elements(), kOut);
    const std::vector<float> want = MlpReference(Input(), 1, kIn, kOut);
    double magnitude = 0;
    for (int64_t j = 0; j < kOut; ++j) {
      EXPECT_NEAR(y.data<float>()[j], want[j], 1e-5) << "output " << j;
      magnitude += std::abs(want[j]);
    }
    ASSERT_GT(magnitude, 0) << "an all-zero reference proves nothing";
  }

  static std::vector<NamedTensor> MlpInputs() {
    return {{"x", Tensor::FromVector(DType::kFloat32, Shape({1, kIn}),
                                     Input())}};
  }

  static Pki* pki_;
  static bool pki_ok_;
};

Pki* E2eAuthTest::pki_ = nullptr;
bool E2eAuthTest::pki_ok_ = false;

TEST_F(E2eAuthTest, TlsAndScopedTokens) {
  // The harness's own client trusts the CA and holds the infer token (its
  // readiness check lists networks).
  absl::StatusOr<std::unique_ptr<GlintdProcess>> daemon = GlintdProcess::Start(
      {"--tls_cert=" + pki().server_crt, "--tls_key=" + pki().server_key,
       "--auth_tokens=" + pki().tokens},
      absl::Seconds(30), TlsClient(kInferToken));
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string address = (*daemon)->address();
  EXPECT_THAT((*daemon)->Log(), HasSubstr("TLS, 3 tokens"));
  // Loopback: no exposure warning.
  EXPECT_THAT((*daemon)->Log(), Not(HasSubstr("WITHOUT")));

  // Health stays open: CheckHealth sends no token.
  const absl::Status health = (*daemon)->CheckHealth(absl::Seconds(10));
  EXPECT_TRUE(health.ok()) << health;

  // No token: UNAUTHENTICATED, for infer and admin calls alike.
  std::unique_ptr<GlintClient> anonymous = ClientOf(address, TlsClient(""));
  ASSERT_NE(anonymous, nullptr);
  absl::Status s = anonymous->ListNetworks().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  EXPECT_THAT(s.message(), HasSubstr("authorization: Bearer"));
  s = anonymous->AddNetwork("mlp", MakeMlpModel(1, kIn, kOut)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;
  // An unknown token is no better.
  std::unique_ptr<GlintClient> stranger =
      ClientOf(address, TlsClient("unknown-0123456789abcdef"));
  ASSERT_NE(stranger, nullptr);
  s = stranger->ListNetworks().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << s;

  // An infer token cannot add.
  GlintClient& infer = (*daemon)->client();
  s = infer.AddNetwork("mlp", MakeMlpModel(1, kIn, kOut)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_THAT(s.message(), HasSubstr("admin"));
  absl::StatusOr<std::vector<NetworkInfo>> listed = infer.ListNetworks();
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_TRUE(listed->empty()) << "a refused AddNetwork added something";

  // An admin token can; scopes are independent, so it cannot run.
  std::unique_ptr<GlintClient> admin =
      ClientOf(address, TlsClient(kAdminToken));
  ASSERT_NE(admin, nullptr);
  absl::StatusOr<NetworkInfo> added =
      admin->AddNetwork("mlp", MakeMlpModel(1, kIn, kOut));
  ASSERT_TRUE(added.ok()) << added.status();
  s = admin->RunNetwork("mlp", MlpInputs()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;

  // The infer token runs it and gets the right numbers.
  ExpectMlpOutput(infer.RunNetwork("mlp", MlpInputs()));
  // A token with both scopes does both.
  std::unique_ptr<GlintClient> ops = ClientOf(address, TlsClient(kBothToken));
  ASSERT_NE(ops, nullptr);
  ExpectMlpOutput(ops->RunNetwork("mlp", MlpInputs()));
  ASSERT_TRUE(ops->AddNetwork("mlp2", MakeMlpModel(1, kIn, kOut)).ok());

  // Removing is admin too.
  s = infer.RemoveNetwork("mlp2");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_TRUE(admin->RemoveNetwork("mlp2").ok());

  // A plaintext client gets no answer from the TLS port.
  GlintClient plaintext(GlintClient::CreateChannel(address), TlsClient(""));
  s = plaintext.ListNetworks().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  // Nor does a TLS client that trusts another CA.
  ClientOptions rogue_trust = TlsClient(kInferToken);
  rogue_trust.tls_ca_file = pki().rogue_ca_crt;
  std::unique_ptr<GlintClient> wrong_ca = ClientOf(address, rogue_trust);
  ASSERT_NE(wrong_ca, nullptr);
  s = wrong_ca->ListNetworks().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  // The certificate names 127.0.0.1 and localhost, nothing else.
  ClientOptions other_name = TlsClient(kInferToken);
  other_name.tls_server_name = "glint.example.com";
  std::unique_ptr<GlintClient> misnamed = ClientOf(address, other_name);
  ASSERT_NE(misnamed, nullptr);
  s = misnamed->ListNetworks().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  std::unique_ptr<GlintClient> by_name =
      ClientOf(absl::StrCat("localhost:", (*daemon)->port()),
               TlsClient(kInferToken));
  ASSERT_NE(by_name, nullptr);
  EXPECT_TRUE(by_name->ListNetworks().ok());

  // The daemon kept serving through all of it.
  ExpectMlpOutput(infer.RunNetwork("mlp", MlpInputs()));
}

TEST_F(E2eAuthTest, TheCliSpeaksTlsAndTokens) {
  absl::StatusOr<std::unique_ptr<GlintdProcess>> daemon = GlintdProcess::Start(
      {"--tls_cert=" + pki().server_crt, "--tls_key=" + pki().server_key,
       "--auth_tokens=" + pki().tokens},
      absl::Seconds(30), TlsClient(kInferToken));
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string model = pki().dir + "/cli_mlp.onnx";
  WriteFile(model, MakeMlpModel(1, kIn, kOut));
  const auto glint = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {RunfilePath("client/glint"),
                                     "--server=" + (*daemon)->address(),
                                     "--tls_ca=" + pki().ca_crt};
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<CommandResult> r = RunCommand(argv, absl::Seconds(60));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : CommandResult();
  };

  CommandResult r = glint({"list"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.stderr_text, HasSubstr("glint: error: UNAUTHENTICATED"));

  r = glint({"--token_file=" + pki().infer_token_file, "add", "mlp", model});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.stderr_text, HasSubstr("glint: error: PERMISSION_DENIED"));

  r = glint({"--token_file=" + pki().admin_token_file, "add", "mlp", model});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("added"));

  r = glint({"--token_file=" + pki().infer_token_file, "list"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_THAT(r.stdout_text, HasSubstr("mlp"));

  // Without --tls_ca the CLI speaks plaintext and cannot connect, and says
  // what may be missing.
  absl::StatusOr<CommandResult> plain = RunCommand(
      {RunfilePath("client/glint"), "--server=" + (*daemon)->address(),
       "--connect_timeout=1s", "--token_file=" + pki().infer_token_file,
       "list"},
      absl::Seconds(60));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->exit_code, 1);
  EXPECT_THAT(plain->stderr_text, HasSubstr("UNAVAILABLE"));
  EXPECT_THAT(plain->stderr_text, HasSubstr("pass --tls_ca"));

  // The network the CLI added runs through the library.
  ExpectMlpOutput((*daemon)->client().RunNetwork("mlp", MlpInputs()));
}

TEST_F(E2eAuthTest, MutualTlsNeedsAClientCertificateFromTheCa) {
  ClientOptions with_cert = TlsClient("");
  with_cert.tls_cert_file = pki().client_crt;
  with_cert.tls_key_file = pki().client_key;
  absl::StatusOr<std::unique_ptr<GlintdProcess>> daemon = GlintdProcess::Start(
      {"--tls_cert=" + pki().server_crt, "--tls_key=" + pki().server_key,
       "--tls_client_ca=" + pki().ca_crt},
      absl::Seconds(30), with_cert);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string address = (*daemon)->address();
  EXPECT_THAT((*daemon)->Log(), HasSubstr("mutual TLS, no tokens"));

  // With the CA's client certificate (and no tokens configured) it works.
  GlintClient& client = (*daemon)->client();
  ASSERT_TRUE(client.AddNetwork("mlp", MakeMlpModel(1, kIn, kOut)).ok());
  ExpectMlpOutput(client.RunNetwork("mlp", MlpInputs()));

  // Without a client certificate the handshake fails.
  std::unique_ptr<GlintClient> no_cert = ClientOf(address, TlsClient(""));
  ASSERT_NE(no_cert, nullptr);
  absl::Status s = no_cert->ListNetworks().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;

  // So it does with a certificate from another CA.
  ClientOptions rogue = TlsClient("");
  rogue.tls_cert_file = pki().rogue_client_crt;
  rogue.tls_key_file = pki().rogue_client_key;
  std::unique_ptr<GlintClient> rogue_client = ClientOf(address, rogue);
  ASSERT_NE(rogue_client, nullptr);
  s = rogue_client->ListNetworks().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;

  // And through the CLI with the client certificate.
  absl::StatusOr<CommandResult> r = RunCommand(
      {RunfilePath("client/glint"), "--server=" + address,
       "--tls_ca=" + pki().ca_crt, "--tls_cert=" + pki().client_crt,
       "--tls_key=" + pki().client_key, "list"},
      absl::Seconds(60));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0) << r->stderr_text;
  EXPECT_THAT(r->stdout_text, HasSubstr("mlp"));
  const absl::Status health = (*daemon)->CheckHealth(absl::Seconds(10));
  EXPECT_TRUE(health.ok()) << health;
}

TEST_F(E2eAuthTest, ExposedPortWithoutSecurityIsWarnedAbout) {
  absl::StatusOr<std::unique_ptr<GlintdProcess>> daemon =
      GlintdProcess::Start({"--listen=0.0.0.0:0"});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string log = (*daemon)->Log();
  EXPECT_THAT(log, HasSubstr("WITHOUT TLS"));
  EXPECT_THAT(log, HasSubstr("WITHOUT TOKENS"));
  EXPECT_THAT(log, HasSubstr("!!!!!!!!"));

  // With TLS and tokens nothing is warned about.
  absl::StatusOr<std::unique_ptr<GlintdProcess>> secured =
      GlintdProcess::Start(
          {"--listen=0.0.0.0:0", "--tls_cert=" + pki().server_crt,
           "--tls_key=" + pki().server_key, "--auth_tokens=" + pki().tokens},
          absl::Seconds(30), TlsClient(kInferToken));
  ASSERT_TRUE(secured.ok()) << secured.status();
  EXPECT_THAT((*secured)->Log(), Not(HasSubstr("WITHOUT")));
}

// The HTTP port (KServe v2 REST, /metrics) takes the same TLS material and
// tokens, checked here with curl: HTTPS with the test CA, health and
// /metrics open, inference needing the infer scope.
TEST_F(E2eAuthTest, RestOverHttpsWithTokens) {
  absl::StatusOr<std::unique_ptr<GlintdProcess>> daemon = GlintdProcess::Start(
      {"--tls_cert=" + pki().server_crt, "--tls_key=" + pki().server_key,
       "--auth_tokens=" + pki().tokens},
      absl::Seconds(30), TlsClient(kInferToken));
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  ASSERT_GT((*daemon)->http_port(), 0);
  EXPECT_THAT((*daemon)->Log(), HasSubstr("serving HTTPS"));
  std::unique_ptr<GlintClient> admin =
      ClientOf((*daemon)->address(), TlsClient(kAdminToken));
  ASSERT_NE(admin, nullptr);
  ASSERT_TRUE(admin->AddNetwork("mlp", MakeMlpModel(1, kIn, kOut)).ok());

  const std::string dir = NewTempDir("curl");
  const std::string body = dir + "/infer.json";
  WriteFile(body, absl::StrCat(
                      R"({"inputs": [{"name": "x", "shape": [1, )", kIn,
                      R"(], "datatype": "FP32", "data": [)",
                      absl::StrJoin(Input(), ","), "]}]}"));
  struct Reply {
    int curl_exit = -1;
    int status = 0;
    std::string body;
  };
  // curl [ARGS] URL_PATH over https (or `scheme`), trusting the test CA.
  const auto curl = [&](std::vector<std::string> args, const std::string& path,
                        const std::string& scheme = "https") {
    std::vector<std::string> argv = {"/usr/bin/curl", "-sS", "--noproxy", "*",
                                     "--cacert", pki().ca_crt, "-o",
                                     dir + "/reply", "-w", "%{http_code}"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back(absl::StrCat(scheme, "://127.0.0.1:",
                                (*daemon)->http_port(), path));
    Reply reply;
    std::remove((dir + "/reply").c_str());
    absl::StatusOr<CommandResult> r = RunCommand(argv, absl::Seconds(60));
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return reply;
    reply.curl_exit = r->exit_code;
    reply.status = std::atoi(r->stdout_text.c_str());
    std::ifstream in(dir + "/reply");
    reply.body.assign(std::istreambuf_iterator<char>(in), {});
    return reply;
  };
  const std::vector<std::string> post = {
      "-X", "POST", "-H", "Content-Type: application/json", "--data-binary",
      "@" + body};
  const auto with_token = [&](const char* token) {
    std::vector<std::string> args = post;
    args.insert(args.end(),
                {"-H", absl::StrCat("Authorization: Bearer ", token)});
    return args;
  };

  // Open without a token.
  EXPECT_EQ(curl({}, "/v2/health/live").status, 200);
  EXPECT_EQ(curl({}, "/v2/health/ready").status, 200);
  const Reply metrics = curl({}, "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_THAT(metrics.body, HasSubstr("nv_inference_request_success"));

  // Guarded: 401 without a token, 403 with one lacking the scope.
  Reply r = curl(post, "/v2/models/mlp/infer");
  EXPECT_EQ(r.status, 401) << r.body;
  EXPECT_THAT(r.body, HasSubstr("\"error\""));
  EXPECT_EQ(curl({}, "/v2/models/mlp").status, 401);
  r = curl(with_token(kAdminToken), "/v2/models/mlp/infer");
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_THAT(r.body, HasSubstr("infer"));

  // The infer token runs it; the numbers are the reference's.
  r = curl(with_token(kInferToken), "/v2/models/mlp/infer");
  ASSERT_EQ(r.status, 200) << r.body;
  const std::vector<float> want = MlpReference(Input(), 1, kIn, kOut);
  const size_t data = r.body.find("\"data\":[");
  ASSERT_NE(data, std::string::npos) << r.body;
  std::vector<float> got;
  for (absl::string_view v : absl::StrSplit(
           r.body.substr(data + 8, r.body.find(']', data) - data - 8), ',')) {
    float f = 0;
    ASSERT_TRUE(absl::SimpleAtof(v, &f)) << v;
    got.push_back(f);
  }
  ASSERT_EQ(got.size(), want.size()) << r.body;
  for (size_t j = 0; j < want.size(); ++j) EXPECT_NEAR(got[j], want[j], 1e-5);

  // Plain HTTP gets no HTTP answer from the HTTPS port, and a client that
  // trusts another CA refuses the server (curl: 60, peer certificate).
  r = curl({}, "/v2/health/live", "http");
  EXPECT_NE(r.curl_exit, 0);
  EXPECT_EQ(r.status, 0);
  r = curl({"--cacert", pki().rogue_ca_crt}, "/v2/health/live");
  EXPECT_EQ(r.curl_exit, 60);
}

// Mutual TLS on the HTTP port: curl needs the CA's client certificate.
TEST_F(E2eAuthTest, RestOverMutualTls) {
  ClientOptions with_cert = TlsClient("");
  with_cert.tls_cert_file = pki().client_crt;
  with_cert.tls_key_file = pki().client_key;
  absl::StatusOr<std::unique_ptr<GlintdProcess>> daemon = GlintdProcess::Start(
      {"--tls_cert=" + pki().server_crt, "--tls_key=" + pki().server_key,
       "--tls_client_ca=" + pki().ca_crt},
      absl::Seconds(30), with_cert);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string url =
      absl::StrCat("https://127.0.0.1:", (*daemon)->http_port(), "/v2");
  const auto curl = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"/usr/bin/curl", "-sS", "--noproxy", "*",
                                     "--cacert", pki().ca_crt, "-o",
                                     "/dev/null", "-w", "%{http_code}"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back(url);
    absl::StatusOr<CommandResult> r = RunCommand(argv, absl::Seconds(60));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : CommandResult();
  };
  CommandResult r =
      curl({"--cert", pki().client_crt, "--key", pki().client_key});
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "200");
  r = curl({});
  EXPECT_NE(r.exit_code, 0);
  r = curl({"--cert", pki().rogue_client_crt, "--key",
            pki().rogue_client_key});
  EXPECT_NE(r.exit_code, 0);
}

// Bad security flags stop glintd at start with one clear message.
TEST_F(E2eAuthTest, BadSecurityFlagsExitOneWithTheReason) {
  const std::string dir = NewTempDir("bad_flags");
  WriteFile(dir + "/tokens", absl::StrCat(kInferToken, " infer\n",
                                          "short admin\n"));
  chmod((dir + "/tokens").c_str(), 0600);
  struct Case {
    std::vector<std::string> flags;
    std::string expected;
  };
  const Case cases[] = {
      {{"--tls_cert=" + pki().server_crt, "--tls_key=" + pki().client_key},
       "does not belong to the certificate"},
      {{"--tls_cert=" + pki().server_crt}, "--tls_cert needs --tls_key"},
      {{"--tls_cert=" + dir + "/none.crt", "--tls_key=" + pki().server_key},
       "--tls_cert: cannot read"},
      {{"--tls_cert=" + pki().server_key, "--tls_key=" + pki().server_key},
       "holds no PEM certificate"},
      {{"--tls_client_ca=" + pki().ca_crt}, "--tls_client_ca needs"},
      {{"--auth_tokens=" + dir + "/tokens"}, dir + "/tokens:2: the token is 5"},
      {{"--auth_tokens=" + dir + "/none"}, "cannot read the token file"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {RunfilePath("runtime/server/glintd"),
                                     "--listen=127.0.0.1:0", "--http_listen=",
                                     "--store_dir=" + dir + "/store"};
    argv.insert(argv.end(), c.flags.begin(), c.flags.end());
    absl::StatusOr<CommandResult> r = RunCommand(argv, absl::Seconds(60));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->exit_code, 1) << c.expected;
    EXPECT_THAT(r->stdout_text + r->stderr_text, HasSubstr(c.expected));
  }
}

}  // namespace
}  // namespace glint::testing
