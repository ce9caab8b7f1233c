// Model builders and tensor comparisons shared by the whole-system tests.
// Pure functions (thread-safe).
#ifndef GLINT_TESTS_TEST_UTIL_H_
#define GLINT_TESTS_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "api/types.h"
#include "core/tensor.h"
#include "onnx/onnx_pb.h"

namespace glint {
namespace testing {

// z = Add(x, y), x and y float32[2, 3]: the smallest two-input network.
std::string AddModel();

// One node `node_name` of type `op_type` over float32 inputs a[2, 2] and
// b[2, 2] → c, with string attribute equation="ij,jk->ik" (well-formed
// Einsum). For refusals of ops no device runs, e.g. "RandomNormalLike",
// which the importer refuses before checking the node's operands.
std::string SingleOpModel(const std::string& op_type,
                          const std::string& node_name);

// y = MatMul(x[1, rows], W[rows, cols]) with W a float32 initializer of
// rows*cols*4 bytes: a model whose weights alone exceed small devices.
std::string BigWeightsModel(int64_t rows, int64_t cols);

// Non-initializer graph inputs of `model`, in order. Old models list their
// initializers as graph inputs too; those are not runtime inputs.
std::vector<std::string> RuntimeInputNames(const onnx::ModelProto& model);

// Empty if `actual` matches `expected`: same dtype and shape, floating
// values within atol + rtol * |expected| (NaN matches NaN), other types
// exactly. Otherwise a description of the first difference.
std::string CompareTensors(const Tensor& actual, const Tensor& expected,
                           double rtol = 1e-4, double atol = 1e-6);

}  // namespace testing
}  // namespace glint

#endif  // GLINT_TESTS_TEST_UTIL_H_
