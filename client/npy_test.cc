#include "client/npy.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

using ::testing::HasSubstr;

// Builds a .npy by hand, exactly as numpy lays it out, so that the reader is
// tested against the format rather than against our own writer.
std::string MakeNpy(const std::string& dict, const std::string& data,
                    int major = 1) {
  std::string header = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  const uint32_t len = header.size();
  for (size_t i = 0; i < prefix - 8; ++i) out.push_back((len >> (8 * i)) & 0xff);
  return out + header + data;
}

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()),
                     v.size() * sizeof(T));
}

TEST(NpyTest, ReadsFloat32Matrix) {
  const std::string file =
      MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
              Bytes<float>({1, 2, 3, 4, 5, 6}));
  absl::StatusOr<Tensor> t = ParseNpy(file);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kFloat32);
  EXPECT_EQ(t->shape(), Shape({2, 3}));
  EXPECT_EQ(t->data<float>()[4], 5.0f);
}

TEST(NpyTest, ReadsVersion2AndOtherTypes) {
  absl::StatusOr<Tensor> t = ParseNpy(MakeNpy(
      "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }",
      Bytes<int64_t>({-1, 0, 7}), /*major=*/2));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kInt64);
  EXPECT_EQ(t->data<int64_t>()[0], -1);

  t = ParseNpy(MakeNpy("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }",
                       std::string("\1\0", 2)));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kBool);

  t = ParseNpy(MakeNpy("{'descr': '<f2', 'fortran_order': False, 'shape': (), }",
                       std::string("\0\x3c", 2)));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kFloat16);
  EXPECT_EQ(t->shape().rank(), 0);

  // Key order and quoting are free in the Python literal.
  t = ParseNpy(MakeNpy(
      "{\"shape\": (1, 1), \"fortran_order\": False, \"descr\": \"<f8\"}",
      Bytes<double>({2.5})));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->data<double>()[0], 2.5);
}

TEST(NpyTest, WriteThenReadRoundTrips) {
  Tensor in = Tensor::FromVector<int32_t>(DType::kInt32, Shape({2, 2}),
                                          {1, -2, 3, -4});
  absl::StatusOr<std::string> bytes = SerializeNpy(in);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(bytes->substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const uint16_t header_len = static_cast<uint8_t>((*bytes)[8]) |
                              static_cast<uint8_t>((*bytes)[9]) << 8;
  EXPECT_EQ((10 + header_len) % 64, 0);  // Data 64-byte aligned.
  EXPECT_THAT(*bytes, HasSubstr("'descr': '<i4'"));
  EXPECT_THAT(*bytes, HasSubstr("'shape': (2, 2)"));
  absl::StatusOr<Tensor> out = ParseNpy(*bytes);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), in.shape());
  EXPECT_EQ(std::memcmp(out->raw_data(), in.raw_data(), in.num_bytes()), 0);

  // 1-d shapes need the trailing comma of a Python 1-tuple.
  Tensor v = Tensor::FromVector<float>(DType::kFloat32, Shape({3}), {1, 2, 3});
  EXPECT_THAT(*SerializeNpy(v), HasSubstr("'shape': (3,)"));
}

TEST(NpyTest, FileRoundTrip) {
  const std::string path =
      std::string(std::getenv("TEST_TMPDIR")) + "/t.npy";
  Tensor in = Tensor::FromVector<uint8_t>(DType::kUInt8, Shape({4}), {1, 2, 3, 255});
  ASSERT_TRUE(WriteNpyFile(path, in).ok());
  absl::StatusOr<Tensor> out = ReadNpyFile(path);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->data<uint8_t>()[3], 255);
  EXPECT_EQ(ReadNpyFile(path + ".missing").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(NpyTest, RefusesWhatItCannotRepresent) {
  Tensor bf16 = Tensor::FromVector<uint16_t>(DType::kBFloat16, Shape({1}), {0});
  EXPECT_EQ(SerializeNpy(bf16).status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST(NpyTest, Errors) {
  struct Case {
    std::string file;
    const char* needle;
  };
  const std::string four = Bytes<float>({1, 2, 3, 4});
  for (const Case& c : {
           Case{"not numpy at all", "magic"},
           Case{MakeNpy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", four),
                "Fortran"},
           Case{MakeNpy("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", four),
                "big-endian"},
           Case{MakeNpy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", four),
                "structured"},
           Case{MakeNpy("{'descr': '|O', 'fortran_order': False, 'shape': (4,), }", four),
                "unsupported numpy dtype"},
           Case{MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", four),
                "needs 24 data bytes, the file has 16"},
           Case{MakeNpy("{'descr': '<f4', 'shape': (4,), }", four), "lacks"},
           Case{MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", four),
                "tuple of ints"},
           Case{MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", four)
                    .substr(0, 20),
                "truncated"},
       }) {
    absl::StatusOr<Tensor> t = ParseNpy(c.file);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << c.needle;
    EXPECT_THAT(std::string(t.status().message()), HasSubstr(c.needle));
  }
  std::string v9 = MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", four);
  v9[6] = 9;
  EXPECT_THAT(std::string(ParseNpy(v9).status().message()),
              HasSubstr("version 9"));
}

}  // namespace
}  // namespace glint
