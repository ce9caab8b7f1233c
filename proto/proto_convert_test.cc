#include "proto/proto_convert.h"

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::Tensor FloatProto(const std::string& name, std::vector<int64_t> shape,
                      const std::vector<float>& values) {
  v1::Tensor p;
  p.set_name(name);
  p.set_dtype(v1::DATA_TYPE_FLOAT32);
  for (int64_t d : shape) p.add_shape(d);
  p.set_raw_data(reinterpret_cast<const char*>(values.data()),
                 values.size() * sizeof(float));
  return p;
}

TEST(DTypeProtoTest, NumbersAreOnnxNumbers) {
  EXPECT_EQ(v1::DATA_TYPE_FLOAT32, 1);
  EXPECT_EQ(v1::DATA_TYPE_UINT8, 2);
  EXPECT_EQ(v1::DATA_TYPE_INT8, 3);
  EXPECT_EQ(v1::DATA_TYPE_INT64, 7);
  EXPECT_EQ(v1::DATA_TYPE_BOOL, 9);
  EXPECT_EQ(v1::DATA_TYPE_FLOAT16, 10);
  EXPECT_EQ(v1::DATA_TYPE_FLOAT64, 11);
  EXPECT_EQ(v1::DATA_TYPE_BFLOAT16, 16);
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                  DType::kFloat64, DType::kInt8, DType::kUInt8, DType::kInt16,
                  DType::kUInt16, DType::kInt32, DType::kInt64,
                  DType::kUInt32, DType::kUInt64, DType::kBool}) {
    EXPECT_TRUE(v1::DataType_IsValid(DTypeToProto(d))) << DTypeName(d);
    EXPECT_EQ(*DTypeFromProto(DTypeToProto(d)), d);
  }
}

TEST(TensorFromProtoTest, RoundTrip) {
  const v1::Tensor p = FloatProto("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  absl::StatusOr<NamedTensor> t = NamedTensorFromProto(p);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->name, "x");
  EXPECT_EQ(t->tensor.dtype(), DType::kFloat32);
  EXPECT_EQ(t->tensor.shape(), Shape({2, 3}));
  EXPECT_EQ(t->tensor.data<float>()[5], 6.0f);
  // Owned and aligned, independent of the request's buffer.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->tensor.raw_data()) %
                kTensorAlignment,
            0u);

  v1::Tensor back;
  ASSERT_TRUE(TensorToProto(*t, &back).ok());
  EXPECT_EQ(back.SerializeAsString(), p.SerializeAsString());
}

TEST(BorrowNamedTensorFromProtoTest, ReadsTheRequestsBytesInPlace) {
  const v1::Tensor p = FloatProto("x", {2, 3}, {1, 2, 3, 4, 5, 6});
  absl::StatusOr<NamedTensor> t = BorrowNamedTensorFromProto(p);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->name, "x");
  EXPECT_EQ(t->tensor.dtype(), DType::kFloat32);
  EXPECT_EQ(t->tensor.shape(), Shape({2, 3}));
  EXPECT_EQ(t->tensor.raw_data(),
            static_cast<const void*>(p.raw_data().data()));
  EXPECT_EQ(t->tensor.data<float>()[5], 6.0f);
}

TEST(BorrowNamedTensorFromProtoTest, RefusesWhatTensorFromProtoRefuses) {
  v1::Tensor short_data = FloatProto("img", {2, 3}, {1, 2, 3, 4, 5});
  absl::StatusOr<NamedTensor> t = BorrowNamedTensorFromProto(short_data);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("needs 24 bytes of raw_data, got 20"));
  v1::Tensor in_shm = FloatProto("img", {1}, {});
  in_shm.mutable_shared_memory()->set_region("r");
  in_shm.mutable_shared_memory()->set_byte_size(4);
  t = BorrowNamedTensorFromProto(in_shm);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("shared-memory"));
}

