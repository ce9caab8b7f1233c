// libFuzzer target for the ONNX TensorProto reader (TensorFromOnnxProto,
// onnx/onnx_tensor.h: model initializers and Constant nodes) and the
// client's wrapper of it (TensorFromOnnx, client/tensor_file.h: `.pb`
// inputs). The input is a serialized TensorProto. The reader must return a
// tensor or a status; a tensor must come from the input's own data (no
// tensor larger than the bytes that describe it) and survive the writer,
// and the wrapper must return the same tensor under the proto's name.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "client/tensor_file.h"
#include "fuzz/fuzz_check.h"
#include "onnx/onnx_pb.h"
#include "onnx/onnx_tensor.h"

namespace {

bool SameData(const glint::Tensor& a, const glint::Tensor& b) {
  return a.num_bytes() == b.num_bytes() &&
         (a.num_bytes() == 0 ||
          std::memcmp(a.raw_data(), b.raw_data(), a.num_bytes()) == 0);
}

bool SameTensor(const glint::Tensor& a, const glint::Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && SameData(a, b);
}

// Every element is at least one byte of the serialized proto (a packed
// varint, a float, or raw_data), so a reader that returns more elements
// than the input has bytes made them up.
void CheckFromInput(const glint::Tensor& t, size_t input_size) {
  FUZZ_CHECK(t.valid() && t.shape().IsStatic(),
             "a read tensor has data and a static shape");
  FUZZ_CHECK(static_cast<uint64_t>(t.num_elements()) <= input_size,
             absl::StrCat("a tensor of shape ", t.shape().ToString(),
                          " from ", input_size, " bytes"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::TensorProto proto;
  if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;

  absl::StatusOr<glint::Tensor> read = glint::TensorFromOnnxProto(proto);
  if (read.ok()) {
    CheckFromInput(*read, size);
    onnx::TensorProto written;
    written.set_name(proto.name());
    absl::Status s = glint::TensorToOnnxProto(*read, &written);
    FUZZ_CHECK(s.ok(), s.ToString());
    FUZZ_CHECK(written.name() == proto.name(), "TensorToOnnxProto keeps names");
    absl::StatusOr<glint::Tensor> back = glint::TensorFromOnnxProto(written);
    FUZZ_CHECK(back.ok(), back.status().ToString());
    FUZZ_CHECK(SameTensor(*back, *read),
               "TensorToOnnxProto/TensorFromOnnxProto round trip");
  }

  // The client's wrapper and its writer.
  absl::StatusOr<glint::NamedTensor> named = glint::TensorFromOnnx(proto);
  FUZZ_CHECK(named.ok() == read.ok(),
             "the wrapper accepts what the reader does");
  if (named.ok()) {
    FUZZ_CHECK(named->name == proto.name(), "the name is the proto's");
    FUZZ_CHECK(SameTensor(named->tensor, *read), "the wrapper reads the same");
    absl::StatusOr<onnx::TensorProto> written = glint::TensorToOnnx(*named);
    FUZZ_CHECK(written.ok(), written.status().ToString());
    absl::StatusOr<glint::NamedTensor> back = glint::TensorFromOnnx(*written);
    FUZZ_CHECK(back.ok(), back.status().ToString());
    FUZZ_CHECK(
        back->name == named->name && SameTensor(back->tensor, named->tensor),
        "TensorToOnnx/TensorFromOnnx round trip");
  }
  return 0;
}
