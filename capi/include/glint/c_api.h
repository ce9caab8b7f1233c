/* Glint's C API: the Glint runtime embedded in any program, in any language
 * with a C foreign-function interface, through libglint.so.
 *
 *   #include <glint/c_api.h>        cc app.c $(pkg-config --cflags --libs glint)
 *
 * A runtime owns simulated devices (created from a device spec, glintd's
 * --devices syntax) and the networks (ONNX models) added to it; a run takes
 * named input tensors and gives named output tensors, synchronously or
 * through a completion callback, with an optional deadline, priority and
 * cancellation handle. See capi/README.md and docs/ARCHITECTURE.md.
 *
 * Conventions, for every function below:
 * - Errors. Every function but the *_delete ones and the glint_status_ /
 *   glint_code_ accessors returns a GlintStatus*: NULL on success, else an
 *   error the caller owns and frees with glint_status_delete(), carrying a
 *   code (GlintCode, Abseil's/gRPC's canonical codes) and a message naming
 *   the function and what was wrong. Nothing here aborts the host program or
 *   lets a C++ exception out: a NULL pointer, a handle of the wrong kind, a
 *   size that does not match and a failure inside Glint all come back as a
 *   status. Out-parameters are written only on success.
 * - Handles are opaque. Each kind carries a tag checked on entry, so a
 *   handle of another kind (or memory that is no handle) is refused with
 *   GLINT_INVALID_ARGUMENT. A handle already deleted is caught only while
 *   its memory has not been reused: do not rely on it.
 * - Ownership. A function named *_create, or one that fills a `Glint... **out`,
 *   gives the caller a handle to free with the matching *_delete. A
 *   `const Glint...*` out-parameter is borrowed from its container and lives
 *   as long as the container. Strings passed in are copied; strings given
 *   back (const char*) are borrowed from the handle they come from.
 *   *_delete(NULL) does nothing; *_delete of a handle of another kind does
 *   nothing either (nothing is freed).
 * - Threads. A GlintRuntime is thread-safe: every glint_runtime_* function
 *   may be called concurrently on one runtime (but glint_runtime_delete,
 *   which must be the last). A GlintCancel may be triggered from any
 *   thread. Tensors, tensor lists, networks, options and statuses are
 *   thread-compatible: concurrent reads are safe, a change (set, delete)
 *   needs the caller's own exclusion.
 *
 * Compatibility: the C API is stable within a major version (the SONAME's
 * libglint.so.N): minor versions only add functions, codes and enum values;
 * nothing is removed or changes signature or meaning. Compare
 * glint_api_version() with GLINT_C_API_VERSION to learn what the loaded
 * library offers.
 */
#ifndef GLINT_C_API_H_
#define GLINT_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GLINT_EXPORT __attribute__((visibility("default")))
#else
#define GLINT_EXPORT
#endif

/* The version of this header: major * 10000 + minor * 100 + patch. */
#define GLINT_C_API_VERSION_MAJOR 0
#define GLINT_C_API_VERSION_MINOR 6
#define GLINT_C_API_VERSION_PATCH 0
#define GLINT_C_API_VERSION                                        \
  (GLINT_C_API_VERSION_MAJOR * 10000 + GLINT_C_API_VERSION_MINOR * 100 + \
   GLINT_C_API_VERSION_PATCH)

/* The version of the loaded library, as GLINT_C_API_VERSION encodes it. A
 * program built against this header works with any library of the same
 * major version whose version is at least the header's. Thread-safe. */
GLINT_EXPORT uint32_t glint_api_version(void);

/* ---- Status ------------------------------------------------------------ */

/* The canonical codes (the numbers are Abseil's and gRPC's). */
typedef enum GlintCode {
  GLINT_OK = 0,
  GLINT_CANCELLED = 1,
  GLINT_UNKNOWN = 2,
  GLINT_INVALID_ARGUMENT = 3,
  GLINT_DEADLINE_EXCEEDED = 4,
  GLINT_NOT_FOUND = 5,
  GLINT_ALREADY_EXISTS = 6,
  GLINT_PERMISSION_DENIED = 7,
  GLINT_RESOURCE_EXHAUSTED = 8,
  GLINT_FAILED_PRECONDITION = 9,
  GLINT_ABORTED = 10,
  GLINT_OUT_OF_RANGE = 11,
  GLINT_UNIMPLEMENTED = 12,
  GLINT_INTERNAL = 13,
  GLINT_UNAVAILABLE = 14,
  GLINT_DATA_LOSS = 15,
  GLINT_UNAUTHENTICATED = 16
} GlintCode;

