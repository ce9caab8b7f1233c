// The recurrent kernels (ONNX RNN, GRU, LSTM) with a choice of code path,
// for tests and benches that compare oneDNN's RNN primitives with the plain
// loop. The registry's kernels use RecurrentPath::kAuto.
#ifndef GLINT_DEVICES_CPU_RNN_H_
#define GLINT_DEVICES_CPU_RNN_H_

#include <memory>

#include "absl/status/statusor.h"
#include "devices/cpu/kernel.h"

namespace glint::cpu {

enum class RecurrentPath {
  // oneDNN's primitive (vanilla_rnn, lstm, gru, lbr_gru) when the node and
  // the run fit it (default activations, no clip, no input_forget,
  // sequences of full length), else the loop.
  kAuto,
  // Always the loop (dnnl_sgemm for the gate matmuls, the cell in C++).
  kLoop,
  // oneDNN or an error: UNIMPLEMENTED at build time for a node it cannot
  // run, at run time for sequence_lens shorter than the sequence.
  kDnnlOnly,
};

// Builds the kernel of an RNN, GRU or LSTM node (spec.node->op_type).
absl::StatusOr<std::unique_ptr<Kernel>> MakeRecurrentKernel(
    const KernelSpec& spec, RecurrentPath path);

}  // namespace glint::cpu

#endif  // GLINT_DEVICES_CPU_RNN_H_
