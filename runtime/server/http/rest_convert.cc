#include "runtime/server/http/rest_convert.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/half.h"
#include "core/text.h"
#include "proto/oip_parameters.h"
#include "proto/oip_types.h"

namespace glint {
namespace {

using json = nlohmann::json;

// Dumps never throw on text from users: invalid UTF-8 becomes U+FFFD.
std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A JSON value as an error message shows it: short, whatever it holds.
std::string Show(const json& value) { return Clip(Dump(value), 64); }

std::string Quoted(absl::string_view text) {
  return absl::StrCat("'", Clip(text), "'");
}

absl::string_view KindOf(const json& value) {
  switch (value.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    default: return "something else";
  }
}

// --- JSON scalars -> elements --------------------------------------------

template <typename T>
absl::Status ToInteger(const json& v, T* out) {
  static_assert(std::is_integral_v<T>);
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u <= static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      *out = static_cast<T>(u);
      return absl::OkStatus();
    }
  } else if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();  // Negative: unsigned parses above.
    if constexpr (std::is_signed_v<T>) {
      if (i >= static_cast<int64_t>(std::numeric_limits<T>::min())) {
        *out = static_cast<T>(i);
        return absl::OkStatus();
      }
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "expected an integer in [", std::numeric_limits<T>::min(), ", ",
      std::numeric_limits<T>::max(), "], got ", Show(v)));
}

absl::Status ToDouble(const json& v, double* out) {
  if (v.is_number()) {
    *out = v.get<double>();
    return absl::OkStatus();
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "NaN") {
      *out = std::numeric_limits<double>::quiet_NaN();
      return absl::OkStatus();
    }
    if (s == "Infinity" || s == "-Infinity") {
      *out = s[0] == '-' ? -std::numeric_limits<double>::infinity()
                         : std::numeric_limits<double>::infinity();
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "expected a number (or \"NaN\", \"Infinity\", \"-Infinity\"), got ",
      Show(v)));
}