/* An error: a code and a message. NULL means success. Immutable. */
typedef struct GlintStatus GlintStatus;

/* GLINT_OK for NULL; GLINT_INVALID_ARGUMENT for a pointer that is not a
 * status. */
GLINT_EXPORT GlintCode glint_status_code(const GlintStatus* status);
/* The message, borrowed from `status` (valid until it is deleted): "" for
 * NULL, a fixed message for a pointer that is not a status. Never NULL. */
GLINT_EXPORT const char* glint_status_message(const GlintStatus* status);
GLINT_EXPORT void glint_status_delete(GlintStatus* status);
/* "OK", "INVALID_ARGUMENT", ...; "UNKNOWN_CODE" for other numbers. Static. */
GLINT_EXPORT const char* glint_code_name(GlintCode code);

/* ---- Tensors ----------------------------------------------------------- */

/* Element types; the numbers are ONNX's TensorProto.DataType. */
typedef enum GlintDType {
  GLINT_DTYPE_UNDEFINED = 0,
  GLINT_DTYPE_FLOAT32 = 1,
  GLINT_DTYPE_UINT8 = 2,
  GLINT_DTYPE_INT8 = 3,
  GLINT_DTYPE_UINT16 = 4,
  GLINT_DTYPE_INT16 = 5,
  GLINT_DTYPE_INT32 = 6,
  GLINT_DTYPE_INT64 = 7,
  GLINT_DTYPE_BOOL = 9,
  GLINT_DTYPE_FLOAT16 = 10,
  GLINT_DTYPE_FLOAT64 = 11,
  GLINT_DTYPE_UINT32 = 12,
  GLINT_DTYPE_UINT64 = 13,
  GLINT_DTYPE_BFLOAT16 = 16
} GlintDType;

/* A named, dense, row-major host tensor (little-endian elements), owning
 * its bytes. */
typedef struct GlintTensor GlintTensor;
/* The outputs of a run, in the network's output order (or the order the
 * run options requested). */
typedef struct GlintTensorList GlintTensorList;

/* A tensor `name` (may be "" but not NULL) of `dtype` and shape
 * dims[0..rank) holding a copy of `data`, which must be exactly
 * element count * element size bytes (`byte_size`); data may be NULL only
 * with byte_size 0 for an all-zero tensor. dims may be NULL when rank is 0
 * (a scalar). INVALID_ARGUMENT for a wrong size, a negative dimension, an
 * unknown dtype or a shape over Glint's ceilings (rank 64, 1 TiB). */
GLINT_EXPORT GlintStatus* glint_tensor_create(const char* name,
                                              GlintDType dtype,
                                              const int64_t* dims, size_t rank,
                                              const void* data,
                                              size_t byte_size,
                                              GlintTensor** out);
/* A tensor from a serialized ONNX TensorProto (an ONNX test case's
 * input_0.pb, say), named as the proto names it. INVALID_ARGUMENT for bytes
 * that are not one, UNIMPLEMENTED for a dtype Glint lacks. */
GLINT_EXPORT GlintStatus* glint_tensor_create_from_onnx(const void* proto,
                                                        size_t size,
                                                        GlintTensor** out);
/* Reads a tensor; every out-parameter may be NULL (not wanted). `name`,
 * `dims` (rank entries) and `data` (byte_size bytes) are borrowed from the
 * tensor. */
GLINT_EXPORT GlintStatus* glint_tensor_info(const GlintTensor* tensor,
                                            const char** name,
                                            GlintDType* dtype,
                                            const int64_t** dims, size_t* rank,
                                            const void** data,
                                            size_t* byte_size);
/* Copies the tensor's bytes into dst, which must hold exactly its byte
 * size (`dst_size`; INVALID_ARGUMENT naming both sizes otherwise). */
GLINT_EXPORT GlintStatus* glint_tensor_copy_data(const GlintTensor* tensor,
                                                 void* dst, size_t dst_size);
GLINT_EXPORT void glint_tensor_delete(GlintTensor* tensor);

GLINT_EXPORT GlintStatus* glint_tensor_list_size(const GlintTensorList* list,
                                                 size_t* size);
/* The index-th tensor, borrowed from the list; OUT_OF_RANGE past its end. */
GLINT_EXPORT GlintStatus* glint_tensor_list_get(const GlintTensorList* list,
                                                size_t index,
                                                const GlintTensor** tensor);
/* The tensor called `name`, borrowed; NOT_FOUND if none is. */
GLINT_EXPORT GlintStatus* glint_tensor_list_find(const GlintTensorList* list,
                                                 const char* name,
                                                 const GlintTensor** tensor);