TEST(TensorFromProtoTest, ScalarAndEmpty) {
  absl::StatusOr<Tensor> scalar = TensorFromProto(FloatProto("s", {}, {7}));
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ(scalar->shape().rank(), 0);
  EXPECT_EQ(scalar->data<float>()[0], 7.0f);

  absl::StatusOr<Tensor> empty = TensorFromProto(FloatProto("e", {0, 4}, {}));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->num_elements(), 0);
}

TEST(TensorFromProtoTest, EveryDTypeTravels) {
  for (DType d : {DType::kFloat16, DType::kBFloat16, DType::kFloat64,
                  DType::kInt8, DType::kUInt8, DType::kInt16, DType::kUInt16,
                  DType::kInt32, DType::kInt64, DType::kUInt32,
                  DType::kUInt64, DType::kBool}) {
    v1::Tensor p;
    p.set_name("t");
    p.set_dtype(DTypeToProto(d));
    p.add_shape(3);
    p.set_raw_data(std::string(3 * DTypeSize(d), '\1'));
    absl::StatusOr<Tensor> t = TensorFromProto(p);
    ASSERT_TRUE(t.ok()) << DTypeName(d) << ": " << t.status();
    EXPECT_EQ(t->dtype(), d);
    EXPECT_EQ(t->num_bytes(), 3 * DTypeSize(d));
  }
}

TEST(TensorFromProtoTest, UnknownDType) {
  for (int bad : {0, 8, 14, 15, 17, 99, -1}) {
    v1::Tensor p = FloatProto("img", {1}, {1});
    p.set_dtype(static_cast<v1::DataType>(bad));
    absl::StatusOr<Tensor> t = TensorFromProto(p);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(t.status().message()), HasSubstr("'img'"));
    EXPECT_THAT(std::string(t.status().message()), HasSubstr("dtype"));
  }
}

TEST(TensorFromProtoTest, NegativeDimension) {
  v1::Tensor p = FloatProto("img", {2, -3}, {});
  absl::StatusOr<Tensor> t = TensorFromProto(p);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("tensor 'img': dimension 1 is negative (-3)"));
}

TEST(TensorFromProtoTest, ByteCountMismatch) {
  v1::Tensor p = FloatProto("img", {2, 3}, {1, 2, 3, 4, 5});
  absl::StatusOr<Tensor> t = TensorFromProto(p);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("needs 24 bytes of raw_data, got 20"));
}

TEST(TensorFromProtoTest, OverflowingShapeIsRefused) {
  // 2^62 * 2^2 * 4 bytes wraps to 0 in 64 bits; must not match empty data.
  v1::Tensor p = FloatProto("big", {int64_t{1} << 62, 4}, {});
  absl::StatusOr<Tensor> t = TensorFromProto(p);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("too large"));
}

TEST(TensorFromProtoTest, ManyTensorsStopAtTheFirstBadOne) {
  google::protobuf::RepeatedPtrField<v1::Tensor> ps;
  *ps.Add() = FloatProto("a", {1}, {1});
  *ps.Add() = FloatProto("b", {2}, {1});
  absl::StatusOr<std::vector<NamedTensor>> ts = NamedTensorsFromProto(ps);
  EXPECT_EQ(ts.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(ts.status().message()), HasSubstr("'b'"));
}

