#include "proto/oip_types.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "core/text.h"
#include "nlohmann/json.hpp"

namespace glint {
namespace {

using Json = nlohmann::json;

struct DatatypeEntry {
  DType dtype;
  absl::string_view oip;     // The OIP datatype string.
  int triton;                // model_config.proto's DataType number.
  absl::string_view config;  // Its enum name.
};

constexpr DatatypeEntry kDatatypes[] = {
    {DType::kBool, "BOOL", 1, "TYPE_BOOL"},
    {DType::kUInt8, "UINT8", 2, "TYPE_UINT8"},
    {DType::kUInt16, "UINT16", 3, "TYPE_UINT16"},
    {DType::kUInt32, "UINT32", 4, "TYPE_UINT32"},
    {DType::kUInt64, "UINT64", 5, "TYPE_UINT64"},
    {DType::kInt8, "INT8", 6, "TYPE_INT8"},
    {DType::kInt16, "INT16", 7, "TYPE_INT16"},
    {DType::kInt32, "INT32", 8, "TYPE_INT32"},
    {DType::kInt64, "INT64", 9, "TYPE_INT64"},
    {DType::kFloat16, "FP16", 10, "TYPE_FP16"},
    {DType::kFloat32, "FP32", 11, "TYPE_FP32"},
    {DType::kFloat64, "FP64", 12, "TYPE_FP64"},
    {DType::kBFloat16, "BF16", 14, "TYPE_BF16"},
};

std::string AcceptedDatatypes() {
  return absl::StrJoin(kDatatypes, ", ",
                       [](std::string* out, const DatatypeEntry& e) {
                         absl::StrAppend(out, e.oip);
                       });
}

// --- JSON helpers: no exception leaves them ----------------------------------

// A value for an error message: scalars as JSON (strings clipped), arrays
// and objects by kind only, so a hostile value is never walked or echoed.
std::string Describe(const Json& value) {
  if (value.is_array()) return "an array";
  if (value.is_object()) return "an object";
  if (value.is_string()) {
    return absl::StrCat("\"", Clip(value.get<std::string>()), "\"");
  }
  return value.dump();
}

// The deepest nesting of arrays and objects in `json`, scanning bytes (so
// before any parser recurses): brackets inside strings do not count.
int MaxNesting(absl::string_view json) {
  int depth = 0;
  int max_depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

// Far deeper than any model configuration (Triton's nests five levels).
constexpr int kMaxConfigNesting = 32;

// The member `snake` (or its lowerCamelCase spelling, which protobuf's JSON
// mapping also accepts) of `object`, or null.
const Json* Member(const Json& object, absl::string_view snake) {
  auto it = object.find(std::string(snake));
  if (it != object.end()) return &*it;
  std::string camel;
  bool upper = false;
  for (char c : snake) {
    if (c == '_') {
      upper = true;
    } else {
      camel.push_back(upper ? absl::ascii_toupper(c) : c);
      upper = false;
    }
  }
  it = object.find(camel);
  return it != object.end() ? &*it : nullptr;
}

// The snake_case spelling of a member name in either spelling.
std::string SnakeCase(absl::string_view name) {
  std::string out;
  for (char c : name) {
    if (absl::ascii_isupper(c)) {
      out.push_back('_');
      out.push_back(absl::ascii_tolower(c));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// Refuses members of `object` outside `known` (snake_case names).
absl::Status CheckMembers(const Json& object, absl::string_view where,
                          const std::set<std::string>& known) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (known.count(SnakeCase(it.key())) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config: ", where, "'", it.key(),
          "' is not supported by Glint (supported: ",
          absl::StrJoin(known, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

// An integer given as a JSON number or a decimal string (protobuf's JSON
// form of 64-bit fields), within [min, max].
absl::StatusOr<int64_t> IntValue(const Json& value, absl::string_view what,
                                 int64_t min, int64_t max) {
  int64_t v = 0;
  bool ok = false;
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    ok = u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    v = static_cast<int64_t>(u);
  } else if (value.is_number_integer()) {
    v = value.get<int64_t>();
    ok = true;
  } else if (value.is_string()) {
    ok = absl::SimpleAtoi(value.get<std::string>(), &v);
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config: ", what, " must be an integer, not ", Describe(value)));
  }
  if (v < min || v > max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config: ", what, " is ", v, ", outside [", min, ", ", max, "]"));
  }
  return v;
}

absl::StatusOr<std::string> StringValue(const Json& value,
                                        absl::string_view what) {
  if (!value.is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config: ", what, " must be a string, not ", Describe(value)));
  }
  return value.get<std::string>();
}

absl::Status ExpectKind(const Json& value, bool ok, absl::string_view what,
                        absl::string_view kind) {
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "config: ", what, " must be ", kind, ", not ", Describe(value)));
}

// "1,3,224,224" → dims, each >= 0.
absl::StatusOr<Shape> ParseDimList(absl::string_view text,
                                   absl::string_view what) {
  std::vector<int64_t> dims;
  if (!text.empty()) {
    for (absl::string_view d : absl::StrSplit(text, ',')) {
      int64_t v = 0;
      if (!absl::SimpleAtoi(d, &v) || v < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config: ", what, ": bad dimension '", d,
            "' (expected NAME=D0,D1,... with each D >= 0)"));
      }
      dims.push_back(v);
    }
  }
  return Shape(std::move(dims));
}

// --- The sections of the configuration -----------------------------------------

// One `parameters` entry's value: {"string_value": "..."} or a bare string.
absl::StatusOr<std::string> ParameterValue(const Json& value,
                                           absl::string_view key) {
  const std::string what = absl::StrCat("parameters.", key);
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object()) {
    if (absl::Status s = CheckMembers(value, what + ".", {"string_value"});
        !s.ok()) {
      return s;
    }
    if (const Json* v = Member(value, "string_value")) {
      return StringValue(*v, what + ".string_value");
    }
    return std::string();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("config: ", what,
                   " must be {\"string_value\": \"...\"} or a string, not ",
                   Describe(value)));
}

// "config: WHAT: bad entry 'SPEC' (expected EXPECTED)".
absl::Status BadEntry(const std::string& what, absl::string_view spec,
                      absl::string_view expected) {
  return absl::InvalidArgumentError(absl::StrCat(
      "config: ", what, ": bad entry '", spec, "' (expected ", expected, ")"));
}

// Calls `apply(key, value)` for each KEY=VALUE entry of a ';'-separated
// parameter, both trimmed; an entry without a key or '=' is BadEntry.
absl::Status ForEachEntry(
    absl::string_view parameter, const std::string& what,
    absl::string_view expected,
    const std::function<absl::Status(absl::string_view spec,
                                     const std::string& key,
                                     absl::string_view value)>& apply) {
  for (absl::string_view spec :
       absl::StrSplit(parameter, ';', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(spec, absl::MaxSplits('=', 1));
    kv.first = absl::StripAsciiWhitespace(kv.first);
    if (kv.first.empty() || spec.find('=') == absl::string_view::npos) {
      return BadEntry(what, spec, expected);
    }
    GLINT_RETURN_IF_ERROR(apply(spec, std::string(kv.first),
                                absl::StripAsciiWhitespace(kv.second)));
  }
  return absl::OkStatus();
}

// The "input_shapes" parameter: NAME=D0,D1,...;NAME=...
absl::Status ParseInputShapesParameter(absl::string_view value,
                                       const std::string& what,
                                       AddNetworkOptions* options) {
  return ForEachEntry(
      value, what, "NAME=D0,D1,...;NAME=...",
      [&](absl::string_view, const std::string& name, absl::string_view dims) {
        GLINT_ASSIGN_OR_RETURN(options->input_shapes[name],
                               ParseDimList(dims, what));
        return absl::OkStatus();
      });
}

// The "max_dims" parameter: DIM=N;DIM=N... (AddNetworkOptions::max_dims).
absl::Status ParseMaxDimsParameter(absl::string_view value,
                                   const std::string& what,
                                   AddNetworkOptions* options) {
  const std::string expected =
      absl::StrCat("DIM=N;... with N in 1..", kMaxDimBound);
  return ForEachEntry(
      value, what, expected,
      [&](absl::string_view spec, const std::string& dim,
          absl::string_view n) {
        int64_t max = 0;
        if (!absl::SimpleAtoi(n, &max) || max < 1 || max > kMaxDimBound) {
          return BadEntry(what, spec, expected);
        }
        options->max_dims[dim] = max;
        return absl::OkStatus();
      });
}

// The "place" parameter: PATTERN=DEVICE;PATTERN=DEVICE...
absl::Status ParsePlaceParameter(absl::string_view value,
                                 const std::string& what,
                                 PartitionOptions* partition) {
  for (absl::string_view spec :
       absl::StrSplit(value, ';', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(spec, absl::MaxSplits('=', 1));
    int device = 0;
    if (kv.first.empty() || !absl::SimpleAtoi(kv.second, &device) ||
        device < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("config: ", what, ": bad rule '", spec,
                       "' (expected PATTERN=DEVICE;PATTERN=DEVICE...)"));
    }
    partition->user_plan.push_back({std::string(kv.first), device});
  }
  return absl::OkStatus();
}

absl::Status ApplyGlintParameters(const Json& parameters,
                                  AddNetworkOptions* options,
                                  bool* replicas_given) {
  if (absl::Status s = ExpectKind(parameters, parameters.is_object(),
                                  "parameters", "an object");
      !s.ok()) {
    return s;
  }
  static const std::set<std::string> kKnown = {
      "partition_strategy", "plan_devices", "replicas", "input_shapes",
      "max_dims",           "place",        "reuse",    "user_config",
      "precision"};
  PartitionOptions& partition = options->partition;
  bool strategy_given = false;
  for (auto it = parameters.begin(); it != parameters.end(); ++it) {
    const std::string& key = it.key();
    if (kKnown.count(key) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config: parameters.", key,
          " is not a Glint parameter (supported: ",
          absl::StrJoin(kKnown, ", "), ")"));
    }
    absl::StatusOr<std::string> value = ParameterValue(it.value(), key);
    if (!value.ok()) return value.status();
    const std::string what = absl::StrCat("parameters.", key);
    if (key == "partition_strategy") {
      absl::StatusOr<PartitionStrategy> s = ParsePartitionStrategy(*value);
      if (!s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("config: ", what, ": ", s.status().message()));
      }
      partition.strategy = *s;
      strategy_given = true;
    } else if (key == "plan_devices" || key == "replicas") {
      absl::StatusOr<int64_t> n =
          IntValue(Json(*value), what, key == "replicas" ? 1 : 0, 1 << 16);
      if (!n.ok()) return n.status();
      if (key == "replicas") {
        partition.replicas = static_cast<int>(*n);
        *replicas_given = true;
      } else {
        partition.plan_devices = static_cast<int>(*n);
      }
    } else if (key == "input_shapes" || key == "max_dims") {
      GLINT_RETURN_IF_ERROR(
          key == "input_shapes"
              ? ParseInputShapesParameter(*value, what, options)
              : ParseMaxDimsParameter(*value, what, options));
    } else if (key == "place") {
      if (absl::Status s = ParsePlaceParameter(*value, what, &partition);
          !s.ok()) {
        return s;
      }
    } else if (key == "reuse") {
      absl::StatusOr<PlanReuse> reuse = ParsePlanReuse(*value);
      if (!reuse.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("config: ", what, ": ", reuse.status().message()));
      }
      options->reuse = *reuse;
    } else if (key == "user_config") {
      options->user_config = *value;
    } else if (key == "precision") {
      absl::StatusOr<Precision> precision = ParsePrecision(*value);
      if (!precision.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config: ", what, ": ", precision.status().message()));
      }
      options->precision = *precision;
    }
  }
  if (!partition.user_plan.empty() && !strategy_given) {
    partition.strategy = PartitionStrategy::kUser;
  }
  return absl::OkStatus();
}

