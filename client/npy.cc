#include "client/npy.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/file_util.h"

namespace glint {
namespace {

constexpr absl::string_view kMagic("\x93NUMPY", 6);
// numpy aligns the start of the data to 64 bytes since 1.9-era memmap use.
constexpr size_t kHeaderAlignment = 64;

absl::Status BadNpy(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("bad .npy: ", why));
}

uint32_t ReadLE(absl::string_view s, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) {
    v |= static_cast<uint32_t>(static_cast<uint8_t>(s[i])) << (8 * i);
  }
  return v;
}

// A parser for the one Python literal numpy writes as the header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }.
class HeaderParser {
 public:
  explicit HeaderParser(absl::string_view text) : s_(text) {}

  absl::Status Parse(std::string* descr, bool* fortran_order,
                     std::vector<int64_t>* shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    if (!Consume('{')) return BadNpy("header is not a dict");
    while (!Consume('}')) {
      std::string key;
      if (!ParseString(&key)) return BadNpy("expected a quoted key in header");
      if (!Consume(':')) return BadNpy("expected ':' in header");
      if (key == "descr") {
        if (!ParseString(descr)) {
          return BadNpy("structured dtypes are not supported");
        }
        have_descr = true;
      } else if (key == "fortran_order") {
        if (ConsumeWord("True")) {
          *fortran_order = true;
        } else if (ConsumeWord("False")) {
          *fortran_order = false;
        } else {
          return BadNpy("fortran_order must be True or False");
        }
        have_order = true;
      } else if (key == "shape") {
        if (!ParseTuple(shape)) return BadNpy("shape must be a tuple of ints");
        have_shape = true;
      } else {
        return BadNpy(absl::StrCat("unexpected header key '", key, "'"));
      }
      if (!Consume(',')) {
        if (!Consume('}')) return BadNpy("expected ',' or '}' in header");
        break;
      }
    }
    SkipSpace();
    if (!s_.empty()) return BadNpy("trailing characters after header dict");
    if (!have_descr || !have_order || !have_shape) {
      return BadNpy("header lacks descr, fortran_order or shape");
    }
    return absl::OkStatus();
  }

 private:
  void SkipSpace() {
    while (!s_.empty() && absl::ascii_isspace(static_cast<uint8_t>(s_[0]))) {
      s_.remove_prefix(1);
    }
  }
  bool Consume(char c) {
    SkipSpace();
    if (s_.empty() || s_[0] != c) return false;
    s_.remove_prefix(1);
    return true;
  }
  bool ConsumeWord(absl::string_view w) {
    SkipSpace();
    if (!absl::StartsWith(s_, w)) return false;
    s_.remove_prefix(w.size());
    return true;
  }
  bool ParseString(std::string* out) {
    SkipSpace();
    if (s_.empty() || (s_[0] != '\'' && s_[0] != '"')) return false;
    const char quote = s_[0];
    const size_t end = s_.find(quote, 1);
    if (end == absl::string_view::npos) return false;
    *out = std::string(s_.substr(1, end - 1));
    s_.remove_prefix(end + 1);
    return true;
  }
  bool ParseTuple(std::vector<int64_t>* out) {
    out->clear();
    if (!Consume('(')) return false;
    while (!Consume(')')) {
      SkipSpace();
      size_t n = 0;
      while (n < s_.size() && absl::ascii_isdigit(static_cast<uint8_t>(s_[n]))) {
        ++n;
      }
      int64_t v = 0;
      // numpy on some platforms writes long ints as "3L".
      if (n == 0 || !absl::SimpleAtoi(s_.substr(0, n), &v)) return false;
      s_.remove_prefix(n);
      if (!s_.empty() && s_[0] == 'L') s_.remove_prefix(1);
      out->push_back(v);
      if (!Consume(',')) {
        if (!Consume(')')) return false;
        break;
      }
    }
    return true;
  }

  absl::string_view s_;
};

}  // namespace

