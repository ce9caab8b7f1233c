#include "runtime/server/common/security_options.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

using ::testing::HasSubstr;

struct KeyAndCert {
  std::string key_pem;
  std::string cert_pem;
};

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(size));
}

// A self-signed P-256 certificate valid from `from_days` to `to_days`
// (relative to now), made with libcrypto so that the test needs no tool.
KeyAndCert MakeSelfSigned(const char* common_name, long from_days = -1,
                          long to_days = 30) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), from_days * 86400);
  X509_gmtime_adj(X509_getm_notAfter(cert), to_days * 86400);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(
      name, "CN", MBSTRING_ASC,
      reinterpret_cast<const unsigned char*>(common_name), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509_sign(cert, key, EVP_sha256());

  KeyAndCert out;
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  out.key_pem = BioText(bio);
  BIO_free(bio);
  bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  out.cert_pem = BioText(bio);
  BIO_free(bio);
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

std::string Write(const std::string& name, const std::string& text) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

class LoadTlsMaterialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = MakeSelfSigned("server");
    other_ = MakeSelfSigned("other");
    cert_ = Write("server.crt", server_.cert_pem);
    key_ = Write("server.key", server_.key_pem);
    other_key_ = Write("other.key", other_.key_pem);
    ca_ = Write("ca.crt", other_.cert_pem);
    garbage_ = Write("garbage.pem", "not a certificate\n");
  }

  absl::Status Error(TlsOptions options) {
    absl::StatusOr<std::optional<TlsMaterial>> m = LoadTlsMaterial(options);
    EXPECT_FALSE(m.ok());
    if (m.ok()) return absl::OkStatus();
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument)
        << m.status();
    return m.status();
  }

  KeyAndCert server_, other_;
  std::string cert_, key_, other_key_, ca_, garbage_;
};

TEST_F(LoadTlsMaterialTest, OffWithoutFiles) {
  absl::StatusOr<std::optional<TlsMaterial>> m = LoadTlsMaterial({});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->has_value());
}

TEST_F(LoadTlsMaterialTest, ServerTls) {
  absl::StatusOr<std::optional<TlsMaterial>> m =
      LoadTlsMaterial({cert_, key_, ""});
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(m->has_value());
  EXPECT_EQ((*m)->cert_chain_pem, server_.cert_pem);
  EXPECT_EQ((*m)->private_key_pem, server_.key_pem);
  EXPECT_EQ((*m)->client_ca_pem, "");
}

TEST_F(LoadTlsMaterialTest, MutualTls) {
  absl::StatusOr<std::optional<TlsMaterial>> m =
      LoadTlsMaterial({cert_, key_, ca_});
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE(m->has_value());
  EXPECT_EQ((*m)->client_ca_pem, other_.cert_pem);
}

TEST_F(LoadTlsMaterialTest, IncompleteFlags) {
  EXPECT_THAT(Error({cert_, "", ""}).message(),
              HasSubstr("--tls_cert needs --tls_key"));
  EXPECT_THAT(Error({"", key_, ""}).message(),
              HasSubstr("--tls_key needs --tls_cert"));
  EXPECT_THAT(Error({"", "", ca_}).message(),
              HasSubstr("--tls_client_ca needs --tls_cert"));
}

TEST_F(LoadTlsMaterialTest, UnreadableFilesAreNamed) {
  const std::string missing = std::string(std::getenv("TEST_TMPDIR")) + "/no";
  absl::Status s = Error({missing, key_, ""});
  EXPECT_THAT(s.message(), HasSubstr("--tls_cert: cannot read '" + missing));
  s = Error({cert_, missing, ""});
  EXPECT_THAT(s.message(), HasSubstr("--tls_key: cannot read '" + missing));
  s = Error({cert_, key_, missing});
  EXPECT_THAT(s.message(),
              HasSubstr("--tls_client_ca: cannot read '" + missing));
}

TEST_F(LoadTlsMaterialTest, NotPem) {
  EXPECT_THAT(Error({garbage_, key_, ""}).message(),
              HasSubstr("--tls_cert: '" + garbage_ + "' holds no PEM"));
  EXPECT_THAT(Error({cert_, garbage_, ""}).message(),
              HasSubstr("--tls_key: '" + garbage_ + "' holds no unencrypted"));
  // A certificate is not a key, and a key is not a CA.
  EXPECT_THAT(Error({cert_, cert_, ""}).message(),
              HasSubstr("holds no unencrypted PEM private key"));
  EXPECT_THAT(Error({cert_, key_, key_}).message(),
              HasSubstr("--tls_client_ca: '" + key_ + "' holds no PEM"));
}