GLINT_EXPORT void glint_tensor_list_delete(GlintTensorList* list);

/* ---- Runtime ----------------------------------------------------------- */

/* A HostManager with its devices and networks. */
typedef struct GlintRuntime GlintRuntime;

/* Creates a runtime on the devices of `device_spec`, glintd's --devices
 * syntax: entries "TYPE[*COUNT][:memory=SIZE]" separated by commas, e.g.
 * "sim*2:memory=2GiB" (NULL means exactly that default). ONNX's checker
 * and shape inference run in this process: only add models you trust.
 * INVALID_ARGUMENT for a malformed spec, NOT_FOUND for an unknown device
 * type. */
GLINT_EXPORT GlintStatus* glint_runtime_create(const char* device_spec,
                                               GlintRuntime** out);
/* Refuses new work, waits for the runs in flight (their callbacks run),
 * then frees the runtime, its networks and devices. FAILED_PRECONDITION
 * (nothing freed) when called from a run's completion callback, which would
 * wait for itself. NULL: nothing to do, returns NULL. */
GLINT_EXPORT GlintStatus* glint_runtime_delete(GlintRuntime* runtime);

/* ---- Networks ---------------------------------------------------------- */

/* A network as added: its name, inputs and outputs (name, dtype, shape)
 * and plan. A snapshot: it does not change, and stays valid after the
 * network is removed. */
typedef struct GlintNetwork GlintNetwork;
typedef struct GlintNetworkList GlintNetworkList;
/* How a network is added; defaults as HostManager's AddNetworkOptions. */
typedef struct GlintAddOptions GlintAddOptions;

GLINT_EXPORT GlintStatus* glint_add_options_create(GlintAddOptions** out);
GLINT_EXPORT void glint_add_options_delete(GlintAddOptions* options);
/* "auto" (the default), "whole", "memory", "load_balanced". */
GLINT_EXPORT GlintStatus* glint_add_options_set_strategy(
    GlintAddOptions* options, const char* strategy);
/* Devices one copy of the network spans (0, the default: the strategy
 * chooses); must be >= 0. */
GLINT_EXPORT GlintStatus* glint_add_options_set_plan_devices(
    GlintAddOptions* options, int plan_devices);
/* Copies of the network, runs spread over them (default 1); must be >= 1. */
GLINT_EXPORT GlintStatus* glint_add_options_set_replicas(
    GlintAddOptions* options, int replicas);
/* What MatMul/Gemm/Conv compute in: "fp32" (default) or "bf16". */
GLINT_EXPORT GlintStatus* glint_add_options_set_precision(
    GlintAddOptions* options, const char* precision);
/* Binds a graph input with symbolic dimensions to the static shape
 * dims[0..rank). Without it such dims are dynamic: each run brings its own
 * size, up to the dim's bound. */
GLINT_EXPORT GlintStatus* glint_add_options_set_input_shape(
    GlintAddOptions* options, const char* input, const int64_t* dims,
    size_t rank);
/* The bound of a dynamic input dim: `dim` is the dim's name in the model
 * ("seq") or "INPUT:AXIS" for a dim it does not name; `max` in 1..2^31
 * (default 4096, lowered until the devices can reserve a run at the
 * bounds). Device memory is reserved for a run at the bounds: when it
 * cannot be, the add fails with RESOURCE_EXHAUSTED naming them. A name
 * that is no dynamic dim of the model fails the add with INVALID_ARGUMENT. */
GLINT_EXPORT GlintStatus* glint_add_options_set_max_dim(
    GlintAddOptions* options, const char* dim, int64_t max);

/* Adds the ONNX model `model` (model_size bytes, copied) as `name`, with
 * `options` (NULL: defaults). `out` may be NULL; else it receives the
 * network. Errors: INVALID_ARGUMENT (bad name, model or options),
 * UNIMPLEMENTED (an op Glint lacks), ALREADY_EXISTS, RESOURCE_EXHAUSTED
 * (does not fit the devices). A failed add leaves no trace. Blocks while
 * the model is imported, partitioned and loaded. */
GLINT_EXPORT GlintStatus* glint_runtime_add_network(
    GlintRuntime* runtime, const char* name, const void* model,
    size_t model_size, const GlintAddOptions* options, GlintNetwork** out);
/* The same from the file at `path` (NOT_FOUND if it is not there,
 * PERMISSION_DENIED if it cannot be opened, INVALID_ARGUMENT if it is not a
 * regular file). The file is mapped, not read into memory, and its pages
 * are dropped after each pass over them, so a large model is not held in
 * memory beside the network built from it; the file must not be changed
 * until the call returns. */
