#include "serving/model_repository.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "core/text.h"
#include "proto/oip_types.h"

namespace glint {
namespace {

namespace fs = std::filesystem;

constexpr absl::string_view kModelFile = "model.onnx";
constexpr absl::string_view kConfigJson = "config.json";
constexpr absl::string_view kConfigPbtxt = "config.pbtxt";

// "size:mtime_ns" of `path`, or "-" when it cannot be stat'ed. Cheap enough
// to take for every model on every poll.
std::string FileStamp(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "-";
  return absl::StrCat(st.st_size, ":", st.st_mtim.tv_sec, ".",
                      st.st_mtim.tv_nsec);
}

// A version folder's number: all digits, positive, fits int64.
bool ParseVersion(const std::string& text, int64_t* version) {
  if (text.empty() || text.size() > 18) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleAtoi(text, version) && *version > 0;
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path));
  }
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) {
    return absl::DataLossError(absl::StrCat("cannot read ", path));
  }
  return std::move(out).str();
}

}  // namespace

absl::StatusOr<ModelControlMode> ParseModelControlMode(absl::string_view text) {
  if (text == "none") return ModelControlMode::kNone;
  if (text == "explicit") return ModelControlMode::kExplicit;
  if (text == "poll") return ModelControlMode::kPoll;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown model control mode '", Clip(text),
                   "': expected none, explicit or poll"));
}

absl::StatusOr<std::vector<RepositoryModel>> ScanModelRepository(
    const std::string& dir, std::vector<std::string>* skipped) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (ec || !fs::exists(st)) {
    return absl::NotFoundError(
        absl::StrCat("the model repository '", dir, "' does not exist"));
  }
  if (!fs::is_directory(st)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the model repository '", dir, "' is not a folder"));
  }
  auto skip = [skipped](std::string why) {
    if (skipped != nullptr) skipped->push_back(std::move(why));
  };
  std::vector<RepositoryModel> models;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot list the model repository '", dir, "': ", ec.message()));
  }
  for (const fs::directory_entry& entry : it) {
    if (!entry.is_directory(ec)) continue;  // Stray files are not models.
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.') continue;  // Hidden: ignored.
    if (!IsValidUtf8(name)) {
      skip(absl::StrCat("'", Clip(absl::CHexEscape(name)),
                        "': the name is not UTF-8"));
      continue;
    }
    RepositoryModel model;
    model.name = name;
    fs::directory_iterator versions(entry.path(), ec);
    if (ec) {
      skip(absl::StrCat("'", Clip(name), "': cannot list it: ", ec.message()));
      continue;
    }
    for (const fs::directory_entry& v : versions) {
      int64_t version = 0;
      if (!v.is_directory(ec) ||
          !ParseVersion(v.path().filename().string(), &version) ||
          version <= model.version) {
        continue;
      }
      const fs::path file = v.path() / std::string(kModelFile);
      if (!fs::is_regular_file(file, ec)) continue;
      model.version = version;
      model.model_path = file.string();
    }
    if (model.version == 0) {
      skip(absl::StrCat("'", Clip(name),
                        "': no numeric version folder with a model.onnx"));
      continue;
    }
    const fs::path json = entry.path() / std::string(kConfigJson);
    if (fs::is_regular_file(json, ec)) {
      model.config_path = json.string();
    } else if (fs::exists(entry.path() / std::string(kConfigPbtxt), ec)) {
      model.has_pbtxt_only = true;
    }
    model.fingerprint = absl::StrCat(
        model.version, "|", FileStamp(model.model_path), "|",
        model.config_path.empty() ? std::string("-")
                                  : FileStamp(model.config_path),
        model.has_pbtxt_only ? "|pbtxt" : "");
    models.push_back(std::move(model));
  }
  std::sort(models.begin(), models.end(),
            [](const RepositoryModel& a, const RepositoryModel& b) {
              return a.name < b.name;
            });
  return models;
}

ModelRepository::ModelRepository(HostManager* host,
                                 ModelRepositoryOptions options)
    : host_(host), options_(std::move(options)) {}

absl::Status ModelRepository::LoadLocked(const RepositoryModel& model) {
  bool removed = false;  // A load that replaced, then had to remove.
  absl::Status status = [&]() -> absl::Status {
    if (model.has_pbtxt_only) {
      return absl::InvalidArgumentError(
          "it has config.pbtxt, which Glint does not read: write its "
          "settings as config.json (Triton's ModelConfig in JSON)");
    }
    std::string config_text;
    if (!model.config_path.empty()) {
      absl::StatusOr<std::string> text = ReadWholeFile(model.config_path);
      if (!text.ok()) return text.status();
      config_text = *std::move(text);
    }
    absl::StatusOr<TritonModelConfig> config =
        TritonModelConfigFromJson(config_text, model.name);
    if (!config.ok()) {
      return absl::Status(config.status().code(),
                          absl::StrCat("config.json: ",
                                       config.status().message()));
    }
    absl::StatusOr<std::string> bytes = ReadWholeFile(model.model_path);
    if (!bytes.ok()) return bytes.status();
    absl::StatusOr<NetworkInfo> info =
        host_->ReplaceNetwork(model.name, *bytes, config->options);
    if (!info.ok()) return info.status();
    if (absl::Status s = CheckNetworkAgainstConfig(*config, *info); !s.ok()) {
      // The new version already serves: keeping a network whose config
      // describes another model would answer clients wrongly, so it goes.
      (void)host_->RemoveNetwork(model.name);
      removed = true;
      return absl::Status(s.code(), absl::StrCat("config.json: ", s.message(),
                                                 " (the model is unloaded)"));
    }
    return absl::OkStatus();
  }();
  absl::MutexLock lock(&mu_);
  State& state = states_[model.name];
  if (status.ok()) {
    GLINT_LOG_INFO("model repository: '{}' version {} {}", Clip(model.name),
                   model.version,
                   state.loaded_fingerprint.empty() ? "loaded" : "reloaded");
    state.loaded_fingerprint = model.fingerprint;
    state.loaded_version = model.version;
    state.failed_fingerprint.clear();
    state.reason.clear();
    return status;
  }
  const bool still_serving = !state.loaded_fingerprint.empty() && !removed;
  if (!still_serving) {
    state.loaded_fingerprint.clear();
    state.loaded_version = 0;
  }
  state.failed_fingerprint = model.fingerprint;
  state.reason = absl::StrCat("version ", model.version,
                              " failed to load: ", status.message());
  GLINT_LOG_ERROR("model repository: '{}' {}{}", Clip(model.name),
                  state.reason,
                  still_serving ? absl::StrCat("; version ",
                                               state.loaded_version,
                                               " keeps serving")
                                : std::string());
  return absl::Status(status.code(),
                      absl::StrCat("model '", Clip(model.name), "' ",
                                   state.reason));
}

