// libFuzzer target for the two ONNX TensorProto readers: the CLI's
// TensorFromOnnx (client/tensor_file.h, for .pb inputs) and the importer's
// TensorFromOnnxProto (runtime/onnx_tensor.h, for initializers and Constant
// nodes). The input is a serialized TensorProto. Each reader must return a
// tensor or a status; a tensor must come from the input's own data (no
// tensor larger than the bytes that describe it), survive its writer, and
// agree with the other reader where both accept the proto.
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

  // The CLI's reader and its writer.
  absl::StatusOr<glint::NamedTensor> cli = glint::TensorFromOnnx(proto);
  if (cli.ok()) {
    CheckFromInput(cli->tensor, size);
    FUZZ_CHECK(cli->name == proto.name(), "the name is the proto's");
    absl::StatusOr<onnx::TensorProto> written = glint::TensorToOnnx(*cli);
    FUZZ_CHECK(written.ok(), written.status().ToString());
    absl::StatusOr<glint::NamedTensor> back = glint::TensorFromOnnx(*written);
    FUZZ_CHECK(back.ok(), back.status().ToString());
    FUZZ_CHECK(back->name == cli->name && SameTensor(back->tensor, cli->tensor),
               "TensorToOnnx/TensorFromOnnx round trip");
  }

  // The importer's reader and its writer.
  absl::StatusOr<glint::Tensor> imported = glint::TensorFromOnnxProto(proto);
  if (imported.ok()) {
    CheckFromInput(*imported, size);
    onnx::TensorProto written;
    written.set_name(proto.name());
    absl::Status s = glint::TensorToOnnxProto(*imported, &written);
    FUZZ_CHECK(s.ok(), s.ToString());
    FUZZ_CHECK(written.name() == proto.name(), "TensorToOnnxProto keeps names");
    absl::StatusOr<glint::Tensor> back = glint::TensorFromOnnxProto(written);
    FUZZ_CHECK(back.ok(), back.status().ToString());
    FUZZ_CHECK(SameTensor(*back, *imported),
               "TensorToOnnxProto/TensorFromOnnxProto round trip");
  }

  // Where both accept, they read the same tensor. The importer is stricter
  // (it refuses out-of-range narrowing and normalises raw bools), so
  // acceptance itself may differ, and raw bool bytes may too.
  if (cli.ok() && imported.ok()) {
    FUZZ_CHECK(cli->tensor.dtype() == imported->dtype() &&
                   cli->tensor.shape() == imported->shape(),
               "both readers agree on dtype and shape");
    if (!(proto.has_raw_data() && imported->dtype() == glint::DType::kBool)) {
      FUZZ_CHECK(SameData(cli->tensor, *imported),
                 "both readers agree on the data");
    }
  }
  return 0;
}