GLINT_EXPORT GlintStatus* glint_runtime_add_network_from_file(
    GlintRuntime* runtime, const char* name, const char* path,
    const GlintAddOptions* options, GlintNetwork** out);
/* Removes `name` after its runs in flight finish; NOT_FOUND if unknown. */
GLINT_EXPORT GlintStatus* glint_runtime_remove_network(GlintRuntime* runtime,
                                                       const char* name);
/* NOT_FOUND if unknown. */
GLINT_EXPORT GlintStatus* glint_runtime_get_network(GlintRuntime* runtime,
                                                    const char* name,
                                                    GlintNetwork** out);
/* Every network, sorted by name. */
GLINT_EXPORT GlintStatus* glint_runtime_list_networks(GlintRuntime* runtime,
                                                      GlintNetworkList** out);

/* Reads a network; every out-parameter may be NULL. `name` and `strategy`
 * are borrowed from the network. */
GLINT_EXPORT GlintStatus* glint_network_info(const GlintNetwork* network,
                                             const char** name,
                                             size_t* num_inputs,
                                             size_t* num_outputs,
                                             size_t* num_partitions,
                                             int* replicas,
                                             const char** strategy);
/* `rank` of a value whose rank is known only at run time (an output of an
 * If whose branches differ in rank...); its `dims` are then NULL. */
#define GLINT_UNKNOWN_RANK ((size_t)-1)

/* Input (is_output 0) or output (is_output 1) number `index`: name, dtype
 * and shape, borrowed from the network (a dimension of -1 is known only at
 * run time; a rank of GLINT_UNKNOWN_RANK, the rank too). OUT_OF_RANGE past
 * the end. Out-parameters may be NULL. */
GLINT_EXPORT GlintStatus* glint_network_value(const GlintNetwork* network,
                                              int is_output, size_t index,
                                              const char** name,
                                              GlintDType* dtype,
                                              const int64_t** dims,
                                              size_t* rank);
/* The name of dim `axis` of input (is_output 0) or output (is_output 1)
 * number `index`: the model's ("batch", "seq"; ONNX's dim_param, carried
 * from the inputs through the network by shape inference), or one ONNX's
 * inference made up ("unk__3") where it could not relate the dim to
 * another; "" for a known dim or an unnamed one. Dims of one name are one
 * size in a run. Borrowed from the network. OUT_OF_RANGE past the values
 * or the rank. Since 0.5. */
GLINT_EXPORT GlintStatus* glint_network_value_dim_name(
    const GlintNetwork* network, int is_output, size_t index, size_t axis,
    const char** name);
/* The network's dynamic input dims (dims of -1 in its inputs' shapes),
 * in input and axis order. */
GLINT_EXPORT GlintStatus* glint_network_num_dynamic_dims(
    const GlintNetwork* network, size_t* count);
/* Dynamic dim number `index`: the input it belongs to, its axis, its name
 * in the model ("" when unnamed; borrowed from the network) and the
 * largest size a run may give. OUT_OF_RANGE past the end. Out-parameters
 * may be NULL. */
GLINT_EXPORT GlintStatus* glint_network_dynamic_dim(
    const GlintNetwork* network, size_t index, const char** input, int* axis,
    const char** name, int64_t* max);
GLINT_EXPORT void glint_network_delete(GlintNetwork* network);

GLINT_EXPORT GlintStatus* glint_network_list_size(const GlintNetworkList* list,
                                                  size_t* size);
/* Borrowed from the list; OUT_OF_RANGE past its end. */
GLINT_EXPORT GlintStatus* glint_network_list_get(const GlintNetworkList* list,
                                                 size_t index,
                                                 const GlintNetwork** network);
GLINT_EXPORT void glint_network_list_delete(GlintNetworkList* list);

/* ---- Runs -------------------------------------------------------------- */

/* A cancellation handle: trigger it and every run given it (through its
 * run options) stops before its next partition and fails CANCELLED. Runs
 * hold their own reference: it may be deleted while they run. */
typedef struct GlintCancel GlintCancel;
typedef struct GlintRunOptions GlintRunOptions;

GLINT_EXPORT GlintStatus* glint_cancel_create(GlintCancel** out);
/* Thread-safe; triggering twice is harmless. */
GLINT_EXPORT GlintStatus* glint_cancel_trigger(GlintCancel* cancel);
GLINT_EXPORT void glint_cancel_delete(GlintCancel* cancel);

