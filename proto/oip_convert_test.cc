#include "proto/oip_convert.h"

#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/half.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

using inference::ModelInferRequest;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()),
                     v.size() * sizeof(T));
}

ModelInferRequest::InferInputTensor* AddInput(
    ModelInferRequest* r, const std::string& name, const std::string& datatype,
    std::vector<int64_t> shape) {
  ModelInferRequest::InferInputTensor* in = r->add_inputs();
  in->set_name(name);
  in->set_datatype(datatype);
  for (int64_t d : shape) in->add_shape(d);
  return in;
}

absl::StatusOr<OipInferCall> Convert(const ModelInferRequest& r) {
  return OipInferCallFromProto(r, kNow, absl::InfiniteFuture());
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.num_elements());
}

// Raw bytes of every datatype become a tensor of the same dtype, shape and
// bytes.
TEST(OipInferCallTest, RawContentsOfEveryDatatype) {
  const std::vector<std::pair<std::string, DType>> types = {
      {"BOOL", DType::kBool},     {"UINT8", DType::kUInt8},
      {"UINT16", DType::kUInt16}, {"UINT32", DType::kUInt32},
      {"UINT64", DType::kUInt64}, {"INT8", DType::kInt8},
      {"INT16", DType::kInt16},   {"INT32", DType::kInt32},
      {"INT64", DType::kInt64},   {"FP16", DType::kFloat16},
      {"FP32", DType::kFloat32},  {"FP64", DType::kFloat64},
      {"BF16", DType::kBFloat16},
  };
  ModelInferRequest r;
  r.set_model_name("m");
  std::vector<std::string> payloads;
  for (size_t i = 0; i < types.size(); ++i) {
    const auto& [datatype, dtype] = types[i];
    AddInput(&r, "in" + std::to_string(i), datatype, {2, 3});
    std::string bytes(6 * DTypeSize(dtype), '\0');
    for (size_t b = 0; b < bytes.size(); ++b) {
      // Booleans must be 0 or 1; anything else gets varied bytes.
      bytes[b] = dtype == DType::kBool ? (b % 2) : static_cast<char>(b * 7 + i);
    }
    payloads.push_back(bytes);
    r.add_raw_input_contents(bytes);
  }
  absl::StatusOr<OipInferCall> call = Convert(r);
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->model_name, "m");
  ASSERT_EQ(call->inputs.size(), types.size());
  for (size_t i = 0; i < types.size(); ++i) {
    const NamedTensor& t = call->inputs[i];
    EXPECT_EQ(t.name, "in" + std::to_string(i));
    EXPECT_EQ(t.tensor.dtype(), types[i].second) << types[i].first;
    EXPECT_EQ(t.tensor.shape(), Shape({2, 3}));
    EXPECT_EQ(std::string(static_cast<const char*>(t.tensor.raw_data()),
                          t.tensor.num_bytes()),
              payloads[i])
        << types[i].first;
  }
}

