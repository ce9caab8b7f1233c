// Small ONNX models built in code, for tests across Glint. Test-only.
#ifndef GLINT_ONNX_TEST_MODELS_H_
#define GLINT_ONNX_TEST_MODELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "onnx/onnx_pb.h"

namespace glint::testing {

// Builds a ModelProto graph by hand: inputs, initializers, nodes, outputs.
class OnnxModelBuilder {
 public:
  explicit OnnxModelBuilder(int64_t opset = 13);

  // Element types are ONNX TensorProto.DataType numbers; a dim of -1 is
  // written as the symbolic dim "N".
  OnnxModelBuilder& Input(const std::string& name, int32_t elem_type,
                          const std::vector<int64_t>& dims);
  OnnxModelBuilder& Output(const std::string& name, int32_t elem_type,
                           const std::vector<int64_t>& dims);
  // An output whose shape (even its rank) is left to inference.
  OnnxModelBuilder& Output(const std::string& name, int32_t elem_type);
  OnnxModelBuilder& FloatInitializer(const std::string& name,
                                     const std::vector<int64_t>& dims,
                                     const std::vector<float>& values);
  // Adds a node; returns it so attributes can be added.
  onnx::NodeProto& Node(const std::string& op_type,
                        const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs,
                        const std::string& name = "");

  const onnx::ModelProto& proto() const { return model_; }
  onnx::ModelProto& mutable_proto() { return model_; }
  std::string Serialize() const;

 private:
  onnx::ModelProto model_;
};

// y = relu(x · w + b) with x: float[batch, in], w: [in, out], b: [out]; the
// weights are w[i][j] = (i - j) / 8 and b[j] = j / 4 - 0.5, so tests can
// compute the reference themselves with MlpReference.
std::string MakeMlpModel(int64_t batch, int64_t in, int64_t out);
std::vector<float> MlpReference(const std::vector<float>& x, int64_t batch,
                                int64_t in, int64_t out);

// `layers` × (MatMul by a [width, width] weight, then Relu... the last layer
// has no Relu), input x: float[batch, width], output y. Each weight is
// width² floats: 512 wide is 1 MiB per layer, for partitioning tests.
// Weights are fixed pseudo-random values scaled to keep activations O(1).
std::string MakeDeepMlpModel(int64_t batch, int64_t width, int layers);

// A small CNN for profiles: x float[1, 3, 8, 8] -> Conv "conv" (4 filters
// 3x3, pads 1, bias) -> Relu "relu" -> Flatten "flatten" -> MatMul
// "matmul" by [256, 10] -> y float[1, 10], fixed weights. Glint's CPU
// optimiser runs it as a channels-last glint.FusedConv with Relu between
// two layout reorders, then Flatten and MatMul.
std::string MakeConvNetModel();

// A Loop with its trip count a run-time input: inputs trip_count
// (int64 scalar) and x (float[2]); node "double" computes d = x + x, and
// node "loop"'s body adds d, which it reads from the outer graph, to the
// loop-carried y (starting at zeros): outputs y_final (float[2],
// trip_count · 2x) and ys (float[trip_count, 2], row i is (i + 1) · 2x).
// Opset 13.
std::string MakeLoopModel();

// A value whose rank only the run decides: inputs c (bool scalar) and x
// (float[6]); If node "branch" gives y0 = Reshape(x, [2, 3]) when c, else
// Reshape(x, [6]) (ONNX's inference leaves y0 without a rank). Then y1 =
// Relu(y0) (node "relu"), gram = MatMul(y1, Transpose(y1)) (nodes "tr",
// "gram": [2, 2] or a scalar), y2 = y1 * 2 (node "double") and
// y2_shape = Shape(y2) (node "shape"). Outputs gram, y2, y2_shape, none of
// them with a rank the model declares. Opset 13.
std::string MakeUnknownRankModel();

// Sets graph attribute `name` of `node` to `graph`.
void SetGraphAttribute(onnx::NodeProto& node, const std::string& name,
                       const onnx::GraphProto& graph);

// Sets an int or ints attribute on `node`.
void SetAttribute(onnx::NodeProto& node, const std::string& name,
                  int64_t value);
void SetAttribute(onnx::NodeProto& node, const std::string& name,
                  const std::vector<int64_t>& values);

}  // namespace glint::testing

#endif  // GLINT_ONNX_TEST_MODELS_H_
