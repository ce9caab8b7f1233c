#include "client/tensor_file.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "client/npy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

using ::testing::HasSubstr;

std::string TmpPath(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
}

void WriteProto(const std::string& path, const onnx::TensorProto& p) {
  std::ofstream out(path, std::ios::binary);
  p.SerializeToOstream(&out);
}

TEST(TensorFromOnnxTest, RawData) {
  onnx::TensorProto p;
  p.set_name("x");
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(2);
  p.add_dims(2);
  const float v[] = {1, 2, 3, 4};
  p.set_raw_data(v, sizeof(v));
  absl::StatusOr<NamedTensor> t = TensorFromOnnx(p);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->name, "x");
  EXPECT_EQ(t->tensor.shape(), Shape({2, 2}));
  EXPECT_EQ(t->tensor.data<float>()[3], 4.0f);
}

TEST(TensorFromOnnxTest, TypedFields) {
  onnx::TensorProto f;
  f.set_data_type(onnx::TensorProto::FLOAT);
  f.add_dims(2);
  f.add_float_data(1.5f);
  f.add_float_data(-2);
  absl::StatusOr<NamedTensor> t = TensorFromOnnx(f);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->tensor.data<float>()[1], -2.0f);

  onnx::TensorProto i8;
  i8.set_data_type(onnx::TensorProto::INT8);
  i8.add_dims(3);
  for (int x : {-128, 0, 127}) i8.add_int32_data(x);
  t = TensorFromOnnx(i8);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->tensor.dtype(), DType::kInt8);
  EXPECT_EQ(t->tensor.data<int8_t>()[0], -128);
  EXPECT_EQ(t->tensor.data<int8_t>()[2], 127);

  onnx::TensorProto b;
  b.set_data_type(onnx::TensorProto::BOOL);
  b.add_dims(2);
  b.add_int32_data(0);
  b.add_int32_data(5);
  t = TensorFromOnnx(b);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->tensor.data<uint8_t>()[1], 1);

  onnx::TensorProto h;
  h.set_data_type(onnx::TensorProto::FLOAT16);
  h.add_int32_data(0x3c00);  // 1.0 in binary16; a scalar.
  t = TensorFromOnnx(h);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->tensor.shape().rank(), 0);
  EXPECT_EQ(t->tensor.data<uint16_t>()[0], 0x3c00);

  onnx::TensorProto i64;
  i64.set_data_type(onnx::TensorProto::INT64);
  i64.add_dims(1);
  i64.add_int64_data(int64_t{1} << 40);
  t = TensorFromOnnx(i64);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->tensor.data<int64_t>()[0], int64_t{1} << 40);

  onnx::TensorProto d;
  d.set_data_type(onnx::TensorProto::DOUBLE);
  d.add_dims(1);
  d.add_double_data(0.25);
  t = TensorFromOnnx(d);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->tensor.data<double>()[0], 0.25);

  onnx::TensorProto u32;
  u32.set_data_type(onnx::TensorProto::UINT32);
  u32.add_dims(1);
  u32.add_uint64_data(4000000000u);
  t = TensorFromOnnx(u32);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->tensor.data<uint32_t>()[0], 4000000000u);
}

TEST(TensorFromOnnxTest, Errors) {
  onnx::TensorProto count;
  count.set_name("w");
  count.set_data_type(onnx::TensorProto::FLOAT);
  count.add_dims(3);
  count.add_float_data(1);
  absl::StatusOr<NamedTensor> t = TensorFromOnnx(count);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("'w': float_data has 1 elements"));

  onnx::TensorProto raw = count;
  raw.clear_float_data();
  raw.set_raw_data(std::string(5, '\0'));
  EXPECT_THAT(std::string(TensorFromOnnx(raw).status().message()),
              HasSubstr("raw_data has 5 bytes"));

  onnx::TensorProto neg;
  neg.set_data_type(onnx::TensorProto::FLOAT);
  neg.add_dims(-1);
  EXPECT_EQ(TensorFromOnnx(neg).status().code(),
            absl::StatusCode::kInvalidArgument);

  onnx::TensorProto str;
  str.set_data_type(onnx::TensorProto::STRING);
  str.add_string_data("a");
  EXPECT_EQ(TensorFromOnnx(str).status().code(),
            absl::StatusCode::kUnimplemented);

  onnx::TensorProto ext;
  ext.set_data_type(onnx::TensorProto::FLOAT);
  ext.set_data_location(onnx::TensorProto::EXTERNAL);
  EXPECT_EQ(TensorFromOnnx(ext).status().code(),
            absl::StatusCode::kUnimplemented);
}

// Found by //client:tensor_proto_fuzzer: the tensor used to be allocated
// (and zeroed) before its data was counted, so a proto of a few bytes
// claiming 2^35 floats asked for 128 GiB.
TEST(TensorFromOnnxTest, ChecksTheDataBeforeAllocating) {
  onnx::TensorProto huge;
  huge.set_data_type(onnx::TensorProto::FLOAT);
  huge.add_dims(int64_t{1} << 35);
  absl::StatusOr<NamedTensor> t = TensorFromOnnx(huge);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("float_data has 0 elements"));

  huge.set_raw_data(std::string(4, '\0'));
  t = TensorFromOnnx(huge);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("raw_data has 4 bytes"));
}

TEST(TensorFileTest, RoundTripThroughOnnxAndFiles) {
  NamedTensor in{"y", Tensor::FromVector<int64_t>(DType::kInt64, Shape({2}),
                                                  {5, -6})};
  absl::StatusOr<onnx::TensorProto> p = TensorToOnnx(in);
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string pb = TmpPath("y.pb");
  WriteProto(pb, *p);
  absl::StatusOr<NamedTensor> back = ReadTensorFile(pb);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->name, "y");
  EXPECT_EQ(back->tensor.data<int64_t>()[1], -6);

  const std::string npy = TmpPath("y.npy");
  ASSERT_TRUE(WriteNpyFile(npy, in.tensor).ok());
  back = ReadTensorFile(npy);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->name, "");
  EXPECT_EQ(back->tensor.data<int64_t>()[0], 5);
}

TEST(TensorFileTest, FileErrors) {
  EXPECT_EQ(ReadTensorFile(TmpPath("absent.pb")).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ReadTensorFile(TmpPath("x.txt")).status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::string junk = TmpPath("junk.pb");
  std::ofstream(junk) << "\xff\xff\xff garbage";
  absl::StatusOr<NamedTensor> t = ReadTensorFile(junk);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr(junk));
}

// One real file from ONNX's conformance data, when installed.
TEST(TensorFileTest, ReadsOnnxTestData) {
  const std::string path =
      "/usr/share/libonnx-testdata/data/node/test_relu/test_data_set_0/"
      "input_0.pb";
  if (!std::ifstream(path).good()) GTEST_SKIP() << path << " not installed";
  absl::StatusOr<NamedTensor> t = ReadTensorFile(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->name, "x");
  EXPECT_EQ(t->tensor.dtype(), DType::kFloat32);
  EXPECT_EQ(t->tensor.shape(), Shape({3, 4, 5}));
}

}  // namespace
}  // namespace glint