absl::Status ModelRepository::UnloadLocked(absl::string_view name) {
  {
    absl::MutexLock lock(&mu_);
    auto it = states_.find(std::string(name));
    if (it == states_.end() || it->second.loaded_fingerprint.empty()) {
      return absl::NotFoundError(absl::StrCat(
          "model '", Clip(name), "' is not loaded from the repository"));
    }
  }
  absl::Status status = host_->RemoveNetwork(name);
  if (!status.ok() && !absl::IsNotFound(status)) return status;
  absl::MutexLock lock(&mu_);
  states_.erase(std::string(name));
  GLINT_LOG_INFO("model repository: '{}' unloaded", Clip(name));
  return absl::OkStatus();
}

absl::StatusOr<RepositorySyncReport> ModelRepository::Sync() {
  absl::MutexLock op(&op_mu_);
  std::vector<std::string> skipped;
  absl::StatusOr<std::vector<RepositoryModel>> models =
      ScanModelRepository(options_.dir, &skipped);
  if (!models.ok()) return models.status();
  for (const std::string& s : skipped) {
    GLINT_LOG_DEBUG("model repository: skipped {}", s);
  }
  RepositorySyncReport report;
  std::set<std::string> present;
  for (const RepositoryModel& model : *models) {
    present.insert(model.name);
    bool was_loaded = false;
    {
      absl::MutexLock lock(&mu_);
      const State& state = states_[model.name];
      was_loaded = !state.loaded_fingerprint.empty();
      if (state.loaded_fingerprint == model.fingerprint ||
          state.failed_fingerprint == model.fingerprint) {
        ++report.unchanged;
        continue;
      }
    }
    if (LoadLocked(model).ok()) {
      ++(was_loaded ? report.reloaded : report.loaded);
    } else {
      ++report.failed;
    }
  }
  std::vector<std::string> gone;
  {
    absl::MutexLock lock(&mu_);
    on_disk_ = *std::move(models);
    for (const auto& [name, state] : states_) {
      if (present.count(name) == 0) gone.push_back(name);
    }
  }
  for (const std::string& name : gone) {
    bool loaded = false;
    {
      absl::MutexLock lock(&mu_);
      loaded = !states_[name].loaded_fingerprint.empty();
      if (!loaded) states_.erase(name);
    }
    if (loaded && UnloadLocked(name).ok()) ++report.unloaded;
  }
  return report;
}

absl::Status ModelRepository::Load(absl::string_view name) {
  absl::MutexLock op(&op_mu_);
  absl::StatusOr<std::vector<RepositoryModel>> models =
      ScanModelRepository(options_.dir);
  if (!models.ok()) return models.status();
  {
    absl::MutexLock lock(&mu_);
    on_disk_ = *models;
  }
  for (const RepositoryModel& model : *models) {
    if (model.name == name) return LoadLocked(model);
  }
  return absl::NotFoundError(
      absl::StrCat("the model repository has no model '", Clip(name),
                   "' (a folder NAME/VERSION/model.onnx under ",
                   options_.dir, ")"));
}

absl::Status ModelRepository::Unload(absl::string_view name) {
  absl::MutexLock op(&op_mu_);
  return UnloadLocked(name);
}

bool ModelRepository::IsLoaded(absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = states_.find(std::string(name));
  return it != states_.end() && !it->second.loaded_fingerprint.empty();
}

std::vector<RepositoryIndexEntry> ModelRepository::Index() const {
  absl::MutexLock lock(&mu_);
  std::map<std::string, RepositoryIndexEntry> index;
  for (const RepositoryModel& model : on_disk_) {
    RepositoryIndexEntry& e = index[model.name];
    e.name = model.name;
    e.version = model.version;
    e.state = "UNLOADED";
  }
  for (const auto& [name, state] : states_) {
    RepositoryIndexEntry& e = index[name];
    e.name = name;
    e.reason = state.reason;
    if (!state.loaded_fingerprint.empty()) {
      e.version = state.loaded_version;
      e.state = "READY";
    } else if (!state.reason.empty()) {
      e.state = "UNAVAILABLE";
    } else if (e.state.empty()) {
      e.state = "UNLOADED";
    }
  }
  std::vector<RepositoryIndexEntry> list;
  for (auto& [name, e] : index) list.push_back(std::move(e));
  return list;
}

}  // namespace glint