TEST(OipInferCallTest, TypedContentsOfEveryDatatypeWithATypedField) {
  ModelInferRequest r;
  auto* b = AddInput(&r, "b", "BOOL", {3});
  for (bool v : {true, false, true}) b->mutable_contents()->add_bool_contents(v);
  auto* i8 = AddInput(&r, "i8", "INT8", {2});
  for (int v : {-128, 127}) i8->mutable_contents()->add_int_contents(v);
  auto* i16 = AddInput(&r, "i16", "INT16", {2});
  for (int v : {-32768, 32767}) i16->mutable_contents()->add_int_contents(v);
  auto* i32 = AddInput(&r, "i32", "INT32", {2});
  for (int v : {-5, 1 << 30}) i32->mutable_contents()->add_int_contents(v);
  auto* i64 = AddInput(&r, "i64", "INT64", {1});
  i64->mutable_contents()->add_int64_contents(-(int64_t{1} << 40));
  auto* u8 = AddInput(&r, "u8", "UINT8", {2});
  for (unsigned v : {0u, 255u}) u8->mutable_contents()->add_uint_contents(v);
  auto* u16 = AddInput(&r, "u16", "UINT16", {1});
  u16->mutable_contents()->add_uint_contents(65535);
  auto* u32 = AddInput(&r, "u32", "UINT32", {1});
  u32->mutable_contents()->add_uint_contents(4000000000u);
  auto* u64 = AddInput(&r, "u64", "UINT64", {1});
  u64->mutable_contents()->add_uint64_contents(uint64_t{1} << 63);
  auto* f32 = AddInput(&r, "f32", "FP32", {2, 1});
  for (float v : {1.5f, -2.25f}) f32->mutable_contents()->add_fp32_contents(v);
  auto* f64 = AddInput(&r, "f64", "FP64", {1});
  f64->mutable_contents()->add_fp64_contents(1e300);
  absl::StatusOr<OipInferCall> call = Convert(r);
  ASSERT_TRUE(call.ok()) << call.status();
  const auto& in = call->inputs;
  ASSERT_EQ(in.size(), 11u);
  EXPECT_THAT(Values<uint8_t>(in[0].tensor), ElementsAre(1, 0, 1));
  EXPECT_EQ(in[0].tensor.dtype(), DType::kBool);
  EXPECT_THAT(Values<int8_t>(in[1].tensor), ElementsAre(-128, 127));
  EXPECT_THAT(Values<int16_t>(in[2].tensor), ElementsAre(-32768, 32767));
  EXPECT_THAT(Values<int32_t>(in[3].tensor), ElementsAre(-5, 1 << 30));
  EXPECT_THAT(Values<int64_t>(in[4].tensor), ElementsAre(-(int64_t{1} << 40)));
  EXPECT_THAT(Values<uint8_t>(in[5].tensor), ElementsAre(0, 255));
  EXPECT_THAT(Values<uint16_t>(in[6].tensor), ElementsAre(65535));
  EXPECT_THAT(Values<uint32_t>(in[7].tensor), ElementsAre(4000000000u));
  EXPECT_THAT(Values<uint64_t>(in[8].tensor), ElementsAre(uint64_t{1} << 63));
  EXPECT_THAT(Values<float>(in[9].tensor), ElementsAre(1.5f, -2.25f));
  EXPECT_EQ(in[9].tensor.shape(), Shape({2, 1}));
  EXPECT_THAT(Values<double>(in[10].tensor), ElementsAre(1e300));
}

TEST(OipInferCallTest, ZeroElementTensorsNeedNoData) {
  ModelInferRequest r;
  AddInput(&r, "e", "FP16", {0, 4});
  absl::StatusOr<OipInferCall> call = Convert(r);
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->inputs[0].tensor.num_elements(), 0);
}

// Each malformed request is refused with its code and a message naming the
// problem.
struct BadCase {
  std::string what;
  std::function<void(ModelInferRequest*)> make;
  absl::StatusCode code;
  std::string message;
};

