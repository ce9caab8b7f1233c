#include "onnx/newer_opsets.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "onnx/defs/schema.h"
#include "onnx/newer_opsets_inference.h"

namespace glint::onnx_internal {
namespace {

using onnx::AttributeProto;
using onnx::OpSchema;

// --- The schemas -----------------------------------------------------------

std::vector<std::string> FloatTypes() {
  return {"tensor(float16)", "tensor(float)", "tensor(double)",
          "tensor(bfloat16)"};
}

std::vector<std::string> IntegerTypes() {
  return {"tensor(uint8)", "tensor(uint16)", "tensor(uint32)",
          "tensor(uint64)", "tensor(int8)",   "tensor(int16)",
          "tensor(int32)", "tensor(int64)"};
}

std::vector<std::string> With(std::vector<std::string> types,
                              std::initializer_list<const char*> more) {
  for (const char* t : more) types.push_back(t);
  return types;
}

OpSchema Schema(const char* name, int since) {
  OpSchema s(name, "glint/onnx/newer_opsets.cc", 0);
  s.SinceVersion(since);
  s.SetDomain("");
  return s;
}

void Register(OpSchema schema) {
  onnx::OpSchemaRegistry::OpSchemaRegisterOnce once(schema);
}

void RegisterReduce(const char* name, int since, bool with_bool) {
  OpSchema s = Schema(name, since);
  s.Input(0, "data", "", "T")
      .Input(1, "axes", "", "tensor(int64)", OpSchema::Optional)
      .Output(0, "reduced", "", "T")
      .Attr("keepdims", "", AttributeProto::INT, static_cast<int64_t>(1))
      .Attr("noop_with_empty_axes", "", AttributeProto::INT,
            static_cast<int64_t>(0))
      .TypeConstraint("T",
                      with_bool ? With(OpSchema::all_numeric_types_with_bfloat(),
                                       {"tensor(bool)"})
                                : OpSchema::all_numeric_types_with_bfloat(),
                      "")
      .TypeAndShapeInferenceFunction(InferReduce);
  Register(std::move(s));
}

void RegisterUnary(const char* name, int since,
                   const std::vector<std::string>& types) {
  OpSchema s = Schema(name, since);
  s.Input(0, "X", "", "T")
      .Output(0, "Y", "", "T")
      .TypeConstraint("T", types, "")
      .TypeAndShapeInferenceFunction(PropagateFirst);
  Register(std::move(s));
}

void RegisterResize(int since) {
  OpSchema s = Schema("Resize", since);
  s.Input(0, "X", "", "T1")
      .Input(1, "roi", "", "T2", OpSchema::Optional)
      .Input(2, "scales", "", "tensor(float)", OpSchema::Optional)
      .Input(3, "sizes", "", "tensor(int64)", OpSchema::Optional)
      .Output(0, "Y", "", "T1")
      .Attr("antialias", "", AttributeProto::INT, static_cast<int64_t>(0))
      .Attr("axes", "", AttributeProto::INTS, false)
      .Attr("coordinate_transformation_mode", "", AttributeProto::STRING,
            std::string("half_pixel"))
      .Attr("cubic_coeff_a", "", AttributeProto::FLOAT, -0.75f)
      .Attr("exclude_outside", "", AttributeProto::INT, static_cast<int64_t>(0))
      .Attr("extrapolation_value", "", AttributeProto::FLOAT, 0.0f)
      .Attr("keep_aspect_ratio_policy", "", AttributeProto::STRING,
            std::string("stretch"))
      .Attr("mode", "", AttributeProto::STRING, std::string("nearest"))
      .Attr("nearest_mode", "", AttributeProto::STRING,
            std::string("round_prefer_floor"))
      .TypeConstraint("T1", OpSchema::all_tensor_types_with_bfloat(), "")
      .TypeConstraint("T2", FloatTypes(), "")
      .TypeAndShapeInferenceFunction(InferResize);
  Register(std::move(s));
}

void RegisterPad(int since) {
  OpSchema s = Schema("Pad", since);
  s.Input(0, "data", "", "T")
      .Input(1, "pads", "", "tensor(int64)")
      .Input(2, "constant_value", "", "T", OpSchema::Optional)
      .Input(3, "axes", "", "Tind", OpSchema::Optional)
      .Output(0, "output", "", "T")
      .Attr("mode", "", AttributeProto::STRING, std::string("constant"))
      .TypeConstraint("T", OpSchema::all_tensor_types_with_bfloat(), "")
      .TypeConstraint("Tind", {"tensor(int32)", "tensor(int64)"}, "")
      .TypeAndShapeInferenceFunction(InferPad);
  Register(std::move(s));
}

void RegisterAveragePool(int since) {
  OpSchema s = Schema("AveragePool", since);
  s.Input(0, "X", "", "T")
      .Output(0, "Y", "", "T")
      .Attr("auto_pad", "", AttributeProto::STRING, std::string("NOTSET"))
      .Attr("ceil_mode", "", AttributeProto::INT, static_cast<int64_t>(0))
      .Attr("count_include_pad", "", AttributeProto::INT,
            static_cast<int64_t>(0))
      .Attr("dilations", "", AttributeProto::INTS, false)
      .Attr("kernel_shape", "", AttributeProto::INTS, true)
      .Attr("pads", "", AttributeProto::INTS, false)
      .Attr("strides", "", AttributeProto::INTS, false)
      .TypeConstraint("T", FloatTypes(), "")
      .TypeAndShapeInferenceFunction(InferPool);
  Register(std::move(s));
}

void RegisterLpPool(int since) {
  OpSchema s = Schema("LpPool", since);
  s.Input(0, "X", "", "T")
      .Output(0, "Y", "", "T")
      .Attr("auto_pad", "", AttributeProto::STRING, std::string("NOTSET"))
      .Attr("ceil_mode", "", AttributeProto::INT, static_cast<int64_t>(0))
      .Attr("dilations", "", AttributeProto::INTS, false)
      .Attr("kernel_shape", "", AttributeProto::INTS, true)
      .Attr("p", "", AttributeProto::INT, static_cast<int64_t>(2))
      .Attr("pads", "", AttributeProto::INTS, false)
      .Attr("strides", "", AttributeProto::INTS, false)
      .TypeConstraint("T", FloatTypes(), "")
      .TypeAndShapeInferenceFunction(InferPool);
  Register(std::move(s));
}

void RegisterCasts(int since) {
  {
    OpSchema s = Schema("Cast", since);
    s.Input(0, "input", "", "T1")
        .Output(0, "output", "", "T2")
        .Attr("to", "", AttributeProto::INT, true)
        .Attr("saturate", "", AttributeProto::INT, static_cast<int64_t>(1))
        .TypeConstraint("T1", OpSchema::all_tensor_types_with_bfloat(), "")
        .TypeConstraint("T2", OpSchema::all_tensor_types_with_bfloat(), "")
        .TypeAndShapeInferenceFunction(InferCast);
    Register(std::move(s));
  }
  OpSchema s = Schema("CastLike", since);
  s.Input(0, "input", "", "T1")
      .Input(1, "target_type", "", "T2")
      .Output(0, "output", "", "T2")
      .Attr("saturate", "", AttributeProto::INT, static_cast<int64_t>(1))
      .TypeConstraint("T1", OpSchema::all_tensor_types_with_bfloat(), "")
      .TypeConstraint("T2", OpSchema::all_tensor_types_with_bfloat(), "")
      .TypeAndShapeInferenceFunction(InferCastLike);
  Register(std::move(s));
}

void RegisterGroupNormalization(int since) {
  OpSchema s = Schema("GroupNormalization", since);
  s.Input(0, "X", "", "T")
      .Input(1, "scale", "", "T")
      .Input(2, "bias", "", "T")
      .Output(0, "Y", "", "T")
      .Attr("epsilon", "", AttributeProto::FLOAT, 1e-5f)
      .Attr("num_groups", "", AttributeProto::INT, true)
      .TypeConstraint("T", FloatTypes(), "")
      .TypeAndShapeInferenceFunction(PropagateFirst);
  if (since >= 21) {
    s.Attr("stash_type", "", AttributeProto::INT, static_cast<int64_t>(1));
  }
  Register(std::move(s));
}

// QuantizeLinear and DequantizeLinear from opset 19 on (per tensor, per
// axis, and from 21 per block).
void RegisterQuantization(int since) {
  {
    OpSchema s = Schema("QuantizeLinear", since);
    s.Input(0, "x", "", "T1")
        .Input(1, "y_scale", "", "T1")
        .Input(2, "y_zero_point", "", "T2", OpSchema::Optional)
        .Output(0, "y", "", "T2")
        .Attr("axis", "", AttributeProto::INT, static_cast<int64_t>(1))
        .Attr("saturate", "", AttributeProto::INT, static_cast<int64_t>(1))
        .TypeConstraint("T1", With(FloatTypes(), {"tensor(int32)"}), "")
        .TypeConstraint("T2", {"tensor(int8)", "tensor(uint8)",
                               "tensor(int16)", "tensor(uint16)"}, "")
        .TypeAndShapeInferenceFunction(InferQuantizeLinear);
    if (since >= 21) {
      s.Attr("block_size", "", AttributeProto::INT, static_cast<int64_t>(0))
          .Attr("output_dtype", "", AttributeProto::INT,
                static_cast<int64_t>(0));
    }
    Register(std::move(s));
  }
  OpSchema s = Schema("DequantizeLinear", since);
  s.Input(0, "x", "", "T1")
      .Input(1, "x_scale", "", "T2")
      .Input(2, "x_zero_point", "", "T1", OpSchema::Optional)
      .Output(0, "y", "", "T2")
      .Attr("axis", "", AttributeProto::INT, static_cast<int64_t>(1))
      .TypeConstraint("T1", {"tensor(int8)", "tensor(uint8)", "tensor(int16)",
                             "tensor(uint16)", "tensor(int32)"}, "")
      .TypeConstraint("T2", FloatTypes(), "")
      .TypeAndShapeInferenceFunction(InferDequantizeLinear);
  if (since >= 21) {
    s.Attr("block_size", "", AttributeProto::INT, static_cast<int64_t>(0));
  }
  Register(std::move(s));
}

// Opset 18: the Reduce ops' axes and Split's split as inputs, Pad's axes,
// Resize's new attributes; new ops.
void RegisterOpset18() {
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceLogSum",
                         "ReduceLogSumExp", "ReduceMean", "ReduceProd",
                         "ReduceSumSquare"}) {
    RegisterReduce(op, 18, false);
  }
  RegisterReduce("ReduceMax", 18, true);
  RegisterReduce("ReduceMin", 18, true);
  {
    OpSchema s = Schema("Split", 18);
    s.Input(0, "input", "", "T")
        .Input(1, "split", "", "tensor(int64)", OpSchema::Optional)
        .Output(0, "outputs", "", "T", OpSchema::Variadic)
        .Attr("axis", "", AttributeProto::INT, static_cast<int64_t>(0))
        .Attr("num_outputs", "", AttributeProto::INT, false)
        .TypeConstraint("T", OpSchema::all_tensor_types_with_bfloat(), "")
        .TypeAndShapeInferenceFunction(InferSplit);
    Register(std::move(s));
  }
  RegisterPad(18);
  RegisterResize(18);
  RegisterLpPool(18);
  {
    OpSchema s = Schema("Col2Im", 18);
    s.Input(0, "input", "", "T")
        .Input(1, "image_shape", "", "tensor(int64)")
        .Input(2, "block_shape", "", "tensor(int64)")
        .Output(0, "output", "", "T")
        .Attr("dilations", "", AttributeProto::INTS, false)
        .Attr("pads", "", AttributeProto::INTS, false)
        .Attr("strides", "", AttributeProto::INTS, false)
        .TypeConstraint("T", OpSchema::all_tensor_types_with_bfloat(), "")
        .TypeAndShapeInferenceFunction(InferCol2Im);
    Register(std::move(s));
  }
  {
    OpSchema s = Schema("CenterCropPad", 18);
    s.Input(0, "input_data", "", "T")
        .Input(1, "shape", "", "Tind")
        .Output(0, "output_data", "", "T")
        .Attr("axes", "", AttributeProto::INTS, false)
        .TypeConstraint("T", OpSchema::all_tensor_types_with_bfloat(), "")
        .TypeConstraint("Tind", {"tensor(int32)", "tensor(int64)"}, "")
        .TypeAndShapeInferenceFunction(InferCenterCropPad);
    Register(std::move(s));
  }
  RegisterGroupNormalization(18);
  RegisterUnary("Mish", 18, FloatTypes());
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
    OpSchema s = Schema(op, 18);
    s.Input(0, "A", "", "T")
        .Input(1, "B", "", "T")
        .Output(0, "C", "", "T")
        .TypeConstraint("T", IntegerTypes(), "")
        .TypeAndShapeInferenceFunction(InferBroadcast);
    Register(std::move(s));
  }
  RegisterUnary("BitwiseNot", 18, IntegerTypes());
}