absl::StatusOr<TritonTensorSpec> ParseTensorSpec(const Json& entry,
                                                 const std::string& what) {
  if (absl::Status s = ExpectKind(entry, entry.is_object(), what, "an object");
      !s.ok()) {
    return s;
  }
  // What a tensor entry may say and Glint can check; layout and shape
  // tensor settings would change how the model runs, so they are refused.
  if (absl::Status s =
          CheckMembers(entry, what + ".", {"name", "data_type", "dims"});
      !s.ok()) {
    return s;
  }
  TritonTensorSpec spec;
  const Json* name = Member(entry, "name");
  if (name == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("config: ", what, " has no name"));
  }
  absl::StatusOr<std::string> n = StringValue(*name, what + ".name");
  if (!n.ok()) return n.status();
  spec.name = *std::move(n);
  if (const Json* type = Member(entry, "data_type")) {
    absl::StatusOr<DType> dtype;
    if (type->is_string()) {
      dtype = DTypeFromTritonDataTypeName(type->get<std::string>());
    } else {
      absl::StatusOr<int64_t> number =
          IntValue(*type, what + ".data_type", 0, 64);
      if (!number.ok()) return number.status();
      dtype = absl::InvalidArgumentError("unknown data_type");
      for (const DatatypeEntry& e : kDatatypes) {
        if (e.triton == *number) dtype = e.dtype;
      }
    }
    if (!dtype.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config: ", what, ".data_type: ", dtype.status().message()));
    }
    spec.dtype = *dtype;
  }
  if (const Json* dims = Member(entry, "dims")) {
    if (absl::Status s = ExpectKind(*dims, dims->is_array(), what + ".dims",
                                    "an array");
        !s.ok()) {
      return s;
    }
    std::vector<int64_t> d;
    for (const Json& v : *dims) {
      absl::StatusOr<int64_t> dim =
          IntValue(v, what + ".dims", -1, kMaxTensorBytes);
      if (!dim.ok()) return dim.status();
      d.push_back(*dim);
    }
    if (d.size() > static_cast<size_t>(kMaxTensorRank)) {
      return absl::InvalidArgumentError(
          absl::StrCat("config: ", what, ".dims has more than ",
                       kMaxTensorRank, " dimensions"));
    }
    spec.dims = std::move(d);
  }
  return spec;
}

