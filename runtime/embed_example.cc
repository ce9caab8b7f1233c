// Embedding Glint in-process: no daemon, no gRPC.
//
//   bazel run //runtime:embed_example -- /path/to/model.onnx
//
// Creates two simulated devices, adds the model, runs it once with every
// input filled with 0.5 (float inputs) or 1 (integer ones) and prints the
// outputs' shapes and first values.
#include <iostream>

#include "runtime/host_manager.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: embed_example MODEL.onnx\n";
    return 2;
  }
  // Two simulated devices of 2 GiB each, as glintd starts by default.
  std::vector<glint::DeviceConfig> devices(2);
  auto host = glint::HostManager::CreateFromConfigs({}, devices);
  if (!host.ok()) {
    std::cerr << "embed_example: " << host.status() << "\n";
    return 1;
  }
  absl::StatusOr<glint::NetworkInfo> info =
      (*host)->AddNetworkFromFile("example", argv[1], {});
  if (!info.ok()) {
    std::cerr << "embed_example: " << info.status() << "\n";
    return 1;
  }

  std::vector<glint::NamedTensor> inputs;
  for (const glint::ValueInfo& in : info->inputs) {
    absl::StatusOr<glint::Tensor> t = glint::Tensor::Create(in.dtype, in.shape);
    if (!t.ok()) {
      std::cerr << "embed_example: " << t.status() << "\n";
      return 1;
    }
    for (int64_t i = 0; i < t->num_elements(); ++i) {
      switch (in.dtype) {
        case glint::DType::kFloat32: t->data<float>()[i] = 0.5f; break;
        case glint::DType::kInt64: t->data<int64_t>()[i] = 1; break;
        case glint::DType::kInt32: t->data<int32_t>()[i] = 1; break;
        default: break;  // Left zero.
      }
    }
    inputs.push_back({in.name, *std::move(t)});
  }

  absl::StatusOr<std::vector<glint::NamedTensor>> outputs =
      (*host)->RunNetwork("example", std::move(inputs));
  if (!outputs.ok()) {
    std::cerr << "embed_example: " << outputs.status() << "\n";
    return 1;
  }
  for (const glint::NamedTensor& out : *outputs) {
    std::cout << out.name << ": " << glint::DTypeName(out.tensor.dtype())
              << out.tensor.shape().ToString();
    if (out.tensor.dtype() == glint::DType::kFloat32) {
      std::cout << " =";
      for (int64_t i = 0; i < std::min<int64_t>(8, out.tensor.num_elements());
           ++i) {
        std::cout << " " << out.tensor.data<float>()[i];
      }
      if (out.tensor.num_elements() > 8) std::cout << " ...";
    }
    std::cout << "\n";
  }
  return 0;
}
