#include "proto/oip_parameters.h"

#include <limits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/text.h"
#include "proto/oip_types.h"

namespace glint {
namespace {

constexpr absl::string_view kRegion = "shared_memory_region";
constexpr absl::string_view kByteSize = "shared_memory_byte_size";
constexpr absl::string_view kOffset = "shared_memory_offset";

const OipParameter* Find(const OipParameters& parameters,
                         absl::string_view key) {
  for (const OipParameter& p : parameters) {
    if (p.key == key) return &p;
  }
  return nullptr;
}

// An int64 or uint64 value within int64.
absl::StatusOr<int64_t> IntParameter(const OipParameter& p) {
  if (const auto* i = std::get_if<int64_t>(&p.value)) return *i;
  if (const auto* u = std::get_if<uint64_t>(&p.value);
      u != nullptr &&
      *u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(*u);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "parameter '", p.key, "' must be an int64 or uint64 parameter"));
}

absl::Status Prefixed(absl::string_view what, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

absl::Status Unknown(absl::string_view what, absl::string_view key) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": unknown parameter '", Clip(key), "'"));
}

// The shared-memory window the parameters describe; nullopt without one.
// Keys other than the window's are left to the caller.
absl::StatusOr<std::optional<SharedMemoryRef>> SharedMemoryWindow(
    const OipParameters& parameters, absl::string_view what) {
  for (const OipParameter& p : parameters) {
    if (IsOipSharedMemoryParameter(p.key) && p.key != kRegion &&
        p.key != kByteSize && p.key != kOffset) {
      return Unknown(what, p.key);
    }
  }
  const OipParameter* region = Find(parameters, kRegion);
  const OipParameter* size = Find(parameters, kByteSize);
  const OipParameter* offset = Find(parameters, kOffset);
  if (region == nullptr) {
    if (offset != nullptr || size != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": ", kOffset, " and ", kByteSize, " need ", kRegion));
    }
    return std::optional<SharedMemoryRef>();
  }
  const auto* name = std::get_if<std::string>(&region->value);
  if (name == nullptr || name->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": parameter '", kRegion,
                     "' must be a non-empty string parameter"));
  }
  if (size == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", kRegion, " needs ", kByteSize));
  }
  SharedMemoryRef ref;
  ref.region = *name;
  const std::pair<const OipParameter*, uint64_t*> numbers[] = {
      {size, &ref.byte_size}, {offset, &ref.offset}};
  for (const auto& [p, field] : numbers) {
    if (p == nullptr) continue;  // The offset: 0.
    absl::StatusOr<int64_t> v = IntParameter(*p);
    if (!v.ok()) return Prefixed(what, v.status());
    if (*v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": parameter '", p->key, "' is ", *v));
    }
    *field = static_cast<uint64_t>(*v);
  }
  return std::optional<SharedMemoryRef>(std::move(ref));
}

}  // namespace

bool IsOipSharedMemoryParameter(absl::string_view key) {
  return absl::StartsWith(key, "shared_memory_");
}

absl::Status ApplyOipRequestParameters(const OipParameters& parameters,
                                       absl::Time now,
                                       absl::Time transport_deadline,
                                       RunOptions* options) {
  options->deadline = transport_deadline;
  for (const OipParameter& p : parameters) {
    if (p.key == "priority") {
      absl::StatusOr<int64_t> level = IntParameter(p);
      if (!level.ok()) return level.status();
      absl::StatusOr<int> priority = RunPriorityFromOip(*level);
      if (!priority.ok()) return priority.status();
      options->priority = *priority;
    } else if (p.key == "timeout") {
      absl::StatusOr<int64_t> us = IntParameter(p);
      if (!us.ok()) return us.status();
      absl::StatusOr<absl::Time> deadline =
          DeadlineFromOipTimeout(*us, now, transport_deadline);
      if (!deadline.ok()) return deadline.status();
      options->deadline = *deadline;
    } else if (p.key == "binary_data_output") {
      if (!std::holds_alternative<bool>(p.value)) {
        return absl::InvalidArgumentError(
            "parameter 'binary_data_output' must be a bool parameter");
      }
    } else if (absl::StartsWith(p.key, "sequence_")) {
      return absl::UnimplementedError(absl::StrCat(
          "parameter '", Clip(p.key),
          "': sequence batching is not supported by glintd"));
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown request parameter '", Clip(p.key),
          "' (glintd knows: priority, timeout, binary_data_output)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<SharedMemoryRef>> ParseOipInputParameters(
    const OipParameters& parameters, absl::string_view what) {
  for (const OipParameter& p : parameters) {
    if (p.key == "binary_data_size") {
      return absl::UnimplementedError(absl::StrCat(
          what,
          ": Triton's binary tensor data extension is not supported by "
          "glintd; send the data in the message"));
    }
    if (!IsOipSharedMemoryParameter(p.key)) return Unknown(what, p.key);
  }
  return SharedMemoryWindow(parameters, what);
}

absl::StatusOr<std::optional<SharedMemoryRef>> ParseOipOutputParameters(
    const OipParameters& parameters, absl::string_view what) {
  for (const OipParameter& p : parameters) {
    if (p.key == "binary_data") {
      if (!std::holds_alternative<bool>(p.value)) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": parameter 'binary_data' must be a bool parameter"));
      }
      continue;
    }
    if (p.key == "classification") {
      return absl::UnimplementedError(absl::StrCat(
          what, ": the classification extension is not supported by glintd"));
    }
    if (!IsOipSharedMemoryParameter(p.key)) return Unknown(what, p.key);
  }
  return SharedMemoryWindow(parameters, what);
}

}  // namespace glint