// Opset 19: new attributes and modes.
void RegisterOpset19() {
  RegisterPad(19);     // mode "wrap"
  RegisterResize(19);  // coordinate_transformation_mode half_pixel_symmetric
  RegisterAveragePool(19);   // dilations
  RegisterCasts(19);         // saturate (float8 only)
  RegisterQuantization(19);  // saturate
}

// Opset 20: new ops.
void RegisterOpset20() {
  {
    OpSchema s = Schema("Gelu", 20);
    s.Input(0, "X", "", "T")
        .Output(0, "Y", "", "T")
        .Attr("approximate", "", AttributeProto::STRING, std::string("none"))
        .TypeConstraint("T", FloatTypes(), "")
        .TypeAndShapeInferenceFunction(PropagateFirst);
    Register(std::move(s));
  }
  {
    OpSchema s = Schema("DFT", 20);
    s.Input(0, "input", "", "T1")
        .Input(1, "dft_length", "", "T2", OpSchema::Optional)
        .Input(2, "axis", "", "tensor(int64)", OpSchema::Optional)
        .Output(0, "output", "", "T1")
        .Attr("inverse", "", AttributeProto::INT, static_cast<int64_t>(0))
        .Attr("onesided", "", AttributeProto::INT, static_cast<int64_t>(0))
        .TypeConstraint("T1", FloatTypes(), "")
        .TypeConstraint("T2", {"tensor(int32)", "tensor(int64)"}, "")
        .TypeAndShapeInferenceFunction(InferDft);
    Register(std::move(s));
  }
  {
    OpSchema s = Schema("AffineGrid", 20);
    s.Input(0, "theta", "", "T1")
        .Input(1, "size", "", "T2")
        .Output(0, "grid", "", "T1")
        .Attr("align_corners", "", AttributeProto::INT, static_cast<int64_t>(0))
        .TypeConstraint("T1", FloatTypes(), "")
        .TypeConstraint("T2", {"tensor(int64)"}, "")
        .TypeAndShapeInferenceFunction(InferAffineGrid);
    Register(std::move(s));
  }
}

