// Client-side helpers of the interop tests (e2e_triton_test, e2e_oip_test):
// the inference protocol's tensor encodings written from its specification,
// independently of glintd's own converters (proto/oip_*), and the ONNX
// node test cases the tests run.
//
// Free of any generated inference code: the tests link different upstream
// definitions of package `inference` (Triton's, KServe's), so what touches
// messages is a template over the message type (both define the same
// fields). Pure functions (thread-safe).
#ifndef GLINT_TESTS_OIP_TEST_UTIL_H_
#define GLINT_TESTS_OIP_TEST_UTIL_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/types.h"
#include "core/tensor.h"

namespace glint {
namespace testing {

// The Open Inference Protocol's datatype string of `dtype` ("FP32"...),
// empty for one it has none for.
std::string OipDatatypeOf(DType dtype);
// And back; kUndefined for an unknown string.
DType DTypeOfOipDatatype(const std::string& datatype);

// A tensor's bytes as raw_input_contents carries them (little-endian,
// row-major).
std::string RawBytes(const Tensor& tensor);
// An output as the reply carries it: datatype, shape, raw bytes.
absl::StatusOr<Tensor> TensorFromRaw(const std::string& datatype,
                                     const std::vector<int64_t>& shape,
                                     const std::string& bytes);

// An ONNX node test case of Debian's libonnx-testdata: the model and
// test_data_set_0's inputs and expected outputs, named as the graph's
// runtime inputs and outputs.
struct OnnxCase {
  std::string model;  // model.onnx's bytes.
  std::vector<NamedTensor> inputs;
  std::vector<NamedTensor> outputs;
};
// `name` is a folder of /usr/share/libonnx-testdata/data/node/ (e.g.
// "test_matmul_2d").
absl::StatusOr<OnnxCase> LoadOnnxNodeCase(const std::string& name);

// Fills `contents` (an InferTensorContents of either upstream file) with
// `tensor`'s values in the typed field the protocol assigns its datatype:
// BOOL bool_contents; INT8, INT16, INT32 int_contents; INT64
// int64_contents; UINT8, UINT16, UINT32 uint_contents; UINT64
// uint64_contents; FP32 fp32_contents; FP64 fp64_contents. False for FP16
// and BF16, which have no typed field.
template <typename Contents>
bool FillTypedContents(const Tensor& tensor, Contents* contents) {
  const int64_t n = tensor.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    switch (tensor.dtype()) {
      case DType::kBool:
        contents->add_bool_contents(tensor.data<uint8_t>()[i] != 0);
        break;
      case DType::kInt8: contents->add_int_contents(tensor.data<int8_t>()[i]); break;
      case DType::kInt16: contents->add_int_contents(tensor.data<int16_t>()[i]); break;
      case DType::kInt32: contents->add_int_contents(tensor.data<int32_t>()[i]); break;
      case DType::kInt64: contents->add_int64_contents(tensor.data<int64_t>()[i]); break;
      case DType::kUInt8: contents->add_uint_contents(tensor.data<uint8_t>()[i]); break;
      case DType::kUInt16: contents->add_uint_contents(tensor.data<uint16_t>()[i]); break;
      case DType::kUInt32: contents->add_uint_contents(tensor.data<uint32_t>()[i]); break;
      case DType::kUInt64: contents->add_uint64_contents(tensor.data<uint64_t>()[i]); break;
      case DType::kFloat32: contents->add_fp32_contents(tensor.data<float>()[i]); break;
      case DType::kFloat64: contents->add_fp64_contents(tensor.data<double>()[i]); break;
      default: return false;
    }
  }
  return true;
}

}  // namespace testing
}  // namespace glint

#endif  // GLINT_TESTS_OIP_TEST_UTIL_H_
