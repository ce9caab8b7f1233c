/* An out-of-tree C program over an installed libglint, built with
 *   cc consumer.c $(pkg-config --cflags --libs glint)
 * Runs an ONNX node case (CASE_DIR/model.onnx, test_data_set_0/input_*.pb)
 * through the C API and compares every output with the case's
 * output_*.pb. Exit 0 when all match, 1 otherwise.
 *
 *   consumer CASE_DIR */
#include <glint/c_api.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads a whole file; NULL if it cannot. The caller frees it. */
static char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return NULL;
  char* data = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? 2 * cap : 65536;
      char* grown = realloc(data, cap);
      if (grown == NULL) break;
      data = grown;
    }
    size_t got = fread(data + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  fclose(f);
  *size = n;
  return data;
}

/* Prints and frees a failed status; returns whether `s` was a failure. */
static int failed(GlintStatus* s, const char* what) {
  if (s == NULL) return 0;
  fprintf(stderr, "c consumer: %s: %s: %s\n", what,
          glint_code_name(glint_status_code(s)), glint_status_message(s));
  glint_status_delete(s);
  return 1;
}

static GlintTensor* load_pb(const char* path) {
  size_t size = 0;
  char* bytes = read_file(path, &size);
  if (bytes == NULL) return NULL;
  GlintTensor* t = NULL;
  int bad = failed(glint_tensor_create_from_onnx(bytes, size, &t), path);
  free(bytes);
  return bad ? NULL : t;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: consumer CASE_DIR\n");
    return 2;
  }
  if (glint_api_version() / 10000 != GLINT_C_API_VERSION_MAJOR ||
      glint_api_version() < GLINT_C_API_VERSION) {
    fprintf(stderr, "c consumer: libglint %u is not compatible with header %d\n",
            glint_api_version(), GLINT_C_API_VERSION);
    return 1;
  }
  const char* dir = argv[1];
  char path[4096];
  GlintTensor* inputs[16];
  size_t num_inputs = 0;
  for (; num_inputs < 16; ++num_inputs) {
    snprintf(path, sizeof(path), "%s/test_data_set_0/input_%zu.pb", dir,
             num_inputs);
    FILE* probe = fopen(path, "rb");
    if (probe == NULL) break;
    fclose(probe);
    if ((inputs[num_inputs] = load_pb(path)) == NULL) return 1;
  }

  GlintRuntime* runtime = NULL;
  if (failed(glint_runtime_create("sim*2:memory=512MiB", &runtime), "create"))
    return 1;
  snprintf(path, sizeof(path), "%s/model.onnx", dir);
  GlintAddOptions* options = NULL;
  if (failed(glint_add_options_create(&options), "options") ||
      failed(glint_add_options_set_strategy(options, "auto"), "strategy"))
    return 1;
  if (failed(glint_runtime_add_network_from_file(runtime, "case", path,
                                                 options, NULL),
             "add"))
    return 1;
  glint_add_options_delete(options);

  GlintTensorList* outputs = NULL;
  if (failed(glint_runtime_run(runtime, "case",
                               (const GlintTensor* const*)inputs, num_inputs,
                               NULL, &outputs),
             "run"))
    return 1;

  int mismatches = 0;
  size_t checked = 0;
  for (;; ++checked) {
    snprintf(path, sizeof(path), "%s/test_data_set_0/output_%zu.pb", dir,
             checked);
    FILE* probe = fopen(path, "rb");
    if (probe == NULL) break;
    fclose(probe);
    GlintTensor* expected = load_pb(path);
    if (expected == NULL) return 1;
    const char* name;
    GlintDType want_type, got_type;
    const int64_t *want_dims, *got_dims;
    size_t want_rank, got_rank, want_bytes, got_bytes;
    const void *want_data, *got_data;
    const GlintTensor* got = NULL;
    if (failed(glint_tensor_info(expected, &name, &want_type, &want_dims,
                                 &want_rank, &want_data, &want_bytes),
               "expected") ||
        failed(glint_tensor_list_find(outputs, name, &got), "output") ||
        failed(glint_tensor_info(got, NULL, &got_type, &got_dims, &got_rank,
                                 &got_data, &got_bytes),
               "output"))
      return 1;
    double max_diff = 0;
    int same = got_type == want_type && got_rank == want_rank &&
               got_bytes == want_bytes &&
               memcmp(got_dims, want_dims, want_rank * sizeof(int64_t)) == 0;
    if (same && want_type == GLINT_DTYPE_FLOAT32) {
      const float* a = got_data;
      const float* b = want_data;
      for (size_t i = 0; i < want_bytes / sizeof(float); ++i) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > max_diff) max_diff = d;
        if (d > 1e-4 * (1 + fabs((double)b[i]))) same = 0;
      }
    } else if (same) {
      same = memcmp(got_data, want_data, want_bytes) == 0;
    }
    printf("c consumer: output '%s' (%zu bytes) %s, max abs diff %g\n", name,
           got_bytes, same ? "matches" : "DIFFERS", max_diff);
    mismatches += !same;
    glint_tensor_delete(expected);
  }
  glint_tensor_list_delete(outputs);
  for (size_t i = 0; i < num_inputs; ++i) glint_tensor_delete(inputs[i]);
  if (failed(glint_runtime_delete(runtime), "delete")) return 1;
  if (checked == 0) {
    fprintf(stderr, "c consumer: no output_*.pb under %s\n", dir);
    return 1;
  }
  printf("c consumer: %s: %zu outputs checked, %d mismatches\n", dir, checked,
         mismatches);
  return mismatches == 0 ? 0 : 1;
}
