// What every gRPC service of glintd shares on gRPC's callback API: unary
// reactors that never hold a thread while work goes on, the bridge from a
// call's cancellation to the runtime's CancellationToken, and deadline
// conversion. glint.v1 (service.h) uses them, and so can any other service
// registered beside it (see server_setup.h).
//
// The rule they keep: a callback of gRPC (a method handler, OnCancel) only
// does short work. A run is started and answered from its completion
// callback; a call that blocks (import, removal) goes to a WorkerPool.
#ifndef GLINT_RUNTIME_SERVER_GRPC_REACTORS_H_
#define GLINT_RUNTIME_SERVER_GRPC_REACTORS_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "api/types.h"
#include "core/cancellation.h"
#include "runtime/host_manager.h"
#include "runtime/server/grpc/request_budget.h"
#include "runtime/server/grpc/worker_pool.h"

namespace glint {

// A gRPC deadline as an absl::Time; "no deadline" (the far future gRPC
// reports then) is absl::InfiniteFuture().
absl::Time DeadlineFromGrpc(std::chrono::system_clock::time_point deadline);

// Answers a call exactly once; may be called from any thread.
using FinishCallback = std::function<void(grpc::Status)>;

// Starts work that ends later, on another thread or inline, holding no
// thread meanwhile. `cancel` is cancelled when the call is (the client went
// away, its deadline passed, or the server shuts down): pass it on, e.g. as
// RunOptions::cancel. The work must call `finish` exactly once; the
// response message must be filled before.
using CancellableStart = std::function<void(
    std::shared_ptr<const CancellationToken> cancel, FinishCallback finish)>;

// The reactor of a call whose work runs asynchronously (a network run):
// calls `start` on this thread and returns the reactor for the method
// handler to return. OnCancel cancels the token; the reactor deletes itself
// once gRPC is done with the call, releasing `charge` (the request's bytes
// against the RequestBudget; may be null) only then, when gRPC has freed
// the request.
grpc::ServerUnaryReactor* StartCancellable(
    grpc::CallbackServerContext* context, const CancellableStart& start,
    std::unique_ptr<RequestBudget::Charge> charge = nullptr);

// The reactor of a call answered at once (on the callback thread: for
// short work only).
grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context,
                                    grpc::Status status);

// The reactor of a call that blocks: `work` runs on `pool` and its status
// answers the call. A full pool answers RESOURCE_EXHAUSTED at once (a
// stopping one UNAVAILABLE), without running `work`.
grpc::ServerUnaryReactor* FinishOnPool(grpc::CallbackServerContext* context,
                                       WorkerPool& pool,
                                       std::function<grpc::Status()> work);

// --- The RunNetwork core every inference call shares ---------------------

// Turns a run's result into the call's response (filling it) and its
// status; called once, on the thread that ends the run.
using RunResponder = std::function<grpc::Status(
    absl::StatusOr<std::vector<NamedTensor>> result)>;

// Without gRPC's server: starts `name` on `host_manager` with `options`,
// its cancellation token replaced by `cancel`, and once the run ends calls
// `finish(respond(result))`. Returns at once; `finish` may be called before
// it returns (a refused run) or later on a device thread.
void RunForCall(HostManager& host_manager, absl::string_view name,
                std::vector<NamedTensor> inputs, RunOptions options,
                std::shared_ptr<const CancellationToken> cancel,
                RunResponder respond, FinishCallback finish);

// The reactor of an inference call: RunForCall under StartCancellable; the
// request's `charge` is held until gRPC is done with the call. The run's
// deadline is `options.deadline` as the caller decided it: the call's
// (DeadlineFromGrpc), merged with a `timeout` parameter by
// ApplyOipRequestParameters (proto/oip_parameters.h) where the protocol
// has one; this does not merge it again.
grpc::ServerUnaryReactor* StartRunReactor(
    grpc::CallbackServerContext* context, HostManager& host_manager,
    std::string name, std::vector<NamedTensor> inputs, RunOptions options,
    RunResponder respond,
    std::unique_ptr<RequestBudget::Charge> charge = nullptr);

// Charges an inference request of `bytes` against `budget` (null: no
// budget, always a null charge). RESOURCE_EXHAUSTED when over it.
absl::StatusOr<std::unique_ptr<RequestBudget::Charge>> ChargeRequest(
    RequestBudget* budget, size_t bytes);

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_GRPC_REACTORS_H_
