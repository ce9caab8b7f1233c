#include "serving/model_lifecycle.h"

#include "absl/strings/str_cat.h"
#include "core/text.h"

namespace glint {

absl::Status LoadRepositoryModel(HostManager& host, ModelRepository* repository,
                          const OipModelLoad& load) {
  if (!load.has_file && repository != nullptr &&
      repository->options().mode == ModelControlMode::kExplicit) {
    if (load.has_config) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model '", Clip(load.name),
          "' loads from the model repository with its config.json there; "
          "send no config (or send the model's file with it)"));
    }
    return repository->Load(load.name);
  }
  if (!load.has_file) {
    if (!host.GetNetwork(load.name).ok()) {
      return absl::NotFoundError(absl::StrCat(
          "no model '", Clip(load.name),
          "': glintd has no model repository on disk; send the ONNX model in "
          "parameter \"file:1/model.onnx\""));
    }
    if (load.has_config) {
      return absl::AlreadyExistsError(absl::StrCat(
          "model '", Clip(load.name),
          "' is loaded; glintd does not reload a model in place: unload it, "
          "then load it with its file and config"));
    }
    return absl::OkStatus();  // Loaded already.
  }
  absl::StatusOr<NetworkInfo> info = host.AddNetwork(
      load.name, load.onnx_model, load.config.options);
  if (!info.ok()) return info.status();
  absl::Status status = CheckNetworkAgainstConfig(load.config, *info);
  // The config described another model: it must not stay loaded.
  if (!status.ok()) (void)host.RemoveNetwork(load.name);
  return status;
}

absl::Status UnloadRepositoryModel(HostManager& host, ModelRepository* repository,
                            const std::string& name) {
  return repository != nullptr && repository->IsLoaded(name)
             ? repository->Unload(name)
             : host.RemoveNetwork(name);
}

}  // namespace glint
