#include "client/cli.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "client/cli_args.h"
#include "client/cli_usage.h"
#include "client/file_util.h"
#include "client/format.h"
#include "client/glint_client.h"
#include "client/npy.h"
#include "client/perf.h"
#include "client/shared_memory.h"
#include "client/tensor_file.h"
#include "core/op_profile.h"

namespace glint {
namespace {

// `glint perf` bounds: levels beyond this are a typo, not a test; and the
// distinct error messages printed per level.
constexpr int kMaxPerfConcurrency = 65536;
constexpr size_t kPerfErrorsShown = 5;
// Rows of a profile's table (`run --profile`, `perf --profile`).
constexpr int kTopOps = 15;

// "<CODE>: <message>" on one line (newlines folded into spaces).
std::string StatusLine(const absl::Status& status) {
  std::string message(status.message());
  for (char& c : message) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return absl::StrCat(absl::StatusCodeToString(status.code()), ": ", message);
}

class Cli {
 public:
  Cli(std::ostream& out) : out_(out) {}

  absl::Status Run(const std::vector<std::string>& args);

 private:
  // Takes the global options (--server, --timeout, --tls..., anywhere on
  // the line) out of `all_args` into the members; returns the rest, the
  // command and its own arguments.
  absl::StatusOr<std::vector<std::string>> TakeGlobalOptions(
      const std::vector<std::string>& all_args);
  // One global option (KEY without its dashes).
  absl::Status SetGlobalOption(const std::string& key,
                               const std::string& value);
  absl::Status Add(const ParsedArgs& args);
  absl::Status RunNetwork(const ParsedArgs& args);
  // `run`'s call: over shared memory (--shm), with a profile, or plain.
  // `trace`, when set, gets the run's Chrome trace (required with
  // `profile`).
  absl::StatusOr<std::vector<NamedTensor>> CallRun(
      GlintClient& client, const std::string& name,
      std::vector<NamedTensor> inputs, const ParsedArgs& args, bool profile,
      std::string* trace);
  // Prints each output, and writes it to OUTPUT_DIR/NAME.npy when given.
  absl::Status PrintRunOutputs(const std::vector<NamedTensor>& outputs,
                               const std::optional<std::string>& output_dir);
  absl::Status Perf(const ParsedArgs& args);
  absl::Status List(const ParsedArgs& args);
  absl::Status Show(const ParsedArgs& args);
  absl::Status Remove(const ParsedArgs& args);
  absl::Status Devices(const ParsedArgs& args);
  absl::Status Stats(const ParsedArgs& args);
  absl::Status Health(const ParsedArgs& args);

  // Connects lazily so that usage errors never wait on the network.
  absl::StatusOr<GlintClient*> Client();