TEST_F(LoadTlsMaterialTest, KeyOfAnotherCertificate) {
  EXPECT_THAT(Error({cert_, other_key_, ""}).message(),
              HasSubstr("does not belong to the certificate"));
}

TEST_F(LoadTlsMaterialTest, EncryptedKeyIsRefusedWithoutPrompting) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  BIO* bio = BIO_new(BIO_s_mem());
  const char pass[] = "secret";
  PEM_write_bio_PrivateKey(bio, key, EVP_aes_128_cbc(),
                           reinterpret_cast<const unsigned char*>(pass),
                           sizeof(pass) - 1, nullptr, nullptr);
  const std::string encrypted = Write("encrypted.key", BioText(bio));
  BIO_free(bio);
  EVP_PKEY_free(key);
  EXPECT_THAT(Error({cert_, encrypted, ""}).message(),
              HasSubstr("holds no unencrypted PEM private key"));
}

TEST_F(LoadTlsMaterialTest, ExpiredCertificateStillLoads) {
  // Only a warning: clients will say why they refuse.
  KeyAndCert old = MakeSelfSigned("old", -30, -1);
  absl::StatusOr<std::optional<TlsMaterial>> m = LoadTlsMaterial(
      {Write("old.crt", old.cert_pem), Write("old.key", old.key_pem), ""});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->has_value());
}

TEST(IsLoopbackListenAddressTest, Addresses) {
  EXPECT_TRUE(IsLoopbackListenAddress("127.0.0.1:50051"));
  EXPECT_TRUE(IsLoopbackListenAddress("127.3.2.1:0"));
  EXPECT_TRUE(IsLoopbackListenAddress("localhost:50051"));
  EXPECT_TRUE(IsLoopbackListenAddress("LOCALHOST:1"));
  EXPECT_TRUE(IsLoopbackListenAddress("[::1]:50051"));
  EXPECT_TRUE(IsLoopbackListenAddress("unix:/tmp/glintd.sock"));
  EXPECT_FALSE(IsLoopbackListenAddress("0.0.0.0:50051"));
  EXPECT_FALSE(IsLoopbackListenAddress("[::]:50051"));
  EXPECT_FALSE(IsLoopbackListenAddress(":50051"));
  EXPECT_FALSE(IsLoopbackListenAddress("10.1.2.3:50051"));
  EXPECT_FALSE(IsLoopbackListenAddress("[2001:db8::1]:50051"));
  EXPECT_FALSE(IsLoopbackListenAddress("[::ffff:10.0.0.1]:50051"));
  EXPECT_TRUE(IsLoopbackListenAddress("[::ffff:127.0.0.1]:50051"));
}

TEST(ExposureWarningsTest, OnlyBeyondLoopbackAndOnlyWhatIsMissing) {
  SecurityOptions none;
  SecurityOptions tls;
  tls.tls = {"c.pem", "k.pem", ""};
  SecurityOptions mutual;
  mutual.tls = {"c.pem", "k.pem", "ca.pem"};
  SecurityOptions tokens;
  tokens.auth_tokens_file = "tokens";
  SecurityOptions both = tls;
  both.auth_tokens_file = "tokens";

  EXPECT_TRUE(ExposureWarnings("127.0.0.1:1", none).empty());
  const std::vector<std::string> open = ExposureWarnings("0.0.0.0:1", none);
  ASSERT_EQ(open.size(), 2u);
  EXPECT_THAT(open[0], HasSubstr("WITHOUT TLS"));
  EXPECT_THAT(open[1], HasSubstr("WITHOUT TOKENS"));

  const std::vector<std::string> tls_only = ExposureWarnings("0.0.0.0:1", tls);
  ASSERT_EQ(tls_only.size(), 1u);
  EXPECT_THAT(tls_only[0], HasSubstr("WITHOUT TOKENS"));

  const std::vector<std::string> tokens_only =
      ExposureWarnings("0.0.0.0:1", tokens);
  ASSERT_EQ(tokens_only.size(), 1u);
  EXPECT_THAT(tokens_only[0], HasSubstr("WITHOUT TLS"));

  // Mutual TLS authenticates clients by certificate.
  EXPECT_TRUE(ExposureWarnings("0.0.0.0:1", mutual).empty());
  EXPECT_TRUE(ExposureWarnings("0.0.0.0:1", both).empty());
}

}  // namespace
}  // namespace glint
