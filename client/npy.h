// Reading and writing numpy .npy files (format versions 1.0, 2.0 and 3.0),
// written here rather than pulled in because only the dense, C-order,
// little-endian subset is needed: the layout Glint's tensors have.
//
// All functions are thread-safe (no shared state).
#ifndef GLINT_CLIENT_NPY_H_
#define GLINT_CLIENT_NPY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"

namespace glint {

// Parses the bytes of a .npy file. INVALID_ARGUMENT for a bad magic or
// header, Fortran order, big-endian or structured/object dtypes, or a data
// section whose size does not match the header's shape.
absl::StatusOr<Tensor> ParseNpy(absl::string_view bytes);

// Serializes as .npy: format 1.0 unless the header needs 2.0, header padded
// so that the data starts 64-byte aligned (as numpy does). UNIMPLEMENTED
// for dtypes numpy lacks (bfloat16); INVALID_ARGUMENT for a tensor without
// data or a non-static shape.
absl::StatusOr<std::string> SerializeNpy(const Tensor& tensor);

// File variants; NOT_FOUND when the file does not exist. Errors name the
// path.
absl::StatusOr<Tensor> ReadNpyFile(const std::string& path);
absl::Status WriteNpyFile(const std::string& path, const Tensor& tensor);

}  // namespace glint

#endif  // GLINT_CLIENT_NPY_H_