  std::ostream& out_;
  std::string server_ = kDefaultServer;
  ClientOptions client_options_;
  absl::Duration run_timeout_ = absl::InfiniteDuration();
  std::string token_file_;
  std::unique_ptr<GlintClient> client_;
};

absl::StatusOr<GlintClient*> Cli::Client() {
  if (client_ == nullptr) {
    if (!token_file_.empty()) {
      absl::StatusOr<std::string> token = ReadTokenFile(token_file_);
      if (!token.ok()) {
        return absl::Status(token.status().code(),
                            absl::StrCat("--token_file: ",
                                         token.status().message()));
      }
      client_options_.token = *std::move(token);
    }
    absl::StatusOr<std::unique_ptr<GlintClient>> c =
        GlintClient::Connect(server_, client_options_);
    if (!c.ok()) return c.status();
    client_ = *std::move(c);
  }
  return client_.get();
}

// `glint perf`'s options from its arguments (usage errors naming them).
absl::StatusOr<PerfOptions> PerfOptionsFromArgs(const ParsedArgs& args) {
  PerfOptions options;
  options.network = args.positional[0];
  if (std::optional<std::string> levels = args.Last("concurrency")) {
    options.concurrency.clear();
    for (absl::string_view level : absl::StrSplit(*levels, ',')) {
      int n = 0;
      if (!absl::SimpleAtoi(level, &n) || n < 1 || n > kMaxPerfConcurrency) {
        return UsageError(absl::StrCat(
            "bad --concurrency level '", level, "' (1 to ",
            kMaxPerfConcurrency, ", comma-separated, e.g. 1,8,64)"));
      }
      options.concurrency.push_back(n);
    }
  }
  if (std::optional<std::string> d = args.Last("duration")) {
    if (!absl::ParseDuration(*d, &options.duration) ||
        options.duration <= absl::ZeroDuration()) {
      return UsageError(absl::StrCat("bad --duration '", *d,
                                     "' (expected e.g. 10s, 500ms)"));
    }
  }
  if (std::optional<std::string> b = args.Last("batch")) {
    if (!absl::SimpleAtoi(*b, &options.batch) || options.batch < 1) {
      return UsageError(absl::StrCat("bad --batch '", *b, "' (expected N >= 1)"));
    }
  }
  for (const std::string& spec : args.All("dim")) {
    std::vector<std::string> kv = absl::StrSplit(spec, absl::MaxSplits('=', 1));
    int64_t size = 0;
    if (kv.size() != 2 || kv[0].empty() || !absl::SimpleAtoi(kv[1], &size) ||
        size < 0) {
      return UsageError(absl::StrCat("bad --dim '", spec,
                                     "' (expected DIM=N, N >= 0)"));
    }
    options.dims[kv[0]] = size;
  }
  if (std::optional<std::string> seed = args.Last("seed")) {
    if (!absl::SimpleAtoi(*seed, &options.seed)) {
      return UsageError(absl::StrCat("bad --seed '", *seed, "'"));
    }
  }
  options.shared_memory = args.Last("shm").has_value();
  options.protocol = args.Last("protocol").value_or("glint");
  if (options.protocol != "glint" && options.protocol != "oip") {
    return UsageError(absl::StrCat("bad --protocol '", options.protocol,
                                   "' (glint or oip)"));
  }
  options.profile = args.Last("profile").has_value();
  if (options.profile && options.protocol != "glint") {
    return UsageError("--profile needs --protocol glint");
  }
  return options;
}

// The server's split of each level: glint.v1 GetStatistics, or the
// inference protocol's ModelStatistics. `glint` must outlive the source.
PerfStatisticsSource PerfStatisticsOf(GlintClient* glint,
                                      const PerfOptions& options) {
  if (options.protocol == "oip") {
    return OipStatisticsSource(glint, options.network);
  }
  return [glint, network = options.network]()
             -> absl::StatusOr<NetworkStatistics> {
    absl::StatusOr<ServingStatistics> stats = glint->GetStatistics(network);
    if (!stats.ok()) return stats.status();
    if (stats->networks.size() != 1) {
      return absl::InternalError("GetStatistics answered another network");
    }
    return stats->networks[0];
  };
}

// `perf --profile`'s table over every level's runs.
std::string FormatPerfProfile(const std::vector<PerfLevel>& levels) {
  OpProfileBuilder all;
  uint64_t profiled = 0;
  for (const PerfLevel& level : levels) {
    all.Add(level.op_profile);
    profiled += level.runs;
  }
  const OpProfile profile = all.Build();
  return absl::StrCat(
      "\nprofile of ", profiled, " runs: ",
      absl::StrFormat("%.3f", profiled > 0
                                  ? profile.total_us / 1000.0 / profiled
                                  : 0.0),
      " ms of node time per run; top ", kTopOps, " ops by total time:\n",
      FormatOpProfile(profile, kTopOps));
}

// A level's row, then its distinct failures, most frequent first.
std::string FormatPerfLevel(const PerfLevel& level) {
  std::string out = absl::StrCat(FormatPerfRow(level), "\n");
  for (size_t i = 0; i < level.error_kinds.size(); ++i) {
    if (i == kPerfErrorsShown) {
      absl::StrAppend(&out, "      ... and ", level.error_kinds.size() - i,
                      " other kinds of error\n");
      break;
    }
    const PerfError& e = level.error_kinds[i];
    absl::StrAppend(&out, "      ", e.count, " x ", StatusLine(e.status),
                    "\n");
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> Cli::TakeGlobalOptions(
    const std::vector<std::string>& all_args) {
  std::vector<std::string> args;
  for (size_t i = 0; i < all_args.size(); ++i) {
    const std::string& a = all_args[i];
    std::string key, value;
    bool global = false;
    if (a == "--tls") {
      client_options_.tls = true;
      continue;
    }
    for (const char* g : {"server", "connect_timeout", "timeout", "tls_ca",
                          "tls_cert", "tls_key", "tls_server_name",
                          "token_file"}) {
      const std::string flag = absl::StrCat("--", g);
      if (NormalizeKey(a) == NormalizeKey(flag)) {
        if (i + 1 >= all_args.size()) {
          return UsageError(absl::StrCat("option ", flag, " needs a value"));
        }
        key = g;
        value = all_args[++i];
        global = true;
      } else if (absl::StartsWith(NormalizeKey(a), NormalizeKey(flag) + "=")) {
        key = g;
        value = a.substr(flag.size() + 1);
        global = true;
      }
      if (global) break;
    }
    if (!global) {
      args.push_back(a);
      continue;
    }
    if (absl::Status s = SetGlobalOption(key, value); !s.ok()) return s;
  }
  return args;
}

absl::Status Cli::SetGlobalOption(const std::string& key,
                                  const std::string& value) {
  if (key != "connect_timeout" && key != "timeout" && value.empty()) {
    return UsageError(absl::StrCat("--", key, " is empty"));
  }
  if (key == "server") {
    server_ = value;
  } else if (key == "tls_ca") {
    client_options_.tls_ca_file = value;
  } else if (key == "tls_cert") {
    client_options_.tls_cert_file = value;
  } else if (key == "tls_key") {
    client_options_.tls_key_file = value;
  } else if (key == "tls_server_name") {
    client_options_.tls_server_name = value;
  } else if (key == "token_file") {
    token_file_ = value;
  } else {
    absl::Duration d;
    if (!absl::ParseDuration(value, &d) || d <= absl::ZeroDuration()) {
      return UsageError(absl::StrCat("bad duration '", value, "' for --",
                                     key, " (expected e.g. 5s, 500ms)"));
    }
    (key == "timeout" ? run_timeout_ : client_options_.connect_timeout) = d;
  }
  return absl::OkStatus();
}

absl::Status Cli::Run(const std::vector<std::string>& all_args) {
  // Global options may appear anywhere; the rest belongs to the command.
  absl::StatusOr<std::vector<std::string>> rest = TakeGlobalOptions(all_args);
  if (!rest.ok()) return rest.status();
  std::vector<std::string> args = *std::move(rest);
  if (args.empty()) return UsageError("no command given");
  const std::string command = args[0];
  args.erase(args.begin());

  if (command == "help" || command == "--help" || command == "-h") {
    out_ << kCliUsage;
    return absl::OkStatus();
  }
  struct Command {
    const char* name;
    std::vector<std::string> options;
    std::vector<std::string> flags;
    absl::Status (Cli::*handler)(const ParsedArgs&);
  };
  const Command commands[] = {
      {"add",
       {"input_shape", "max_dim", "strategy", "plan_devices", "replicas",
        "place", "reuse", "user_config", "max_batch_size", "max_queue_delay_us",
        "preferred_batch_sizes", "precision"},
       {},
       &Cli::Add},
      {"run",
       {"input", "output", "output_dir", "trace", "shm", "profile", "repeat"},
       {"shm", "profile"},
       &Cli::RunNetwork},
      {"perf",
       {"concurrency", "duration", "batch", "dim", "shm", "protocol", "csv",
        "seed", "profile"},
       {"shm", "profile"},
       &Cli::Perf},
      {"list", {}, {}, &Cli::List},
      {"show", {"dot"}, {"dot"}, &Cli::Show},
      {"remove", {}, {}, &Cli::Remove},
      {"devices", {}, {}, &Cli::Devices},
      {"stats", {}, {}, &Cli::Stats},
      {"health", {"service"}, {}, &Cli::Health},
  };
  for (const Command& c : commands) {
    if (command != c.name) continue;
    absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, c.options, c.flags);
    if (!parsed.ok()) return parsed.status();
    return (this->*c.handler)(*parsed);
  }
  return UsageError(absl::StrCat("unknown command '", command, "'"));
}

// `add`'s --input_shape NAME=D0,D1,... and --max_dim DIM=N arguments.
absl::Status ParseInputShapeArgs(const ParsedArgs& args,
                                 AddNetworkOptions* options) {
  for (const std::string& spec : args.All("input_shape")) {
    std::vector<std::string> kv = absl::StrSplit(spec, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty()) {
      return UsageError(absl::StrCat("bad --input_shape '", spec,
                                     "' (expected NAME=D0,D1,...)"));
    }
    absl::StatusOr<Shape> shape = ParseDims(kv[1]);
    if (!shape.ok()) return shape.status();
    options->input_shapes[kv[0]] = *std::move(shape);
  }
  // --max_dim DIM=N: DIM is a dim's name in the model or INPUT:AXIS.
  for (const std::string& spec : args.All("max_dim")) {
    std::vector<std::string> kv = absl::StrSplit(spec, absl::MaxSplits('=', 1));
    int64_t max = 0;
    if (kv.size() != 2 || kv[0].empty() || !absl::SimpleAtoi(kv[1], &max) ||
        max < 1 || max > kMaxDimBound) {
      return UsageError(absl::StrCat("bad --max_dim '", spec,
                                     "' (expected DIM=N, N in 1..",
                                     kMaxDimBound, ")"));
    }
    options->max_dims[kv[0]] = max;
  }
  return absl::OkStatus();
}

// `add`'s --strategy, --plan_devices, --replicas and --place arguments.
absl::Status ParsePartitionArgs(const ParsedArgs& args,
                                PartitionOptions* options) {
  PartitionOptions& partition = *options;
  if (std::optional<std::string> s = args.Last("strategy")) {
    absl::StatusOr<PartitionStrategy> strategy = ParsePartitionStrategy(*s);
    if (!strategy.ok()) return UsageError(strategy.status().message());
    partition.strategy = *strategy;
  }
  for (const auto& [key, field] :
       {std::pair<const char*, int*>{"plan_devices", &partition.plan_devices},
        std::pair<const char*, int*>{"replicas", &partition.replicas}}) {
    if (std::optional<std::string> v = args.Last(key)) {
      if (!absl::SimpleAtoi(*v, field) || *field < 0) {
        return UsageError(absl::StrCat("bad --", key, " '", *v,
                                       "' (expected a number)"));
      }
    }
  }
  for (const std::string& spec : args.All("place")) {
    std::vector<std::string> kv = absl::StrSplit(spec, absl::MaxSplits('=', 1));
    int device = 0;
    if (kv.size() != 2 || kv[0].empty() || !absl::SimpleAtoi(kv[1], &device)) {
      return UsageError(absl::StrCat("bad --place '", spec,
                                     "' (expected PATTERN=DEVICE)"));
    }
    partition.user_plan.push_back({kv[0], device});
  }
  if (!partition.user_plan.empty() &&
      partition.strategy == PartitionStrategy::kAuto) {
    partition.strategy = PartitionStrategy::kUser;
  }
  return absl::OkStatus();
}

// `add`'s dynamic batching arguments, checked together.
absl::Status ParseBatchingArgs(const ParsedArgs& args,
                               DynamicBatching* options) {
  DynamicBatching& batching = *options;
  if (std::optional<std::string> v = args.Last("max_batch_size")) {
    if (!absl::SimpleAtoi(*v, &batching.max_batch_size)) {
      return UsageError(absl::StrCat("bad --max_batch_size '", *v,
                                     "' (expected a number)"));
    }
  }
  if (std::optional<std::string> v = args.Last("max_queue_delay_us")) {
    int64_t us = 0;
    if (!absl::SimpleAtoi(*v, &us) || us < 0 ||
        us > absl::ToInt64Microseconds(kMaxQueueDelay)) {
      return UsageError(absl::StrCat(
          "bad --max_queue_delay_us '", *v, "' (expected 0..",
          absl::ToInt64Microseconds(kMaxQueueDelay), " microseconds)"));
    }
    batching.max_queue_delay = absl::Microseconds(us);
  }
  if (std::optional<std::string> v = args.Last("preferred_batch_sizes")) {
    for (absl::string_view part : absl::StrSplit(*v, ',')) {
      int size = 0;
      if (!absl::SimpleAtoi(part, &size)) {
        return UsageError(absl::StrCat("bad --preferred_batch_sizes '", *v,
                                       "' (expected B1,B2,...)"));
      }
      batching.preferred_batch_sizes.push_back(size);
    }
  }
  if (absl::Status s = ValidateDynamicBatching(batching); !s.ok()) {
    return UsageError(s.message());
  }
  return absl::OkStatus();
}

absl::Status Cli::Add(const ParsedArgs& args) {
  if (absl::Status s =
          ExpectPositionals(args, 2, "add NAME MODEL.onnx [--input_shape ...]");
      !s.ok()) {
    return s;
  }
  AddNetworkOptions options;
  if (absl::Status s = ParseInputShapeArgs(args, &options); !s.ok()) return s;
  if (absl::Status s = ParsePartitionArgs(args, &options.partition);
      !s.ok()) {
    return s;
  }
  if (std::optional<std::string> reuse = args.Last("reuse")) {
    absl::StatusOr<PlanReuse> parsed = ParsePlanReuse(*reuse);
    if (!parsed.ok()) return UsageError(parsed.status().message());
    options.reuse = *parsed;
  }
  if (std::optional<std::string> config = args.Last("user_config")) {
    options.user_config = *config;
  }
  if (absl::Status s = ParseBatchingArgs(args, &options.batching); !s.ok()) {
    return s;
  }
  if (std::optional<std::string> v = args.Last("precision")) {
    absl::StatusOr<Precision> precision = ParsePrecision(*v);
    if (!precision.ok()) return UsageError(precision.status().message());
    options.precision = *precision;
  }
  // Streamed from the file a piece at a time: neither the CLI nor glintd
  // holds the model whole. A file that is not there fails before connecting.
  std::error_code ec;
  if (!std::filesystem::exists(args.positional[1], ec)) {
    return ReadFileToString(args.positional[1]).status();
  }
  absl::StatusOr<GlintClient*> client = Client();
  if (!client.ok()) return client.status();
  absl::StatusOr<NetworkInfo> info = (*client)->AddNetworkFromFile(
      args.positional[0], args.positional[1], options);
  if (!info.ok()) return info.status();
  out_ << "added " << FormatNetwork(*info, /*detailed=*/false);
  return absl::OkStatus();
}

// `run`'s --input [NAME=]FILE arguments, every file read before any call
// (a typo in a path should not cost a round trip). Inputs named neither
// on the line nor in their file are listed in `unnamed`.
absl::StatusOr<std::vector<NamedTensor>> ReadRunInputs(
    const ParsedArgs& args, std::vector<size_t>* unnamed) {
  std::vector<NamedTensor> inputs;
  for (const std::string& spec : args.All("input")) {
    std::string input_name, path = spec;
    const size_t eq = spec.find('=');
    if (eq != std::string::npos) {
      input_name = spec.substr(0, eq);
      path = spec.substr(eq + 1);
    }
    absl::StatusOr<NamedTensor> t = ReadTensorFile(path);
    if (!t.ok()) return t.status();
    if (!input_name.empty()) t->name = input_name;
    if (t->name.empty()) unnamed->push_back(inputs.size());
    inputs.push_back(*std::move(t));
  }
  return inputs;
}

// Whether `b` holds the outputs of `a`: names, dtypes and shapes equal,
// float32 values within 1e-5 * (1 + |a|) (another daemon's kernels may sum
// in another order; NaN where `a` has NaN), every other dtype byte for
// byte. `why` says where not.
bool SameOutputs(const std::vector<NamedTensor>& a,
                 const std::vector<NamedTensor>& b, std::string* why) {
  if (a.size() != b.size()) {
    *why = absl::StrCat(b.size(), " outputs, not ", a.size());
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    const Tensor& x = a[i].tensor;
    const Tensor& y = b[i].tensor;
    if (a[i].name != b[i].name || x.dtype() != y.dtype() ||
        x.shape() != y.shape()) {
      *why = absl::StrCat("output '", b[i].name, "' is ", DTypeName(y.dtype()),
                          y.shape().ToString(), ", not '", a[i].name, "' ",
                          DTypeName(x.dtype()), x.shape().ToString());
      return false;
    }
    if (x.dtype() == DType::kFloat32) {
      const float* p = x.data<float>();
      const float* q = y.data<float>();
      for (int64_t k = 0; k < x.num_elements(); ++k) {
        const bool both_nan = std::isnan(p[k]) && std::isnan(q[k]);
        if (!both_nan &&
            !(std::fabs(p[k] - q[k]) <= 1e-5f * (1.0f + std::fabs(p[k])))) {
          *why = absl::StrCat("output '", a[i].name, "' element ", k, " is ",
                              q[k], ", not ", p[k]);
          return false;
        }
      }
    } else if (x.bytes() != y.bytes()) {
      *why = absl::StrCat("output '", a[i].name, "' differs");
      return false;
    }
  }
  return true;
}

absl::Status Cli::RunNetwork(const ParsedArgs& args) {
  if (absl::Status s = ExpectPositionals(
          args, 1, "run NAME --input [INPUT=]FILE... [--output-dir DIR]");
      !s.ok()) {
    return s;
  }
  const std::string& name = args.positional[0];
  const std::optional<std::string> output_dir = args.Last("output_dir");
  if (output_dir.has_value()) {
    std::error_code ec;
    std::filesystem::create_directories(*output_dir, ec);
    if (ec) {
      return absl::PermissionDeniedError(absl::StrCat(
          "cannot create --output-dir '", *output_dir, "': ", ec.message()));
    }
  }
  std::vector<size_t> unnamed;
  absl::StatusOr<std::vector<NamedTensor>> inputs =
      ReadRunInputs(args, &unnamed);
  if (!inputs.ok()) return inputs.status();
  absl::StatusOr<GlintClient*> client = Client();
  if (!client.ok()) return client.status();
  if (!unnamed.empty()) {
    absl::StatusOr<NetworkInfo> info = (*client)->GetNetwork(name);
    if (!info.ok()) return info.status();
    if (unnamed.size() != 1 || info->inputs.size() != 1) {
      return UsageError(
          "name each input as --input NAME=FILE (only a network with a "
          "single input takes an unnamed .npy)");
    }
    (*inputs)[unnamed[0]].name = info->inputs[0].name;
  }
  const bool profile = args.Last("profile").has_value();
  std::optional<std::string> trace_path = args.Last("trace");
  if (profile && !trace_path.has_value()) {
    trace_path = absl::StrCat("glint_profile_", SafeFileName(name), ".json");
  }
  int64_t repeat = 1;
  if (std::optional<std::string> r = args.Last("repeat"); r.has_value()) {
    if (!absl::SimpleAtoi(*r, &repeat) || repeat < 1 || repeat > 1000000) {
      return UsageError(
          absl::StrCat("bad --repeat '", *r, "' (expected N in 1..1000000)"));
    }
    if (profile || trace_path.has_value()) {
      return UsageError("--repeat takes neither --trace nor --profile");
    }
  }
  std::string trace_json;
  const std::vector<NamedTensor> sent = *inputs;
  absl::StatusOr<std::vector<NamedTensor>> outputs =
      CallRun(**client, name, *std::move(inputs), args, profile,
              trace_path.has_value() ? &trace_json : nullptr);
  if (!outputs.ok()) return outputs.status();
  // --repeat: the same run again on the one channel (spread over every
  // daemon of the --server target), each answer held to the first's.
  for (int64_t k = 2; k <= repeat; ++k) {
    absl::StatusOr<std::vector<NamedTensor>> again =
        CallRun(**client, name, sent, args, false, nullptr);
    std::string why;
    if (!again.ok()) {
      return absl::Status(again.status().code(),
                          absl::StrCat("run ", k, " of ", repeat, ": ",
                                       again.status().message()));
    }
    if (!SameOutputs(*outputs, *again, &why)) {
      return absl::InternalError(absl::StrCat(
          "run ", k, " of ", repeat, " answered otherwise than run 1: ", why));
    }
  }
  if (trace_path.has_value()) {
    std::ofstream file(*trace_path, std::ios::binary | std::ios::trunc);
    file << trace_json;
    if (!file.good()) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot write --trace '", *trace_path, "'"));
    }
    out_ << "trace written to " << *trace_path << "\n";
  }
  if (absl::Status s = PrintRunOutputs(*outputs, output_dir); !s.ok()) {
    return s;
  }
  if (repeat > 1) {
    out_ << repeat << " runs, every one answered as the first\n";
  }
  if (profile) {
    absl::StatusOr<std::vector<OpSpan>> spans =
        OpSpansFromChromeJson(trace_json);
    if (!spans.ok()) {
      return absl::InternalError(absl::StrCat(
          "malformed profile from glintd: ", spans.status().message()));
    }
    out_ << "top ops by total time:\n"
         << FormatOpProfile(AggregateOpProfile(*spans), kTopOps);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<NamedTensor>> Cli::CallRun(
    GlintClient& client, const std::string& name,
    std::vector<NamedTensor> inputs, const ParsedArgs& args, bool profile,
    std::string* trace) {
  if (args.Last("shm").has_value()) {
    return RunNetworkInSharedMemory(client, name, inputs, args.All("output"),
                                    run_timeout_, trace, profile);
  }
  if (!profile) {
    return client.RunNetwork(name, inputs, args.All("output"), run_timeout_,
                             trace);
  }
  RunNetworkCall call;
  call.inputs = std::move(inputs);
  call.requested_outputs = args.All("output");
  call.timeout = run_timeout_;
  call.profile = true;
  absl::StatusOr<RunNetworkReply> reply = client.Run(name, call);
  if (!reply.ok()) return reply.status();
  *trace = std::move(reply->trace_json);
  return std::move(reply->outputs);
}

absl::Status Cli::PrintRunOutputs(
    const std::vector<NamedTensor>& outputs,
    const std::optional<std::string>& output_dir) {
  for (const NamedTensor& t : outputs) {
    out_ << t.name << ": " << DTypeName(t.tensor.dtype())
         << t.tensor.shape().ToString() << "\n  "
         << FormatTensorValues(t.tensor) << "\n";
    if (output_dir.has_value()) {
      const std::string path =
          (std::filesystem::path(*output_dir) / (SafeFileName(t.name) + ".npy"))
              .string();
      if (absl::Status s = WriteNpyFile(path, t.tensor); !s.ok()) return s;
      out_ << "  wrote " << path << "\n";
    }
  }
  return absl::OkStatus();
}

absl::Status Cli::Perf(const ParsedArgs& args) {
  if (absl::Status s = ExpectPositionals(
          args, 1, "perf NAME [--concurrency 1,8] [--duration 10s] ...");
      !s.ok()) {
    return s;
  }
  absl::StatusOr<PerfOptions> parsed = PerfOptionsFromArgs(args);
  if (!parsed.ok()) return parsed.status();
  const PerfOptions& options = *parsed;
  const std::optional<std::string> csv_path = args.Last("csv");
  absl::StatusOr<GlintClient*> client = Client();
  if (!client.ok()) return client.status();
  out_ << "glint perf " << options.network << ": "
       << absl::FormatDuration(options.duration) << " per level, "
       << (options.batch > 0 ? absl::StrCat("batch ", options.batch)
                             : std::string("the network's shapes"))
       << ", protocol " << options.protocol
       << (options.shared_memory ? ", shared memory" : "")
       << (options.profile ? ", profiled" : "") << "\n"
       << PerfTableHeader() << std::endl;
  uint64_t errors = 0, runs = 0;
  absl::Status first_error;
  absl::StatusOr<std::vector<PerfLevel>> levels = RunPerf(
      **client, options, PerfStatisticsOf(*client, options),
      [&](const PerfLevel& level) {
        out_ << FormatPerfLevel(level);
        if (first_error.ok() && !level.error_kinds.empty()) {
          first_error = level.error_kinds[0].status;
        }
        out_.flush();
        errors += level.errors;
        runs += level.runs + level.errors;
      });
  if (!levels.ok()) return levels.status();
  if (options.profile) out_ << FormatPerfProfile(*levels);
  if (csv_path.has_value()) {
    std::ofstream file(*csv_path, std::ios::binary | std::ios::trunc);
    file << FormatPerfCsv(*levels);
    if (!file.good()) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot write --csv '", *csv_path, "'"));
    }
    out_ << "wrote " << *csv_path << "\n";
  }
  if (errors > 0) {
    // The most frequent failure's code, so that scripts can tell a refused
    // request from a daemon that went away.
    return absl::Status(first_error.code(),
                        absl::StrCat(errors, " of ", runs,
                                     " runs failed, e.g. ",
                                     first_error.message()));
  }
  return absl::OkStatus();
}

absl::Status Cli::List(const ParsedArgs& args) {
  if (absl::Status s = ExpectPositionals(args, 0, "list"); !s.ok()) return s;
  absl::StatusOr<GlintClient*> client = Client();
  if (!client.ok()) return client.status();
  absl::StatusOr<std::vector<NetworkInfo>> networks = (*client)->ListNetworks();
  if (!networks.ok()) return networks.status();
  if (networks->empty()) out_ << "no networks\n";
  for (const NetworkInfo& n : *networks) {
    out_ << FormatNetwork(n, /*detailed=*/false);
  }
  return absl::OkStatus();
}

absl::Status Cli::Show(const ParsedArgs& args) {
  if (absl::Status s = ExpectPositionals(args, 1, "show NAME"); !s.ok()) {
    return s;
  }
  absl::StatusOr<GlintClient*> client = Client();
  if (!client.ok()) return client.status();
  const bool dot = args.Last("dot").has_value();
  absl::StatusOr<NetworkInfo> info =
      (*client)->GetNetwork(args.positional[0], dot);
  if (!info.ok()) return info.status();
  if (dot) {
    out_ << info->dot;
  } else {
    out_ << FormatNetwork(*info, /*detailed=*/true);
  }
  return absl::OkStatus();
}

absl::Status Cli::Remove(const ParsedArgs& args) {
  if (absl::Status s = ExpectPositionals(args, 1, "remove NAME"); !s.ok()) {
    return s;
  }
  absl::StatusOr<GlintClient*> client = Client();
  if (!client.ok()) return client.status();
  if (absl::Status s = (*client)->RemoveNetwork(args.positional[0]); !s.ok()) {
    return s;
  }
  out_ << "removed network " << args.positional[0] << "\n";
  return absl::OkStatus();
}

absl::Status Cli::Devices(const ParsedArgs& args) {
  if (absl::Status s = ExpectPositionals(args, 0, "devices"); !s.ok()) {
    return s;
  }
  absl::StatusOr<GlintClient*> client = Client();
  if (!client.ok()) return client.status();
  absl::StatusOr<std::vector<DeviceInfo>> devices = (*client)->GetDevices();
  if (!devices.ok()) return devices.status();
  for (const DeviceInfo& d : *devices) out_ << FormatDevice(d) << "\n";
  return absl::OkStatus();
}

// What a Kubernetes gRPC probe asks, as a command (an exec probe, a
// container's health check): prints the status; fails (exit 1) unless it
// is SERVING.
absl::Status Cli::Health(const ParsedArgs& args) {
  if (absl::Status s = ExpectPositionals(args, 0, "health [--service NAME]");
      !s.ok()) {
    return s;
  }
  absl::StatusOr<GlintClient*> client = Client();
  if (!client.ok()) return client.status();
  const std::string service = args.Last("service").value_or("");
  absl::StatusOr<std::string> status = (*client)->CheckHealth(service);
  if (!status.ok()) return status.status();
  out_ << *status << "\n";
  if (*status != "SERVING") {
    return absl::UnavailableError(
        absl::StrCat("service '", service, "' is ", *status, ", not SERVING"));
  }
  return absl::OkStatus();
}

absl::Status Cli::Stats(const ParsedArgs& args) {
  if (args.positional.size() > 1) {
    return UsageError("expected: glint stats [NAME]");
  }
  const std::string name = args.positional.empty() ? "" : args.positional[0];
  absl::StatusOr<GlintClient*> client = Client();
  if (!client.ok()) return client.status();
  absl::StatusOr<ServingStatistics> stats = (*client)->GetStatistics(name);
  if (!stats.ok()) return stats.status();
  out_ << FormatStatistics(stats->networks, stats->devices,
                           /*detailed=*/!name.empty());
  return absl::OkStatus();
}

}  // namespace

std::string FormatCliError(const absl::Status& status) {
  return absl::StrCat("glint: error: ", StatusLine(status));
}

std::string SafeFileName(const std::string& name) {
  std::string safe = name.empty() ? std::string("output") : name;
  for (char& c : safe) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' &&
        c != '_' && c != '-') {
      c = '_';
    }
  }
  // "." and ".." are path components, not file names.
  if (safe.find_first_not_of('.') == std::string::npos) safe = "_" + safe;
  return safe;
}

int RunGlintCli(const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err) {
  Cli cli(out);
  const absl::Status status = cli.Run(args);
  if (status.ok()) return 0;
  err << FormatCliError(status) << std::endl;
  return IsUsageError(status) ? 2 : 1;
}

}  // namespace glint
