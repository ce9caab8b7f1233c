// The load/unload policy of Triton's RepositoryModelLoad and
// RepositoryModelUnload over a HostManager and an optional model
// repository: what a load without a file means in each control mode, when
// a config is refused, and why a network that contradicts its config does
// not stay loaded. The gRPC service calls these (through ServingCore in
// glintd); no transport type appears here.
//
// Both block (an import can take seconds): run them off a transport's
// callback threads. Thread-safe as HostManager and ModelRepository are.
#ifndef GLINT_SERVING_MODEL_LIFECYCLE_H_
#define GLINT_SERVING_MODEL_LIFECYCLE_H_

#include <string>

#include "absl/status/status.h"
#include "proto/oip_types.h"
#include "runtime/host_manager.h"
#include "serving/model_repository.h"

namespace glint {

// RepositoryModelLoad. `repository` may be null (no --model_repository).
//  - Without a file, in explicit mode: loads (or reloads) the model from
//    the repository; a config with it is INVALID_ARGUMENT (the
//    repository's config.json is the model's).
//  - Without a file otherwise: OK when the model is loaded (ALREADY_EXISTS
//    if a config came with it: no reload in place), NOT_FOUND when not.
//  - With a file: adds the network with the config's options and checks
//    it against the config's inputs and outputs; a network that does not
//    match is removed again and the load is INVALID_ARGUMENT.
absl::Status LoadRepositoryModel(HostManager& host, ModelRepository* repository,
                                 const OipModelLoad& load);

// RepositoryModelUnload: the repository forgets a model it loaded (a poll
// would otherwise load it again); any other network is removed from
// `host`. NOT_FOUND for an unknown name.
absl::Status UnloadRepositoryModel(HostManager& host,
                                   ModelRepository* repository,
                                   const std::string& name);

}  // namespace glint

#endif  // GLINT_SERVING_MODEL_LIFECYCLE_H_