absl::Status ParseTensorSpecs(const Json& list, absl::string_view field,
                              std::vector<TritonTensorSpec>* specs) {
  if (absl::Status s =
          ExpectKind(list, list.is_array(), field, "an array");
      !s.ok()) {
    return s;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    absl::StatusOr<TritonTensorSpec> spec =
        ParseTensorSpec(list[i], absl::StrCat(field, "[", i, "]"));
    if (!spec.ok()) return spec.status();
    specs->push_back(*std::move(spec));
  }
  return absl::OkStatus();
}

absl::Status ParseDynamicBatching(const Json& section,
                                  DynamicBatching* batching) {
  if (absl::Status s = ExpectKind(section, section.is_object(),
                                  "dynamic_batching", "an object");
      !s.ok()) {
    return s;
  }
  // preserve_ordering false is what Glint does anyway (each caller gets its
  // own reply); priority levels and queue policies are not per model here.
  if (absl::Status s = CheckMembers(
          section, "dynamic_batching.",
          {"max_queue_delay_microseconds", "preferred_batch_size",
           "preserve_ordering"});
      !s.ok()) {
    return s;
  }
  if (const Json* d = Member(section, "max_queue_delay_microseconds")) {
    // An hour is far beyond any useful batching window.
    absl::StatusOr<int64_t> us = IntValue(
        *d, "dynamic_batching.max_queue_delay_microseconds", 0, 3600'000'000);
    if (!us.ok()) return us.status();
    batching->max_queue_delay = absl::Microseconds(*us);
  }
  if (const Json* p = Member(section, "preferred_batch_size")) {
    if (absl::Status s =
            ExpectKind(*p, p->is_array(), "dynamic_batching.preferred_batch_size",
                       "an array");
        !s.ok()) {
      return s;
    }
    for (const Json& v : *p) {
      absl::StatusOr<int64_t> n = IntValue(
          v, "dynamic_batching.preferred_batch_size", 1, 1 << 30);
      if (!n.ok()) return n.status();
      batching->preferred_batch_sizes.push_back(static_cast<int>(*n));
    }
  }
  if (const Json* o = Member(section, "preserve_ordering")) {
    if (!o->is_boolean() || o->get<bool>()) {
      return absl::InvalidArgumentError(
          "config: dynamic_batching.preserve_ordering must be false: "
          "Glint answers each request as soon as its batch is done");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int> ParseInstanceGroups(const Json& groups) {
  if (absl::Status s = ExpectKind(groups, groups.is_array(), "instance_group",
                                  "an array");
      !s.ok()) {
    return s;
  }
  int64_t total = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string what = absl::StrCat("instance_group[", i, "]");
    const Json& g = groups[i];
    if (absl::Status s = ExpectKind(g, g.is_object(), what, "an object");
        !s.ok()) {
      return s;
    }
    if (Member(g, "gpus") != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config: ", what,
          ".gpus is not supported: Glint places replicas on devices itself "
          "(use parameters partition_strategy/plan_devices/place)"));
    }
    if (absl::Status s = CheckMembers(g, what + ".", {"name", "count", "kind"});
        !s.ok()) {
      return s;
    }
    int64_t count = 1;  // Triton's default.
    if (const Json* c = Member(g, "count")) {
      absl::StatusOr<int64_t> n = IntValue(*c, what + ".count", 1, 1 << 16);
      if (!n.ok()) return n.status();
      count = *n;
    }
    if (const Json* k = Member(g, "kind")) {
      static const std::set<std::string> kKinds = {"KIND_AUTO", "KIND_GPU",
                                                   "KIND_CPU", "KIND_MODEL"};
      if (!k->is_string() || kKinds.count(k->get<std::string>()) == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config: ", what, ".kind must be one of ",
            absl::StrJoin(kKinds, ", "), ", not ", Describe(*k)));
      }
    }
    total += count;
  }
  if (total > (1 << 16)) {
    return absl::InvalidArgumentError(
        "config: instance_group asks for more than 65536 instances");
  }
  return static_cast<int>(total);
}

}  // namespace

