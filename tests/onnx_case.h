// One ONNX node case (Debian's libonnx-testdata, data/node/<case>/) read,
// run and judged the way //tests:onnx_conformance_test judges it, over any
// backend that can add, run and remove a network: HostManager in process
// (onnx_conformance_test) or a real glintd over gRPC (e2e_conformance_test).
// Pure functions plus the caller's backend; thread-compatible.
#ifndef GLINT_TESTS_ONNX_CASE_H_
#define GLINT_TESTS_ONNX_CASE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/types.h"
#include "core/tensor.h"

namespace glint {
namespace testing {

inline constexpr char kOnnxNodeDir[] = "/usr/share/libonnx-testdata/data/node";
inline constexpr char kConformanceExpectedFile[] =
    "tests/onnx_conformance_expected.txt";

enum class Outcome { kPass, kMismatch, kRefused };
const char* OutcomeName(Outcome o);  // "PASS", "MISMATCH", "REFUSED".

struct CaseResult {
  Outcome outcome = Outcome::kRefused;
  std::string detail;  // Why it did not pass.
};

// A case's model and data as the runner feeds them. Quirks of ONNX 1.12's
// test data are repaired here, in the harness, not in the runtime:
//  - bfloat16 tensors are stored as uint16 (TensorProto data_type 4): a
//    tensor read as uint16 where the model declares BFLOAT16 is retagged
//    (the bits are bfloat16's);
//  - the castlike *BFLOAT16* cases declare input 'like' with the output's
//    shape [3, 4] while the data holds [1]: when a data set contradicts
//    an input's declared static shape and that input is read only as
//    CastLike's `target_type` operand (which reads its dtype, no values),
//    the declaration takes the data's shape. Any other contradiction
//    stays, and the runtime refuses it as it must.
struct OnnxCase {
  struct DataSet {
    std::vector<NamedTensor> inputs;   // Named after the runtime inputs.
    std::vector<NamedTensor> outputs;  // In graph output order.
  };
  std::string model;  // Serialized ModelProto (repaired as above).
  std::vector<std::string> output_names;
  std::vector<DataSet> sets;
};

// Reads `dir` (model.onnx, test_data_set_*/input_<i>.pb, output_<i>.pb).
// Inputs pair with the runtime inputs by position (old cases' own tensor
// names are unreliable); trailing optional inputs may be absent.
absl::StatusOr<OnnxCase> ReadOnnxCase(const std::string& dir);

// Empty when `actual` matches `expected` as ONNX's backend runner judges
// (rtol 1e-3, atol 1e-7, NaN matches NaN, dtype and shape equal, other
// types exactly). bfloat16 values may differ by one bfloat16 step (rtol
// 2^-7): ONNX 1.12's data truncates float32 to bfloat16 while Glint
// rounds to nearest even, and ONNX's runner, comparing the uint16 bits with
// rtol 1e-3, accepts that step too.
std::string CompareOnnxOutput(const Tensor& actual, const Tensor& expected);

// What the runner needs of a serving stack.
class CaseBackend {
 public:
  virtual ~CaseBackend() = default;
  virtual absl::StatusOr<NetworkInfo> Add(const std::string& name,
                                          const std::string& model,
                                          const AddNetworkOptions& options) = 0;
  virtual absl::StatusOr<std::vector<NamedTensor>> Run(
      const std::string& name, const std::vector<NamedTensor>& inputs) = 0;
  virtual void Remove(const std::string& name) = 0;
};

// Runs every data set of the case in `dir` through `backend` under network
// names "<name>#<k>" (re-added when a data set's input shapes differ from
// the previous one's, bound with AddNetworkOptions::input_shapes) and
// removes what it added.
CaseResult RunOnnxCase(CaseBackend& backend, const std::string& dir,
                       const std::string& name);

// The case directories under kOnnxNodeDir, sorted (empty when missing).
std::vector<std::string> ListOnnxNodeCases();

// The expected-results file: case name → outcome.
std::map<std::string, Outcome> ReadExpectedOutcomes(const std::string& path);

}  // namespace testing
}  // namespace glint

#endif  // GLINT_TESTS_ONNX_CASE_H_
