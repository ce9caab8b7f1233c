#include "runtime/server/network_journal.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "proto/glint.pb.h"
#include "runtime/logging.h"
#include "runtime/server/proto_convert.h"

namespace glint {

absl::Status StoreJournal::Record(absl::string_view name,
                                  absl::string_view onnx_model,
                                  const AddNetworkOptions& options) {
  v1::AddNetworkOptions proto;
  AddNetworkOptionsToProto(options, &proto);
  StoredNetwork network;
  network.name = std::string(name);
  network.model = std::string(onnx_model);
  network.options = proto.SerializeAsString();
  return store_->Save(network);
}

absl::Status StoreJournal::Erase(absl::string_view name) {
  absl::Status s = store_->Delete(name);
  return s.code() == absl::StatusCode::kNotFound ? absl::OkStatus() : s;
}

RestoreReport RestoreNetworks(const NetworkStore& store, HostManager& host) {
  RestoreReport report;
  for (const StoreEntry& entry : store.LoadAll()) {
    if (!entry.network.ok()) {
      GLINT_LOG_ERROR("cannot restore {}: {}", entry.file,
                      entry.network.status().ToString());
      ++report.unreadable;
      continue;
    }
    const StoredNetwork& stored = *entry.network;
    v1::AddNetworkOptions proto;
    absl::StatusOr<AddNetworkOptions> options =
        proto.ParseFromString(stored.options)
            ? AddNetworkOptionsFromProto(proto)
            : absl::DataLossError("its options are not readable");
    if (!options.ok()) {
      GLINT_LOG_ERROR("cannot restore network '{}' from {}: {}", stored.name,
                      entry.file, options.status().ToString());
      ++report.unreadable;
      continue;
    }
    absl::StatusOr<NetworkInfo> info =
        host.RestoreNetwork(stored.name, stored.model, *options);
    if (info.ok()) {
      ++report.restored;
      continue;
    }
    ++report.unavailable;
    GLINT_LOG_ERROR("network '{}' stays unavailable: {}", stored.name,
                    info.status().ToString());
  }
  return report;
}

}  // namespace glint