absl::Status CheckOipModelVersion(absl::string_view model,
                                  absl::string_view version) {
  if (version.empty() || version == kOipModelVersion) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat(
      "model '", model, "' has no version '", version,
      "': a Glint network has one version, \"", kOipModelVersion, "\""));
}

absl::StatusOr<DType> DTypeFromOipDatatype(absl::string_view datatype) {
  for (const DatatypeEntry& e : kDatatypes) {
    if (e.oip == datatype) return e.dtype;
  }
  if (datatype == "BYTES") {
    return absl::InvalidArgumentError(
        "datatype BYTES is not supported: Glint networks take numeric and "
        "boolean tensors only");
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown datatype '", datatype,
                   "' (expected one of ", AcceptedDatatypes(), ")"));
}

absl::string_view OipDatatype(DType dtype) {
  for (const DatatypeEntry& e : kDatatypes) {
    if (e.dtype == dtype) return e.oip;
  }
  return dtype == DType::kString ? "BYTES" : "";
}

std::vector<int64_t> OipMetadataShape(const ValueInfo& value, bool batched) {
  if (!value.shape.has_rank()) return {-1};
  std::vector<int64_t> dims;
  for (int i = 0; i < value.shape.rank(); ++i) {
    const int64_t d = value.shape.dim(i);
    dims.push_back(d < 0 || (batched && i == 0) ? -1 : d);
  }
  return dims;
}