TEST(TensorToProtoTest, RefusesUntransportableTensors) {
  v1::Tensor p;
  NamedTensor undefined{"u", Tensor::Borrow(DType::kUndefined, Shape({1}),
                                            nullptr)};
  EXPECT_EQ(TensorToProto(undefined, &p).code(),
            absl::StatusCode::kInvalidArgument);
  NamedTensor no_data{"n", Tensor::Borrow(DType::kFloat32, Shape({2}),
                                          nullptr)};
  EXPECT_EQ(TensorToProto(no_data, &p).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SharedMemoryTensorTest, RoundTripAndValidation) {
  SharedMemoryTensor t{"x", DType::kInt64, Shape({2, 3}), {"in", 64, 48}};
  v1::Tensor p;
  SharedMemoryTensorToProto(t, &p);
  EXPECT_TRUE(p.raw_data().empty());
  absl::StatusOr<SharedMemoryTensor> back = SharedMemoryTensorFromProto(p);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->name, "x");
  EXPECT_EQ(back->dtype, DType::kInt64);
  EXPECT_EQ(back->shape, Shape({2, 3}));
  EXPECT_EQ(back->window.region, "in");
  EXPECT_EQ(back->window.offset, 64u);
  EXPECT_EQ(back->window.byte_size, 48u);

  // TensorFromProto does not read shared memory: it says so.
  absl::StatusOr<Tensor> bytes = TensorFromProto(p);
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bytes.status().message(), HasSubstr("shared-memory region 'in'"));

  v1::Tensor wrong_size = p;
  wrong_size.mutable_shared_memory()->set_byte_size(40);
  EXPECT_THAT(SharedMemoryTensorFromProto(wrong_size).status().message(),
              HasSubstr("holds 40"));
  v1::Tensor both = p;
  both.set_raw_data(std::string(48, '\0'));
  EXPECT_EQ(SharedMemoryTensorFromProto(both).status().code(),
            absl::StatusCode::kInvalidArgument);
  v1::Tensor negative = p;
  negative.set_shape(0, -2);
  EXPECT_EQ(SharedMemoryTensorFromProto(negative).status().code(),
            absl::StatusCode::kInvalidArgument);
  v1::Tensor huge = p;
  huge.set_shape(0, int64_t{1} << 62);
  EXPECT_EQ(SharedMemoryTensorFromProto(huge).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SharedMemoryTensorFromProto(FloatProto("y", {1}, {1}))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);

  SharedMemoryRegionInfo info{"r", "/glint_in", 4096, 1 << 20};
  v1::SharedMemoryRegion region;
  SharedMemoryRegionToProto(info, &region);
  SharedMemoryRegionInfo info_back = SharedMemoryRegionFromProto(region);
  EXPECT_EQ(info_back.name, "r");
  EXPECT_EQ(info_back.key, "/glint_in");
  EXPECT_EQ(info_back.offset, 4096u);
  EXPECT_EQ(info_back.byte_size, 1u << 20);
}

TEST(AddNetworkOptionsTest, RoundTripAndValidation) {
  v1::AddNetworkOptions p;
  for (int64_t d : {1, 3, 224, 224}) {
    (*p.mutable_input_shapes())["data"].add_dims(d);
  }
  absl::StatusOr<AddNetworkOptions> o = AddNetworkOptionsFromProto(p);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->input_shapes.at("data"), Shape({1, 3, 224, 224}));
  v1::AddNetworkOptions back;
  AddNetworkOptionsToProto(*o, &back);
  EXPECT_THAT(back.input_shapes().at("data").dims(),
              ElementsAre(1, 3, 224, 224));

  (*p.mutable_input_shapes())["data"].set_dims(0, -1);
  EXPECT_EQ(AddNetworkOptionsFromProto(p).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AddNetworkOptionsTest, MaxDimsRoundTrip) {
  v1::AddNetworkOptions p;
  (*p.mutable_max_dims())["seq"] = 512;
  (*p.mutable_max_dims())["x:0"] = 8;
  absl::StatusOr<AddNetworkOptions> o = AddNetworkOptionsFromProto(p);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->max_dims.at("seq"), 512);
  EXPECT_EQ(o->max_dims.at("x:0"), 8);
  v1::AddNetworkOptions back;
  AddNetworkOptionsToProto(*o, &back);
  EXPECT_EQ(back.max_dims().at("seq"), 512);
  EXPECT_EQ(back.max_dims_size(), 2);
}