GLINT_EXPORT GlintStatus* glint_run_options_create(GlintRunOptions** out);
GLINT_EXPORT void glint_run_options_delete(GlintRunOptions* options);
/* A run given these options fails DEADLINE_EXCEEDED if unfinished
 * `timeout_us` microseconds after glint_runtime_run(_async) was called.
 * Must be > 0; without it a run has no deadline. */
GLINT_EXPORT GlintStatus* glint_run_options_set_timeout_us(
    GlintRunOptions* options, int64_t timeout_us);
/* Runs given these options watch `cancel` (the options keep a reference;
 * NULL: none). */
GLINT_EXPORT GlintStatus* glint_run_options_set_cancel(
    GlintRunOptions* options, GlintCancel* cancel);
/* Admission priority: larger is more urgent (default 0). */
GLINT_EXPORT GlintStatus* glint_run_options_set_priority(
    GlintRunOptions* options, int priority);
/* Asks for output `name` (by default every output comes back); call once
 * per output wanted, in the order wanted. */
GLINT_EXPORT GlintStatus* glint_run_options_add_output(
    GlintRunOptions* options, const char* name);

/* A per-op profile (since 0.2): runs given it through their run options
 * record, besides their partitions, copies and waits, one slice per node
 * each partition executes, with the node's op type, the kernel that ran it
 * and its input and output shapes, as `glint run --profile` does. Many
 * runs may record into one profile at once; read it once they have
 * finished. Costs nothing to runs not given one. */
typedef struct GlintProfile GlintProfile;

GLINT_EXPORT GlintStatus* glint_profile_create(GlintProfile** out);
GLINT_EXPORT void glint_profile_delete(GlintProfile* profile);
/* Runs given these options record into `profile` (the options keep a
 * reference, as do the runs: it may be deleted while they run; NULL: runs
 * are not profiled). */
GLINT_EXPORT GlintStatus* glint_run_options_set_profile(
    GlintRunOptions* options, GlintProfile* profile);
/* Everything the runs recorded, as Chrome trace JSON (open it in Perfetto
 * or chrome://tracing). *json is borrowed from `profile` until the next
 * glint_profile_trace_json or glint_profile_summary on it, or its delete
 * (which, writing the handle, need the caller's exclusion). */
GLINT_EXPORT GlintStatus* glint_profile_trace_json(GlintProfile* profile,
                                                   const char** json);
/* The runs' node time summed by op type and kernel: the `top` longest
 * (every one if top <= 0), one line each with count, total ms, mean us
 * and share, then the layout reorders' total, as `glint perf --profile`
 * prints it. *text is borrowed as for glint_profile_trace_json. */
GLINT_EXPORT GlintStatus* glint_profile_summary(GlintProfile* profile,
                                                int top, const char** text);

/* Runs network `name` on inputs[0..num_inputs) (each graph input once, by
 * the tensor's name, with its declared dtype and shape; the tensors are
 * read, not taken) with `options` (NULL: defaults) and blocks until it
 * ends. On success *outputs receives the outputs. Errors: NOT_FOUND,
 * INVALID_ARGUMENT (inputs), RESOURCE_EXHAUSTED (admission queue full),
 * DEADLINE_EXCEEDED, CANCELLED, UNAVAILABLE (shutting down or devices
 * lost). */
GLINT_EXPORT GlintStatus* glint_runtime_run(
    GlintRuntime* runtime, const char* name, const GlintTensor* const* inputs,
    size_t num_inputs, const GlintRunOptions* options,
    GlintTensorList** outputs);

/* Called once when an asynchronous run ends: `status` NULL and `outputs`
 * the outputs on success, else `status` the error and `outputs` NULL. The
 * callback owns both (free them with glint_status_delete and
 * glint_tensor_list_delete). It runs on a Glint thread (the thread that
 * finished the run), or on the calling thread before glint_runtime_run_async
 * returns when the run fails at once (unknown network, bad inputs); it
 * should return quickly and must not call glint_runtime_delete. */
typedef void (*GlintRunCallback)(void* user_data, GlintStatus* status,
                                 GlintTensorList* outputs);

/* Starts the run glint_runtime_run would do and returns at once. NULL:
 * `callback` will be called exactly once with the run's result. Non-NULL
 * (a NULL or bad argument): the run did not start and `callback` is never
 * called. The inputs are copied by reference: they may be deleted as soon
 * as this returns. */
GLINT_EXPORT GlintStatus* glint_runtime_run_async(
    GlintRuntime* runtime, const char* name, const GlintTensor* const* inputs,
    size_t num_inputs, const GlintRunOptions* options,
    GlintRunCallback callback, void* user_data);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GLINT_C_API_H_ */