// Converts every leaf into the tensor's buffer.
template <typename T, typename Convert>
absl::Status Fill(const std::vector<const json*>& leaves, Tensor& tensor,
                  absl::string_view what, Convert convert) {
  T* data = tensor.data<T>();
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (absl::Status s = convert(*leaves[i], &data[i]); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " element ", i, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status FillIntegers(const std::vector<const json*>& leaves,
                          Tensor& tensor, absl::string_view what) {
  return Fill<T>(leaves, tensor, what,
                 [](const json& v, T* out) { return ToInteger<T>(v, out); });
}

absl::Status FillElements(const std::vector<const json*>& leaves,
                          Tensor& tensor, absl::string_view what) {
  switch (tensor.dtype()) {
    case DType::kBool:
      return Fill<uint8_t>(leaves, tensor, what, [](const json& v,
                                                    uint8_t* out) {
        if (!v.is_boolean()) {
          return absl::InvalidArgumentError(
              absl::StrCat("expected true or false, got ", Show(v)));
        }
        *out = v.get<bool>() ? 1 : 0;
        return absl::OkStatus();
      });
    case DType::kUInt8: return FillIntegers<uint8_t>(leaves, tensor, what);
    case DType::kUInt16: return FillIntegers<uint16_t>(leaves, tensor, what);
    case DType::kUInt32: return FillIntegers<uint32_t>(leaves, tensor, what);
    case DType::kUInt64: return FillIntegers<uint64_t>(leaves, tensor, what);
    case DType::kInt8: return FillIntegers<int8_t>(leaves, tensor, what);
    case DType::kInt16: return FillIntegers<int16_t>(leaves, tensor, what);
    case DType::kInt32: return FillIntegers<int32_t>(leaves, tensor, what);
    case DType::kInt64: return FillIntegers<int64_t>(leaves, tensor, what);
    case DType::kFloat16:
      return Fill<uint16_t>(leaves, tensor, what,
                            [](const json& v, uint16_t* out) {
                              double d = 0;
                              absl::Status s = ToDouble(v, &d);
                              *out = FloatToFloat16(static_cast<float>(d));
                              return s;
                            });
    case DType::kBFloat16:
      return Fill<uint16_t>(leaves, tensor, what,
                            [](const json& v, uint16_t* out) {
                              double d = 0;
                              absl::Status s = ToDouble(v, &d);
                              *out = FloatToBFloat16(static_cast<float>(d));
                              return s;
                            });
    case DType::kFloat32:
      return Fill<float>(leaves, tensor, what, [](const json& v, float* out) {
        double d = 0;
        absl::Status s = ToDouble(v, &d);
        *out = static_cast<float>(d);
        return s;
      });
    case DType::kFloat64:
      return Fill<double>(leaves, tensor, what,
                          [](const json& v, double* out) {
                            return ToDouble(v, out);
                          });
    default:
      return absl::UnimplementedError(
          absl::StrCat(what, ": datatype ", OipDatatype(tensor.dtype()),
                       " cannot be given as JSON data"));
  }
}

// The scalars of a nested `data`, in row-major order, checking that each
// level's length is the shape's dimension. Recursion is bounded by the
// rank (CheckTensorSize: at most kMaxTensorRank).
absl::Status CollectNested(const json& node, const Shape& shape, int depth,
                           std::vector<int64_t>& index,
                           std::vector<const json*>& leaves,
                           absl::string_view what) {
  auto where = [&] {
    return index.empty() ? std::string("data")
                         : absl::StrCat("data[", absl::StrJoin(index, "]["),
                                        "]");
  };
  if (depth == shape.rank()) {
    if (node.is_array() || node.is_object() || node.is_null()) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": ", where(), " is ", KindOf(node),
          " where the shape ", shape.ToString(), " puts a scalar"));
    }
    leaves.push_back(&node);
    return absl::OkStatus();
  }
  if (!node.is_array() ||
      static_cast<int64_t>(node.size()) != shape.dim(depth)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": nested data must follow the shape ", shape.ToString(), ": ",
        where(), " is ",
        node.is_array() ? absl::StrCat("an array of ", node.size())
                        : std::string(KindOf(node)),
        " where ", shape.dim(depth), " elements belong"));
  }
  index.push_back(0);
  for (const json& child : node) {
    if (absl::Status s =
            CollectNested(child, shape, depth + 1, index, leaves, what);
        !s.ok()) {
      return s;
    }
    ++index.back();
  }
  index.pop_back();
  return absl::OkStatus();
}

// --- Elements -> JSON text ----------------------------------------------------

template <typename T>
void AppendFloat(T value, std::string* out) {
  if (std::isnan(value)) {
    out->append("\"NaN\"");
  } else if (std::isinf(value)) {
    out->append(value < 0 ? "\"-Infinity\"" : "\"Infinity\"");
  } else if (value == 0 && std::signbit(value)) {
    // "-0" would read back as the integer 0, losing the sign.
    out->append("-0.0");
  } else {
    char buf[64];
    const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), value);
    out->append(buf, r.ptr);
  }
}

template <typename T, typename Append>
void AppendElements(const Tensor& tensor, std::string* out, Append append) {
  const T* data = tensor.data<T>();
  const int64_t n = tensor.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) out->push_back(',');
    append(data[i], out);
  }
}

template <typename T>
void AppendIntegers(const Tensor& tensor, std::string* out) {
  AppendElements<T>(tensor, out, [](T v, std::string* o) {
    absl::StrAppend(o, static_cast<std::conditional_t<std::is_signed_v<T>,
                                                      int64_t, uint64_t>>(v));
  });
}

