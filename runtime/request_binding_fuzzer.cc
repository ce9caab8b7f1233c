// libFuzzer target for a RunNetwork request's way to the executor, past
// the wire: the glint.v1.RunNetworkRequest's tensors converted
// (NamedTensorsFromProto), then bound to a network with dynamic dims
// (BindInputs: names, dtypes, ranks, known dims, bounds, one size per dim
// name) and its outputs resolved (BindOutputs). The input is a serialized
// request, so run_request_fuzzer's corpus seeds it.
//
// The network: x float32[n, 3, ?] and ids int64[n], n named and bounded
// by 8, x's last dim unnamed and bounded by 5; outputs y and z. Whatever
// binds must satisfy exactly those rules; anything else must be
// INVALID_ARGUMENT. The same request is also bound to that network added
// with dynamic batching (max_batch_size 4: n bound to 4 rows, x's last dim
// still dynamic): 1..4 rows, the same for both inputs.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_check.h"
#include "proto/glint.pb.h"
#include "proto/proto_convert.h"
#include "runtime/input_binding.h"

namespace {

const glint::NetworkInfo& Network() {
  static const glint::NetworkInfo* info = [] {
    auto* n = new glint::NetworkInfo;
    n->name = "net";
    constexpr int64_t kUnknown = glint::Shape::kUnknownDim;
    n->inputs = {
        {"x", glint::DType::kFloat32, glint::Shape({kUnknown, 3, kUnknown})},
        {"ids", glint::DType::kInt64, glint::Shape({kUnknown})}};
    n->inputs[0].dim_names = {"n", "", ""};
    n->inputs[1].dim_names = {"n"};
    n->outputs = {{"y", glint::DType::kFloat32, glint::Shape({kUnknown, 3})},
                  {"z", glint::DType::kInt64, glint::Shape({kUnknown})}};
    absl::StatusOr<std::vector<glint::DynamicDim>> dims =
        glint::ResolveDynamicDims(n->inputs, {{"n", 8}, {"x:2", 5}});
    FUZZ_CHECK(dims.ok() && dims->size() == 3, dims.status().ToString());
    n->dynamic_dims = *std::move(dims);
    return n;
  }();
  return *info;
}

const glint::NetworkInfo& BatchedNetwork() {
  static const glint::NetworkInfo* info = [] {
    auto* n = new glint::NetworkInfo;
    n->name = "batched";
    constexpr int64_t kUnknown = glint::Shape::kUnknownDim;
    n->inputs = {{"x", glint::DType::kFloat32, glint::Shape({4, 3, kUnknown})},
                 {"ids", glint::DType::kInt64, glint::Shape({4})}};
    n->outputs = {{"y", glint::DType::kFloat32, glint::Shape({4, 3})},
                  {"z", glint::DType::kInt64, glint::Shape({4})}};
    n->batching.max_batch_size = 4;
    absl::StatusOr<std::vector<glint::DynamicDim>> dims =
        glint::ResolveDynamicDims(n->inputs, {{"x:2", 5}});
    FUZZ_CHECK(dims.ok() && dims->size() == 1, dims.status().ToString());
    n->dynamic_dims = *std::move(dims);
    return n;
  }();
  return *info;
}

// Binds `inputs` to the batching network: what binds keeps its rules.
void CheckBatched(std::vector<glint::NamedTensor> inputs) {
  absl::StatusOr<std::vector<glint::Tensor>> bound =
      glint::BindInputs(BatchedNetwork(), std::move(inputs));
  if (!bound.ok()) {
    FUZZ_CHECK(bound.status().code() == absl::StatusCode::kInvalidArgument,
               bound.status().ToString());
    return;
  }
  FUZZ_CHECK(bound->size() == 2, "one tensor per input");
  const glint::Shape& x = (*bound)[0].shape();
  const glint::Shape& ids = (*bound)[1].shape();
  FUZZ_CHECK(x.rank() == 3 && ids.rank() == 1 && x.IsStatic() &&
                 ids.IsStatic(),
             "ranks as declared, no negative dim");
  FUZZ_CHECK(x.dim(0) >= 1 && x.dim(0) <= 4 && ids.dim(0) == x.dim(0),
             absl::StrCat("1..4 rows, one count: x ", x.ToString(), ", ids ",
                          ids.ToString()));
  FUZZ_CHECK(x.dim(1) == 3 && x.dim(2) <= 5,
             absl::StrCat("x ", x.ToString(), " as declared, within bound"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  glint::v1::RunNetworkRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::StatusOr<std::vector<glint::NamedTensor>> inputs =
      glint::NamedTensorsFromProto(request.inputs());
  if (!inputs.ok()) return 0;  // run_request_fuzzer's business.

  CheckBatched(*inputs);
  const glint::NetworkInfo& net = Network();
  absl::StatusOr<std::vector<int>> outputs = glint::BindOutputs(
      net, std::vector<std::string>(request.requested_outputs().begin(),
                                    request.requested_outputs().end()));
  FUZZ_CHECK(outputs.ok() ||
                 outputs.status().code() == absl::StatusCode::kInvalidArgument,
             outputs.status().ToString());
  absl::StatusOr<std::vector<glint::Tensor>> bound =
      glint::BindInputs(net, *std::move(inputs));
  if (!bound.ok()) {
    FUZZ_CHECK(bound.status().code() == absl::StatusCode::kInvalidArgument,
               bound.status().ToString());
    return 0;
  }
  FUZZ_CHECK(bound->size() == 2, "one tensor per input");
  const glint::Tensor& x = (*bound)[0];
  const glint::Tensor& ids = (*bound)[1];
  FUZZ_CHECK(x.dtype() == glint::DType::kFloat32 &&
                 ids.dtype() == glint::DType::kInt64,
             "dtypes as declared");
  FUZZ_CHECK(x.shape().rank() == 3 && ids.shape().rank() == 1,
             "ranks as declared");
  FUZZ_CHECK(x.shape().IsStatic() && ids.shape().IsStatic(),
             "no negative dim binds");
  FUZZ_CHECK(x.shape().dim(1) == 3, "x's known dim as declared");
  FUZZ_CHECK(x.shape().dim(0) <= 8 && x.shape().dim(2) <= 5,
             absl::StrCat("x ", x.shape().ToString(), " within its bounds"));
  FUZZ_CHECK(ids.shape().dim(0) == x.shape().dim(0),
             absl::StrCat("n is one size: x ", x.shape().ToString(), ", ids ",
                          ids.shape().ToString()));
  return 0;
}