std::string OipMaxDimsParameter(const std::vector<DynamicDim>& dims) {
  std::vector<std::string> entries;
  std::set<std::string> keys;
  for (const DynamicDim& d : dims) {
    if (keys.insert(d.Key()).second) {
      entries.push_back(absl::StrCat(d.Key(), "=", d.max));
    }
  }
  return absl::StrJoin(entries, ";");
}

int TritonDataType(DType dtype) {
  for (const DatatypeEntry& e : kDatatypes) {
    if (e.dtype == dtype) return e.triton;
  }
  return 0;
}

absl::StatusOr<DType> DTypeFromTritonDataTypeName(absl::string_view name) {
  for (const DatatypeEntry& e : kDatatypes) {
    if (e.config == name) return e.dtype;
  }
  if (name == "TYPE_STRING") {
    return absl::InvalidArgumentError(
        "TYPE_STRING is not supported: Glint networks take numeric and "
        "boolean tensors only");
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown data_type '", name, "'"));
}

absl::StatusOr<int> RunPriorityFromOip(int64_t level) {
  if (level < 0 || level > kOipMaxPriorityLevel) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter 'priority' is ", level, ": expected 0 (the default) or a "
        "level from 1 (highest) to ", kOipMaxPriorityLevel));
  }
  if (level == 0) return 0;
  return static_cast<int>(kOipMaxPriorityLevel + 1 - level);
}