TEST(OipInferCallTest, MalformedRequestsAreRefused) {
  auto fp32x2 = [](ModelInferRequest* r) {
    return AddInput(r, "x", "FP32", {2});
  };
  const std::vector<BadCase> cases = {
      {"version 2",
       [&](ModelInferRequest* r) {
         r->set_model_version("2");
         fp32x2(r)->mutable_contents()->add_fp32_contents(1);
       },
       absl::StatusCode::kNotFound, "no version '2'"},
      {"BYTES",
       [](ModelInferRequest* r) {
         AddInput(r, "s", "BYTES", {1})->mutable_contents()->add_bytes_contents(
             "a");
       },
       absl::StatusCode::kInvalidArgument, "BYTES is not supported"},
      {"unknown datatype",
       [](ModelInferRequest* r) { AddInput(r, "x", "FLOAT32", {1}); },
       absl::StatusCode::kInvalidArgument, "input 'x': unknown datatype"},
      {"negative dim",
       [](ModelInferRequest* r) {
         AddInput(r, "x", "FP32", {2, -1});
       },
       absl::StatusCode::kInvalidArgument, "negative dimension"},
      {"huge shape",
       [](ModelInferRequest* r) {
         AddInput(r, "x", "FP32", {int64_t{1} << 40, 1 << 20});
       },
       absl::StatusCode::kInvalidArgument, "input 'x'"},
      {"raw too short",
       [&](ModelInferRequest* r) {
         fp32x2(r);
         r->add_raw_input_contents(std::string(7, '\0'));
       },
       absl::StatusCode::kInvalidArgument, "has 7 bytes; FP32[2] needs 8"},
      {"raw count differs",
       [&](ModelInferRequest* r) {
         fp32x2(r);
         AddInput(r, "y", "FP32", {2});
         r->add_raw_input_contents(std::string(8, '\0'));
       },
       absl::StatusCode::kInvalidArgument,
       "1 entries for 2 inputs not in shared memory"},
      {"raw and typed mixed",
       [&](ModelInferRequest* r) {
         fp32x2(r)->mutable_contents()->add_fp32_contents(1);
         r->add_raw_input_contents(std::string(8, '\0'));
       },
       absl::StatusCode::kInvalidArgument, "use one or the other"},
      {"typed count short",
       [&](ModelInferRequest* r) {
         fp32x2(r)->mutable_contents()->add_fp32_contents(1);
       },
       absl::StatusCode::kInvalidArgument, "holds 1 values; its shape needs 2"},
      {"typed wrong field",
       [&](ModelInferRequest* r) {
         auto* c = fp32x2(r)->mutable_contents();
         c->add_fp64_contents(1);
         c->add_fp64_contents(2);
       },
       absl::StatusCode::kInvalidArgument,
       "contents.fp64_contents does not carry FP32 (use "
       "contents.fp32_contents)"},
      {"typed two fields",
       [&](ModelInferRequest* r) {
         auto* c = fp32x2(r)->mutable_contents();
         c->add_fp32_contents(1);
         c->add_fp32_contents(2);
         c->add_int_contents(1);
         c->add_int_contents(2);
       },
       absl::StatusCode::kInvalidArgument, "int_contents does not carry FP32"},
      {"no data", [&](ModelInferRequest* r) { fp32x2(r); },
       absl::StatusCode::kInvalidArgument, "input 'x' has no data"},
      {"FP16 typed",
       [](ModelInferRequest* r) {
         AddInput(r, "h", "FP16", {1})->mutable_contents()->add_fp32_contents(1);
       },
       absl::StatusCode::kInvalidArgument, "FP16 has no typed contents field"},
      {"INT8 out of range",
       [](ModelInferRequest* r) {
         AddInput(r, "i", "INT8", {1})->mutable_contents()->add_int_contents(128);
       },
       absl::StatusCode::kInvalidArgument,
       "value 128 at 0 is outside [-128, 127]"},
      {"UINT16 out of range",
       [](ModelInferRequest* r) {
         AddInput(r, "u", "UINT16", {1})->mutable_contents()->add_uint_contents(
             70000);
       },
       absl::StatusCode::kInvalidArgument, "outside [0, 65535]"},
      {"unknown request parameter",
       [&](ModelInferRequest* r) {
         fp32x2(r);
         r->add_raw_input_contents(std::string(8, '\0'));
         (*r->mutable_parameters())["colour"].set_string_param("red");
       },
       absl::StatusCode::kInvalidArgument,
       "unknown request parameter 'colour'"},
      {"priority as string",
       [&](ModelInferRequest* r) {
         (*r->mutable_parameters())["priority"].set_string_param("1");
       },
       absl::StatusCode::kInvalidArgument, "'priority' must be an int64"},
      {"priority negative",
       [&](ModelInferRequest* r) {
         (*r->mutable_parameters())["priority"].set_int64_param(-3);
       },
       absl::StatusCode::kInvalidArgument, "'priority' is -3"},
      {"timeout negative",
       [&](ModelInferRequest* r) {
         (*r->mutable_parameters())["timeout"].set_int64_param(-1);
       },
       absl::StatusCode::kInvalidArgument, "'timeout' is -1"},
      {"sequence",
       [&](ModelInferRequest* r) {
         (*r->mutable_parameters())["sequence_id"].set_int64_param(7);
       },
       absl::StatusCode::kUnimplemented, "sequence batching"},
      {"shared memory without a byte size",
       [&](ModelInferRequest* r) {
         (*fp32x2(r)->mutable_parameters())["shared_memory_region"]
             .set_string_param("r");
       },
       absl::StatusCode::kInvalidArgument, "needs shared_memory_byte_size"},
      {"shared memory offset without a region",
       [&](ModelInferRequest* r) {
         (*fp32x2(r)->mutable_parameters())["shared_memory_offset"]
             .set_int64_param(0);
       },
       absl::StatusCode::kInvalidArgument, "need shared_memory_region"},
      {"shared memory region not a string",
       [&](ModelInferRequest* r) {
         auto& p = *fp32x2(r)->mutable_parameters();
         p["shared_memory_region"].set_int64_param(1);
         p["shared_memory_byte_size"].set_int64_param(8);
       },
       absl::StatusCode::kInvalidArgument, "non-empty string"},
      {"shared memory negative offset",
       [&](ModelInferRequest* r) {
         auto& p = *fp32x2(r)->mutable_parameters();
         p["shared_memory_region"].set_string_param("r");
         p["shared_memory_byte_size"].set_int64_param(8);
         p["shared_memory_offset"].set_int64_param(-8);
       },
       absl::StatusCode::kInvalidArgument, "'shared_memory_offset' is -8"},
      {"shared memory size not the tensor's",
       [&](ModelInferRequest* r) {
         auto& p = *fp32x2(r)->mutable_parameters();
         p["shared_memory_region"].set_string_param("r");
         p["shared_memory_byte_size"].set_int64_param(12);
       },
       absl::StatusCode::kInvalidArgument,
       "shared_memory_byte_size is 12; FP32[2] needs 8"},
      {"shared memory and contents",
       [&](ModelInferRequest* r) {
         auto* x = fp32x2(r);
         auto& p = *x->mutable_parameters();
         p["shared_memory_region"].set_string_param("r");
         p["shared_memory_byte_size"].set_int64_param(8);
         x->mutable_contents()->add_fp32_contents(1);
         x->mutable_contents()->add_fp32_contents(2);
       },
       absl::StatusCode::kInvalidArgument, "use one or the other"},
      {"shared memory and raw contents",
       [&](ModelInferRequest* r) {
         auto& p = *fp32x2(r)->mutable_parameters();
         p["shared_memory_region"].set_string_param("r");
         p["shared_memory_byte_size"].set_int64_param(8);
         r->add_raw_input_contents(std::string(8, '\0'));
       },
       absl::StatusCode::kInvalidArgument,
       "1 entries for 0 inputs not in shared memory"},
      {"unknown shared memory parameter",
       [&](ModelInferRequest* r) {
         (*fp32x2(r)->mutable_parameters())["shared_memory_key"]
             .set_string_param("/k");
       },
       absl::StatusCode::kInvalidArgument,
       "unknown parameter 'shared_memory_key'"},
      {"output shared memory without a byte size",
       [&](ModelInferRequest* r) {
         fp32x2(r)->mutable_contents()->add_fp32_contents(1);
         r->mutable_inputs(0)->mutable_contents()->add_fp32_contents(2);
         auto* o = r->add_outputs();
         o->set_name("y");
         (*o->mutable_parameters())["shared_memory_region"].set_string_param(
             "r");
       },
       absl::StatusCode::kInvalidArgument,
       "output 'y': shared_memory_region needs shared_memory_byte_size"},
      {"unknown input parameter",
       [&](ModelInferRequest* r) {
         (*fp32x2(r)->mutable_parameters())["layout"].set_string_param("nchw");
       },
       absl::StatusCode::kInvalidArgument,
       "input 'x': unknown parameter 'layout'"},
      {"duplicate output",
       [&](ModelInferRequest* r) {
         r->add_outputs()->set_name("y");
         r->add_outputs()->set_name("y");
       },
       absl::StatusCode::kInvalidArgument, "'y' is requested twice"},
      {"classification",
       [&](ModelInferRequest* r) {
         auto* o = r->add_outputs();
         o->set_name("y");
         (*o->mutable_parameters())["classification"].set_int64_param(3);
       },
       absl::StatusCode::kUnimplemented, "classification"},
      {"binary_data not bool",
       [&](ModelInferRequest* r) {
         auto* o = r->add_outputs();
         o->set_name("y");
         (*o->mutable_parameters())["binary_data"].set_int64_param(1);
       },
       absl::StatusCode::kInvalidArgument, "must be a bool"},
      {"unknown output parameter",
       [&](ModelInferRequest* r) {
         auto* o = r->add_outputs();
         o->set_name("y");
         (*o->mutable_parameters())["top_k"].set_int64_param(1);
       },
       absl::StatusCode::kInvalidArgument, "output 'y': unknown parameter"},
  };
  for (const BadCase& c : cases) {
    ModelInferRequest r;
    r.set_model_name("m");
    c.make(&r);
    absl::StatusOr<OipInferCall> call = Convert(r);
    EXPECT_EQ(call.status().code(), c.code) << c.what << ": " << call.status();
    EXPECT_THAT(call.status().message(), HasSubstr(c.message)) << c.what;
  }
}