TEST(AddNetworkOptionsTest, PrecisionRoundTripAndValidation) {
  v1::AddNetworkOptions p;
  absl::StatusOr<AddNetworkOptions> o = AddNetworkOptionsFromProto(p);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->precision, Precision::kFloat32);  // Unset: the default.
  v1::AddNetworkOptions back;
  AddNetworkOptionsToProto(*o, &back);
  EXPECT_EQ(back.precision(), "");  // Stored as before the option existed.

  p.set_precision("bf16");
  o = AddNetworkOptionsFromProto(p);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->precision, Precision::kBFloat16);
  AddNetworkOptionsToProto(*o, &back);
  EXPECT_EQ(back.precision(), "bf16");
  o = AddNetworkOptionsFromProto(back);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->precision, Precision::kBFloat16);

  p.set_precision("fp16");
  o = AddNetworkOptionsFromProto(p);
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(o.status().message(), HasSubstr("'fp16'"));
  EXPECT_THAT(o.status().message(), HasSubstr("fp32 (the default), bf16"));
}

TEST(AddNetworkOptionsTest, BatchingRoundTripAndValidation) {
  v1::AddNetworkOptions p;
  p.mutable_batching()->set_max_batch_size(8);
  p.mutable_batching()->set_max_queue_delay_us(500);
  p.mutable_batching()->add_preferred_batch_sizes(4);
  p.mutable_batching()->add_preferred_batch_sizes(8);
  absl::StatusOr<AddNetworkOptions> o = AddNetworkOptionsFromProto(p);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->batching.max_batch_size, 8);
  EXPECT_EQ(o->batching.max_queue_delay, absl::Microseconds(500));
  EXPECT_THAT(o->batching.preferred_batch_sizes, ElementsAre(4, 8));
  v1::AddNetworkOptions back;
  AddNetworkOptionsToProto(*o, &back);
  EXPECT_EQ(back.batching().max_batch_size(), 8);
  EXPECT_EQ(back.batching().max_queue_delay_us(), 500);
  EXPECT_THAT(back.batching().preferred_batch_sizes(), ElementsAre(4, 8));
  // Unset: off, and not written back.
  o = AddNetworkOptionsFromProto(v1::AddNetworkOptions());
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->batching.max_batch_size, 0);
  AddNetworkOptionsToProto(*o, &back);
  EXPECT_FALSE(back.has_batching());

  auto refused = [](void (*edit)(v1::DynamicBatching*),
                    absl::string_view mention) {
    v1::AddNetworkOptions bad;
    bad.mutable_batching()->set_max_batch_size(8);
    edit(bad.mutable_batching());
    absl::Status s = AddNetworkOptionsFromProto(bad).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << mention;
    EXPECT_NE(s.message().find(mention), absl::string_view::npos) << s;
  };
  refused([](v1::DynamicBatching* b) { b->set_max_batch_size(-1); },
          "max_batch_size");
  refused([](v1::DynamicBatching* b) { b->set_max_batch_size(1 << 20); },
          "max_batch_size");
  refused([](v1::DynamicBatching* b) { b->set_max_queue_delay_us(-1); },
          "max_queue_delay_us");
  refused(
      [](v1::DynamicBatching* b) {
        b->set_max_queue_delay_us(std::numeric_limits<int64_t>::max());
      },
      "max_queue_delay_us");
  refused([](v1::DynamicBatching* b) { b->add_preferred_batch_sizes(9); },
          "preferred batch size 9");
  refused([](v1::DynamicBatching* b) { b->add_preferred_batch_sizes(0); },
          "preferred batch size 0");
}