absl::StatusOr<absl::Time> DeadlineFromOipTimeout(int64_t timeout_us,
                                                  absl::Time now,
                                                  absl::Time grpc_deadline) {
  constexpr int64_t kMaxTimeoutUs = int64_t{10} * 365 * 24 * 3600 * 1000000;
  if (timeout_us < 0 || timeout_us > kMaxTimeoutUs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter 'timeout' is ", timeout_us,
        " µs: expected 0 (none) up to ten years"));
  }
  if (timeout_us == 0) return grpc_deadline;
  return std::min(grpc_deadline, now + absl::Microseconds(timeout_us));
}

absl::StatusOr<TritonModelConfig> TritonModelConfigFromJson(
    absl::string_view json, absl::string_view model_name) {
  TritonModelConfig config;
  if (absl::StripAsciiWhitespace(json).empty()) return config;
  if (MaxNesting(json) > kMaxConfigNesting) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config nests arrays and objects deeper than ", kMaxConfigNesting,
        " levels"));
  }
  Json root;
  try {
    root = Json::parse(json.begin(), json.end());
  } catch (const Json::parse_error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("config is not valid JSON (at byte ", e.byte, ")"));
  } catch (const Json::exception& e) {
    // The parser's other refusals, e.g. a number beyond a double's range.
    return absl::InvalidArgumentError(
        absl::StrCat("config is not valid JSON: ", Clip(e.what())));
  }
  if (!root.is_object()) {
    return absl::InvalidArgumentError(
        "config must be a JSON object (Triton's ModelConfig)");
  }
  if (absl::Status s = CheckMembers(
          root, "",
          {"name", "platform", "backend", "max_batch_size", "dynamic_batching",
           "instance_group", "input", "output", "parameters"});
      !s.ok()) {
    return s;
  }
  if (const Json* name = Member(root, "name")) {
    absl::StatusOr<std::string> n = StringValue(*name, "name");
    if (!n.ok()) return n.status();
    if (*n != model_name) {
      return absl::InvalidArgumentError(
          absl::StrCat("config: name '", *n, "' differs from the model name '",
                       model_name, "'"));
    }
  }
  for (const auto& [field, accepted] :
       {std::pair<absl::string_view, std::set<std::string>>{
            "platform", {std::string(kOipPlatform), "onnxruntime_onnx"}},
        std::pair<absl::string_view, std::set<std::string>>{
            "backend", {std::string(kOipBackend), "onnxruntime"}}}) {
    if (const Json* v = Member(root, field)) {
      absl::StatusOr<std::string> s = StringValue(*v, field);
      if (!s.ok()) return s.status();
      if (accepted.count(*s) == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config: ", field, " '", *s, "' is not one Glint runs (",
            absl::StrJoin(accepted, " or "), ": ONNX models)"));
      }
    }
  }
  AddNetworkOptions& options = config.options;
  if (const Json* m = Member(root, "max_batch_size")) {
    absl::StatusOr<int64_t> n = IntValue(*m, "max_batch_size", 0, 1 << 30);
    if (!n.ok()) return n.status();
    options.batching.max_batch_size = static_cast<int>(*n);
  }
  if (const Json* d = Member(root, "dynamic_batching")) {
    if (options.batching.max_batch_size == 0) {
      return absl::InvalidArgumentError(
          "config: dynamic_batching needs max_batch_size > 0");
    }
    if (absl::Status s = ParseDynamicBatching(*d, &options.batching);
        !s.ok()) {
      return s;
    }
  }
  for (int size : options.batching.preferred_batch_sizes) {
    if (size > options.batching.max_batch_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config: dynamic_batching.preferred_batch_size ", size,
          " exceeds max_batch_size ", options.batching.max_batch_size));
    }
  }
  bool replicas_given = false;
  if (const Json* p = Member(root, "parameters")) {
    if (absl::Status s = ApplyGlintParameters(*p, &options, &replicas_given);
        !s.ok()) {
      return s;
    }
  }
  if (const Json* g = Member(root, "instance_group")) {
    absl::StatusOr<int> instances = ParseInstanceGroups(*g);
    if (!instances.ok()) return instances.status();
    if (*instances > 0) {
      if (replicas_given && options.partition.replicas != *instances) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config: instance_group asks for ", *instances,
            " instances but parameters.replicas for ",
            options.partition.replicas));
      }
      options.partition.replicas = *instances;
    }
  }
  if (const Json* in = Member(root, "input")) {
    if (absl::Status s = ParseTensorSpecs(*in, "input", &config.inputs);
        !s.ok()) {
      return s;
    }
  }
  if (const Json* out = Member(root, "output")) {
    if (absl::Status s = ParseTensorSpecs(*out, "output", &config.outputs);
        !s.ok()) {
      return s;
    }
  }
  // Inputs whose dims are all known bind the network's shape, as
  // input_shapes does; an explicit parameters.input_shapes entry wins.
  const bool batched = options.batching.max_batch_size > 0;
  for (const TritonTensorSpec& in : config.inputs) {
    if (!in.dims.has_value() || options.input_shapes.count(in.name) > 0) {
      continue;
    }
    bool known = true;
    for (int64_t d : *in.dims) known = known && d >= 0;
    if (!known) continue;
    std::vector<int64_t> dims;
    if (batched) dims.push_back(options.batching.max_batch_size);
    dims.insert(dims.end(), in.dims->begin(), in.dims->end());
    options.input_shapes[in.name] = Shape(std::move(dims));
  }
  for (const auto& [name, shape] : options.input_shapes) {
    if (absl::Status s = CheckTensorSize(DType::kUInt8, shape,
                                         absl::StrCat("input '", name, "'"));
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config: ", s.message()));
    }
  }
  return config;
}

