// libFuzzer target for what glintd does with the body of a REST infer
// request before the runtime sees it: ParseInferRequest (nlohmann's
// parser, then every field and tensor checked and converted). The input is
// the body's bytes.
//
// A request is accepted or refused with INVALID_ARGUMENT or UNIMPLEMENTED,
// never anything else (and never an exception or a crash). Every input
// tensor accepted, written back with AppendTensorJson, must read back as
// the same bytes (NaN as NaN: JSON keeps no payload).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/half.h"
#include "fuzz/fuzz_check.h"
#include "nlohmann/json.hpp"
#include "runtime/server/http/rest_convert.h"

namespace {

// Whether element `i` of two tensors of `dtype` is the same value (NaN
// equal to any NaN).
bool SameElement(const glint::Tensor& a, const glint::Tensor& b, int64_t i) {
  switch (a.dtype()) {
    case glint::DType::kFloat32: {
      const float x = a.data<float>()[i], y = b.data<float>()[i];
      return std::isnan(x) ? std::isnan(y) : std::memcmp(&x, &y, 4) == 0;
    }
    case glint::DType::kFloat64: {
      const double x = a.data<double>()[i], y = b.data<double>()[i];
      return std::isnan(x) ? std::isnan(y) : std::memcmp(&x, &y, 8) == 0;
    }
    case glint::DType::kFloat16: {
      const float x = glint::Float16ToFloat(a.data<uint16_t>()[i]);
      const uint16_t y = b.data<uint16_t>()[i];
      return std::isnan(x) ? std::isnan(glint::Float16ToFloat(y))
                           : a.data<uint16_t>()[i] == y;
    }
    case glint::DType::kBFloat16: {
      const float x = glint::BFloat16ToFloat(a.data<uint16_t>()[i]);
      const uint16_t y = b.data<uint16_t>()[i];
      return std::isnan(x) ? std::isnan(glint::BFloat16ToFloat(y))
                           : a.data<uint16_t>()[i] == y;
    }
    default: {
      const size_t size = glint::DTypeSize(a.dtype());
      return std::memcmp(static_cast<const char*>(a.raw_data()) + i * size,
                         static_cast<const char*>(b.raw_data()) + i * size,
                         size) == 0;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view body(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<glint::RestInferRequest> request =
      glint::ParseInferRequest(body, absl::UnixEpoch());
  if (!request.ok()) {
    FUZZ_CHECK(
        request.status().code() == absl::StatusCode::kInvalidArgument ||
            request.status().code() == absl::StatusCode::kUnimplemented,
        request.status().ToString());
    return 0;
  }
  for (const glint::NamedTensor& input : request->inputs) {
    const glint::Tensor& t = input.tensor;
    FUZZ_CHECK(t.valid() && t.shape().IsStatic(),
               "an accepted tensor has data and a static shape");
    std::string text;
    absl::Status s = glint::AppendTensorJson(input, &text);
    FUZZ_CHECK(s.ok(), s.ToString());
    const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
    FUZZ_CHECK(doc.is_object() && doc.contains("data"),
               absl::StrCat("AppendTensorJson wrote invalid JSON: ", text));
    absl::StatusOr<glint::Tensor> back =
        glint::TensorFromJson(doc["data"], t.dtype(), t.shape(), input.name);
    FUZZ_CHECK(back.ok(), back.status().ToString());
    FUZZ_CHECK(back->num_bytes() == t.num_bytes(), "same size back");
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      FUZZ_CHECK(SameElement(t, *back, i),
                 absl::StrCat("input '", input.name, "' element ", i,
                              " does not read back: ", text));
    }
  }
  return 0;
}