absl::Status AppendData(const Tensor& tensor, std::string* out) {
  switch (tensor.dtype()) {
    case DType::kBool:
      AppendElements<uint8_t>(tensor, out, [](uint8_t v, std::string* o) {
        o->append(v != 0 ? "true" : "false");
      });
      return absl::OkStatus();
    case DType::kUInt8: AppendIntegers<uint8_t>(tensor, out); break;
    case DType::kUInt16: AppendIntegers<uint16_t>(tensor, out); break;
    case DType::kUInt32: AppendIntegers<uint32_t>(tensor, out); break;
    case DType::kUInt64: AppendIntegers<uint64_t>(tensor, out); break;
    case DType::kInt8: AppendIntegers<int8_t>(tensor, out); break;
    case DType::kInt16: AppendIntegers<int16_t>(tensor, out); break;
    case DType::kInt32: AppendIntegers<int32_t>(tensor, out); break;
    case DType::kInt64: AppendIntegers<int64_t>(tensor, out); break;
    case DType::kFloat16:
      AppendElements<uint16_t>(tensor, out, [](uint16_t v, std::string* o) {
        AppendFloat(Float16ToFloat(v), o);
      });
      break;
    case DType::kBFloat16:
      AppendElements<uint16_t>(tensor, out, [](uint16_t v, std::string* o) {
        AppendFloat(BFloat16ToFloat(v), o);
      });
      break;
    case DType::kFloat32:
      AppendElements<float>(tensor, out, AppendFloat<float>);
      break;
    case DType::kFloat64:
      AppendElements<double>(tensor, out, AppendFloat<double>);
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "a tensor of dtype ", DTypeName(tensor.dtype()),
          " has no JSON data form"));
  }
  return absl::OkStatus();
}

// --- Request pieces -----------------------------------------------------------

// A "parameters" object as the protocol's parameter list: JSON booleans,
// integers (int64 or uint64), other numbers and strings; INVALID_ARGUMENT
// for anything else. `where` prefixes the message ("" for the request's).
absl::StatusOr<OipParameters> ParametersFromJson(const json& parameters,
                                                 absl::string_view where) {
  const std::string prefix = where.empty() ? "" : absl::StrCat(where, ": ");
  if (!parameters.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "\"parameters\" must be an object"));
  }
  OipParameters out;
  out.reserve(parameters.size());
  for (const auto& [key, value] : parameters.items()) {
    OipParameterValue v;
    if (value.is_boolean()) {
      v = value.get<bool>();
    } else if (value.is_number_unsigned()) {
      v = value.get<uint64_t>();
    } else if (value.is_number_integer()) {
      v = value.get<int64_t>();
    } else if (value.is_number_float()) {
      v = value.get<double>();
    } else if (value.is_string()) {
      v = value.get<std::string>();
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          prefix, "parameter ", Quoted(key),
          " must be a string, number or boolean, not ", KindOf(value)));
    }
    out.push_back({key, std::move(v)});
  }
  return out;
}

// A tensor's "parameters", read by the protocol's one parser
// (proto/oip_parameters.h). The REST port has no shared-memory registry
// calls, so a window is UNIMPLEMENTED here rather than looked up.
absl::Status CheckTensorParameters(const json& tensor, absl::string_view what,
                                   bool is_output) {
  const auto it = tensor.find("parameters");
  if (it == tensor.end()) return absl::OkStatus();
  absl::StatusOr<OipParameters> parameters = ParametersFromJson(*it, what);
  if (!parameters.ok()) return parameters.status();
  for (const OipParameter& p : *parameters) {
    if (IsOipSharedMemoryParameter(p.key)) {
      return absl::UnimplementedError(absl::StrCat(
          what, ": shared memory is not supported over HTTP; use the gRPC "
                "port"));
    }
  }
  return (is_output ? ParseOipOutputParameters(*parameters, what)
                    : ParseOipInputParameters(*parameters, what))
      .status();
}