absl::StatusOr<Tensor> ParseNpy(absl::string_view bytes) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != kMagic) {
    return BadNpy("missing the \\x93NUMPY magic");
  }
  const int major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0;
  size_t header_start = 0;
  if (major == 1) {
    header_len = ReadLE(bytes.substr(8), 2);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return BadNpy("truncated header");
    header_len = ReadLE(bytes.substr(8), 4);
    header_start = 12;
  } else {
    return BadNpy(absl::StrCat("unsupported format version ", major));
  }
  if (bytes.size() < header_start + header_len) {
    return BadNpy("truncated header");
  }
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> dims;
  HeaderParser parser(bytes.substr(header_start, header_len));
  if (absl::Status s = parser.Parse(&descr, &fortran_order, &dims); !s.ok()) {
    return s;
  }
  if (fortran_order) {
    return BadNpy("Fortran-order arrays are not supported (save C order)");
  }
  absl::StatusOr<DType> dtype = DTypeFromNumpyDescr(descr);
  if (!dtype.ok()) return BadNpy(dtype.status().message());

  uint64_t expected = DTypeSize(*dtype);
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(expected, static_cast<uint64_t>(d), &expected)) {
      return BadNpy("shape is too large");
    }
  }
  const absl::string_view data = bytes.substr(header_start + header_len);
  if (data.size() != expected) {
    return BadNpy(absl::StrCat("a ", DTypeName(*dtype), " array of shape (",
                               absl::StrJoin(dims, ", "), ") needs ", expected,
                               " data bytes, the file has ", data.size()));
  }
  return Tensor::FromBytes(
      *dtype, Shape(std::move(dims)),
      absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()),
                                data.size()));
}

absl::StatusOr<std::string> SerializeNpy(const Tensor& tensor) {
  absl::StatusOr<absl::string_view> descr = NumpyDescr(tensor.dtype());
  if (!descr.ok()) return descr.status();
  if (!tensor.shape().IsStatic() || !tensor.valid()) {
    return absl::InvalidArgumentError(
        "cannot write a tensor without data or with a non-static shape");
  }
  const std::vector<int64_t>& dims = tensor.shape().dims();
  std::string shape = absl::StrCat("(", absl::StrJoin(dims, ", "),
                                   dims.size() == 1 ? ",)" : ")");
  std::string header =
      absl::StrCat("{'descr': '", *descr, "', 'fortran_order': False, 'shape': ",
                   shape, ", }");
  // Version 1.0 stores the header length in 2 bytes; fall back to 2.0.
  int major = 1;
  size_t prefix = 10;
  if (header.size() + 1 + prefix > 0xffff) {
    major = 2;
    prefix = 12;
  }
  const size_t unpadded = prefix + header.size() + 1;  // +1 for '\n'.
  const size_t padded =
      (unpadded + kHeaderAlignment - 1) / kHeaderAlignment * kHeaderAlignment;
  header.append(padded - unpadded, ' ');
  header.push_back('\n');

  std::string out(kMagic);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  const uint32_t len = static_cast<uint32_t>(header.size());
  for (size_t i = 0; i < prefix - 8; ++i) {
    out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  }
  out += header;
  if (tensor.num_bytes() > 0) {
    out.append(static_cast<const char*>(tensor.raw_data()), tensor.num_bytes());
  }
  return out;
}

absl::StatusOr<Tensor> ReadNpyFile(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFileToString(path);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<Tensor> t = ParseNpy(*bytes);
  if (!t.ok()) {
    return absl::Status(t.status().code(),
                        absl::StrCat(path, ": ", t.status().message()));
  }
  return t;
}

absl::Status WriteNpyFile(const std::string& path, const Tensor& tensor) {
  absl::StatusOr<std::string> bytes = SerializeNpy(tensor);
  if (!bytes.ok()) {
    return absl::Status(bytes.status().code(),
                        absl::StrCat(path, ": ", bytes.status().message()));
  }
  return WriteStringToFile(path, *bytes);
}

}  // namespace glint