TEST(OipInferCallTest, ParametersAndOutputsBecomeRunOptions) {
  ModelInferRequest r;
  r.set_model_name("m");
  r.set_model_version("1");
  auto* in = AddInput(&r, "x", "FP32", {1});
  in->mutable_contents()->add_fp32_contents(3);
  (*r.mutable_parameters())["priority"].set_uint64_param(1);
  (*r.mutable_parameters())["timeout"].set_int64_param(1500);
  r.add_outputs()->set_name("b");
  auto* a = r.add_outputs();
  a->set_name("a");
  (*a->mutable_parameters())["binary_data"].set_bool_param(true);
  absl::StatusOr<OipInferCall> call = Convert(r);
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_THAT(call->options.requested_outputs, ElementsAre("b", "a"));
  EXPECT_EQ(call->options.priority, *RunPriorityFromOip(1));
  EXPECT_EQ(call->options.deadline, kNow + absl::Microseconds(1500));

  // Without parameters: default priority, the gRPC deadline.
  r.clear_parameters();
  const absl::Time grpc = kNow + absl::Seconds(2);
  call = OipInferCallFromProto(r, kNow, grpc);
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(call->options.priority, 0);
  EXPECT_EQ(call->options.deadline, grpc);
}

TEST(OipInferCallTest, SharedMemoryWindowsOfInputsAndOutputs) {
  ModelInferRequest r;
  r.set_model_name("m");
  auto* a = AddInput(&r, "a", "FP32", {2});
  auto& pa = *a->mutable_parameters();
  pa["shared_memory_region"].set_string_param("in");
  pa["shared_memory_byte_size"].set_uint64_param(8);
  pa["shared_memory_offset"].set_int64_param(64);
  AddInput(&r, "b", "INT32", {1});
  r.add_raw_input_contents(std::string(4, '\x01'));  // b's, not a's.
  auto* y = r.add_outputs();
  y->set_name("y");
  (*y->mutable_parameters())["shared_memory_region"].set_string_param("out");
  (*y->mutable_parameters())["shared_memory_byte_size"].set_int64_param(100);
  r.add_outputs()->set_name("z");
  absl::StatusOr<OipInferCall> call = Convert(r);
  ASSERT_TRUE(call.ok()) << call.status();
  ASSERT_EQ(call->inputs.size(), 1u);
  EXPECT_EQ(call->inputs[0].name, "b");
  EXPECT_EQ(call->inputs[0].tensor.data<int32_t>()[0], 0x01010101);
  ASSERT_EQ(call->shared_memory_inputs.size(), 1u);
  const SharedMemoryTensor& in = call->shared_memory_inputs[0];
  EXPECT_EQ(in.name, "a");
  EXPECT_EQ(in.dtype, DType::kFloat32);
  EXPECT_EQ(in.shape, Shape({2}));
  EXPECT_EQ(in.window.region, "in");
  EXPECT_EQ(in.window.offset, 64u);
  EXPECT_EQ(in.window.byte_size, 8u);
  ASSERT_EQ(call->output_windows.size(), 1u);
  EXPECT_EQ(call->output_windows[0].output, "y");
  EXPECT_EQ(call->output_windows[0].window.region, "out");
  EXPECT_EQ(call->output_windows[0].window.offset, 0u);  // The default.
  EXPECT_EQ(call->output_windows[0].window.byte_size, 100u);
  EXPECT_THAT(call->options.requested_outputs, ElementsAre("y", "z"));
}