absl::StatusOr<NamedTensor> ParseInput(const json& input, size_t index) {
  std::string what = absl::StrCat("inputs[", index, "]");
  if (!input.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " must be an object, not ", KindOf(input)));
  }
  const auto name = input.find("name");
  if (name == input.end() || !name->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " needs a \"name\" string"));
  }
  NamedTensor out;
  out.name = name->get<std::string>();
  what = absl::StrCat("input ", Quoted(out.name));
  if (absl::Status s = CheckTensorParameters(input, what, false); !s.ok()) {
    return s;
  }
  const auto datatype = input.find("datatype");
  if (datatype == input.end() || !datatype->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " needs a \"datatype\" string"));
  }
  // BYTES is a datatype of the protocol that Glint lacks: 501 here.
  absl::StatusOr<DType> dtype =
      datatype->get_ref<const std::string&>() == "BYTES"
          ? absl::UnimplementedError(
                "datatype BYTES is not supported: Glint computes on no "
                "string tensors")
          : DTypeFromOipDatatype(datatype->get_ref<const std::string&>());
  if (!dtype.ok()) {
    return absl::Status(dtype.status().code(),
                        absl::StrCat(what, ": ", dtype.status().message()));
  }
  const auto shape_json = input.find("shape");
  if (shape_json == input.end() || !shape_json->is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " needs a \"shape\" array"));
  }
  if (shape_json->size() > static_cast<size_t>(kMaxTensorRank)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": rank ", shape_json->size(),
                     " is over the limit of ", kMaxTensorRank));
  }
  std::vector<int64_t> dims;
  for (const json& d : *shape_json) {
    // Non-negative integers parse as unsigned.
    if (!d.is_number_unsigned() ||
        d.get<uint64_t>() >
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": shape dimensions must be non-negative integers, got ",
          Show(d)));
    }
    dims.push_back(d.get<int64_t>());
  }
  const auto data = input.find("data");
  if (data == input.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " needs a \"data\" array"));
  }
  absl::StatusOr<Tensor> tensor =
      TensorFromJson(*data, *dtype, Shape(std::move(dims)), what);
  if (!tensor.ok()) return tensor.status();
  out.tensor = *std::move(tensor);
  return out;
}

absl::Status ParseParameters(const json& parameters, absl::Time now,
                             RunOptions* options) {
  absl::StatusOr<OipParameters> list = ParametersFromJson(parameters, "");
  if (!list.ok()) return list.status();
  // HTTP carries no deadline of its own: the `timeout` parameter is the
  // only one.
  return ApplyOipRequestParameters(*list, now, absl::InfiniteFuture(),
                                   options);
}

}  // namespace

absl::StatusOr<Tensor> TensorFromJson(const json& data, DType dtype,
                                      const Shape& shape,
                                      absl::string_view what) {
  if (absl::Status s = CheckTensorSize(dtype, shape, what); !s.ok()) return s;
  if (!data.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": \"data\" must be an array, not ", KindOf(data)));
  }
  const int64_t count = shape.NumElements();
  std::vector<const json*> leaves;
  if (data.empty() || !data.front().is_array()) {
    // Flat: the scalars themselves, exactly product(shape) of them.
    if (static_cast<int64_t>(data.size()) != count) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": shape ", shape.ToString(), " holds ", count,
          " elements but \"data\" has ", data.size()));
    }
    leaves.reserve(data.size());
    for (size_t i = 0; i < data.size(); ++i) {
      const json& v = data[i];
      if (v.is_array() || v.is_object() || v.is_null()) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, " element ", i, " is ", KindOf(v), ", not a scalar"));
      }
      leaves.push_back(&v);
    }
  } else {
    std::vector<int64_t> index;
    if (absl::Status s = CollectNested(data, shape, 0, index, leaves, what);
        !s.ok()) {
      return s;
    }
  }
  // Only now is the size known to be what the request itself holds, so the
  // allocation is bounded by the request's size.
  absl::StatusOr<Tensor> tensor = Tensor::Create(dtype, shape);
  if (!tensor.ok()) return tensor.status();
  if (absl::Status s = FillElements(leaves, *tensor, what); !s.ok()) return s;
  return tensor;
}

absl::Status AppendTensorJson(const NamedTensor& tensor, std::string* out) {
  const Tensor& t = tensor.tensor;
  if (!t.valid() || (t.num_elements() > 0 && t.raw_data() == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat("output ", Quoted(tensor.name), " has no data"));
  }
  absl::StrAppend(out, "{\"name\":", JsonQuote(tensor.name),
                  ",\"datatype\":", JsonQuote(OipDatatype(t.dtype())),
                  ",\"shape\":[", absl::StrJoin(t.shape().dims(), ","),
                  "],\"data\":[");
  if (absl::Status s = AppendData(t, out); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("output ", Quoted(tensor.name), ": ", s.message()));
  }
  out->append("]}");
  return absl::OkStatus();
}