TEST(NetworkInfoTest, RoundTrip) {
  NetworkInfo info;
  info.name = "mlp";
  info.inputs.push_back({"x", DType::kFloat32, Shape({1, 4})});
  info.outputs.push_back({"y", DType::kInt64, Shape({1, Shape::kUnknownDim})});
  PartitionInfo part;
  part.name = "mlp_p0";
  part.device_id = 1;
  part.device_name = "sim:1";
  part.inputs = {"x"};
  part.outputs = {"y"};
  part.num_nodes = 3;
  part.weight_bytes = 1024;
  part.activation_bytes = 64;
  part.execution_bytes = 4096;
  part.launch_bytes = 1 << 20;
  part.unsized_values = 3;
  part.executions = 3;
  part.flops = 1e6;
  part.device_class = "sim, 50 GFLOP/s";
  part.placement_reason = "speed: 1 ms here, 4 ms on 'sim'";
  info.partitions.push_back(part);
  info.batching.max_batch_size = 4;
  info.batching.max_queue_delay = absl::Milliseconds(2);
  info.batching.preferred_batch_sizes = {2};
  info.precision = Precision::kBFloat16;
  info.dynamic_dims = {{"x", 0, "batch", 64}};

  v1::NetworkInfo p;
  NetworkInfoToProto(info, &p);
  ASSERT_EQ(p.dynamic_dims_size(), 1);
  EXPECT_EQ(p.dynamic_dims(0).name(), "batch");
  EXPECT_EQ(p.precision(), "bf16");
  EXPECT_EQ(p.batching().max_queue_delay_us(), 2000);
  EXPECT_EQ(p.name(), "mlp");
  ASSERT_EQ(p.inputs_size(), 1);
  EXPECT_EQ(p.inputs(0).dtype(), v1::DATA_TYPE_FLOAT32);
  EXPECT_THAT(p.outputs(0).shape(), ElementsAre(1, -1));
  ASSERT_EQ(p.partitions_size(), 1);
  EXPECT_EQ(p.partitions(0).device_name(), "sim:1");
  EXPECT_EQ(p.partitions(0).weight_bytes(), 1024u);

  const NetworkInfo back = NetworkInfoFromProto(p);
  EXPECT_EQ(back.name, "mlp");
  EXPECT_EQ(back.outputs[0].dtype, DType::kInt64);
  EXPECT_EQ(back.outputs[0].shape, Shape({1, Shape::kUnknownDim}));
  EXPECT_EQ(back.partitions[0].device_id, 1);
  EXPECT_EQ(back.partitions[0].num_nodes, 3);
  EXPECT_EQ(back.partitions[0].execution_bytes, 4096u);
  EXPECT_EQ(back.partitions[0].launch_bytes, 1u << 20);
  EXPECT_EQ(back.partitions[0].unsized_values, 3);
  EXPECT_EQ(back.partitions[0].executions, 3);
  EXPECT_EQ(back.partitions[0].flops, 1e6);
  EXPECT_EQ(back.partitions[0].device_class, "sim, 50 GFLOP/s");
  EXPECT_EQ(back.partitions[0].placement_reason,
            "speed: 1 ms here, 4 ms on 'sim'");
  EXPECT_THAT(back.partitions[0].inputs, ElementsAre("x"));
  EXPECT_EQ(back.batching.max_batch_size, 4);
  EXPECT_EQ(back.batching.max_queue_delay, absl::Milliseconds(2));
  EXPECT_THAT(back.batching.preferred_batch_sizes, ElementsAre(2));
  EXPECT_EQ(back.precision, Precision::kBFloat16);
  ASSERT_EQ(back.dynamic_dims.size(), 1u);
  EXPECT_EQ(back.dynamic_dims[0].input, "x");
  EXPECT_EQ(back.dynamic_dims[0].axis, 0);
  EXPECT_EQ(back.dynamic_dims[0].name, "batch");
  EXPECT_EQ(back.dynamic_dims[0].max, 64);
}

// An unknown rank crosses the wire as such, not as a scalar's empty shape.
TEST(NetworkInfoTest, UnknownRankRoundTrips) {
  v1::ValueInfo p;
  ValueInfoToProto(ValueInfo{"v", DType::kFloat32, Shape::UnknownRank()}, &p);
  EXPECT_TRUE(p.unknown_rank());
  EXPECT_EQ(p.shape_size(), 0);
  EXPECT_FALSE(ValueInfoFromProto(p).shape.has_rank());
  ValueInfoToProto(ValueInfo{"s", DType::kFloat32, Shape()}, &p);
  EXPECT_FALSE(p.unknown_rank());
  EXPECT_EQ(ValueInfoFromProto(p).shape, Shape());
}

