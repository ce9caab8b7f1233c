// libFuzzer target for ParseNpy: any bytes give a tensor or a status, and a
// tensor it accepts survives SerializeNpy and parses back identical.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "client/npy.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<glint::Tensor> tensor = glint::ParseNpy(bytes);
  if (!tensor.ok()) {
    FUZZ_CHECK(!tensor.status().message().empty(), "an error says why");
    return 0;
  }
  FUZZ_CHECK(tensor->valid() && tensor->shape().IsStatic(),
             "a parsed tensor has data and a static shape");
  FUZZ_CHECK(tensor->num_bytes() <= size, "the data came from the input");

  // Every dtype ParseNpy accepts has a numpy descr, so it can be written.
  absl::StatusOr<std::string> written = glint::SerializeNpy(*tensor);
  FUZZ_CHECK(written.ok(), written.status().ToString());
  absl::StatusOr<glint::Tensor> back = glint::ParseNpy(*written);
  FUZZ_CHECK(back.ok(), back.status().ToString());
  FUZZ_CHECK(back->dtype() == tensor->dtype(), "dtype survives a round trip");
  FUZZ_CHECK(back->shape() == tensor->shape(),
             absl::StrCat(back->shape().ToString(), " vs ",
                          tensor->shape().ToString()));
  FUZZ_CHECK(back->num_bytes() == tensor->num_bytes() &&
                 (tensor->num_bytes() == 0 ||
                  std::memcmp(back->raw_data(), tensor->raw_data(),
                              tensor->num_bytes()) == 0),
             "data survives a round trip");
  return 0;
}