absl::StatusOr<RestInferRequest> ParseInferRequest(absl::string_view body,
                                                   absl::Time now) {
  json doc;
  try {
    doc = json::parse(body.begin(), body.end());
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the request body is not valid JSON: ", Clip(e.what())));
  }
  if (!doc.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the request body must be a JSON object, not ", KindOf(doc)));
  }
  RestInferRequest request;
  if (const auto it = doc.find("id"); it != doc.end()) {
    if (!it->is_string()) {
      return absl::InvalidArgumentError("\"id\" must be a string");
    }
    request.id = it->get<std::string>();
  }
  if (const auto it = doc.find("parameters"); it != doc.end()) {
    if (absl::Status s = ParseParameters(*it, now, &request.options);
        !s.ok()) {
      return s;
    }
  }
  const auto inputs = doc.find("inputs");
  if (inputs == doc.end() || !inputs->is_array()) {
    return absl::InvalidArgumentError(
        "the request needs an \"inputs\" array");
  }
  for (size_t i = 0; i < inputs->size(); ++i) {
    absl::StatusOr<NamedTensor> input = ParseInput((*inputs)[i], i);
    if (!input.ok()) return input.status();
    request.inputs.push_back(*std::move(input));
  }
  if (const auto outputs = doc.find("outputs"); outputs != doc.end()) {
    if (!outputs->is_array()) {
      return absl::InvalidArgumentError("\"outputs\" must be an array");
    }
    for (size_t i = 0; i < outputs->size(); ++i) {
      const json& output = (*outputs)[i];
      const std::string what = absl::StrCat("outputs[", i, "]");
      if (!output.is_object() || !output.contains("name") ||
          !output["name"].is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, " must be an object with a \"name\" string"));
      }
      const std::string& name = output["name"].get_ref<const std::string&>();
      if (absl::Status s = CheckTensorParameters(
              output, absl::StrCat("output ", Quoted(name)), true);
          !s.ok()) {
        return s;
      }
      request.options.requested_outputs.push_back(name);
    }
  }
  return request;
}

absl::StatusOr<std::string> InferResponseJson(
    absl::string_view model_name, const std::optional<std::string>& id,
    const std::vector<NamedTensor>& outputs) {
  std::string out;
  absl::StrAppend(&out, "{\"model_name\":", JsonQuote(model_name),
                  ",\"model_version\":", JsonQuote(kOipModelVersion));
  if (id.has_value()) absl::StrAppend(&out, ",\"id\":", JsonQuote(*id));
  out.append(",\"outputs\":[");
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (i > 0) out.push_back(',');
    if (absl::Status s = AppendTensorJson(outputs[i], &out); !s.ok()) {
      return s;
    }
  }
  out.append("]}");
  return out;
}

std::string ModelMetadataJson(const NetworkInfo& network) {
  const bool batched = network.batching.max_batch_size > 0;
  auto tensors = [batched](const std::vector<ValueInfo>& values) {
    json list = json::array();
    for (const ValueInfo& v : values) {
      list.push_back({{"name", v.name},
                      {"datatype", std::string(OipDatatype(v.dtype))},
                      {"shape", OipMetadataShape(v, batched)}});
    }
    return list;
  };
  json doc = {{"name", network.name},
              {"versions", json::array({std::string(kOipModelVersion)})},
              {"platform", std::string(kOipPlatform)},
              {"inputs", tensors(network.inputs)},
              {"outputs", tensors(network.outputs)}};
  // The dynamic dims' bounds (-1 in the shapes says no more); the same
  // text a Triton config's parameters.max_dims takes.
  if (!network.dynamic_dims.empty()) {
    doc["parameters"] = {
        {"max_dims", OipMaxDimsParameter(network.dynamic_dims)}};
  }
  return Dump(doc);
}

std::string ServerMetadataJson() {
  // Triton's extension names, for what the REST endpoints implement: the
  // `priority` and `timeout` request parameters.
  const json doc = {{"name", "glint"},
                    {"version", std::string(kGlintVersion)},
                    {"extensions", json::array({"schedule_policy"})}};
  return Dump(doc);
}

std::string ErrorJson(absl::string_view message) {
  return absl::StrCat("{\"error\":", JsonQuote(message), "}");
}

std::string JsonQuote(absl::string_view text) {
  return Dump(json(std::string(text)));
}

}  // namespace glint