// Dim names travel with the shape; names that do not fit it are dropped.
TEST(NetworkInfoTest, DimNamesRoundTrip) {
  ValueInfo v{"logits", DType::kFloat32, Shape({-1, -1, 10})};
  v.dim_names = {"batch", "seq", ""};
  v1::ValueInfo p;
  ValueInfoToProto(v, &p);
  EXPECT_THAT(p.dim_names(), ElementsAre("batch", "seq", ""));
  EXPECT_EQ(ValueInfoFromProto(p).ShapeString(), "[batch, seq, 10]");
  p.add_dim_names("extra");  // Four names for three dims.
  EXPECT_TRUE(ValueInfoFromProto(p).dim_names.empty());
  ValueInfoToProto(ValueInfo{"x", DType::kFloat32, Shape({-1, 3})}, &p);
  EXPECT_EQ(p.dim_names_size(), 0);  // None named: none sent.
}

TEST(NetworkInfoTest, UnknownDTypeInAReplyDoesNotFail) {
  v1::ValueInfo p;
  p.set_name("future");
  p.set_dtype(static_cast<v1::DataType>(42));
  EXPECT_EQ(ValueInfoFromProto(p).dtype, DType::kUndefined);
}

TEST(DeviceInfoTest, RoundTrip) {
  DeviceInfo d;
  d.id = 0;
  d.type = "sim";
  d.name = "sim:0";
  d.memory_bytes = 2 * kGiB;
  d.available_memory_bytes = kGiB;
  d.peak_used_memory_bytes = 3 * kGiB / 2;
  d.launch_reserved_bytes = 5 * kMiB;
  d.compute_flops = 1e12;
  d.link_bytes_per_second = 1e10;
  d.unsupported_ops = {"Conv"};
  v1::DeviceInfo p;
  DeviceInfoToProto(d, &p);
  EXPECT_EQ(p.memory_bytes(), 2 * kGiB);
  const DeviceInfo back = DeviceInfoFromProto(p);
  EXPECT_EQ(back.name, "sim:0");
  EXPECT_EQ(back.available_memory_bytes, kGiB);
  EXPECT_EQ(back.peak_used_memory_bytes, 3 * kGiB / 2);
  EXPECT_EQ(back.launch_reserved_bytes, 5 * kMiB);
  EXPECT_EQ(back.compute_flops, 1e12);
  EXPECT_THAT(back.unsupported_ops, ElementsAre("Conv"));
}

