#include "client/cli_usage.h"

namespace glint {

const char kCliUsage[] =
    R"(usage: glint [--server=HOST:PORT] [--connect_timeout=5s] [--timeout=DURATION]
             [--tls_ca=CA.pem | --tls] [--tls_cert=CERT.pem --tls_key=KEY.pem]
             [--tls_server_name=NAME] [--token_file=FILE] COMMAND [ARGS]

Talks to a glintd daemon (default server 127.0.0.1:50051). --server takes
any gRPC target: HOST:PORT, dns:///NAME:PORT (every address of NAME) or
ipv4:A:P1,A:P2; runs are spread over all of its daemons (round_robin) and
retried on another one when a daemon is unavailable.

commands:
  add NAME MODEL.onnx [--input_shape NAME=D0,D1,...]... [--max_dim DIM=N]...
      [--strategy S] [--plan_devices N] [--replicas R]
      [--place PATTERN=DEVICE]... [--reuse moo|match|override|graph]
      [--user_config TEXT] [--max_batch_size N [--max_queue_delay_us U]
       [--preferred_batch_sizes B1,B2,...]] [--precision fp32|bf16]
                     add an ONNX model as network NAME. Inputs' symbolic
                     dims stay dynamic: each run brings its own size, up to
                     --max_dim's bound (DIM: the dim's name in the model,
                     e.g. seq, or INPUT:AXIS); device memory is reserved
                     for a run at the bounds, and a dim given none gets
                     4096 lowered until that fits (show lists them);
                     --input_shape fixes an input's shape instead. S: auto (default),
                     whole, memory, load_balanced or user; --place rules
                     (node name or glob -> logical device) make a user plan.
                     --max_batch_size turns on dynamic batching: concurrent
                     runs are merged along their first dim up to N rows
                     (every input and output must have the batch first;
                     only runs equal in their other dims merge, so those
                     may stay dynamic), waiting up to U microseconds
                     (0..10000000, default 0) for a batch to fill or reach
                     a preferred size.
                     --precision bf16 computes MatMul/Gemm/Conv with
                     bfloat16 operands (float32 accumulation, inputs and
                     outputs); fp32 is the default.
  run NAME --input [INPUT=]FILE... [--output OUTPUT]... [--output-dir DIR]
      [--trace FILE] [--profile] [--shm] [--repeat N]
                     run NAME; FILE is .npy or an ONNX TensorProto .pb; the
                     input name may be left out for a .pb that carries one or
                     a network with a single input. Prints each output;
                     --output-dir also writes OUTPUT.npy per output;
                     --trace writes the run's Chrome trace JSON (Perfetto);
                     --profile adds a slice per node to that trace (written
                     to --trace FILE, or glint_profile_NAME.json) and prints
                     the ops that took longest;
                     --shm passes inputs and outputs through POSIX shared
                     memory (glintd on this host) instead of the message;
                     --repeat N makes the run N times on one channel (spread
                     over every daemon of --server) and fails unless every
                     answer is the first's (float32 within
                     1e-5 * (1 + |first|), the rest exact): a check of a
                     set of daemons.
  perf NAME [--concurrency 1,8,64,512] [--duration 10s] [--batch N]
      [--dim DIM=N]... [--shm] [--protocol glint|oip] [--csv FILE] [--profile]
                     load test: per concurrency level, keeps that many runs
                     of random inputs in flight for the duration and prints
                     runs/s, p50/p90/p99 latency, errors (failed calls and
                     replies whose outputs differ from the network's in
                     name, dtype or shape) and the server's queue/compute
                     split; --batch N sets the inputs' first dimension,
                     --dim the size of a dynamic dim (by name, e.g. seq,
                     or INPUT:AXIS; each must be given);
                     --protocol oip goes through the Open Inference
                     Protocol (ModelInfer, ModelStatistics, Triton's
                     system shared memory with --shm) instead of glint.v1;
                     --csv also writes the table as CSV; --profile profiles
                     every run and then prints the top ops by total time
                     (count, mean, share) and the layout reorders' total.
                     Exit code 1 if any run failed.
  list               list the networks
  show NAME [--dot]  inputs, outputs, partitions, devices, memory and
                     estimated costs of a network; --dot prints the DAG as
                     Graphviz DOT instead (render: glint show N --dot | dot -Tpng)
  remove NAME        remove a network
  devices            list the daemon's devices
  stats [NAME]       serving statistics: per network (or NAME only, with
                     its partitions) requests, executions, queue and
                     p50/p99 times; per device memory and launches
  health [--service NAME]
                     grpc.health.v1 Check, as Kubernetes' gRPC probes ask
                     it: prints SERVING, NOT_SERVING...; exit code 0 only
                     for SERVING. NAME "" (the default) is the server's
                     overall status, ready once its store and repository
                     are loaded; glintd's --liveness_service names the one
                     that only says the process answers. An exec probe
                     where gRPC probes are not available.
  help               this text

--timeout bounds `run` (e.g. 30s, 500ms); without it a run has no deadline.
Securing (glintd's --tls_cert, --tls_client_ca, --auth_tokens): --tls_ca
trusts that CA for glintd's certificate (--tls: the system's roots);
--tls_cert/--tls_key present a client certificate (mutual TLS);
--tls_server_name checks that name instead of the --server host;
--token_file sends the token on its first line as 'authorization: Bearer'.
Errors print one line "glint: error: CODE: message"; exit code 2 for usage
errors, 1 otherwise.
)";

}  // namespace glint
