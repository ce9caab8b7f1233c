#include "runtime/server/grpc/reactors.h"

#include <utility>

#include "proto/status_util.h"

namespace glint {

absl::Time DeadlineFromGrpc(std::chrono::system_clock::time_point deadline) {
  // gRPC reports "no deadline" as time_point::max(), or as a date centuries
  // away on some paths; anything beyond a year is as good as never and
  // must not overflow the conversion.
  const auto now = std::chrono::system_clock::now();
  if (deadline >= now + std::chrono::hours(24 * 365)) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

namespace {

// A unary reactor whose call can be cancelled: OnCancel cancels the token
// the call's work watches. gRPC calls OnDone once after Finish (and after
// OnCancel, if that is called), and nothing touches the reactor after it,
// so it deletes itself there; the work holds its own reference to the
// token, never to the reactor beyond calling Finish last.
class CancellableReactor final : public grpc::ServerUnaryReactor {
 public:
  explicit CancellableReactor(std::unique_ptr<RequestBudget::Charge> charge)
      : charge_(std::move(charge)) {}
  const std::shared_ptr<CancellationToken>& token() const { return token_; }
  void OnCancel() override { token_->Cancel(); }
  void OnDone() override { delete this; }

 private:
  const std::shared_ptr<CancellationToken> token_ =
      std::make_shared<CancellationToken>();
  // Released with the reactor, after gRPC has freed the request.
  const std::unique_ptr<RequestBudget::Charge> charge_;
};

}  // namespace

grpc::ServerUnaryReactor* StartCancellable(
    grpc::CallbackServerContext* context, const CancellableStart& start,
    std::unique_ptr<RequestBudget::Charge> charge) {
  (void)context;
  auto* reactor = new CancellableReactor(std::move(charge));
  // Finish may come before `start` returns (the work failed at once), even
  // before the handler returns the reactor: gRPC then holds the status
  // until the reactor is bound. Either way OnDone waits for the handler to
  // return, so `reactor` is valid here.
  start(reactor->token(),
        [reactor](grpc::Status status) { reactor->Finish(std::move(status)); });
  return reactor;
}

grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context,
                                    grpc::Status status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(std::move(status));
  return reactor;
}

grpc::ServerUnaryReactor* FinishOnPool(grpc::CallbackServerContext* context,
                                       WorkerPool& pool,
                                       std::function<grpc::Status()> work) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::Status scheduled =
      pool.Schedule([reactor, work = std::move(work)] {
        reactor->Finish(work());
      });
  if (!scheduled.ok()) reactor->Finish(ToGrpcStatus(scheduled));
  return reactor;
}

void RunForCall(HostManager& host_manager, absl::string_view name,
                std::vector<NamedTensor> inputs, RunOptions options,
                std::shared_ptr<const CancellationToken> cancel,
                RunResponder respond, FinishCallback finish) {
  options.cancel = std::move(cancel);
  host_manager.RunNetworkAsync(
      name, std::move(inputs), options,
      [respond = std::move(respond), finish = std::move(finish)](
          absl::StatusOr<std::vector<NamedTensor>> result) {
        finish(respond(std::move(result)));
      });
}

grpc::ServerUnaryReactor* StartRunReactor(
    grpc::CallbackServerContext* context, HostManager& host_manager,
    std::string name, std::vector<NamedTensor> inputs, RunOptions options,
    RunResponder respond, std::unique_ptr<RequestBudget::Charge> charge) {
  return StartCancellable(
      context,
      [&](std::shared_ptr<const CancellationToken> cancel,
          FinishCallback finish) {
        RunForCall(host_manager, name, std::move(inputs), std::move(options),
                   std::move(cancel), std::move(respond), std::move(finish));
      },
      std::move(charge));
}

absl::StatusOr<std::unique_ptr<RequestBudget::Charge>> ChargeRequest(
    RequestBudget* budget, size_t bytes) {
  if (budget == nullptr) return std::unique_ptr<RequestBudget::Charge>();
  return budget->TryCharge(static_cast<int64_t>(bytes));
}

}  // namespace glint