TEST(OipInferResponseTest, SharedMemoryOutputsHaveEmptyRawEntries) {
  ModelInferRequest r;
  r.set_model_name("m");
  std::vector<NamedTensor> outputs = {
      {"y", Tensor::FromVector<float>(DType::kFloat32, Shape({2}), {1, 2})},
      {"z", Tensor::FromVector<float>(DType::kFloat32, Shape({1}), {3})},
  };
  inference::ModelInferResponse response;
  ASSERT_TRUE(
      OipInferResponseToProto(r, outputs, &response, {true, false}).ok());
  ASSERT_EQ(response.outputs_size(), 2);
  EXPECT_THAT(response.outputs(0).shape(), ElementsAre(2));
  ASSERT_EQ(response.raw_output_contents_size(), 2);
  EXPECT_TRUE(response.raw_output_contents(0).empty());
  EXPECT_EQ(response.raw_output_contents(1), Bytes(std::vector<float>{3}));
}

TEST(SystemSharedMemoryStatusTest, OneEntryPerRegion) {
  inference::SystemSharedMemoryStatusResponse response;
  SystemSharedMemoryStatusToProto({{"a", "/ka", 0, 16}, {"b", "/kb", 4096, 8}},
                                  &response);
  ASSERT_EQ(response.regions_size(), 2);
  const auto& b = response.regions().at("b");
  EXPECT_EQ(b.name(), "b");
  EXPECT_EQ(b.key(), "/kb");
  EXPECT_EQ(b.offset(), 4096u);
  EXPECT_EQ(b.byte_size(), 8u);
}