// Every field of the statistics survives the round trip, and an absent
// last_inference reads as never.
TEST(StatisticsProtoTest, NetworkStatisticsRoundTrip) {
  NetworkStatistics stats;
  stats.name = "resnet";
  stats.success_count = 7;
  stats.failure_count = 2;
  stats.inference_count = 9;
  stats.execution_count = 5;
  stats.last_inference = absl::FromUnixNanos(1700000000123456789);
  auto series = [](uint64_t base) {
    DurationStats d;
    d.count = base;
    d.total_ns = base * 1000;
    d.p50_us = base + 0.5;
    d.p99_us = base + 0.99;
    return d;
  };
  stats.request = series(1);
  stats.failed = series(2);
  stats.queue = series(3);
  stats.compute_input = series(4);
  stats.compute_infer = series(5);
  stats.compute_output = series(6);
  stats.queue_depth = 3;
  stats.in_flight = 4;
  stats.shape_builds = 11;
  stats.shape_build_time = absl::Microseconds(4321);
  stats.slot_wait = series(7);
  stats.partitions.push_back({"p0", "sim:0", series(8)});
  stats.partitions.push_back({"p1", "sim:1", series(9)});

  v1::NetworkStatistics proto;
  NetworkStatisticsToProto(stats, &proto);
  EXPECT_EQ(proto.last_inference_unix_ns(), 1700000000123456789);
  EXPECT_EQ(proto.compute_infer().total_ns(), 5000u);
  const NetworkStatistics back = NetworkStatisticsFromProto(proto);
  EXPECT_EQ(back.name, "resnet");
  EXPECT_EQ(back.success_count, 7u);
  EXPECT_EQ(back.failure_count, 2u);
  EXPECT_EQ(back.inference_count, 9u);
  EXPECT_EQ(back.execution_count, 5u);
  EXPECT_EQ(back.shape_builds, 11u);
  EXPECT_EQ(back.shape_build_time, absl::Microseconds(4321));
  EXPECT_EQ(back.last_inference, stats.last_inference);
  const std::vector<std::pair<const DurationStats*, const DurationStats*>>
      pairs = {{&back.request, &stats.request},
               {&back.failed, &stats.failed},
               {&back.queue, &stats.queue},
               {&back.compute_input, &stats.compute_input},
               {&back.compute_infer, &stats.compute_infer},
               {&back.compute_output, &stats.compute_output},
               {&back.slot_wait, &stats.slot_wait},
               {&back.partitions[1].compute, &stats.partitions[1].compute}};
  for (const auto& [got, want] : pairs) {
    EXPECT_EQ(got->count, want->count);
    EXPECT_EQ(got->total_ns, want->total_ns);
    EXPECT_EQ(got->p50_us, want->p50_us);
    EXPECT_EQ(got->p99_us, want->p99_us);
  }
  EXPECT_EQ(back.queue_depth, 3);
  EXPECT_EQ(back.in_flight, 4);
  ASSERT_EQ(back.partitions.size(), 2u);
  EXPECT_EQ(back.partitions[1].name, "p1");
  EXPECT_EQ(back.partitions[1].device_name, "sim:1");

  NetworkStatistics never;
  never.name = "idle";
  NetworkStatisticsToProto(never, &proto);
  EXPECT_EQ(proto.last_inference_unix_ns(), 0);
  EXPECT_EQ(proto.partitions_size(), 0);
  EXPECT_EQ(NetworkStatisticsFromProto(proto).last_inference,
            absl::UnixEpoch());
  proto.set_last_inference_unix_ns(-5);  // Not a time a server reports.
  EXPECT_EQ(NetworkStatisticsFromProto(proto).last_inference,
            absl::UnixEpoch());
}

TEST(StatisticsProtoTest, DeviceStatisticsRoundTrip) {
  DeviceStatistics stats;
  stats.device.id = 1;
  stats.device.name = "sim:1";
  stats.device.type = "sim";
  stats.device.memory_bytes = 2048;
  stats.device.available_memory_bytes = 1024;
  stats.device.loaded_functions = 3;
  stats.device.launches_running = 1;
  stats.compute.count = 11;
  stats.compute.total_ns = 22;
  stats.compute.p50_us = 1.5;
  stats.compute.p99_us = 2.5;
  v1::DeviceStatistics proto;
  DeviceStatisticsToProto(stats, &proto);
  const DeviceStatistics back = DeviceStatisticsFromProto(proto);
  EXPECT_EQ(back.device.id, 1);
  EXPECT_EQ(back.device.name, "sim:1");
  EXPECT_EQ(back.device.memory_bytes, 2048u);
  EXPECT_EQ(back.device.available_memory_bytes, 1024u);
  EXPECT_EQ(back.device.loaded_functions, 3);
  EXPECT_EQ(back.device.launches_running, 1);
  EXPECT_EQ(back.compute.count, 11u);
  EXPECT_EQ(back.compute.total_ns, 22u);
  EXPECT_EQ(back.compute.p50_us, 1.5);
  EXPECT_EQ(back.compute.p99_us, 2.5);
}

}  // namespace
}  // namespace glint