// Opset 21: type extensions, per-channel GroupNormalization, block
// quantization.
void RegisterOpset21() {
  RegisterPad(21);
  RegisterGroupNormalization(21);  // scale and bias per channel
  RegisterCasts(21);
  RegisterQuantization(21);  // block_size, output_dtype
}

// Opset 23: new ops.
void RegisterOpset23() {
  {
    OpSchema s = Schema("RMSNormalization", 23);
    s.Input(0, "X", "", "T")
        .Input(1, "scale", "", "V")
        .Output(0, "Y", "", "V")
        .Attr("axis", "", AttributeProto::INT, static_cast<int64_t>(-1))
        .Attr("epsilon", "", AttributeProto::FLOAT, 1e-5f)
        .Attr("stash_type", "", AttributeProto::INT, static_cast<int64_t>(1))
        .TypeConstraint("T", FloatTypes(), "")
        .TypeConstraint("V", FloatTypes(), "")
        .TypeAndShapeInferenceFunction(InferRMSNormalization);
    Register(std::move(s));
  }
  {
    OpSchema s = Schema("RotaryEmbedding", 23);
    s.Input(0, "X", "", "T")
        .Input(1, "cos_cache", "", "T")
        .Input(2, "sin_cache", "", "T")
        .Input(3, "position_ids", "", "M", OpSchema::Optional)
        .Output(0, "Y", "", "T")
        .Attr("interleaved", "", AttributeProto::INT, static_cast<int64_t>(0))
        .Attr("num_heads", "", AttributeProto::INT, static_cast<int64_t>(0))
        .Attr("rotary_embedding_dim", "", AttributeProto::INT,
              static_cast<int64_t>(0))
        .TypeConstraint("T", FloatTypes(), "")
        .TypeConstraint("M", {"tensor(int64)"}, "")
        .TypeAndShapeInferenceFunction(PropagateFirst);
    Register(std::move(s));
  }
  {
    OpSchema s = Schema("Attention", 23);
    s.Input(0, "Q", "", "T1")
        .Input(1, "K", "", "T1")
        .Input(2, "V", "", "T2")
        .Input(3, "attn_mask", "", "U", OpSchema::Optional)
        .Input(4, "past_key", "", "T1", OpSchema::Optional)
        .Input(5, "past_value", "", "T2", OpSchema::Optional)
        .Output(0, "Y", "", "T1")
        .Output(1, "present_key", "", "T1", OpSchema::Optional)
        .Output(2, "present_value", "", "T2", OpSchema::Optional)
        .Output(3, "qk_matmul_output", "", "T1", OpSchema::Optional)
        .Attr("is_causal", "", AttributeProto::INT, static_cast<int64_t>(0))
        .Attr("kv_num_heads", "", AttributeProto::INT, false)
        .Attr("q_num_heads", "", AttributeProto::INT, false)
        .Attr("qk_matmul_output_mode", "", AttributeProto::INT,
              static_cast<int64_t>(0))
        .Attr("scale", "", AttributeProto::FLOAT, false)
        .Attr("softcap", "", AttributeProto::FLOAT, 0.0f)
        .Attr("softmax_precision", "", AttributeProto::INT, false)
        .TypeConstraint("T1", FloatTypes(), "")
        .TypeConstraint("T2", FloatTypes(), "")
        .TypeConstraint("U", With(FloatTypes(), {"tensor(bool)"}), "")
        .TypeAndShapeInferenceFunction(InferAttention);
    Register(std::move(s));
  }
}

// Every version Glint registers, oldest first.
void RegisterAll() {
  RegisterOpset18();
  RegisterOpset19();
  RegisterOpset20();
  RegisterOpset21();
  RegisterOpset23();
}

}  // namespace

void RegisterNewerOpsetSchemas() {
  // A function-local static rather than absl::call_once: a thread that
  // finds the registration running waits inside libabsl, where TSan cannot
  // see that it then happens after it (glintd's concurrent AddNetworks
  // read the registry); the C++ runtime's guard is a wait TSan knows.
  static const bool registered = [] {
    // libonnx 1.12 accepts schemas only within its domains' version
    // ranges, which have no setter: its own AddDomainToVersion refuses a
    // domain it knows. The range object is a plain, non-const singleton.
    auto& ranges = const_cast<std::unordered_map<std::string, std::pair<int, int>>&>(
        onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map());
    std::pair<int, int>& range = ranges[onnx::ONNX_DOMAIN];
    range.second = std::max(range.second, static_cast<int>(kNewestSupportedOpset));
    RegisterAll();
    return true;
  }();
  (void)registered;
}

}  // namespace glint::onnx_internal