TEST(OipInferResponseTest, RawOutputsAndEchoedId) {
  ModelInferRequest r;
  r.set_model_name("m");
  r.set_id("req-42");
  const std::vector<float> y = {1, -2, 3.5f};
  const std::vector<uint16_t> h = {FloatToFloat16(1.0f)};
  std::vector<NamedTensor> outputs = {
      {"y", Tensor::FromVector<float>(DType::kFloat32, Shape({3}), y)},
      {"h", Tensor::FromVector<uint16_t>(DType::kFloat16, Shape({1, 1}), h)},
  };
  inference::ModelInferResponse response;
  ASSERT_TRUE(OipInferResponseToProto(r, outputs, &response).ok());
  EXPECT_EQ(response.model_name(), "m");
  EXPECT_EQ(response.model_version(), "1");
  EXPECT_EQ(response.id(), "req-42");
  ASSERT_EQ(response.outputs_size(), 2);
  EXPECT_EQ(response.outputs(0).name(), "y");
  EXPECT_EQ(response.outputs(0).datatype(), "FP32");
  EXPECT_THAT(response.outputs(0).shape(), ElementsAre(3));
  EXPECT_EQ(response.outputs(1).datatype(), "FP16");
  EXPECT_THAT(response.outputs(1).shape(), ElementsAre(1, 1));
  ASSERT_EQ(response.raw_output_contents_size(), 2);
  EXPECT_EQ(response.raw_output_contents(0), Bytes(y));
  EXPECT_EQ(response.raw_output_contents(1), Bytes(h));
  EXPECT_FALSE(response.outputs(0).has_contents());

  std::vector<NamedTensor> bad = {
      {"s", Tensor::Borrow(DType::kString, Shape({1}), nullptr)}};
  inference::ModelInferResponse r2;
  EXPECT_EQ(OipInferResponseToProto(r, bad, &r2).code(),
            absl::StatusCode::kInternal);
}

NetworkInfo SampleNetwork() {
  NetworkInfo info;
  info.name = "net";
  info.inputs = {{"x", DType::kFloat32, Shape({4, 3})}};
  info.outputs = {{"y", DType::kBFloat16, Shape({4, Shape::kUnknownDim})},
                  {"i", DType::kInt64, Shape({})}};
  info.strategy = "load_balanced";
  info.replicas = 2;
  PartitionInfo p0;
  p0.device_id = 0;
  p0.device_name = "sim0";
  p0.replica_devices = {"sim2"};
  PartitionInfo p1;
  p1.device_id = 1;
  p1.device_name = "sim1";
  p1.replica_devices = {"sim3"};
  info.partitions = {p0, p1};
  return info;
}

std::vector<DeviceInfo> FourDevices() {
  std::vector<DeviceInfo> devices(4);
  for (int i = 0; i < 4; ++i) {
    devices[i].id = i;
    devices[i].name = "sim" + std::to_string(i);
  }
  return devices;
}

TEST(ModelMetadataTest, DatatypesAndDynamicDims) {
  inference::ModelMetadataResponse m;
  ModelMetadataToProto(SampleNetwork(), &m);
  EXPECT_EQ(m.name(), "net");
  EXPECT_THAT(m.versions(), ElementsAre("1"));
  EXPECT_EQ(m.platform(), "glint_onnx");
  ASSERT_EQ(m.inputs_size(), 1);
  EXPECT_EQ(m.inputs(0).datatype(), "FP32");
  EXPECT_THAT(m.inputs(0).shape(), ElementsAre(4, 3));
  ASSERT_EQ(m.outputs_size(), 2);
  EXPECT_EQ(m.outputs(0).datatype(), "BF16");
  EXPECT_THAT(m.outputs(0).shape(), ElementsAre(4, -1));
  EXPECT_EQ(m.outputs(1).datatype(), "INT64");
  EXPECT_TRUE(m.outputs(1).shape().empty());

  // With dynamic batching the batch dimension is open.
  NetworkInfo batched = SampleNetwork();
  batched.batching.max_batch_size = 8;
  inference::ModelMetadataResponse b;
  ModelMetadataToProto(batched, &b);
  EXPECT_THAT(b.inputs(0).shape(), ElementsAre(-1, 3));
  EXPECT_THAT(b.outputs(0).shape(), ElementsAre(-1, -1));
}

