#include "serving/network_journal.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "proto/glint.pb.h"
#include "proto/proto_convert.h"
#include "proto/store.pb.h"

namespace glint {

absl::Status StoreJournal::Record(absl::string_view name,
                                  const ModelBytes& onnx_model,
                                  const AddNetworkOptions& options) {
  v1::AddNetworkOptions proto;
  AddNetworkOptionsToProto(options, &proto);
  return store_->Save(name, onnx_model, proto.SerializeAsString());
}

absl::Status StoreJournal::Erase(absl::string_view name) {
  absl::Status s = store_->Delete(name);
  if (!s.ok() && !absl::IsNotFound(s)) return s;
  absl::Status plan = store_->DeletePlan(name);
  return absl::IsNotFound(plan) ? absl::OkStatus() : plan;
}

absl::StatusOr<std::string> StoreJournal::LoadModel(absl::string_view name) {
  GLINT_ASSIGN_OR_RETURN(StoredNetwork network, store_->Load(name));
  return std::move(network.model);
}

absl::StatusOr<CachedPlan> StoreJournal::LoadPlan(absl::string_view name) {
  GLINT_ASSIGN_OR_RETURN(std::string blob, store_->LoadPlan(name));
  store::v1::CachedPlan proto;
  if (!proto.ParseFromString(blob)) {
    return absl::DataLossError(
        absl::StrCat("the cached plan of '", name, "' is not a CachedPlan"));
  }
  CachedPlan plan;
  plan.key = proto.key();
  plan.inferred_types = proto.inferred_types();
  plan.strategy = proto.strategy();
  plan.assignment.assign(proto.assignment().begin(), proto.assignment().end());
  for (const auto& replica : proto.placement()) {
    plan.placement.emplace_back(replica.device_ids().begin(),
                                replica.device_ids().end());
  }
  return plan;
}

absl::Status StoreJournal::SavePlan(absl::string_view name,
                                    const CachedPlan& plan) {
  store::v1::CachedPlan proto;
  proto.set_key(plan.key);
  proto.set_inferred_types(plan.inferred_types);
  proto.set_strategy(plan.strategy);
  for (int l : plan.assignment) proto.add_assignment(l);
  for (const std::vector<int>& replica : plan.placement) {
    auto* r = proto.add_placement();
    for (int id : replica) r->add_device_ids(id);
  }
  return store_->SavePlan(name, proto.SerializeAsString());
}

namespace {

// Lists a network whose record cannot be restored as unavailable, saying
// why: it must not vanish from the listings while its record is there.
void ListUnavailable(HostManager& host, const std::string& name,
                     const std::string& file, const absl::Status& why,
                     RestoreReport& report) {
  GLINT_LOG_ERROR("network '{}' stays unavailable: {}", name, why.ToString());
  absl::Status listed = host.RestoreUnavailable(
      name,
      absl::StrCat("its stored record cannot be restored (",
                   absl::StatusCodeToString(why.code()), ": ", why.message(),
                   "); remove the network and add it again"));
  if (listed.ok()) {
    ++report.unavailable;
  } else {
    // ALREADY_EXISTS: a client added the name while the restore ran, and
    // its network replaced the record.
    GLINT_LOG_WARN("network '{}' of {} is not listed: {}", name, file,
                   listed.ToString());
  }
}

}  // namespace

RestoreReport RestoreNetworks(const NetworkStore& store, HostManager& host) {
  RestoreReport report;
  // One record at a time: a store's models together may exceed memory.
  store.ForEachRecord([&](StoreEntry entry) {
    if (!entry.network.ok()) {
      if (!entry.name.empty()) {
        ListUnavailable(host, entry.name, entry.file, entry.network.status(),
                        report);
        return;
      }
      // Not even a name to list it by: an old record, a damaged header.
      GLINT_LOG_ERROR("cannot restore {} (its network's name is unknown): {}",
                      entry.file, entry.network.status().ToString());
      ++report.unreadable;
      return;
    }
    const StoredNetwork& stored = *entry.network;
    v1::AddNetworkOptions proto;
    absl::StatusOr<AddNetworkOptions> options =
        proto.ParseFromString(stored.options)
            ? AddNetworkOptionsFromProto(proto)
            : absl::DataLossError("its options are not readable");
    if (!options.ok()) {
      ListUnavailable(host, stored.name, entry.file, options.status(), report);
      return;
    }
    absl::StatusOr<NetworkInfo> info =
        host.RestoreNetwork(stored.name, stored.model, *options);
    if (info.ok()) {
      ++report.restored;
      return;
    }
    ++report.unavailable;
    GLINT_LOG_ERROR("network '{}' stays unavailable: {}", stored.name,
                    info.status().ToString());
  });
  return report;
}

}  // namespace glint