namespace {

absl::Status CheckSpec(const TritonTensorSpec& spec,
                       const std::vector<ValueInfo>& values,
                       absl::string_view kind, bool batched) {
  const ValueInfo* found = nullptr;
  for (const ValueInfo& v : values) {
    if (v.name == spec.name) found = &v;
  }
  if (found == nullptr) {
    std::vector<std::string> names;
    for (const ValueInfo& v : values) names.push_back(v.name);
    return absl::InvalidArgumentError(absl::StrCat(
        "config: the model has no ", kind, " '", spec.name, "' (it has ",
        absl::StrJoin(names, ", "), ")"));
  }
  if (spec.dtype.has_value() && *spec.dtype != found->dtype) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config: ", kind, " '", spec.name, "' is ", DTypeName(found->dtype),
        " in the model, not ", DTypeName(*spec.dtype)));
  }
  if (spec.dims.has_value()) {
    std::vector<int64_t> want;
    if (batched) want.push_back(-1);
    want.insert(want.end(), spec.dims->begin(), spec.dims->end());
    const std::vector<int64_t>& have = found->shape.dims();
    bool same = want.size() == have.size();
    for (size_t i = 0; same && i < want.size(); ++i) {
      same = want[i] < 0 || have[i] < 0 || want[i] == have[i];
    }
    if (!same) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config: ", kind, " '", spec.name, "' has shape ",
          found->shape.ToString(), " in the model; the config's dims [",
          absl::StrJoin(*spec.dims, ", "), "]",
          batched ? " (behind the batch dimension)" : "",
          " do not match"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckNetworkAgainstConfig(const TritonModelConfig& config,
                                       const NetworkInfo& info) {
  const bool batched = config.options.batching.max_batch_size > 0;
  for (const TritonTensorSpec& in : config.inputs) {
    if (absl::Status s = CheckSpec(in, info.inputs, "input", batched);
        !s.ok()) {
      return s;
    }
  }
  for (const TritonTensorSpec& out : config.outputs) {
    if (absl::Status s = CheckSpec(out, info.outputs, "output", batched);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace glint