TEST(ModelConfigTest, ReflectsBatchingReplicasAndDevices) {
  NetworkInfo info = SampleNetwork();
  info.batching.max_batch_size = 4;
  info.batching.max_queue_delay = absl::Microseconds(300);
  info.batching.preferred_batch_sizes = {2, 4};
  inference::ModelConfig c;
  ModelConfigToProto(info, FourDevices(), &c);
  EXPECT_EQ(c.name(), "net");
  EXPECT_EQ(c.platform(), "glint_onnx");
  EXPECT_EQ(c.backend(), "glint");
  EXPECT_EQ(c.max_batch_size(), 4);
  ASSERT_EQ(c.input_size(), 1);
  EXPECT_EQ(c.input(0).data_type(), inference::TYPE_FP32);
  EXPECT_THAT(c.input(0).dims(), ElementsAre(3));  // Behind the batch dim.
  ASSERT_EQ(c.output_size(), 2);
  EXPECT_EQ(c.output(0).data_type(), inference::TYPE_BF16);
  EXPECT_THAT(c.output(0).dims(), ElementsAre(-1));
  ASSERT_TRUE(c.has_dynamic_batching());
  EXPECT_THAT(c.dynamic_batching().preferred_batch_size(), ElementsAre(2, 4));
  EXPECT_EQ(c.dynamic_batching().max_queue_delay_microseconds(), 300u);
  ASSERT_EQ(c.instance_group_size(), 2);
  EXPECT_EQ(c.instance_group(0).count(), 1);
  EXPECT_EQ(c.instance_group(0).kind(),
            inference::ModelInstanceGroup::KIND_MODEL);
  EXPECT_THAT(c.instance_group(0).gpus(), ElementsAre(0, 1));
  EXPECT_THAT(c.instance_group(1).gpus(), ElementsAre(2, 3));
  EXPECT_EQ(c.parameters().at("partition_strategy").string_value(),
            "load_balanced");
  EXPECT_EQ(c.parameters().at("replicas").string_value(), "2");
  EXPECT_EQ(c.parameters().at("plan_devices").string_value(), "2");

  // Unbatched: whole shapes, no dynamic_batching.
  inference::ModelConfig plain;
  ModelConfigToProto(SampleNetwork(), FourDevices(), &plain);
  EXPECT_EQ(plain.max_batch_size(), 0);
  EXPECT_FALSE(plain.has_dynamic_batching());
  EXPECT_THAT(plain.input(0).dims(), ElementsAre(4, 3));
  EXPECT_EQ(plain.parameters().count("max_dims"), 0u);  // No dynamic dim.
}

// The bounds of dynamic dims travel as the max_dims parameter a config
// sets them with: each key once, in the dims' order.
TEST(ModelConfigTest, ReportsTheBoundsOfDynamicDims) {
  NetworkInfo info;
  info.name = "bert";
  info.inputs = {{"ids", DType::kInt64, Shape({-1, -1})},
                 {"mask", DType::kInt64, Shape({-1, -1})}};
  info.dynamic_dims = {{"ids", 0, "batch", 8},
                       {"ids", 1, "seq", 512},
                       {"mask", 0, "batch", 8},
                       {"mask", 1, "seq", 512}};
  inference::ModelConfig c;
  ModelConfigToProto(info, FourDevices(), &c);
  EXPECT_EQ(c.parameters().at("max_dims").string_value(), "batch=8;seq=512");
  EXPECT_THAT(c.input(0).dims(), ElementsAre(-1, -1));
  inference::ModelMetadataResponse m;
  ModelMetadataToProto(info, &m);
  EXPECT_THAT(m.inputs(1).shape(), ElementsAre(-1, -1));
  // An unnamed dim goes by INPUT:AXIS.
  info.dynamic_dims = {{"ids", 1, "", 64}};
  EXPECT_EQ(OipMaxDimsParameter(info.dynamic_dims), "ids:1=64");
  EXPECT_EQ(OipMaxDimsParameter({}), "");
}

TEST(ModelStatisticsTest, CountsAndNanoseconds) {
  NetworkStatistics s;
  s.name = "net";
  s.success_count = 5;
  s.failure_count = 1;
  s.inference_count = 6;
  s.execution_count = 4;
  s.last_inference = absl::FromUnixMillis(1'700'000'000'123);
  s.request = {5, 5000, 0, 0};
  s.failed = {1, 700, 0, 0};
  s.queue = {6, 60, 0, 0};
  s.compute_input = {4, 40, 0, 0};
  s.compute_infer = {4, 4000, 0, 0};
  s.compute_output = {4, 400, 0, 0};
  inference::ModelStatistics m;
  ModelStatisticsToProto(s, &m);
  EXPECT_EQ(m.name(), "net");
  EXPECT_EQ(m.version(), "1");
  EXPECT_EQ(m.last_inference(), 1'700'000'000'123u);
  EXPECT_EQ(m.inference_count(), 6u);
  EXPECT_EQ(m.execution_count(), 4u);
  const inference::InferStatistics& i = m.inference_stats();
  EXPECT_EQ(i.success().count(), 5u);
  EXPECT_EQ(i.success().ns(), 5000u);
  EXPECT_EQ(i.fail().count(), 1u);
  EXPECT_EQ(i.fail().ns(), 700u);
  EXPECT_EQ(i.queue().count(), 6u);
  EXPECT_EQ(i.compute_input().ns(), 40u);
  EXPECT_EQ(i.compute_infer().ns(), 4000u);
  EXPECT_EQ(i.compute_output().count(), 4u);

  inference::ModelStatistics never;
  ModelStatisticsToProto(NetworkStatistics(), &never);
  EXPECT_EQ(never.last_inference(), 0u);
}

