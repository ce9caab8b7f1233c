#include "core/trace.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace glint {
namespace {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

bool Completed(const TraceSlice& s) {
  return s.begin != absl::Time() && s.end != absl::Time();
}

}  // namespace

std::vector<TraceSlice> RunTrace::Slices() const {
  absl::MutexLock lock(&mu_);
  std::vector<TraceSlice> out;
  for (const TraceSlice& s : slices_) {
    if (Completed(s)) out.push_back(s);
  }
  return out;
}

std::string RunTrace::ToChromeJson() const {
  absl::MutexLock lock(&mu_);
  absl::Time origin = absl::InfiniteFuture();
  for (const TraceSlice& s : slices_) {
    if (Completed(s)) origin = std::min(origin, s.begin);
  }
  std::string json = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  auto append = [&](const std::string& event) {
    absl::StrAppend(&json, first ? "  " : ",\n  ", event);
    first = false;
  };
  std::set<std::pair<int, int>> threads;
  std::set<int> processes;
  for (const TraceSlice& s : slices_) {
    if (!Completed(s)) continue;
    if (processes.insert(s.process).second) {
      append(absl::StrCat("{\"ph\": \"M\", \"name\": \"process_name\", "
                          "\"pid\": ", s.process, ", \"args\": {\"name\": ",
                          JsonString(s.process_name), "}}"));
    }
    if (threads.insert({s.process, s.thread}).second) {
      append(absl::StrCat("{\"ph\": \"M\", \"name\": \"thread_name\", "
                          "\"pid\": ", s.process, ", \"tid\": ", s.thread,
                          ", \"args\": {\"name\": ",
                          JsonString(s.thread_name), "}}"));
    }
    std::string args;
    if (!s.args.empty()) {
      args = ", \"args\": {";
      for (size_t i = 0; i < s.args.size(); ++i) {
        absl::StrAppend(&args, i == 0 ? "" : ", ", JsonString(s.args[i].first),
                        ": ", JsonString(s.args[i].second));
      }
      args += "}";
    }
    append(absl::StrFormat(
        "{\"ph\": \"X\", \"name\": %s, \"cat\": %s, \"pid\": %d, \"tid\": "
        "%d, \"ts\": %.3f, \"dur\": %.3f%s}",
        JsonString(s.name), JsonString(s.category), s.process, s.thread,
        absl::ToDoubleMicroseconds(s.begin - origin),
        absl::ToDoubleMicroseconds(std::max(s.end - s.begin,
                                            absl::ZeroDuration())),
        args));
  }
  absl::StrAppend(&json, "\n]}\n");
  return json;
}

}  // namespace glint
