// An out-of-tree C++ program over an installed libglint, built by CMake
// with find_package(Glint) (CMakeLists.txt beside it). Runs an ONNX node
// case through the C++ API (HostManager), reading the case's .pb tensors
// with the C API's helper, and compares every output with the case's
// output_*.pb. Exit 0 when all match, 1 otherwise.
//
//   cpp_consumer CASE_DIR
#include <glint/c_api.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/host_manager.h"

namespace {

bool Exists(const std::string& path) { return std::ifstream(path).good(); }

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream s;
  s << file.rdbuf();
  return s.str();
}

// A .pb TensorProto as a glint::NamedTensor, through the C API's reader.
bool LoadPb(const std::string& path, glint::NamedTensor* out) {
  const std::string bytes = ReadFile(path);
  GlintTensor* t = nullptr;
  if (GlintStatus* s =
          glint_tensor_create_from_onnx(bytes.data(), bytes.size(), &t)) {
    std::cerr << "cpp consumer: " << path << ": " << glint_status_message(s)
              << "\n";
    glint_status_delete(s);
    return false;
  }
  const char* name;
  GlintDType dtype;
  const int64_t* dims;
  size_t rank, size;
  const void* data;
  glint_tensor_info(t, &name, &dtype, &dims, &rank, &data, &size);
  absl::StatusOr<glint::Tensor> tensor = glint::Tensor::FromBytes(
      static_cast<glint::DType>(dtype),
      glint::Shape(std::vector<int64_t>(dims, dims + rank)),
      absl::Span<const uint8_t>(static_cast<const uint8_t*>(data), size));
  out->name = name;
  glint_tensor_delete(t);
  if (!tensor.ok()) {
    std::cerr << "cpp consumer: " << path << ": " << tensor.status() << "\n";
    return false;
  }
  out->tensor = *std::move(tensor);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: cpp_consumer CASE_DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  std::vector<glint::NamedTensor> inputs;
  for (int i = 0;; ++i) {
    const std::string path =
        dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb";
    if (!Exists(path)) break;
    inputs.emplace_back();
    if (!LoadPb(path, &inputs.back())) return 1;
  }

  std::vector<glint::DeviceConfig> devices(2);
  for (glint::DeviceConfig& d : devices) d.memory_bytes = 512 << 20;
  absl::StatusOr<std::unique_ptr<glint::HostManager>> host =
      glint::HostManager::CreateFromConfigs({}, devices);
  if (!host.ok()) {
    std::cerr << "cpp consumer: " << host.status() << "\n";
    return 1;
  }
  glint::AddNetworkOptions options;
  options.partition.replicas = 2;
  absl::StatusOr<glint::NetworkInfo> info =
      (*host)->AddNetwork("case", ReadFile(dir + "/model.onnx"), options);
  if (!info.ok()) {
    std::cerr << "cpp consumer: " << info.status() << "\n";
    return 1;
  }
  absl::StatusOr<std::vector<glint::NamedTensor>> outputs =
      (*host)->RunNetwork("case", inputs);
  if (!outputs.ok()) {
    std::cerr << "cpp consumer: " << outputs.status() << "\n";
    return 1;
  }

  int checked = 0, mismatches = 0;
  for (;; ++checked) {
    const std::string path =
        dir + "/test_data_set_0/output_" + std::to_string(checked) + ".pb";
    if (!Exists(path)) break;
    glint::NamedTensor want;
    if (!LoadPb(path, &want)) return 1;
    const glint::NamedTensor* got = nullptr;
    for (const glint::NamedTensor& out : *outputs) {
      if (out.name == want.name) got = &out;
    }
    bool same = got != nullptr && got->tensor.dtype() == want.tensor.dtype() &&
                got->tensor.shape() == want.tensor.shape();
    double max_diff = 0;
    if (same && want.tensor.dtype() == glint::DType::kFloat32) {
      for (int64_t i = 0; i < want.tensor.num_elements(); ++i) {
        const double a = got->tensor.data<float>()[i];
        const double b = want.tensor.data<float>()[i];
        max_diff = std::max(max_diff, std::fabs(a - b));
        if (std::fabs(a - b) > 1e-4 * (1 + std::fabs(b))) same = false;
      }
    } else if (same) {
      same = std::memcmp(got->tensor.raw_data(), want.tensor.raw_data(),
                         want.tensor.num_bytes()) == 0;
    }
    std::cout << "cpp consumer: output '" << want.name << "' "
              << glint::DTypeName(want.tensor.dtype())
              << want.tensor.shape().ToString() << " on "
              << info->partitions.size() << " partition(s) x "
              << info->replicas << " replicas "
              << (same ? "matches" : "DIFFERS") << ", max abs diff "
              << max_diff << "\n";
    mismatches += !same;
  }
  if (checked == 0) {
    std::cerr << "cpp consumer: no output_*.pb under " << dir << "\n";
    return 1;
  }
  std::cout << "cpp consumer: " << dir << ": " << checked
            << " outputs checked, " << mismatches << " mismatches\n";
  return mismatches == 0 ? 0 : 1;
}