TEST(RepositoryIndexTest, ReadyAndUnavailable) {
  NetworkInfo a;
  a.name = "a";
  NetworkInfo b;
  b.name = "b";
  b.unavailable_reason = "does not fit";
  inference::RepositoryIndexResponse all;
  RepositoryIndexToProto({a, b}, /*ready_only=*/false, &all);
  ASSERT_EQ(all.models_size(), 2);
  EXPECT_EQ(all.models(0).state(), "READY");
  EXPECT_EQ(all.models(0).version(), "1");
  EXPECT_EQ(all.models(1).state(), "UNAVAILABLE");
  EXPECT_EQ(all.models(1).reason(), "does not fit");
  inference::RepositoryIndexResponse ready;
  RepositoryIndexToProto({a, b}, /*ready_only=*/true, &ready);
  ASSERT_EQ(ready.models_size(), 1);
  EXPECT_EQ(ready.models(0).name(), "a");
}

TEST(ModelLoadTest, FileAndConfig) {
  inference::RepositoryModelLoadRequest r;
  r.set_model_name("m");
  (*r.mutable_parameters())["file:1/model.onnx"].set_bytes_param("ONNX");
  (*r.mutable_parameters())["config"].set_string_param(
      R"({"max_batch_size": 2, "parameters": {"replicas": "2"}})");
  absl::StatusOr<OipModelLoad> load = OipModelLoadFromProto(r);
  ASSERT_TRUE(load.ok()) << load.status();
  EXPECT_EQ(load->name, "m");
  EXPECT_TRUE(load->has_file);
  EXPECT_EQ(load->onnx_model, "ONNX");
  EXPECT_EQ(load->config.options.batching.max_batch_size, 2);
  EXPECT_EQ(load->config.options.partition.replicas, 2);

  inference::RepositoryModelLoadRequest bare;
  bare.set_model_name("m");
  load = OipModelLoadFromProto(bare);
  ASSERT_TRUE(load.ok());
  EXPECT_FALSE(load->has_file);
}

TEST(ModelLoadTest, BadLoadsAreRefused) {
  const std::vector<std::pair<std::function<void(
                                  inference::RepositoryModelLoadRequest*)>,
                              std::string>>
      cases = {
          {[](auto* r) { r->clear_model_name(); }, "model_name is empty"},
          {[](auto* r) { r->set_repository_name("other"); },
           "no repository named 'other'"},
          {[](auto* r) {
             (*r->mutable_parameters())["file:2/model.onnx"].set_bytes_param(
                 "x");
           },
           "file:2/model.onnx"},
          {[](auto* r) {
             (*r->mutable_parameters())["file:1/model.plan"].set_bytes_param(
                 "x");
           },
           "one file"},
          {[](auto* r) {
             (*r->mutable_parameters())["file:1/model.onnx"].set_string_param(
                 "x");
           },
           "must be a bytes parameter"},
          {[](auto* r) {
             (*r->mutable_parameters())["config"].set_bytes_param("{}");
           },
           "must be a string parameter"},
          {[](auto* r) {
             (*r->mutable_parameters())["config"].set_string_param("{oops");
           },
           "not valid JSON"},
          {[](auto* r) {
             (*r->mutable_parameters())["poll"].set_bool_param(true);
           },
           "unknown load parameter 'poll'"},
      };
  for (const auto& [make, message] : cases) {
    inference::RepositoryModelLoadRequest r;
    r.set_model_name("m");
    make(&r);
    absl::StatusOr<OipModelLoad> load = OipModelLoadFromProto(r);
    EXPECT_FALSE(load.ok()) << message;
    EXPECT_THAT(load.status().message(), HasSubstr(message));
  }
}

TEST(ModelUnloadTest, NameAndParameters) {
  inference::RepositoryModelUnloadRequest r;
  r.set_model_name("m");
  (*r.mutable_parameters())["unload_dependents"].set_bool_param(true);
  EXPECT_EQ(*OipModelUnloadFromProto(r), "m");
  (*r.mutable_parameters())["force"].set_bool_param(true);
  EXPECT_EQ(OipModelUnloadFromProto(r).status().code(),
            absl::StatusCode::kInvalidArgument);
  inference::RepositoryModelUnloadRequest empty;
  EXPECT_EQ(OipModelUnloadFromProto(empty).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint
