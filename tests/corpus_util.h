// The corpus of real exports (tests/corpus/README.md): networks exported by
// Debian's PyTorch and opset 18-23 graphs built with onnx.helper, with their
// inputs and ONNX Runtime's outputs, as tests/corpus/make_corpus.sh writes
// them. Shared by //tests:e2e_corpus_test (correctness through glintd) and
// //bench:corpus_bench (speed against ONNX Runtime).
#ifndef GLINT_TESTS_CORPUS_UTIL_H_
#define GLINT_TESTS_CORPUS_UTIL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/types.h"
#include "core/tensor.h"

namespace glint::testing {

// One entry of OUTDIR/manifest.json.
struct CorpusModel {
  std::string name;
  std::string file;      // NAME.onnx; empty when not exported
  std::string exporter;  // "torchscript" or "onnx.helper"
  int64_t opset = 0;
  int64_t nodes = 0;
  // Each input's concrete shape, as written in NAME/input_K.npy.
  std::map<std::string, Shape> input_shapes;
  std::vector<std::string> input_names;  // In the model's order.
  std::vector<std::string> outputs;      // In the model's order.
  // For a model with dynamic axes: how many other shapes its inputs come
  // at, in NAME/shape_S/ for S = 1..shape_sets (the same files as in
  // NAME/), and each set's input shapes by input name.
  std::vector<std::map<std::string, Shape>> shape_sets;
  // Why there is no file: the exporter refused the model, or ONNX Runtime
  // does not run the graph.
  std::string not_made;
};

// Reads DIR/manifest.json.
absl::StatusOr<std::vector<CorpusModel>> ReadCorpusManifest(
    const std::string& dir);

// DIR/NAME/input_K.npy, named as the model's inputs; with `shape_set`
// S > 0, DIR/NAME/shape_S/input_K.npy.
absl::StatusOr<std::vector<NamedTensor>> ReadCorpusInputs(
    const std::string& dir, const CorpusModel& model, int shape_set = 0);

// DIR/NAME/ort_output_K.npy: ONNX Runtime's outputs, in the model's order;
// with `shape_set` S > 0, those of DIR/NAME/shape_S/.
absl::StatusOr<std::vector<Tensor>> ReadOrtOutputs(const std::string& dir,
                                                   const CorpusModel& model,
                                                   int shape_set = 0);

// How an output compares with its reference: equal dtype and shape, then
// every element within `tolerance` × the reference's largest magnitude
// (integers and bools exactly).
struct Agreement {
  bool ok = false;
  double max_abs_diff = 0;
  double max_magnitude = 0;  // Of the reference.
  std::string why;           // When !ok.
};
Agreement CompareWithReference(const Tensor& got, const Tensor& want,
                               double tolerance = 1e-4);

// Runs tests/corpus/make_corpus.sh OUT_DIR [MODELS] (from the source tree,
// where its node_modules are), with ORT_TIME_ITERS=`ort_time_iters`.
// Returns its output; an error with that output when it fails.
absl::StatusOr<std::string> MakeCorpus(const std::string& out_dir,
                                       const std::string& models,
                                       int ort_time_iters);

}  // namespace glint::testing

#endif  // GLINT_TESTS_CORPUS_UTIL_H_
